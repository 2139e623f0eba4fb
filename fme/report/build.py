"""Build one report: config -> notebook (papermill) -> results -> report.qmd -> HTML + PDF.

Progress: on a terminal (and not with ``progress=False``, ``fme report --no-progress`` or
``FME_PROGRESS=0``; :mod:`fme._utils.progress`) a bar over the stages (analysis notebook: load model and
data, effects, model fit; report.qmd; HTML; PDF) and papermill's bar over the notebook's cells, on
standard error only: the outputs are the same with or without.

Incremental: the build is skipped when the hash of its inputs (:func:`inputs_sha256`:
config, fitted model, data, fme, templates, lock) equals the one stored in
``<out>/.inputs.sha256`` from the last successful build and the outputs exist.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._utils.numfmt import count
from ._notebook import logged_kernel_manager
from .inputs.config import ConfigError, ReportConfig, config_error, config_from_dict, load_config
from .inputs.sources import data_files, files_sha256
from .inputs.validate import check_inputs, check_interaction_features, train_data_specs
from .present.changelog import load_previous
from .render.model_card import write_model_card

__all__ = ["build_report", "render_report", "inputs_sha256", "input_digests", "default_out_dir"]

PACKAGE = Path(__file__).resolve().parents[1]


def default_out_dir(config_path: str | Path) -> Path:
    p = Path(config_path)
    return p.parent / p.stem


def _files(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for pat in patterns:
        out.extend(p for p in root.rglob(pat) if "__pycache__" not in p.parts)
    return sorted(set(out))


def _entry_point_bytes(cfg: ReportConfig, key: str = "model") -> tuple[bytes, bytes]:
    """(canonical serialisation of the model and training data the entry point returns, sha256 of its module's
    source; :func:`fme.report.model_hash.model_fingerprint`).

    Loads the model as the notebook does (:func:`fme.report.analysis.run.load_model`): calls the entry point
    (runs code); the source is read from disk, never a cached copy.
    """
    from .analysis.run import load_model
    from .model_hash import model_fingerprint

    model, train, info = load_model(cfg, getattr(cfg, key), key)
    try:  # what identifies the fit, not its pickle: identical fits hash alike
        fitted = model_fingerprint(model if train is None else (model, train))
    except Exception:  # noqa: BLE001 - an unserialisable model: its repr and the module source still count
        fitted = repr(model).encode("utf-8")
    return fitted, (info["sha256"] or "").encode()


def input_digests(cfg: ReportConfig) -> dict[str, dict[str, str]]:
    """sha256 of each input a report rests on, for the audit trail and the cache (:func:`inputs_sha256`).

    Keys ``model``, ``model module source`` (entry points), ``data``, ``reference_data``, ``test_data``,
    ``train_data`` (bootstrap inference; ``train_data 2``, ... when effects name other files), ``previous``,
    ``requirements.lock``; each value ``{"sha256": hex, "of": what was hashed}``. The model is the fitted
    object: a joblib file's bytes, or for an entry point a canonical serialisation of what it returns (training
    data included; :mod:`fme.report.model_hash`), so a changed hyper-parameter changes the hash even when the
    module's source does not. An entry point is *called* to hash its model.
    """
    from .analysis.environment import find_lock

    out: dict[str, dict[str, str]] = {}

    def add(label: str, data: bytes, of: str) -> None:
        out[label] = {"sha256": hashlib.sha256(data).hexdigest(), "of": of}

    def add_data(label: str, spec: Mapping[str, Any] | None, what: str = "") -> None:
        if spec and "path" in spec:  # one file, or the files of a Parquet dataset / glob (engine: dask)
            files = data_files(cfg.directory, spec["path"])
            of = (
                f"file {spec['path']}"
                if len(files) == 1
                else (f"{count(len(files), 'file')} of {spec['path']} (sha256 of their sorted names and sha256s)")
            )
            out[label] = {"sha256": files_sha256(files, cfg.directory), "of": what + of}
        elif spec and "dataset" in spec:
            add(
                label,
                (PACKAGE / "data" / f"{spec['dataset']}.csv").read_bytes(),
                f"{what}bundled dataset {spec['dataset']} (fme/data/{spec['dataset']}.csv)",
            )

    for key in ("data", "reference_data", "test_data"):
        add_data(key, getattr(cfg, key))
    # bootstrap refits use the training data: a changed file changes every model-uncertainty CI
    for i, (key, spec) in enumerate(train_data_specs(cfg)):
        where = ".".join(str(k) for k in key)
        add_data("train_data" if i == 0 else f"train_data {i + 1}", spec, f"{where}: ")
    if "joblib" in cfg.model:
        add("model", cfg.resolve_path(cfg.model["joblib"]).read_bytes(), f"fitted model: file {cfg.model['joblib']}")
    else:
        fitted, source = _entry_point_bytes(cfg)
        add(
            "model",
            fitted,
            f"fitted model: canonical serialisation of the return value of "
            f"{cfg.model['entry_point']} (class, parameters, fitted state, design and data)",
        )
        out["model module source"] = {"sha256": source.decode(), "of": "source file of the entry point's module"}
    if cfg.challenger:  # the champion-challenger comparison rests on the second model too
        if "joblib" in cfg.challenger:
            add(
                "challenger",
                cfg.resolve_path(cfg.challenger["joblib"]).read_bytes(),
                f"challenger model: file {cfg.challenger['joblib']}",
            )
        else:
            fitted, _ = _entry_point_bytes(cfg, "challenger")
            add(
                "challenger",
                fitted,
                f"challenger model: canonical serialisation of the return value of {cfg.challenger['entry_point']}",
            )
    if cfg.previous:
        p = cfg.resolve_path(cfg.previous)
        if p.is_file():  # a missing file is reported by changelog.load_previous, naming the key
            add("previous", p.read_bytes(), f"file {cfg.previous} (the previous report's results)")
    lock = find_lock()
    if lock is not None and Path(lock).is_file():
        add("requirements.lock", Path(lock).read_bytes(), "requirements.lock")
    else:
        add("requirements.lock", b"no lock", "no requirements.lock found")
    return out


def inputs_sha256(cfg: ReportConfig, templates: Path, digests: dict[str, dict[str, str]] | None = None) -> str:
    """Hash of everything a report depends on.

    The config file and the resolved config (defaults filled in), the inputs of :func:`input_digests` (the
    fitted model, the data, reference and test data files, the lock), fme's version and sources (bundled
    datasets included) and the templates. ``digests``: :func:`input_digests` already computed (it calls an
    entry point).
    """
    from .. import __version__

    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + hashlib.sha256(data).digest())

    add("config", cfg.path.read_bytes())
    add("resolved config", json.dumps(cfg.to_dict(), sort_keys=True, default=str).encode("utf-8"))
    for label, d in sorted((digests if digests is not None else input_digests(cfg)).items()):
        h.update(label.encode() + b"\0" + d["sha256"].encode())
    add("fme version", __version__.encode())
    for p in _files(PACKAGE, ("*.py", "*.csv")):
        add(str(p.relative_to(PACKAGE)), p.read_bytes())
    for p in _files(Path(templates), ("*",)):
        if p.is_file():
            add("templates/" + str(p.relative_to(templates)), p.read_bytes())
    return h.hexdigest()


def _machine_roots(work: Path, config_path: Path, templates: Path) -> dict[str, str]:
    """The build machine's absolute folders an executed notebook may mention, and their placeholders."""
    import sys

    import fme

    return {
        str(work.resolve()): "<report folder>",
        str(config_path.resolve().parent): "<config folder>",
        str(templates.resolve()): "<fme templates>",
        str(Path(fme.__file__).resolve().parent): "<fme>",
        str(Path(fme.__file__).resolve().parent.parent): "<fme checkout>",
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
        str(Path.home()): "<home>",
    }


def build_report(
    config_path: str | Path,
    out_dir: str | Path | None = None,
    *,
    force: bool = False,
    pdf: bool | None = None,
    templates: str | Path | None = None,
    log: Callable[[str], Any] = print,
    renderer: str = "auto",
    progress: bool | None = None,
    model_card: bool | None = None,
) -> dict[str, Any]:
    """Build ``<out>/report.{qmd,html,pdf}`` (and results) for one config.

    ``model_card`` (default: the config's ``model_card`` key): also write ``model_card.json`` in the Model
    Card Toolkit schema (:mod:`fme.report.render.model_card`), from the built report's results.

    ``progress``: bars over the build's stages and the notebook's cells on standard error (default: on a
    terminal only, unless ``FME_PROGRESS=0``); the outputs do not depend on it.
    Returns a dict with ``skipped`` (bool), the output paths and per-step timings.
    """
    from .render import documents as render

    t0 = time.perf_counter()
    cfg = load_config(config_path)
    check_inputs(cfg)
    check_interaction_features(cfg)
    previous = load_previous(cfg)  # before any computing: a bad `previous` fails at once
    tdir = Path(templates) if templates is not None else render.TEMPLATES
    out = Path(out_dir) if out_dir is not None else default_out_dir(config_path)
    want_pdf = cfg.pdf if pdf is None else pdf
    digests = input_digests(cfg)
    digest = inputs_sha256(cfg, tdir, digests)
    stamp = out / ".inputs.sha256"
    expected = [out / "report.qmd", out / "report.html"] + ([out / "report.pdf"] if want_pdf else [])
    stamp_text = f"{digest} pdf={int(bool(want_pdf))}\n"
    if not force and stamp.exists() and stamp.read_text() == stamp_text and all(p.exists() for p in expected):
        log(f"[fme report] {cfg.name}: up to date ({out})")
        if cfg.model_card if model_card is None else model_card:
            write_model_card(out)
        return {
            "skipped": True,
            "out_dir": out,
            "html": out / "report.html",
            "pdf": out / "report.pdf" if want_pdf else None,
            "timings": {},
        }
    timings: dict[str, float] = {}
    work = out.parent / f".{out.name}.partial"
    error_log = out.parent / f"{out.name}.error.log"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    kernel_log = work / "kernel.log"
    stages = _Stages(cfg.name, bool(want_pdf), progress)
    try:
        html, pdf_path, used = _build_into(
            work,
            cfg,
            config_path,
            tdir,
            digest,
            bool(want_pdf),
            renderer,
            log,
            timings,
            kernel_log,
            digests,
            previous,
            stages,
        )
    except BaseException as exc:
        stages.close()
        kernel = kernel_log.read_text(encoding="utf-8", errors="replace") if kernel_log.is_file() else ""
        shutil.rmtree(work, ignore_errors=True)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise _loud(exc, cfg, error_log, kernel) from None
    stages.close()
    (work / ".inputs.sha256").write_text(stamp_text)
    _replace_dir(work, out)
    if error_log.exists():
        error_log.unlink()
    html, pdf_path = out / html.name, (out / pdf_path.name if pdf_path else None)
    timings["total"] = time.perf_counter() - t0
    log(
        f"[fme report] {cfg.name}: rendered with {used}: HTML {html} ({html.stat().st_size / 1e6:.2f} MB)"
        + (f", PDF {pdf_path}" if pdf_path else "")
    )
    if cfg.model_card if model_card is None else model_card:
        log(f"[fme report] {cfg.name}: model card {write_model_card(out)}")
    log(f"[fme report] {cfg.name}: done in {timings['total']:.1f} s")
    return {"skipped": False, "out_dir": out, "html": html, "pdf": pdf_path, "timings": timings}


def _build_into(
    work: Path,
    cfg: ReportConfig,
    config_path: str | Path,
    tdir: Path,
    digest: str,
    want_pdf: bool,
    renderer: str,
    log: Callable[[str], Any],
    timings: dict,
    kernel_log: Path,
    digests: dict,
    previous: dict | None = None,
    stages: _Stages | None = None,
) -> tuple[Path, Path | None, str]:
    """Run the notebook and render into ``work`` (a fresh folder); returns (html, pdf or None, renderer used)."""
    from ._notebook import stabilise
    from .render import documents as render

    stages = stages or _Stages(cfg.name, want_pdf, False)
    log(f"[fme report] {cfg.name}: running the analysis notebook (papermill) ...")
    stages.start("analysis notebook: load model and data, effects, model fit")
    t = time.perf_counter()
    import papermill

    # the kernel process's own stderr (e.g. IPKernelApp warnings) goes to kernel.log, not to the user
    papermill.execute_notebook(
        str(tdir / "analysis.ipynb"),
        str(work / "analysis.ipynb"),
        parameters={"config_path": str(Path(config_path).resolve()), "out_dir": str(work.resolve())},
        progress_bar=stages.enabled,
        log_output=False,
        kernel_name="python3",
        kernel_manager_class=logged_kernel_manager(kernel_log),
    )
    # no wall-clock times and no path of this machine: same inputs, same notebook, wherever it was built
    stabilise(work / "analysis.ipynb", _machine_roots(work, Path(config_path), tdir))
    timings["analysis"] = time.perf_counter() - t
    log(f"[fme report] {cfg.name}: analysis done in {timings['analysis']:.1f} s; rendering report.qmd ...")
    build_info = {
        "inputs_sha256": digest,
        "tools": render.tool_versions(),
        "config_arg": Path(config_path).name,
        "hashes": digests,
        "config_text": Path(config_path).read_text(encoding="utf-8"),
        "previous": previous,
    }
    # everything `fme render <dir>` needs besides results.json: the report is re-rendered without the model
    (work / BUILD_INFO).write_text(
        json.dumps(build_info, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    t = time.perf_counter()
    html, pdf_path, used = _render_from_results(work, tdir, want_pdf, renderer, cfg, stages.start)
    timings["render"] = time.perf_counter() - t
    stages.start(None)
    return html, pdf_path, used


class _Stages:
    """A tqdm bar over a build's stages on standard error when progress is on (:mod:`fme._utils.progress`)."""

    def __init__(self, name: str, pdf: bool, progress: bool | None) -> None:
        from .._utils.progress import progress_enabled

        self.enabled = progress_enabled(progress)
        self.name, self.bar, self.current = name, None, None
        if self.enabled:
            from tqdm.auto import tqdm

            # analysis notebook, report.qmd, HTML (+ PDF)
            self.bar = tqdm(total=3 + int(pdf), desc=f"[fme report] {name}", unit="stage", leave=False)

    def start(self, stage: str | None) -> None:
        """Mark the previous stage done and show ``stage`` (None: all done)."""
        if self.bar is None:
            return
        if self.current is not None:
            self.bar.update(1)
        self.current = stage
        if stage is not None:
            self.bar.set_description(f"[fme report] {self.name}: {stage}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


#: Sidecar of a built report with the build's own facts (input hashes, tool versions, the config's text).
BUILD_INFO = "build.json"


def _render_from_results(
    folder: Path,
    tdir: Path,
    want_pdf: bool,
    renderer: str,
    cfg: ReportConfig | None = None,
    stage: Callable[[str], Any] | None = None,
) -> tuple[Path, Path | None, str]:
    """results.json + build.json in ``folder`` -> report.qmd -> report.html (+ report.pdf) in ``folder``.

    ``cfg``: the loaded config; without it the resolved config kept in results.json is used (the two are
    equal for a report built by this fme: the notebook stores the loaded config there).
    """
    from .present.context import build_context
    from .render import documents as render

    raw = (folder / "results.json").read_bytes()
    results = json.loads(raw.decode("utf-8"))
    build_info = json.loads((folder / BUILD_INFO).read_text(encoding="utf-8"))
    build_info["results_sha256"] = hashlib.sha256(raw).hexdigest()
    cfg = config_from_dict(results["config"], results["config_name"]) if cfg is None else cfg
    if stage is not None:
        stage("report.qmd")
    ctx = build_context(results, cfg, build_info["config_text"], build_info)
    qmd = render.render_qmd(ctx, folder, tdir)
    return render.render_documents(qmd, ctx, tdir, pdf=want_pdf, renderer=renderer, stage=stage)


def render_report(
    report_dir: str | Path,
    *,
    pdf: bool | None = None,
    templates: str | Path | None = None,
    renderer: str = "auto",
    log: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Re-render ``report.{qmd,html,pdf}`` of a built report from its kept ``results.json`` and ``build.json``.

    Nothing is recomputed: the model is not loaded and the notebook is not run; the figures already in
    ``<report_dir>/figures`` are used. The documents are rendered in a scratch copy and replace the old
    ones only when all of them were written. ``pdf``: default, whether the folder has a report.pdf.
    Raises :class:`~fme.report.inputs.config.ConfigError` when the folder is not a built report.
    """
    from .render import documents as render

    t0 = time.perf_counter()
    folder = Path(report_dir)
    missing = [n for n in ("results.json", BUILD_INFO) if not (folder / n).is_file()]
    if missing:
        raise ConfigError(
            f"{folder}: not a built report (no {', '.join(missing)}); build it with `fme report <config.yaml>` first"
        )
    want_pdf = (folder / "report.pdf").is_file() if pdf is None else pdf
    tdir = Path(templates) if templates is not None else render.TEMPLATES
    work = folder.parent / f".{folder.name}.render"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    try:
        for name in ("results.json", BUILD_INFO):
            shutil.copy2(folder / name, work / name)
        if (folder / "figures").is_dir():
            shutil.copytree(folder / "figures", work / "figures")
        html, pdf_path, used = _render_from_results(work, tdir, bool(want_pdf), renderer)
        written = [work / "report.qmd", html] + ([pdf_path] if pdf_path else [])
        if (work / "report.typ").is_file():
            written.append(work / "report.typ")
        for p in written:
            p.replace(folder / p.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"[fme render] {folder}: re-rendered with {used} in {time.perf_counter() - t0:.1f} s (no recomputation)")
    return {"out_dir": folder, "html": folder / "report.html", "pdf": folder / "report.pdf" if want_pdf else None}


def _replace_dir(work: Path, out: Path) -> None:
    """Move the finished ``work`` folder to ``out``; a previous ``out`` is removed only after that succeeded."""
    old = out.parent / f".{out.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        out.rename(old)
    work.rename(out)
    if old.exists():
        shutil.rmtree(old)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _loud(exc: BaseException, cfg: ReportConfig, error_log: Path, kernel_stderr: str = "") -> ConfigError:
    """One-line :class:`ConfigError` for a failed build; the details (traceback, notebook cell) go to ``error_log``."""
    import traceback

    from papermill.exceptions import PapermillExecutionError

    ename, evalue = type(exc).__name__, str(exc)
    if isinstance(exc, PapermillExecutionError):  # the notebook raised: its exception's name and message
        ename, evalue = exc.ename, exc.evalue
        detail = _ANSI.sub("", "\n".join(exc.traceback))
    else:
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    error_log.write_text(
        f"fme report: {cfg.path}\n{ename}: {evalue}\n\n{detail}\n\nkernel stderr:\n{kernel_stderr}\n", encoding="utf-8"
    )
    first = " ".join(evalue.split())
    if ename == "ConfigError" and first.startswith(str(cfg.path) + ":"):
        # the notebook loads the config by its absolute path; the message names it as the caller did
        return ConfigError(f"{cfg.shown or cfg.path}{first[len(str(cfg.path)) :]} (details: {error_log})")
    if ename == "ConfigError" and cfg.shown and first.startswith(cfg.shown + ":"):
        return ConfigError(f"{first} (details: {error_log})")
    return config_error(cfg, (), f"the build failed: {ename}: {first} (details: {error_log})")
