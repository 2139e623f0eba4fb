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
every run. With ``engine: dask`` the evaluation data (``data``) and
``reference_data`` stay Dask DataFrames (:func:`read_dask`: lazy, numbered
0..n-1 across files) and the report's effects run out of core on the cluster;
``test_data`` and ``train_data`` (model fit, bootstrap refits: in memory by
nature) are gathered into pandas frames (:func:`read_frame`).

The cluster: one distributed client per analysis kernel (:func:`session`), on
the configured ``scheduler`` or on a local cluster started on first use and
closed by :func:`close_session` -- called at interpreter exit, so the
papermill kernel closes it after the last cell and after a failing one alike.

Provenance: one file's sha256 is that of its bytes; several files' is the
sha256 of their sorted relative names and each file's sha256.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas and numpy load when data are read, not when a config is checked
    import numpy as np
    import pandas as pd

__all__ = [
    "GLOB_CHARS",
    "is_glob",
    "data_files",
    "file_sha256",
    "files_sha256",
    "read_frame",
    "read_dask",
    "dask_session",
    "session",
    "session_info",
    "close_session",
    "sample_rows",
]

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
        return sorted(
            f
            for f in p.rglob("*")
            if f.is_file()
            and f.suffix.lower() in _PARQUET
            and not any(part.startswith(("_", ".")) for part in f.relative_to(p).parts)
        )
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
        with Client(scheduler, timeout="10s") as client:
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


#: The kernel-wide client of ``engine: dask`` (:func:`session`): (scheduler address or None, client, cluster).
_SESSION: dict[str, Any] = {}


def session(scheduler: str | None) -> Any:
    """The analysis kernel's distributed client, started on first use (a local cluster unless ``scheduler``).

    Every later call with the same ``scheduler`` returns the same client, so the lazy Dask frames of
    ``data`` and ``reference_data`` are computed on one cluster for the whole analysis. Closed by
    :func:`close_session` (registered with :mod:`atexit`: the papermill kernel's exit closes it, after
    a failed cell too).
    """
    if _SESSION and _SESSION["scheduler"] == scheduler and _SESSION["client"].status == "running":
        return _SESSION["client"]
    close_session()
    from distributed import Client, LocalCluster

    if scheduler:
        client, cluster = Client(scheduler, timeout="10s", set_as_default=True), None
    else:
        # a free port, not 8787 (see dask_session)
        cluster = LocalCluster(processes=True, threads_per_worker=1, dashboard_address="127.0.0.1:0")
        try:
            client = Client(cluster, set_as_default=True)
        except BaseException:
            cluster.close()
            raise
    _SESSION.update(scheduler=scheduler, client=client, cluster=cluster)
    return client


def session_info() -> dict[str, Any] | None:
    """The cluster of the kernel's :func:`session`: ``scheduler`` (its address, or ``local`` for the local cluster
    the build started), ``workers``, ``threads`` (over all workers) and ``threads_per_worker`` (the distinct
    counts, ascending); None without an open session."""
    if not _SESSION or _SESSION["client"].status != "running":
        return None
    workers = _SESSION["client"].scheduler_info().get("workers", {})
    each = [int(w.get("nthreads", 0)) for w in workers.values()]
    return {
        "scheduler": _SESSION["scheduler"] or "local",
        "workers": len(workers),
        "threads": int(sum(each)),
        "threads_per_worker": sorted(set(each)),
    }


def close_session() -> None:
    """Close the client of :func:`session` and the local cluster it started (no-op without one)."""
    if not _SESSION:
        return
    client, cluster = _SESSION["client"], _SESSION["cluster"]
    _SESSION.clear()
    try:
        client.close()
    finally:
        if cluster is not None:
            cluster.close()


atexit.register(close_session)


def _read(files: list[Path]) -> Any:
    parquet = [f.suffix.lower() in _PARQUET for f in files]
    if any(parquet) and not all(parquet):
        raise ValueError("the path matches both Parquet and other files; name files of one format")
    import dask.dataframe as dd

    return dd.read_parquet([str(f) for f in files]) if all(parquet) else dd.read_csv([str(f) for f in files])


def read_frame(files: list[Path], engine: str, scheduler: str | None = None) -> pd.DataFrame:
    """The rows of ``files`` (all Parquet or all CSV) as one pandas frame, in file order.

    With ``engine: dask`` the files are read in parallel on the kernel's :func:`session` when one is
    open, else on a cluster started and closed for this read (:func:`dask_session`).
    """
    import pandas as pd

    if engine != "dask":
        f = files[0]
        return pd.read_parquet(f) if f.suffix.lower() in _PARQUET else pd.read_csv(f)
    ddf = _read(files)
    if _SESSION and _SESSION["scheduler"] == scheduler:
        frame = ddf.compute()
    else:
        with dask_session(scheduler):
            frame = ddf.compute()
    if not frame.index.is_unique:  # every file has its own 0..k index
        frame = frame.reset_index(drop=True)
    return frame


def _renumber(part: pd.DataFrame, start: int) -> pd.DataFrame:
    import pandas as pd

    part = part.copy(deep=False)
    part.index = pd.RangeIndex(start, start + len(part))
    return part


def _part_length(part: pd.DataFrame) -> int:
    return len(part)


def read_dask(files: list[Path], scheduler: str | None = None) -> tuple[Any, int]:
    """The rows of ``files`` as a lazy Dask DataFrame indexed 0..n-1 in file order, and n.

    One pass counts each partition's rows (only the counts reach the client); the index then
    equals that of the same rows read into pandas and numbered (:func:`read_frame`), so the
    fMEs of a row carry the same label under both engines.
    """
    import dask
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd
    from dask import delayed

    session(scheduler)
    ddf = _read(files)
    parts = ddf.to_delayed()
    lengths = dask.compute(*[delayed(_part_length)(p) for p in parts])
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    n = int(starts[-1])
    meta = ddf._meta.copy()
    meta.index = pd.RangeIndex(0, 0)
    renumbered = [delayed(_renumber)(p, int(s)) for p, s in zip(parts, starts[:-1])]
    keep = [k for k, length in enumerate(lengths) if length]  # empty files add nothing (and would break divisions)
    if not keep:
        raise ValueError("the files hold no rows")
    divisions = tuple(int(starts[k]) for k in keep) + (n - 1,)  # known: a row number finds its partition
    frame = dd.from_delayed([renumbered[k] for k in keep], meta=meta, divisions=divisions, verify_meta=False)
    return frame, n


def _pick(part: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    import numpy as np

    pos = np.asarray(part.index, dtype=np.int64)
    return part[np.isin(pos, rows)]


def sample_rows(frame: Any, n: int, size: int, seed: int) -> tuple[pd.DataFrame, bool]:
    """A seeded sample of ``size`` rows of the Dask ``frame`` (indexed 0..n-1 by :func:`read_dask`), in row order.

    All ``n`` rows when there are no more than ``size`` (second value True). The rows drawn depend on
    ``n``, ``size`` and ``seed`` only, not on how the files are split into partitions; only the
    sampled rows reach the client.
    """
    import numpy as np

    if n <= size:
        return frame.compute(), True
    rows = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))
    return frame.map_partitions(_pick, rows, meta=frame._meta).compute(), False
