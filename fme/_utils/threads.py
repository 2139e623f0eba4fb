"""Row ranges of a compiled kernel or a NumPy fill on several threads.

fme's compiled kernels (``njit(nogil=True)``, :mod:`fme._utils.jit`) and NumPy's copies and arithmetic release the
GIL, so the rows of one call can be cut into contiguous ranges and each range run on its own thread. Every row
is computed on its own, in the same operations, so every number is the same whatever the ranges (the tests of
each caller check it against one range). The helper threads are a pool kept for the process, made at the first
call that needs them (starting a thread for each call cost 0.1-0.25 ms of a 17 ms ``fme.fme`` call once its
passes had streamed the caches out; handing a range to a waiting worker costs about a fifth of that) and
forgotten in a child made by ``fork`` (whose copy of the pool has no threads); work started on one of the
pool's own threads runs there, inline, so that no task waits for a worker that waits for it. Their count is
numba's configured one (``NUMBA_NUM_THREADS``: the machine's cores by default, at most ``OMP_NUM_THREADS``
where that is set; either at 1 for one thread), and a call too small to repay handing a range over runs on the
caller's.

A model that computes with OpenBLAS leaves its threads spinning for a while after each call; on a machine with
few cores they compete with these threads (``OPENBLAS_NUM_THREADS=1`` for such a model, see
benchmarks/README.md).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

__all__ = [
    "MIN_CELLS_PER_THREAD",
    "MIN_ROWS_PER_THREAD",
    "MIN_SLOW_ROWS_PER_THREAD",
    "beside",
    "chunks_beside",
    "finite_difference",
    "finite_sum",
    "rows_per_thread",
    "run_ranges",
    "thread_count",
    "waited_on_error",
]

#: Rows a thread must have before a call is cut (a thread starts in about 0.1 ms; a kernel's row takes 0.1-1 us).
MIN_ROWS_PER_THREAD = 32_768

#: Rows a thread must have for a kernel of about a microsecond per row or more (the NLM rounds' per-row sums and
#: shares, the hidden-jump screening of new sub-intervals): a range of a few milliseconds repays a helper.
MIN_SLOW_ROWS_PER_THREAD = 4096

#: Cells a thread must write before a copy is cut (a thread starts in about 0.1 ms; a cell takes about 0.5 ns).
MIN_CELLS_PER_THREAD = 1 << 20


def rows_per_thread(cells_per_row: int) -> int:
    """The least rows of a thread that writes ``cells_per_row`` cells per row (:data:`MIN_CELLS_PER_THREAD`):
    NumPy's copies and arithmetic release the GIL, and on these machines one thread does not fill the memory's
    bandwidth (a 440 MB broadcast copy: 17 ms on one thread, 10 ms on two)."""
    return max(1, MIN_CELLS_PER_THREAD // max(1, cells_per_row))


def thread_count() -> int:
    """The threads a kernel may use: numba's configured count (``NUMBA_NUM_THREADS``, the machine's cores by
    default), at most ``OMP_NUM_THREADS`` where that is set (as scikit-learn's OpenMP code reads it; Dask's
    worker processes set it to 1, so that their tasks do not oversubscribe the cores), at least 1."""
    import numba

    count = int(numba.config.NUMBA_NUM_THREADS)
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if omp.isdigit() and int(omp) > 0:
        count = min(count, int(omp))
    return max(1, count)


def run_ranges(work: Callable[[int, int], None], n: int, align: int = 64, min_rows: int | None = None) -> int:
    """Run ``work(lo, hi)`` over ``[0, n)`` cut into contiguous ranges (their starts multiples of ``align``), one
    per thread (the first on the caller's), at least ``min_rows`` rows each (default
    :data:`MIN_ROWS_PER_THREAD`); returns the number of ranges. An exception in a range is raised here after every
    range has ended (the lowest range's, if several)."""
    k = min(thread_count(), n // max(1, MIN_ROWS_PER_THREAD if min_rows is None else min_rows))
    if k <= 1:
        work(0, n)
        return 1
    step = -(-n // k)
    step += -step % align
    bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    errors: list[tuple[int, BaseException]] = []

    def run(lo: int, hi: int) -> None:
        try:
            work(lo, hi)
        except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread below
            errors.append((lo, exc))

    pool = _pool(len(bounds) - 1)
    if pool is None:  # on one of the pool's own threads: every range here, in order
        for b in bounds:
            run(*b)
    else:
        tasks = [functools.partial(run, *b) for b in bounds[1:]]
        helpers = [pool.submit(t) for t in tasks]
        run(*bounds[0])  # the first range on the caller's thread
        _wait(helpers, tasks)
    if errors:  # the first range's error, whichever thread ended first
        raise min(errors, key=lambda e: e[0])[1]
    return len(bounds)


def chunks_beside(work: Callable[[int, int], None], n: int, chunk: int, helpers: int) -> Callable[[], None]:
    """Start ``work(lo, hi)`` over ``[0, n)`` in chunks of ``chunk`` rows (starts multiples of ``chunk``), taken in
    order by ``helpers`` threads started now and, once it calls the returned function, by the caller too; that
    function returns when every chunk has ended (raising, on the caller's thread, the error of the lowest chunk
    that raised). For work beside the caller's whose end the caller then waits for: what is left when it comes to
    wait is shared with it, not waited for idle. With ``helpers`` 0 every chunk runs in the returned function."""
    lock = threading.Lock()
    state = {"next": 0}
    errors: list[tuple[int, BaseException]] = []

    def take() -> int | None:
        with lock:
            lo = state["next"]
            if lo >= n:
                return None
            state["next"] = lo + chunk
            return lo

    def drain() -> None:
        while (lo := take()) is not None:
            try:
                work(lo, min(lo + chunk, n))
            except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread by finish
                errors.append((lo, exc))

    pool = _pool(helpers) if helpers > 0 else None
    started = [] if pool is None else [pool.submit(drain) for _ in range(helpers)]

    def finish() -> None:
        drain()
        _wait(started, [drain] * len(started))
        if errors:
            raise min(errors, key=lambda e: e[0])[1]

    return finish


@contextlib.contextmanager
def waited_on_error(wait: Callable[[], Any]) -> Iterator[None]:
    """Run the block; when it raises, call ``wait`` (the waiting function of work started beside it, which
    writes into the caller's memory) before the error leaves, that work's own error left out: the block's error
    is the one raised, and nothing writes into the caller's memory once it has left."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(BaseException):
            wait()
        raise


def beside(task: Callable[[], T], now: bool = False) -> Callable[[], T]:
    """Start ``task`` on a helper thread, beside the caller's work, and return a function that waits for it and
    returns its result (or raises its exception, on the caller's thread; a task no helper has started by then
    runs there, on the caller's thread, once). With one thread (:func:`thread_count`), or ``now`` (a task too
    small to repay handing it over), the task runs at once, and the function returns what it gave. For
    independent work that releases the GIL (a compiled kernel, NumPy's selections)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = task()
        except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread by the returned function
            box["error"] = exc

    pool = None if now or thread_count() <= 1 else _pool(1)
    helper = None if pool is None else pool.submit(run)
    if helper is None:
        run()

    def result() -> T:
        nonlocal helper
        if helper is not None:
            _wait([helper], [run])
            helper = None  # ended (or taken back and run here): a later call only reads the box
        if "error" in box:
            raise box["error"]
        return box["value"]

    return result


_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()
_ON_POOL = threading.local()


def _mark_pool_thread() -> None:
    _ON_POOL.member = True


def _pool(workers: int) -> ThreadPoolExecutor | None:
    """The process's pool of helper threads, with room for at least ``workers`` tasks at once (made, or made
    larger, on demand); None on one of its own threads, whose work then runs inline."""
    global _POOL, _POOL_SIZE
    if getattr(_ON_POOL, "member", False):
        return None
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < workers:
            old = _POOL
            _POOL = ThreadPoolExecutor(max(1, workers), thread_name_prefix="fme", initializer=_mark_pool_thread)
            _POOL_SIZE = max(1, workers)
            if old is not None:
                old.shutdown(wait=False)  # its threads end once their tasks have
        return _POOL


def _wait(futures: list[Future[Any]], tasks: list[Callable[[], Any]]) -> None:
    """Wait for the pool's ``futures``, each running its task of ``tasks`` (wrapped to keep its own error): a
    task no worker has started yet (all busy, say with work that itself waits here) is taken back and run on
    this thread, so that no caller waits for a queue."""
    for f, task in zip(futures, tasks):
        if f.cancel():
            task()
        else:
            f.result()


def _forget_pool() -> None:
    """In a child made by ``fork``: the parent's pool has no threads here; the next call makes one."""
    global _POOL, _POOL_SIZE, _POOL_LOCK
    _POOL, _POOL_SIZE, _POOL_LOCK = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def finite_sum(values: np.ndarray) -> bool:
    """Whether the sum of ``values`` (a float array) is finite, summed by row ranges on several threads when it is
    large. A sum is finite only if every value is; the converse fails only when the total overflows, which the
    callers then settle value by value. Only finiteness is read, so the order of the additions does not matter:
    a contiguous array is summed by a compiled kernel that adds several lanes at once
    (:func:`fme._utils.sums.any_order_sum`), any other by NumPy."""
    flat = values.reshape(-1) if values.flags.c_contiguous else values
    if flat.ndim != 1 or not flat.flags.c_contiguous or flat.dtype != np.float64:
        with np.errstate(over="ignore", invalid="ignore"):
            return bool(np.isfinite(np.add.reduce(flat, axis=None)))
    from .sums import any_order_sum

    return _finite_total(lambda lo, hi: any_order_sum(flat[lo:hi]), flat.size)


def finite_difference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
    """``a - b`` (float arrays of one shape) in a new array, and whether its sum is finite: it is only if every
    ``a`` and ``b`` is and no difference overflows (the callers settle a non-finite sum value by value, as for
    :func:`finite_sum`). Contiguous 1-D arrays are subtracted and summed in one compiled pass
    (:func:`fme._utils.sums.difference_sum`), by row ranges on several threads when large; the differences are
    NumPy's to the bit."""
    contiguous = a.flags.c_contiguous and b.flags.c_contiguous
    if a.ndim != 1 or a.shape != b.shape or not contiguous or a.dtype != np.float64 or b.dtype != np.float64:
        out = np.subtract(a, b)
        return out, finite_sum(out)
    from .sums import difference_sum

    out = np.empty(a.size)
    return out, _finite_total(lambda lo, hi: difference_sum(a[lo:hi], b[lo:hi], out[lo:hi]), a.size)


def _finite_total(part: Callable[[int, int], float], n: int) -> bool:
    """Whether the total of ``part(lo, hi)`` over ``[0, n)`` is finite: one range on the caller's thread, or row
    ranges on several threads when ``n`` repays them (:data:`MIN_CELLS_PER_THREAD` each)."""
    if n < 2 * MIN_CELLS_PER_THREAD:
        return bool(np.isfinite(part(0, n)))
    parts: dict[int, float] = {}

    def run(lo: int, hi: int) -> None:
        parts[lo] = part(lo, hi)

    run_ranges(run, n, align=8, min_rows=MIN_CELLS_PER_THREAD)
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.add.reduce(np.array(list(parts.values())))))
