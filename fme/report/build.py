"""Build one report: config -> notebook (papermill) -> results -> report.qmd -> HTML + PDF.

Incremental: the build is skipped when the hash of its inputs (config file,
data file, fme's sources, the templates) equals the one stored in
``<out>/.inputs.sha256`` from the last successful build and the outputs exist.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable

from .._environment import find_lock
from ._kernel import logged_kernel_manager
from .config import load_config

__all__ = ["build_report", "inputs_sha256", "default_out_dir"]

PACKAGE = Path(__file__).resolve().parents[1]


def default_out_dir(config_path: str | Path) -> Path:
    p = Path(config_path)
    return p.parent / p.stem


def _files(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for pat in patterns:
        out.extend(p for p in root.rglob(pat) if "__pycache__" not in p.parts)
    return sorted(set(out))


def inputs_sha256(cfg: dict, templates: Path) -> str:
    """Hash of everything a report depends on (config, data file, fme sources, templates)."""
    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + hashlib.sha256(data).digest())

    add("config", Path(cfg["_path"]).read_bytes())
    for key in ("data", "reference_data", "test_data"):
        spec = cfg.get(key)
        if spec and "path" in spec:
            p = Path(spec["path"])
            add(key, (p if p.is_absolute() else Path(cfg["_dir"]) / p).read_bytes())
    if "joblib" in cfg["model"]:
        p = Path(cfg["model"]["joblib"])
        add("model", (p if p.is_absolute() else Path(cfg["_dir"]) / p).read_bytes())
    lock = find_lock()
    add("lock", lock.read_bytes() if lock is not None else b"no lock")
    for p in _files(PACKAGE, ("*.py", "*.csv")):
        add(str(p.relative_to(PACKAGE)), p.read_bytes())
    for p in _files(Path(templates), ("*",)):
        if p.is_file():
            add("templates/" + str(p.relative_to(templates)), p.read_bytes())
    return h.hexdigest()


def build_report(config_path: str | Path, out_dir: str | Path | None = None, *, force: bool = False,
                 pdf: bool | None = None, templates: str | Path | None = None,
                 log: Callable[[str], Any] = print, renderer: str = "auto") -> dict[str, Any]:
    """Build ``<out>/report.{qmd,html,pdf}`` (and results) for one config.

    Returns a dict with ``skipped`` (bool), the output paths and per-step timings.
    """
    from . import render
    from .context import build_context

    t0 = time.perf_counter()
    cfg = load_config(config_path)
    tdir = Path(templates) if templates is not None else render.TEMPLATES
    out = Path(out_dir) if out_dir is not None else default_out_dir(config_path)
    want_pdf = cfg["pdf"] if pdf is None else pdf
    digest = inputs_sha256(cfg, tdir)
    stamp = out / ".inputs.sha256"
    expected = [out / "report.qmd", out / "report.html"] + ([out / "report.pdf"] if want_pdf else [])
    stamp_text = f"{digest} pdf={int(bool(want_pdf))}\n"
    if not force and stamp.exists() and stamp.read_text() == stamp_text and all(p.exists() for p in expected):
        log(f"[fme report] {cfg['_name']}: up to date ({out})")
        return {"skipped": True, "out_dir": out, "html": out / "report.html",
                "pdf": out / "report.pdf" if want_pdf else None, "timings": {}}
    out.mkdir(parents=True, exist_ok=True)
    if stamp.exists():
        stamp.unlink()
    timings: dict[str, float] = {}
    log(f"[fme report] {cfg['_name']}: running the analysis notebook (papermill) ...")
    t = time.perf_counter()
    import papermill

    (out / "kernel.log").unlink(missing_ok=True)
    papermill.execute_notebook(str(tdir / "analysis.ipynb"), str(out / "analysis.ipynb"),
                               parameters={"config_path": str(Path(config_path).resolve()),
                                           "out_dir": str(out.resolve())},
                               progress_bar=False, log_output=False, kernel_name="python3",
                               kernel_manager_class=logged_kernel_manager(out / "kernel.log"))
    timings["analysis"] = time.perf_counter() - t
    log(f"[fme report] {cfg['_name']}: analysis done in {timings['analysis']:.1f} s; rendering report.qmd ...")
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    build_info = {"inputs_sha256": digest, "tools": render.tool_versions(),
                  "config_arg": str(config_path)}
    ctx = build_context(results, cfg, Path(config_path).read_text(encoding="utf-8"), build_info)
    t = time.perf_counter()
    qmd = render.render_qmd(ctx, out, tdir)
    html, pdf_path, used = render.render_documents(qmd, ctx, tdir, pdf=bool(want_pdf), renderer=renderer)
    timings["render"] = time.perf_counter() - t
    log(f"[fme report] {cfg['_name']}: rendered with {used}: HTML {html} ({html.stat().st_size / 1e6:.2f} MB)"
        + (f", PDF {pdf_path}" if pdf_path else ""))
    stamp.write_text(stamp_text)
    timings["total"] = time.perf_counter() - t0
    log(f"[fme report] {cfg['_name']}: done in {timings['total']:.1f} s")
    return {"skipped": False, "out_dir": out, "html": html, "pdf": pdf_path, "timings": timings}
