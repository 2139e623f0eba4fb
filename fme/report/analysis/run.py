"""The computations behind a report (run inside ``templates/analysis.ipynb``).

Everything here reads the public API of :mod:`fme` and writes plain files:
``results.json`` (full precision), ``tables/*.csv`` and ``figures/*.{svg,png}``.
Formatting, wording and alt text happen later, in :mod:`fme.report.present.context`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import fme
from fme.inference import RefitCache

from ..._utils.numfmt import count
from ..._utils.validation import is_dask_collection
from ..inputs.comparison_measures import compact
from ..inputs.config import ConfigError, ReportConfig, config_error
from ..inputs.sources import data_files, file_sha256, files_sha256, read_dask, read_frame, sample_rows, session_info
from ..inputs.validate import analysis_error
from . import figures
from .audit_paths import audit_effect, not_audited, offset_roles
from .challenger import challenger_summary
from .checks import all_extrapolation_error, check_train_data, levels_of
from .contracts import adjust_contracts, contract_rows
from .details import label_intervals, relabel_table
from .effect import compute_effect
from .effect_parts import REPORT_SAMPLE_SIZE, json_num, sample_info
from .levels import LearnerShare, level_summaries
from .model_view import dispersion_scaled, dispersion_threshold, glm_dispersion, prediction_columns
from .typed import report_unit, typed_payload

__all__ = [
    "load_model",
    "load_data",
    "compute_effect",
    "run_effects",
    "versions",
    "environment_record",
    "write_results",
]


# ------------------------------------------------------------------ inputs
def _looks_pickled(path: Path) -> bool:
    """Whether the file starts as a pickle (protocol 2 or later: 0x80) or a compressed joblib file does
    (zlib, gzip, bz2, xz, lzma, lz4)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:
        return True  # the loader's own error says why
    return (
        head[:1] == b"\x80"
        or head[:2] in (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda", b"\x1f\x8b", b"BZ")
        or head.startswith((b"\xfd7zXZ", b"\x5d\x00", b"\x04\x22\x4d\x18"))
    )


def load_model(
    cfg: ReportConfig, spec: Mapping[str, Any] | None = None, key: str = "model"
) -> tuple[Any, pd.DataFrame | None, dict]:
    """The fitted model, its training features (if the source returns them) and provenance.

    Both sources execute code: a joblib file unpickles arbitrary objects and
    an entry point imports and calls a function. Only use trusted configs.
    """
    spec = cfg.model if spec is None else spec
    if "joblib" in spec:
        import joblib

        path = cfg.resolve_path(spec["joblib"])
        try:
            model = joblib.load(path)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is a config problem
            if not _looks_pickled(path):
                raise config_error(
                    cfg,
                    (key, "joblib"),
                    f"{spec['joblib']} is not a joblib or pickle file (it does not start as one); "
                    "save the fitted model with joblib.dump(model, path)",
                ) from exc
            raise analysis_error(cfg, (key, "joblib"), exc) from exc
        return (
            model,
            None,
            {
                "kind": "joblib",
                "source": spec["joblib"],
                "sha256": file_sha256(path),
                "sha256_of": None,
                "dispersion": glm_dispersion(model),
            },
        )
    module_name, func_name = spec["entry_point"].split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001
        raise analysis_error(cfg, (key, "entry_point"), exc) from exc
    if not callable(getattr(module, func_name, None)):
        raise config_error(
            cfg,
            (key, "entry_point"),
            f"module {module_name!r} has no function {func_name!r}; check the name after the colon",
        )
    try:
        out = getattr(module, func_name)()
    except Exception as exc:  # noqa: BLE001
        raise analysis_error(cfg, (key, "entry_point"), exc) from exc
    model, train = out if isinstance(out, tuple) else (out, None)
    source = getattr(module, "__file__", None)
    info = {
        "kind": "entry point",
        "source": spec["entry_point"],
        "sha256": file_sha256(Path(source)) if source else None,
        "sha256_of": f"source of {module_name}",
        "dispersion": glm_dispersion(model),
    }
    return model, train, info


#: Config keys whose data stay Dask DataFrames with ``engine: dask`` (the others are gathered into memory).
LAZY_KEYS = ("data", "reference_data")


def load_data(cfg: ReportConfig, spec: Mapping[str, Any], key: str = "data") -> tuple[pd.DataFrame, dict]:
    """A data frame and its provenance (source, sha256, rows, columns); ``key`` names the config key in errors.

    With ``engine: dask`` the frame of ``data`` and ``reference_data`` (:data:`LAZY_KEYS`) given by a
    path is a lazy Dask DataFrame on the kernel's cluster (:func:`fme.report.inputs.sources.read_dask`); the
    provenance of ``data`` then also describes the seeded sample behind the per-row figures
    (``sample``: :func:`fme.report.analysis.effect_parts.sample_info`).
    """
    try:
        return _load_data(cfg, spec, key)
    except Exception as exc:  # noqa: BLE001 - unreadable file, bad CSV, missing pyarrow: one line naming the key
        raise analysis_error(cfg, (key, "path" if "path" in spec else "dataset"), exc) from exc


def _load_data(cfg: ReportConfig, spec: Mapping[str, Any], key: str = "data") -> tuple[pd.DataFrame, dict]:
    if "dataset" in spec:
        from importlib import resources

        from ...datasets import load_boston

        frame = load_boston()
        raw = resources.files("fme").joinpath("data", "boston.csv").read_bytes()
        info = {
            "source": f"bundled dataset '{spec['dataset']}' (fme/data/boston.csv)",
            "sha256": hashlib.sha256(raw).hexdigest(),
        }
    else:
        files = data_files(cfg.directory, spec["path"])
        info = {"source": spec["path"], "sha256": files_sha256(files, cfg.directory), "n_files": len(files)}
        if cfg.engine == "dask" and key in LAZY_KEYS:
            frame, n = read_dask(files, cfg.scheduler)
            info["engine"] = "dask"
            if key == "data":
                info["sample"] = sample_info(n, sample_size(cfg), int(cfg.seed))
            drop = [c for c in spec.get("drop", []) if c in frame.columns]
            frame = frame.drop(columns=drop)
            info.update(
                n_rows=n,
                n_cols=int(len(frame.columns)),
                date=spec.get("date", ""),
                description=spec.get("description", ""),
                dropped=drop,
            )
            return frame, info
        frame = read_frame(files, cfg.engine, cfg.scheduler)
    drop = [c for c in spec.get("drop", []) if c in frame.columns]
    frame = frame.drop(columns=drop)
    info.update(
        n_rows=int(len(frame)),
        n_cols=int(frame.shape[1]),
        date=spec.get("date", ""),
        description=spec.get("description", ""),
        dropped=drop,
    )
    return frame, info


def sample_size(cfg: ReportConfig) -> int:
    """Rows of the seeded sample behind an ``engine: dask`` report's per-row figures (config ``sample_size``)."""
    return int(REPORT_SAMPLE_SIZE if cfg.sample_size is None else cfg.sample_size)


def versions(model: Any = None, model_info: dict | None = None) -> dict[str, str]:
    """Versions of the core packages and of every package the model, its entry point's
    module and the analysis imported (:func:`fme.report.analysis.packages.model_packages`)."""
    import jinja2
    import matplotlib
    import scipy
    import sklearn
    import statsmodels

    out = {
        fme.__distribution__: fme.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "statsmodels": statsmodels.__version__,
        "matplotlib": matplotlib.__version__,
        "jinja2": jinja2.__version__,
    }
    from .packages import model_packages

    module_file = None
    if (model_info or {}).get("kind") == "entry point":  # the module the entry point imported from
        module_file = getattr(sys.modules.get(model_info["source"].split(":")[0]), "__file__", None)
    extra = model_packages(model, module_file) if model is not None else {}
    out.update({k: v for k, v in extra.items() if k not in out})
    return out


def previous_record(cfg: ReportConfig) -> dict | None:
    """The previous build's results file a change log compares with (config key ``previous``): its path as the
    config gives it and its SHA-256, so ``results.json`` names every input it rests on, and the numbers the
    change log compares (``effects``, :func:`fme.report.inputs.comparison_measures.compact`), which
    :func:`~fme.report.analysis.typed.typed_payload` turns into the quantities of ``changes``; None without one."""
    if not cfg.previous:
        return None
    path = cfg.resolve_path(cfg.previous)
    record: dict[str, Any] = {"path": str(cfg.previous), "sha256": file_sha256(path)}
    try:
        record["effects"] = compact(json.loads(path.read_text(encoding="utf-8")))["effects"]
    except (ValueError, KeyError, TypeError):  # the build checked the file up front; nothing to compare
        pass
    return record


def environment_record() -> dict:
    """Operating system, CPU architecture, the lock the environment was installed from and the Dask cluster.

    ``lock``: :func:`fme.report.analysis.environment.lock_record` (the lock's sha256 and whether every
    installed package equals its pin), so a report shows whether it ran in the locked set-up. ``cluster``
    (``engine: dask`` only): the scheduler's address or ``local``, its workers and threads
    (:func:`fme.report.inputs.sources.session_info`).
    """
    from .environment import lock_record

    out = {
        "os": platform.system(),
        "os_release": platform.release(),
        "machine": platform.machine(),
        "lock": lock_record(),
    }
    cluster = session_info()
    if cluster is not None:
        out["cluster"] = cluster
    return out


def _levels_for(data: pd.DataFrame, feature: str, value: Any) -> list:
    return levels_of(data, feature) if value == "all" else list(value)


def load_train_data(
    cfg: ReportConfig, spec: Mapping[str, Any], key: tuple, cache: dict, model: Any = None, data: Any = None
) -> pd.DataFrame | None:
    """The ``train_data`` frame of a bootstrap inference spec (features and target; None otherwise).

    With ``model`` and the evaluation ``data``: :func:`fme.report.analysis.checks.check_train_data` before the
    bootstrap (column types, one refit), so a refit that cannot work fails at ``<key>.train_data`` at once.
    """
    if spec["method"] != "bootstrap":
        return None
    return load_training(cfg, spec["train_data"], key, cache, model, data)


def load_training(
    cfg: ReportConfig, data_spec: Mapping[str, Any], key: tuple, cache: dict, model: Any = None, data: Any = None
) -> pd.DataFrame:
    """The training data ``data_spec`` names (features and target), loaded once per file (``cache``), in memory.

    ``key`` is the config key whose ``train_data`` it is (bootstrap inference, ``learner``, ``data_level``): the
    key path of its errors. With ``model`` and the evaluation ``data`` the frame is checked as the bootstrap's is.
    """
    ident = repr(sorted(data_spec.items()))
    if ident not in cache:
        frame, info = load_data(cfg, data_spec, key[0])
        if is_dask_collection(frame):  # refits and cross-fitting need the training rows in memory
            frame = frame.compute()
        if cfg.target not in frame.columns:
            raise config_error(
                cfg, key + ("train_data",), f"the training data lack the target column {cfg.target!r}; refits need it"
            )
        if model is not None and data is not None:
            check_train_data(cfg, key, model, frame, data)
        cache[ident] = (frame, info)
    return cache[ident][0]


def run_effects(
    model: Any,
    data: pd.DataFrame,
    reference: pd.DataFrame,
    cfg: ReportConfig,
    out_dir: Path,
    target_class: Any = None,
    keep: dict | None = None,
) -> list[dict]:
    """Compute every configured effect, write its tables and figures, return the summaries.

    ``keep`` (a dict, filled in place): the results of the effects ``joint_regions`` names, with the model, data
    and refits they were computed with, for :func:`fme.report.analysis.joint_regions.run_joint_regions` (the
    joint tree grows on the effects' own fMEs).

    Any failure is a :class:`~fme.report.inputs.config.ConfigError` naming the effect's ``steps`` line: a report
    never silently drops an effect. An overdispersed Poisson or binomial model's delta-method intervals use its
    covariance scaled by the Pearson dispersion (:func:`fme.report.analysis.model_view.dispersion_scaled`).
    """
    out_dir = Path(out_dir)
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    model, covariance = dispersion_scaled(model, dispersion_threshold(cfg))
    summaries = []
    train_cache: dict = {}
    challenger_checked: set = set()
    # figures show what the tables show: a class probability's effects in percentage points
    # (their axis unit and scale are those of the quantities they draw: results.json's unit of the effects)
    unit = report_unit({"target_class": target_class, "config": {"target_unit": cfg.target_unit}})
    fig_cfg = cfg if unit.scale == 1.0 else cfg.with_target_unit(f"{unit.name} of {unit.of}")
    fig_scale = unit.scale
    sample = None
    challenger, challenger_covariance, challenger_info = None, None, {}
    # every effect with bootstrap refits the model on the same resamples (one seed): fitted once, then reused
    refits = RefitCache()
    # the columns every prediction reads beside the features (exposure, offset): the audit's second path passes
    # them to the model's own predict as observed
    roles = {r["column"]: r["role"] for r in prediction_columns(model, list(data.columns))}
    if roles and not is_dask_collection(data):
        roles = offset_roles(model, data, roles)
    if cfg.challenger:  # champion and challenger: the second model, loaded like the first
        if is_dask_collection(data):
            raise config_error(cfg, ("challenger",), "a challenger model works with engine: pandas (for now)")
        challenger, _, challenger_info = load_model(cfg, cfg.challenger, "challenger")
        challenger, challenger_covariance = dispersion_scaled(challenger, dispersion_threshold(cfg))
    if is_dask_collection(data):  # engine: dask: one seeded sample of the rows for every effect's per-row figures
        from .dask_analysis import compute_effect_dask

        sample = sample_rows(data, int(data.shape[0].compute()), sample_size(cfg), int(cfg.seed))[0]
    joint_ids = set((cfg.joint_regions or {}).get("effects", ())) if keep is not None else set()
    if keep is not None:
        keep.update(model=model, data=data, reference=reference, refits=refits, covariance=covariance, effects={})
    for i, eff in enumerate(cfg.effects, start=1):
        key = ("effects", i - 1, "inference") if "inference" in eff.given else ("inference",)
        train = load_train_data(cfg, eff.inference, key, train_cache, model, data)
        if challenger is not None and train is not None and id(train) not in challenger_checked:
            # the challenger's refits, checked before the first; its problems name the challenger key
            check_train_data(cfg, key, challenger, train, data, ("challenger",))
            challenger_checked.add(id(train))  # the frame is cached per file: one check per file
        trains = {
            k: load_training(cfg, getattr(eff, k)["train_data"], ("effects", i - 1, k), train_cache)
            for k in ("learner", "data_level")
            if getattr(eff, k)
        }
        print(f"[fme report] effect {i}/{len(cfg.effects)}: {eff.id}", flush=True)
        single = list(eff.steps.items())
        variants = [(eff.id, eff)]
        if len(single) == 1 and (single[0][1] == "all" or isinstance(single[0][1], list)):
            f, v = single[0]
            variants = [(f"{eff.id}-{j}", eff.variant(f, lv)) for j, lv in enumerate(_levels_for(data, f, v), start=1)]
        group = []
        # the levels of a categorical effect share the learner level's refits (the same splits for each)
        share = LearnerShare([dict(v.steps) for _, v in variants]) if eff.learner and len(variants) > 1 else None
        for vid, veff in variants:
            try:
                if sample is None:
                    out = compute_effect(
                        model, data, reference, veff, cfg.seed, target_class, train, cfg.target, refits=refits
                    )
                else:
                    out = compute_effect_dask(
                        model, data, reference, veff, cfg.seed, target_class, train, cfg.target, sample, refits
                    )
                summ = out["summary"]
                if vid in joint_ids and keep is not None:  # a joint region's effect: its own result, all rows
                    whole = out["result"] if out["dask_result"] is None else out["dask_result"]
                    keep["effects"][vid] = {"result": whole, "effect": veff, "train": train}
                label_intervals(summ, covariance)  # the delta ones computed with the scaled covariance say so
                summ["id"] = vid
                summ["level"] = json_num(veff.level)
                summ["target_class"] = json_num(target_class)
                # the second path reads the evaluated rows in memory: on Dask data those of the seeded sample,
                # when it holds every evaluated row
                summ["second_path"] = (
                    audit_effect(model, data if sample is None else sample, out["result"], summ, target_class, roles)
                    if sample is None or int(out["result"].n) == int(summ["n"])
                    else not_audited(
                        f"engine: dask keeps the rows out of core and the sample of {count(len(sample), 'row')} holds "
                        f"{int(out['result'].n):,} of the {int(summ['n']):,} evaluated rows; the second path reads "
                        "every evaluated row in memory"
                    )
                )
                summ["figures"] = figures.effect_figures(
                    out["result"], out["partition"], veff, fig_cfg, out_dir, vid, fig_scale
                )
                _write_tables(out, summ, out_dir, vid)
                if challenger is not None:
                    summ["challenger"] = challenger_summary(
                        model,
                        challenger,
                        data,
                        reference,
                        veff,
                        summ,
                        int(cfg.seed),
                        target_class,
                        train,
                        cfg.target,
                        out["result"],
                        refits,
                    )
                    _label_difference(summ["challenger"], covariance, challenger_covariance)
                    # which model it was, in the report and results.json, not only in build.json
                    summ["challenger"]["model"] = {
                        k: challenger_info.get(k) for k in ("kind", "source", "sha256", "sha256_of")
                    }
                levels = level_summaries(model, veff, summ, trains, cfg.target, target_class, int(cfg.seed), share)
                if levels is not None:
                    summ["levels"] = levels
            except Exception as exc:  # noqa: BLE001 - loud, one line, naming the effect (and level)
                err = None
                if isinstance(exc, fme.ExtrapolationError):  # x itself outside the detector's region?
                    err = all_extrapolation_error(cfg, veff, data, reference, int(cfg.seed))
                err = err or analysis_error(cfg, ("effects", i - 1, "steps"), exc)
                if veff.level is not None and not isinstance(exc, ConfigError):
                    err = ConfigError(f"{err} (level {veff.level!r})")
                raise err from exc
            group.append(summ)
        for summ in group:  # effect contracts: tested below, Holm-adjusted over the whole report
            # bounds on the scale the report shows the AME on (a class probability's: percentage points)
            summ["contracts"] = contract_rows(summ, eff.expect, scale=fig_scale, unit=fig_cfg.target_unit)
        summaries.append(
            {"id": eff.id, "title": eff.title, "why": eff.why, "config": _jsonable(eff.to_dict()), "variants": group}
        )
    adjust_contracts([r for g in summaries for v in g["variants"] for r in v["contracts"]])
    return summaries


def _label_difference(c: dict, champion: str | None, challenger: str | None) -> None:
    """A delta interval of the champion-challenger difference says which covariance each model's side used when
    either was scaled by its dispersion (in place)."""
    if (champion or challenger) and str(c.get("difference_inference", "")).startswith("delta"):
        c["difference_inference"] += (
            f"; covariance: champion {champion or 'as fitted'}, challenger {challenger or 'as fitted'}"
        )


def _write_tables(out: dict, summ: dict, out_dir: Path, vid: str) -> None:
    res = out["result"]  # engine: dask: the sampled rows (the per-row table); the counts are of all rows
    n_excluded = (res if out.get("dask_result") is None else out["dask_result"]).n_excluded
    base = {"term": " & ".join(summ["features"]), "contrast": summ["step_label"]}
    rest = {
        "n": summ["n"],
        "n_excluded": n_excluded,
        "sd_fme": summ["sd"],
        "q25": summ["q25"],
        "q75": summ["q75"],
        "anlm": summ.get("anlm"),
    }
    # one row per interval, the report's primary interval first, each labelled
    rows = [{**base, **iv, **rest} for iv in summ["intervals"]]
    pd.DataFrame(rows).to_csv(out_dir / "tables" / f"{vid}-ame.csv", index=False, lineterminator="\n")
    if out.get("stability") is not None:
        out["stability"].to_csv(out_dir / "tables" / f"{vid}-stability.csv", index=False, lineterminator="\n")
    res.results.to_csv(out_dir / "tables" / f"{vid}-fme.csv", lineterminator="\n")
    if out["partition"] is not None:
        leaves = relabel_table(out["partition"].leaves, summ.get("covariance"))
        leaves.to_csv(out_dir / "tables" / f"{vid}-leaves.csv", index=False, lineterminator="\n")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return json_num(obj)


def write_results(path: Path, payload: dict) -> None:
    """results.json with sorted keys and full precision (the report's only numeric input), in its typed form
    (:func:`fme.report.analysis.typed.typed_payload`: quantities, labelled intervals, claims)."""
    payload = typed_payload(payload) if "effects" in payload else payload
    Path(path).write_text(
        json.dumps(_jsonable(payload), indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8"
    )


def python_info() -> dict:
    return {"executable": sys.executable, "platform": platform.platform()}
