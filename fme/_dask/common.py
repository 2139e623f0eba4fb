"""Chunk plumbing every module of the Dask engine shares: the optional import, seeds and sample sizes,
model frames per chunk, the probe of the first rows, the tree reduction of summaries, and the
reference data's envelope and seeded sample.

Dask calls the pieces of a DataFrame "partitions"; here they are chunks, since fme's partitions are the
cAME subspaces.
"""

from __future__ import annotations

import io
import numbers
import threading
import warnings
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._core.summary import Summary
from .._utils.validation import check_dask_offsets, is_categorical, is_dask_collection
from ..exceptions import DataError, ParameterError

__all__ = [
    "FIT_SAMPLE_SIZE",
    "require_dask",
    "as_dask",
    "reference_sample",
    "envelope_frame",
    "Shipped",
    "ship",
    "lazy_probe",
    "checked_probe",
    "as_delayed",
    "POSITION",
    "with_positions",
]


#: Rows of the seeded sample non-envelope detectors (and ``came``'s tree) are fitted on.
FIT_SAMPLE_SIZE = 1_000_000


_TREE_FAN_IN = 16


def require_dask() -> Any:
    """``dask.dataframe``, or a ParameterError naming the extra to install."""
    try:
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover - the test environment has dask
        raise ParameterError("Dask data need the optional dependencies: pip install 'fme[dask]'.") from exc
    return dd


def check_sample_size(sample_size: Any) -> int:
    if sample_size is None:
        return FIT_SAMPLE_SIZE
    if isinstance(sample_size, bool) or not isinstance(sample_size, numbers.Integral) or sample_size < 1:
        raise ParameterError(f"sample_size must be a positive integer, got {sample_size!r}.")
    return int(sample_size)


def as_dask(frame: Any, name: str) -> Any:
    """A Dask DataFrame as given, a pandas one as one partition."""
    dd = require_dask()
    if is_dask_collection(frame):
        return frame
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"`{name}` must be a pandas or Dask DataFrame, got {type(frame).__name__}.")
    return dd.from_pandas(frame, npartitions=1)


def model_frames(model: Any, frame: Any, exposure: Any = None, offset: Any = None) -> Any:
    """``frame`` as the model reads it, partition by partition (:func:`fme._adapters.model_frame`); on Dask
    data ``exposure=``/``offset=`` are a column name or a number (an array cannot follow the partitions)."""
    check_dask_offsets(exposure, offset)
    meta = model_frame(model, frame._meta, exposure=exposure, offset=offset)
    if meta is frame._meta:
        return frame
    return frame.map_partitions(lambda part: model_frame(model, part, exposure=exposure, offset=offset), meta=meta)


#: The column :func:`with_positions` adds (parenthesised: never a formula's name).
POSITION = "(row position)"


def _ones(part: pd.DataFrame) -> pd.Series:
    return pd.Series(np.ones(len(part), dtype=np.int64), index=part.index)


def with_positions(frame: Any) -> Any:
    """``frame`` with the column :data:`POSITION`: each row's position among all rows (0, 1, ... over the chunks
    in order), lazily (a cumulative sum over the chunks), as ``vcov='unconditional'`` pairs each row with its
    share of the parameters in the estimation sample."""
    if POSITION in frame.columns:
        raise DataError(f"the data has a column {POSITION!r}, the name fme gives the rows' positions; rename it.")
    ones = frame.map_partitions(_ones, meta=pd.Series(dtype=np.int64))
    return frame.assign(**{POSITION: ones.cumsum() - 1})


#: Models a worker process keeps between graphs (:class:`Shipped`), most recently used last.
_KEPT: OrderedDict[bytes, Any] = OrderedDict()
_KEPT_LOCK = threading.Lock()
#: At most this many models are kept, each at most this large (pickled); larger ones are unpickled per graph.
KEPT_MODELS, KEPT_BYTES = 2, 256 * 2**20


class Shipped:
    """One object every chunk's task reads (the plans with their model, a tree): :func:`ship` makes it one
    node of the graph instead of a copy in every task, and its fixed token spares Dask from pickling it to
    name a lazy collection (``map_partitions`` hashes its arguments).

    ``shared`` (the model) is pickled apart from ``value`` and named by the digest of its pickle: a worker
    process that unpickled the same bytes before takes its kept copy (:data:`KEPT_MODELS`), so a model is
    unpickled once per worker for a series of calls, not once per call. Unpickling costs more than it seems:
    a statsmodels formula model rebuilds its design matrices from its training rows (70 ms for 20,000 rows).
    Equal digests mean equal bytes, hence an equal object; a model refitted in place has new bytes.
    """

    __slots__ = ("value", "token", "shared")

    def __init__(self, value: Any, shared: tuple[Any, ...] = ()) -> None:
        import uuid

        self.value = value
        self.token = uuid.uuid4().hex
        self.shared = tuple(shared)

    def __dask_tokenize__(self) -> str:
        return self.token

    def __reduce__(self) -> tuple[Any, ...]:
        if not self.shared:
            return (_unpickle_shipped, (self.value, self.token))
        import hashlib

        import cloudpickle

        blobs = [cloudpickle.dumps(obj, protocol=5) for obj in self.shared]
        shared = [(hashlib.blake2b(b, digest_size=20).digest(), b) for b in blobs]
        ids = {id(obj): i for i, obj in enumerate(self.shared)}

        class Packer(cloudpickle.CloudPickler):  # type: ignore[misc]  # cloudpickle: untyped
            def persistent_id(self, obj: Any) -> Any:
                return ids.get(id(obj))

        buf = io.BytesIO()
        Packer(buf, protocol=5).dump(self.value)
        return (_unpack_shipped, (buf.getvalue(), shared, self.token))


def _unpickle_shipped(value: Any, token: str, shared: tuple[Any, ...] = ()) -> Shipped:
    out = Shipped.__new__(Shipped)
    out.value, out.token, out.shared = value, token, shared
    return out


def _kept(digest: bytes, blob: bytes) -> Any:
    """The object pickled as ``blob``: this process's kept copy when it has one, else unpickled (and kept)."""
    import pickle

    with _KEPT_LOCK:
        if digest in _KEPT:
            _KEPT.move_to_end(digest)
            return _KEPT[digest]
    obj = pickle.loads(blob)
    if len(blob) <= KEPT_BYTES:
        with _KEPT_LOCK:
            obj = _KEPT.setdefault(digest, obj)
            _KEPT.move_to_end(digest)
            while len(_KEPT) > KEPT_MODELS:
                _KEPT.popitem(last=False)
    return obj


def _unpack_shipped(payload: bytes, shared: list[tuple[bytes, bytes]], token: str) -> Shipped:
    import pickle

    objs = [_kept(digest, blob) for digest, blob in shared]

    class Unpacker(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            return objs[pid]

    return _unpickle_shipped(Unpacker(io.BytesIO(payload)).load(), token, tuple(objs))


def _cluster_client() -> Any:
    """The distributed client that runs Dask's computations now, or None (another scheduler)."""
    try:
        from distributed import default_client

        client = default_client()  # type: ignore[no-untyped-call]  # distributed: untyped
    except (ImportError, ValueError):
        return None
    import dask.base

    return client if dask.base.get_scheduler() == client.get else None  # type: ignore[no-untyped-call]  # dask: untyped


def ship(value: Any, shared: tuple[Any, ...] = ()) -> Any:
    """``value`` as what every chunk's task takes (a :class:`Shipped`; ``shared``: the model, pickled apart
    and kept by the workers), serialised once and sent to each worker once instead of a copy inside every
    task. On a distributed cluster it is broadcast to every worker before the pass (one round trip), so
    that the scheduler places each chunk's task by its chunk alone: as one node of the graph it lives on
    one worker, and the scheduler then moves chunks to that worker (3 of 4 chunks on one of 2 workers, the
    pass a third slower). Other schedulers take it as one node of the graph."""
    from dask.delayed import delayed

    shipped = Shipped(value, shared)
    client = _cluster_client()
    if client is not None:
        return client.scatter(shipped, broadcast=True, hash=False)
    return delayed(shipped, name=f"fme-shipped-{shipped.token}", traverse=False)


def as_delayed(obj: Any) -> Any:
    """A Dask frame, series or scalar as one Delayed of its computed value, so that it can be computed with
    Delayed reductions in one call (Dask warns about, and materialises, mixed collections)."""
    from dask.delayed import Delayed

    if isinstance(obj, Delayed):
        return obj
    if obj.ndim == 0:  # a Dask scalar (it has ``npartitions`` too, but one Delayed, not a list)
        return obj.to_delayed()
    if obj.npartitions > 1:
        obj = obj.repartition(npartitions=1)
    return obj.to_delayed()[0]


_PROBE_ROWS = 1000


def _head(part: pd.DataFrame) -> pd.DataFrame:
    return part.head(_PROBE_ROWS)


def lazy_probe(frame: Any) -> Any:
    """The first rows of ``frame`` (at most 1000 of its first chunk), not yet computed: computed with the
    other small reductions a verb needs before its pass (one round trip), then :func:`checked_probe`."""
    from dask.delayed import delayed

    return delayed(_head)(frame.to_delayed()[0])


def checked_probe(probe: pd.DataFrame, frame: Any, name: str) -> pd.DataFrame:
    """The computed probe; when the first chunk of ``frame`` has no rows, the first rows of its first 8
    chunks (one more computation); a DataError when they have none either."""
    if len(probe) == 0 and frame.npartitions > 1:
        # the chunks as Dask will compute them (a column selection of Parquet data may have fewer chunks than
        # its npartitions said before optimisation: head(npartitions=k) then fails)
        from dask.base import compute
        from dask.delayed import delayed

        firsts = compute(*[delayed(_head)(p) for p in frame.to_delayed()[:8]])  # type: ignore[no-untyped-call]  # dask: untyped
        probe = pd.concat([f for f in firsts if len(f)] or [firsts[0]]).head(_PROBE_ROWS)
    if len(probe) == 0:
        raise DataError(
            f"`{name}` has no rows in its first partitions; pass data with rows (or repartition away empty partitions)."
        )
    return probe


def merge_summaries(*summaries: Summary) -> Summary:
    out = summaries[0]
    for s in summaries[1:]:
        out = out.merge(s)
    return out


def tree_reduce(items: list[Any], merge: Any = merge_summaries) -> Any:
    """``merge`` of ``items`` (Dask delayed objects) by a tree of fan-in 16, in their order."""
    from dask.delayed import delayed

    while len(items) > 1:
        items = [delayed(merge)(*items[i : i + _TREE_FAN_IN]) for i in range(0, len(items), _TREE_FAN_IN)]
    return items[0]


def _envelope_parts(part: pd.DataFrame, numeric: list[str], categorical: list[str]) -> tuple[Any, ...]:
    num = part[numeric].to_numpy(dtype=float)
    num = np.where(np.isfinite(num), num, np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanmin(num, axis=0) if num.shape[0] else np.full(len(numeric), np.nan)
        hi = np.nanmax(num, axis=0) if num.shape[0] else np.full(len(numeric), np.nan)
    levels = {c: set(part[c].dropna().unique().tolist()) for c in categorical}
    return lo, hi, levels


def reference_sample(ref: Any, sample_size: int, seed: int) -> tuple[pd.DataFrame, int]:
    """All rows of the Dask ``ref`` when there are at most ``sample_size``, else a seeded sample; and its length."""
    n_ref = int(ref.shape[0].compute())
    if n_ref <= sample_size:
        return ref.compute(), n_ref
    return ref.sample(frac=min(1.0, sample_size / n_ref), random_state=seed).compute(), n_ref


def envelope_frame(ref: Any) -> pd.DataFrame:
    """A small pandas frame with the finite min/max of every numeric column and the categorical levels
    of the Dask ``ref`` (one pass): the envelope detector fitted on it equals the one fitted on ``ref``."""
    from dask.base import compute
    from dask.delayed import delayed

    cols = list(ref.columns)
    meta = ref._meta
    categorical = [c for c in cols if is_categorical(meta[c])]
    numeric = [c for c in cols if c not in categorical]
    parts = compute(*[delayed(_envelope_parts)(p, numeric, categorical) for p in ref.to_delayed()])  # type: ignore[no-untyped-call]  # dask: untyped
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanmin(np.vstack([p[0] for p in parts]), axis=0)
        hi = np.nanmax(np.vstack([p[1] for p in parts]), axis=0)
    levels = {c: set().union(*[p[2][c] for p in parts]) for c in categorical}
    # A frame with the same bounds and levels: the detector's own fit then gives the pandas envelope.
    size = max([2] + [len(v) for v in levels.values()])
    frame = {}
    for j, c in enumerate(numeric):
        frame[c] = np.r_[lo[j], hi[j], np.full(size - 2, lo[j])]
    for c in categorical:
        vals = sorted(levels[c], key=repr) or [None]
        vals = vals + [vals[0]] * (size - len(vals))
        dtype = meta[c].dtype
        if isinstance(dtype, pd.CategoricalDtype) and not levels[c] <= set(dtype.categories):
            # a Parquet column read with unknown categories (Dask's placeholder '__UNKNOWN_CATEGORIES__'): cast
            # to it, every level would become NaN and every row an extrapolation point
            dtype = pd.CategoricalDtype(sorted(levels[c], key=repr), ordered=dtype.ordered)
        frame[c] = pd.Series(vals, dtype=dtype)
    return pd.DataFrame(frame)[cols]
