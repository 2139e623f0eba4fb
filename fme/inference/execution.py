"""How bootstrap refits run: in the calling process, on threads or on processes (see :mod:`fme.inference.bootstrap`).

Parallel refits (``n_jobs`` > 1) never start workers for less work than their
start-up: the first refits (:data:`PROBE`) run in the calling process and are
timed (the fastest but the first, which pays one-off costs, is the estimate); the rest
run in parallel only if that is predicted to be faster than running them
sequentially, else sequentially. The prediction (:func:`_plan`) counts the
workers' start-up (:data:`STARTUP`) and, for threads, the share of a refit
that holds the GIL and so runs one thread at a time (:func:`_gil_share`: 1 for
most models; for a model whose fit releases it, as the model's adapter says
(scikit-learn trees and forests), its per-tree Python work over the refit's CPU
time, which is large for small training data); ``'auto'`` takes the faster of threads and processes
(joblib's loky). The refits go to the workers in a few batches (one task per
batch, so the data are sent once per batch, not once per refit). The workers refit from the adapter's
:meth:`~fme._adapters.ModelAdapter.for_workers` form: for scikit-learn an
unfitted clone (a process receives the parameters, not the fitted model) with
every ``n_jobs`` at 1, so an estimator's own threads do not oversubscribe the
cores beside the workers, and BLAS and OpenMP run one thread per worker (threadpoolctl). Workers are
never more than the cores other processes leave idle (the core count less the 1-minute load average beyond
this process; ``info["execution"]["cores_free"]`` when it cut them): on a machine busy with other work,
extra workers only wait for a core. The seeds are per refit, so the numbers do not
depend on the backend, ``n_jobs`` or the batches. ``info["execution"]`` says
what ran; ``info["kept"]`` which resamples (positions in the seed order) the
draws' columns are.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO, cast

import numpy as np

from .._adapters import ModelAdapter, adapt

__all__ = [
    "run_refits",
    "watch_convergence",
    "convergence_notes",
    "STARTUP",
    "PROBE",
    "GIL_SECONDS_PER_TREE",
    "BATCHES_PER_WORKER",
]

#: Seconds a pool of workers costs before its first refit (benchmarks/bench_refits.py on the shared 2-core
#: machine: two loky processes with 4 batches of Ridge refits cost about 3 s over the sequential run, starting
#: the processes, importing fme and scikit-learn there and sending the data; threads next to nothing). Parallel
#: refits run only when the predicted parallel time, start-up included, is below the estimated sequential one
#: (:func:`_plan`).
STARTUP = {"threads": 0.05, "processes": 3.0}
#: Refits run (and timed) in the calling process before deciding; the first pays one-off costs (imports,
#: caches), so the estimate is the fastest of the others.
PROBE = 3
#: CPU seconds per tree that refitting a scikit-learn tree or forest spends holding the GIL (cloning the tree
#: and checking its parameters, drawing its rows, predicting tree by tree): on Boston (506 rows) a 100-tree
#: forest's fit takes 0.31 s CPU, 0.11 s of it with depth-1 trees (whose building is next to nothing), and its
#: prediction of 1,012 rows 17 ms (benchmarks/README.md, parallel refits). Threads run that share one at a time.
GIL_SECONDS_PER_TREE = 1.2e-3
#: Batches per worker (a few, so that an uneven batch does not leave a worker idle for long).
BATCHES_PER_WORKER = 2
#: Default RAM for the per-row draws (bytes); beyond it they go to a temporary memory-mapped file.


# ----------------------------------------------------------------- convergence
_LOCAL = threading.local()


def _convergence_categories() -> tuple[type[Warning], ...]:
    cats: list[type[Warning]] = []
    try:
        from sklearn.exceptions import ConvergenceWarning

        cats.append(ConvergenceWarning)
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        pass
    try:
        from statsmodels.tools.sm_exceptions import ConvergenceWarning as StatsmodelsConvergenceWarning

        cats.append(StatsmodelsConvergenceWarning)
    except ImportError:  # pragma: no cover - statsmodels is a dependency
        pass
    return tuple(cats)


@contextmanager
def convergence_notes() -> Iterator[list[str]]:
    """A list that receives, inside the block, the convergence warnings :func:`watch_convergence` sees in this
    thread (one refit's fit runs inside)."""
    notes: list[str] = []
    _LOCAL.notes = notes
    try:
        yield notes
    finally:
        _LOCAL.notes = None


@contextmanager
def watch_convergence() -> Iterator[None]:
    """While active, a convergence warning raised inside a refit (:func:`_fit_checked`, on any thread of this
    process) is recorded on that refit instead of shown; every other warning is shown as before.

    Enter it once per process (the calling thread, or a worker process's task), never from worker threads:
    the warning filters are process-wide."""
    cats = _convergence_categories()
    with warnings.catch_warnings():
        for c in cats:
            warnings.simplefilter("always", c)
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            notes = getattr(_LOCAL, "notes", None)
            if notes is not None and cats and issubclass(category, cats):
                notes.append(f"{category.__name__}: {message}")
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


# ----------------------------------------------------------------- running the refits
def _gil_share(adapter: ModelAdapter, cpu_per_refit: float) -> float:
    """The share of a refit's CPU time spent holding the GIL, which threads cannot run side by side: for a
    model whose fit releases it (:meth:`~fme._adapters.ModelAdapter.fit_releases_gil`: scikit-learn trees and
    forests) the per-tree Python work (:data:`GIL_SECONDS_PER_TREE` per tree,
    :meth:`~fme._adapters.ModelAdapter.trees_per_fit`) over the refit's CPU seconds; 1 for other models."""
    if not adapter.fit_releases_gil():
        return 1.0
    return min(1.0, adapter.trees_per_fit() * GIL_SECONDS_PER_TREE / max(cpu_per_refit, 1e-9))


def _plan(estimate: float, workers: int, backend: str, share: float) -> tuple[str, bool, dict[str, float]]:
    """(kind, whether to start workers, predicted seconds per kind) for refits worth ``estimate`` sequential
    seconds on ``workers`` workers.

    Threads: their start-up plus the GIL-held share run one at a time (Amdahl), the rest split over the
    workers; processes: their start-up plus an even split. ``'auto'`` takes the faster, and starts workers
    only when that beats running sequentially; a forced backend starts them when the estimate exceeds their
    start-up times workers / (workers - 1) (the split alone).
    """
    predicted = {
        "threads": STARTUP["threads"] + estimate * (share + (1.0 - share) / workers),
        "processes": STARTUP["processes"] + estimate / workers,
    }
    if backend != "auto":
        return backend, workers > 1 and estimate > STARTUP[backend] * workers / (workers - 1), predicted
    kind = min(predicted, key=cast(Callable[[str], float], predicted.get))  # every key is there
    return kind, workers > 1 and predicted[kind] < estimate, predicted


def _probe_seconds(wall: list[float], cpu: list[float]) -> tuple[float, float]:
    """(wall, CPU) seconds of one refit from the probe's timings: the fastest after the first, which pays for
    warming caches and imports. The GIL share is taken from CPU seconds, because wall seconds on a busy
    machine include waiting for a core. One of the two inputs of the execution plan with
    :func:`_free_cores`; tests replace both to decide a plan whatever the machine."""
    if len(wall) > 1:
        return min(wall[1:]), min(cpu[1:])
    return wall[0], cpu[0]


def _free_cores() -> float:
    """Cores not busy with other processes: the core count less the 1-minute load average beyond this process
    (which is busy refitting); the core count where the system does not report a load."""
    cores = float(os.cpu_count() or 1)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    return max(1.0, cores - max(0.0, load - 1.0))


@contextmanager
def _one_thread(active: bool = True) -> Iterator[None]:
    """BLAS and OpenMP at one thread inside (threadpoolctl), when ``active``."""
    if not active:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def _batch(task: Callable[..., Any], seeds: Sequence[Any], args: tuple[Any, ...], in_process: bool) -> list[Any]:
    """``task(seed, *args)`` for a batch of seeds (one worker task); a worker process watches its own
    convergence warnings and runs BLAS and OpenMP at one thread."""
    if not in_process:
        return [task(s, *args) for s in seeds]
    with watch_convergence(), _one_thread():
        return [task(s, *args) for s in seeds]


def run_refits(
    task: Callable[..., Any],
    seeds: Sequence[Any],
    args: tuple[Any, ...],
    *,
    n_jobs: Any,
    backend: str,
    model: Any,
    execution: dict[str, Any],
) -> Iterator[Any]:
    """``task(seed, *args)`` for every seed, yielded in seed order (see the module docstring).

    The first :data:`PROBE` run here and are timed (wall and CPU seconds); the others run sequentially unless
    ``n_jobs`` asks for more than one worker and running them on workers is predicted to be faster
    (:func:`_plan`: the workers' start-up, :data:`STARTUP`, and for threads the share of the refit that holds
    the GIL, :func:`_gil_share`); then in :data:`BATCHES_PER_WORKER` batches per worker, on threads or
    processes (``backend``; ``'auto'``: the faster by that prediction). ``execution`` receives what ran.
    """
    from joblib import Parallel, delayed, effective_n_jobs

    seeds = list(seeds)
    with watch_convergence():
        probe = 1 if n_jobs is None else min(PROBE, len(seeds))
        times, cpu = [], []
        for s in seeds[:probe]:
            start, start_cpu = time.perf_counter(), time.process_time()
            yield task(s, *args)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        per_refit, cpu_per_refit = _probe_seconds(times, cpu)
        share = _gil_share(adapt(model), cpu_per_refit)
        rest = seeds[probe:]
        workers = 1 if n_jobs is None or not rest else max(1, min(int(effective_n_jobs(n_jobs)), len(rest)))
        free = _free_cores()
        if workers > 1 and free < workers:
            # workers beyond the idle cores only wait for one (other processes hold the rest)
            execution["cores_free"] = free
            workers = max(1, int(np.floor(free + 0.5)))
        estimate = per_refit * len(rest)
        kind, parallel, predicted = _plan(estimate, workers, backend, share)
        execution.update(
            {
                "mode": kind if parallel else "sequential",
                "workers": workers if parallel else 1,
                "first_refit_seconds": times[0],
                "refit_seconds": per_refit,
                "estimated_sequential_seconds": per_refit * len(seeds),
                "gil_share": share,
                "predicted_seconds": predicted if workers > 1 else {},
            }
        )
        if not parallel:
            for s in rest:
                yield task(s, *args)
            return
        batches = [
            b for b in np.array_split(np.arange(len(rest)), min(len(rest), workers * BATCHES_PER_WORKER)) if b.size
        ]
        execution["batches"] = len(batches)
        # the workers refit from the adapter's worker form: for scikit-learn an unfitted clone with n_jobs=1
        args = tuple(a.for_workers() if isinstance(a, ModelAdapter) else a for a in args)
        pool = Parallel(n_jobs=workers, backend="threading" if kind == "threads" else "loky", return_as="generator")
        # one BLAS/OpenMP thread per worker (an estimator's own threads beside the workers oversubscribe the
        # cores); threads share the process's pools, so the limit is set once around them
        with _one_thread(kind == "threads"):
            for out in pool(delayed(_batch)(task, [rest[i] for i in b], args, kind == "processes") for b in batches):
                yield from out
