"""Data files of a report: one CSV/Parquet file, or with ``engine: dask`` a Parquet dataset or a glob.

A config's ``data.path`` (and ``reference_data``, ``test_data``,
``train_data``) names, relative to the config file:

* one ``.csv`` or ``.parquet``/``.pq`` file (any engine), read by pandas;
* with ``engine: dask``: also a directory (a Parquet dataset: every
  ``.parquet``/``.pq`` file below it, names starting with ``_`` or ``.``
  skipped as metadata) or a glob (``parts/*.parquet``, ``logs/**/*.csv``),
  read by Dask on the configured ``scheduler`` (an address) or on a local
  cluster started and closed for the read.

The files are read in sorted order, so the rows come in the same order on
every run. The rows are then gathered into one pandas frame for the
analysis: ``engine: dask`` reads many files in parallel, it does not (yet)
run the report's effects out of core.

Provenance: one file's sha256 is that of its bytes; several files' is the
sha256 of their sorted relative names and each file's sha256.
"""

from __future__ import annotations

import glob
import hashlib
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["GLOB_CHARS", "is_glob", "data_files", "file_sha256", "files_sha256", "read_frame", "dask_session"]

GLOB_CHARS = frozenset("*?[")
_PARQUET = (".parquet", ".pq")


def is_glob(rel: str) -> bool:
    return any(ch in rel for ch in GLOB_CHARS)


def _resolve(base: Path, rel: str) -> Path:
    p = Path(rel)
    return p if p.is_absolute() else base / p


def data_files(base: str | Path, rel: str) -> list[Path]:
    """The files ``rel`` names (relative to ``base``), sorted; empty when there are none."""
    p = _resolve(Path(base), rel)
    if is_glob(rel):
        return sorted(Path(f) for f in glob.glob(str(p), recursive=True) if Path(f).is_file())
    if p.is_dir():
        return sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in _PARQUET
                      and not any(part.startswith(("_", ".")) for part in f.relative_to(p).parts))
    return [p] if p.is_file() else []


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def files_sha256(files: list[Path], base: str | Path) -> str:
    """sha256 of one file's bytes; for several, of their sorted names (relative to ``base``) and sha256s."""
    if len(files) == 1:
        return file_sha256(files[0])
    h = hashlib.sha256()
    for f in files:
        try:
            name = str(f.relative_to(base))
        except ValueError:
            name = str(f)
        h.update(name.encode() + b"\0" + bytes.fromhex(file_sha256(f)))
    return h.hexdigest()


@contextmanager
def dask_session(scheduler: str | None) -> Iterator[Any]:
    """A distributed client on ``scheduler``, or on a local cluster started here and closed on exit."""
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler, timeout="30s") as client:
            yield client
        return
    # dashboard_address=None still binds the scheduler's HTTP server to port 8787 ("Port 8787 is already in
    # use" when another cluster has it): a free port on localhost instead
    cluster = LocalCluster(processes=True, threads_per_worker=1, dashboard_address="127.0.0.1:0")
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def read_frame(files: list[Path], engine: str, scheduler: str | None = None) -> pd.DataFrame:
    """The rows of ``files`` (all Parquet or all CSV) as one pandas frame, in file order."""
    parquet = [f.suffix.lower() in _PARQUET for f in files]
    if engine != "dask":
        f = files[0]
        return pd.read_parquet(f) if parquet[0] else pd.read_csv(f)
    if any(parquet) and not all(parquet):
        raise ValueError("the path matches both Parquet and other files; name files of one format")
    import dask.dataframe as dd

    ddf = dd.read_parquet([str(f) for f in files]) if all(parquet) else dd.read_csv([str(f) for f in files])
    with dask_session(scheduler):
        frame = ddf.compute()
    if not frame.index.is_unique:  # every file has its own 0..k index
        frame = frame.reset_index(drop=True)
    return frame
