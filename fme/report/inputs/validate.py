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
import socket
from collections.abc import Mapping
from pathlib import Path

from .config import ConfigError, ReportConfig, config_error

__all__ = ["check_interaction_features", "check_inputs", "train_data_specs", "analysis_error", "names_text"]

_DATA_KEYS = ("data", "reference_data", "test_data")


def names_text(values: list, limit: int = 12) -> str:
    """``'a', 'b', ... (40 in all)``: the values a message lists, at most ``limit`` of them."""
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def train_data_specs(cfg: ReportConfig) -> list[tuple[tuple, dict]]:
    """``(config key path, data spec)`` of every distinct ``train_data`` (bootstrap refits, learner- and
    data-level estimates), in config order.

    The top-level ``inference`` first, then each effect's ``inference``, ``learner`` and ``data_level`` (a key
    inheriting a ``train_data`` already named adds nothing new).
    """
    found: list[tuple[tuple, dict]] = []
    seen: set[str] = set()
    candidates = [(("inference",), cfg.inference)]
    for i, eff in enumerate(cfg.effects):
        candidates += [(("effects", i, k), getattr(eff, k)) for k in ("inference", "learner", "data_level")]
    for key, spec in candidates:
        if (
            not isinstance(spec, Mapping)
            or "train_data" not in spec
            or (key[-1] == "inference" and spec.get("method") != "bootstrap")
        ):
            continue
        ident = repr(sorted(spec["train_data"].items()))
        if ident not in seen:
            seen.add(ident)
            found.append((key + ("train_data",), spec["train_data"]))
    return found


#: Seconds a configured Dask scheduler has to answer before the build stops (before any computation).
SCHEDULER_TIMEOUT = 5.0


def check_scheduler(cfg: ReportConfig, timeout: float = SCHEDULER_TIMEOUT) -> None:
    """Raise :class:`ConfigError` at ``scheduler`` when no scheduler answers at the configured address: a TCP
    connection is tried for ``timeout`` seconds before anything is computed (Dask itself would wait 30 s and
    blame the data files)."""
    address = cfg.scheduler
    if not address or cfg.engine != "dask":
        return
    protocol, _, rest = address.rpartition("://")
    if protocol not in ("", "tcp", "tls"):
        return  # inproc, ucx, ws: no plain TCP endpoint to try
    host, _, port = rest.rstrip("/").rpartition(":")
    host = (host or rest).strip("[]")
    try:
        with socket.create_connection((host, int(port) if port.isdigit() else 8786), timeout=timeout):
            pass
    except OSError as exc:
        raise config_error(
            cfg,
            ("scheduler",),
            (
                f"no Dask scheduler answers at {address} (tried for {timeout:g} s: {exc.strerror or exc}); start it "
                f"there (dask scheduler --port {port or 8786}), fix the address, or remove the scheduler key to use a "
                "local cluster"
            ),
        ) from None


def check_inputs(cfg: ReportConfig) -> None:
    """Raise :class:`ConfigError` when the model file, a data file or the entry point's module is missing.

    Parameters
    ----------
    cfg : ReportConfig
        A config from :func:`~fme.report.inputs.config.load_config`.
    """
    base = cfg.directory
    check_scheduler(cfg)
    rel = cfg.model.get("joblib")
    if rel is not None:
        p = Path(rel) if Path(rel).is_absolute() else base / rel
        if not p.is_file():
            raise config_error(
                cfg, ("model", "joblib"), f"model file not found: {p}; fix the path (relative to the config)"
            )
    data_keys = [((key,), getattr(cfg, key)) for key in _DATA_KEYS]
    data_keys += [(key, spec) for key, spec in train_data_specs(cfg)]
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
            raise config_error(
                cfg,
                ("model", "entry_point"),
                f"module {module!r} cannot be imported{detail}; check the name and that its "
                "package is installed or on PYTHONPATH",
            )


def _data_columns(cfg: ReportConfig) -> list[str] | None:
    """The columns of the evaluation data, read from its header (a CSV's first line, a Parquet file's
    schema) without reading rows; None when they cannot be read cheaply."""
    from .sources import data_files

    spec = cfg.data or {}
    files = data_files(cfg.directory, spec["path"]) if "path" in spec else []
    if not files:
        return None
    first = files[0]
    try:
        if first.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return list(pq.read_schema(first).names)
        import pandas as pd

        return [str(c) for c in pd.read_csv(first, nrows=0).columns]
    except Exception:  # noqa: BLE001 - an unreadable header is reported when the notebook reads the data
        return None


def check_interaction_features(cfg: ReportConfig) -> None:
    """Raise :class:`ConfigError` at its key and line when an ``interactions:`` pair names a feature that is not
    a column of the data (found before the notebook starts)."""
    pairs = cfg.interactions if isinstance(cfg.interactions, list) else []
    if not pairs:
        return
    columns = _data_columns(cfg)
    if columns is None:
        return
    for i, pair in enumerate(pairs):
        for side in ("a", "b"):
            for feature in pair.get(side) or {}:
                if feature not in columns:
                    raise config_error(
                        cfg,
                        ("interactions", i, side, feature),
                        f"unknown feature {feature!r}: not a column of the data (its columns: "
                        f"{', '.join(columns[:20])}{' ...' if len(columns) > 20 else ''})",
                    )


def _check_data_path(cfg: ReportConfig, key: tuple, rel: str, base: Path) -> None:
    """One existing file, or (``engine: dask``) a Parquet dataset directory or a glob matching files."""
    from .sources import data_files, is_glob

    p = Path(rel) if Path(rel).is_absolute() else base / rel
    dask = cfg.engine == "dask"
    if is_glob(rel) or p.is_dir():
        what = "a glob" if is_glob(rel) else "a directory (a Parquet dataset)"
        if not dask:
            raise config_error(
                cfg,
                key,
                f"{p} is {what}; several files are read with engine: dask (add "
                "engine: dask at the top level) or name one file",
            )
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
