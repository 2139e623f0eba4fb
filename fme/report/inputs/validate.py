"""Check a loaded report config against its files before anything is computed.

:func:`fme.report.inputs.config.load_config` checks the config on its own (schema,
duplicate keys, parameter names); this module checks what needs the outside
world but neither the model nor the data:

* :func:`check_inputs` (cheap, before the analysis starts): the model file,
  the data files (a directory or glob only with ``engine: dask``, and then
  holding files) and the entry point's module exist;
* :func:`train_data_specs`: every bootstrap ``train_data`` the config names.

The checks against the loaded data and model run inside the analysis
(:mod:`fme.report.analysis.checks`). Every problem is a
:class:`~fme.report.inputs.config.ConfigError` with ``<config>:<line>: <key>: <problem>``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

from .config import ConfigError, ReportConfig, config_error

__all__ = ["check_inputs", "train_data_specs", "analysis_error", "names_text"]

_DATA_KEYS = ("data", "reference_data", "test_data")


def names_text(values: list, limit: int = 12) -> str:
    """``'a', 'b', ... (40 in all)``: the values a message lists, at most ``limit`` of them."""
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def train_data_specs(cfg: ReportConfig) -> list[tuple[tuple, dict]]:
    """``(config key path, data spec)`` of every distinct bootstrap ``train_data``, in config order.

    The top-level ``inference`` first, then each effect's (an effect inheriting the top level's
    ``train_data`` adds nothing new).
    """
    found: list[tuple[tuple, dict]] = []
    seen: set[str] = set()
    candidates = [(("inference",), cfg.inference)]
    candidates += [(("effects", i, "inference"), eff.inference) for i, eff in enumerate(cfg.effects)]
    for key, spec in candidates:
        if not isinstance(spec, Mapping) or spec.get("method") != "bootstrap" or "train_data" not in spec:
            continue
        ident = repr(sorted(spec["train_data"].items()))
        if ident not in seen:
            seen.add(ident)
            found.append((key + ("train_data",), spec["train_data"]))
    return found


def check_inputs(cfg: ReportConfig) -> None:
    """Raise :class:`ConfigError` when the model file, a data file or the entry point's module is missing.

    Parameters
    ----------
    cfg : ReportConfig
        A config from :func:`~fme.report.inputs.config.load_config`.
    """
    base = cfg.directory
    rel = cfg.model.get("joblib")
    if rel is not None:
        p = Path(rel) if Path(rel).is_absolute() else base / rel
        if not p.is_file():
            raise config_error(cfg, ("model", "joblib"), f"model file not found: {p}; fix the path (relative to "
                                                          "the config)")
    data_keys = [((key,), getattr(cfg, key)) for key in _DATA_KEYS]
    inference = [(("inference",), cfg.inference)] + [
        (("effects", i, "inference"), eff.inference) for i, eff in enumerate(cfg.effects)]
    data_keys += [(k + ("train_data",), spec.get("train_data")) for k, spec in inference if isinstance(spec, Mapping)]
    for key, spec in data_keys:
        if spec and "path" in spec:
            _check_data_path(cfg, key + ("path",), spec["path"], base)
    entry = cfg.model.get("entry_point")
    if entry is not None:
        module = entry.split(":")[0]
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError) as exc:
            spec, detail = None, f" ({type(exc).__name__}: {exc})"
        else:
            detail = ""
        if spec is None:
            raise config_error(cfg, ("model", "entry_point"),
                               f"module {module!r} cannot be imported{detail}; check the name and that its "
                               "package is installed or on PYTHONPATH")


def _check_data_path(cfg: ReportConfig, key: tuple, rel: str, base: Path) -> None:
    """One existing file, or (``engine: dask``) a Parquet dataset directory or a glob matching files."""
    from .sources import data_files, is_glob

    p = Path(rel) if Path(rel).is_absolute() else base / rel
    dask = cfg.engine == "dask"
    if is_glob(rel) or p.is_dir():
        what = "a glob" if is_glob(rel) else "a directory (a Parquet dataset)"
        if not dask:
            raise config_error(cfg, key, f"{p} is {what}; several files are read with engine: dask (add "
                                         "engine: dask at the top level) or name one file")
        if not data_files(base, rel):
            found = "no file matches it" if is_glob(rel) else "it holds no .parquet/.pq file"
            raise config_error(cfg, key, f"{p} is {what} but {found}; fix the path (relative to the config)")
        return
    if not p.is_file():
        raise config_error(cfg, key, f"data file not found: {p}; fix the path (relative to the config)")


def analysis_error(cfg: ReportConfig, key_path: tuple, exc: BaseException) -> ConfigError:
    """Wrap an exception raised while computing into a one-line :class:`ConfigError` at ``key_path``."""
    if isinstance(exc, ConfigError):
        return exc
    text = " ".join(str(exc).split()) or type(exc).__name__
    return config_error(cfg, key_path, f"{type(exc).__name__}: {text}")
