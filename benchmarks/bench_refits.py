"""Parallel bootstrap refits against sequential ones, in the same run (issue 23, item 5).

For a cheap model (Ridge, a few ms per refit) and an expensive one (RandomForest, 100 trees), times
``fme.ame(model, X, {"rm": 1}, bootstrap={..., "n_jobs": k})`` for ``n_jobs=None`` (sequential) and
``n_jobs=2``, alternating the two ``--repeat`` times and keeping each one's best wall time, and prints the
ratio parallel / sequential with what ran (``info["execution"]``: sequential, threads or processes, the
number of workers and batches), the CPU seconds of each best run (this process's threads and its worker
processes, by psutil when installed) and the load average over the runs. The numbers of the two runs are
checked to be equal (seeded per refit).

Goal on the 2-core reference machine: ratio <= 1.1 for the cheap model (no workers are started for work
smaller than their start-up), <= 0.65 for the expensive one. The machine may be shared: the load average
is printed beside the figures.

``--busy K`` starts K processes that keep a core busy each for the whole run (a loaded machine, as when other
jobs share it); the goal there: n_jobs=2 at most 1.1x the sequential time.

Usage: ``python benchmarks/bench_refits.py [--resamples 200] [--repeat 3] [--trees 100] [--skip-forest]
[--skip-ridge] [--backend auto|threads|processes] [--busy K]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import fme
from fme.datasets import load_boston


def _run(model, X, y, resamples: int, n_jobs, backend: str = "auto"):
    spec = {
        "X": X,
        "y": y,
        "n_resamples": resamples,
        "random_state": 0,
        "n_jobs": n_jobs,
        "progress": False,
        "backend": backend,
    }
    res = fme.fme(model, X, {"rm": 1}, bootstrap=spec)
    return res.inference_rows


def _cpu_seconds() -> float:
    """CPU seconds of this process (all its threads) and of its live child processes (loky workers, which
    persist between runs), so that a difference over a run counts the workers' CPU too."""
    total = time.process_time()
    try:
        import psutil
    except ImportError:  # the figure then covers this process only (threads; not processes)
        return total
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:  # a worker that just exited
            pass
    return total


def _bench(name: str, model, X, y, resamples: int, repeat: int, backend: str = "auto") -> None:
    best = {None: np.inf, 2: np.inf}
    cpu = {None: np.inf, 2: np.inf}
    walls: dict = {None: [], 2: []}
    rows = {}
    loads = []
    for _ in range(repeat):
        for n_jobs in (None, 2):
            loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
            c0, t0 = _cpu_seconds(), time.perf_counter()
            rows[n_jobs] = _run(model, X, y, resamples, n_jobs, backend)
            wall = time.perf_counter() - t0
            walls[n_jobs].append(wall)
            if wall < best[n_jobs]:  # the CPU seconds of the best run
                best[n_jobs], cpu[n_jobs] = wall, _cpu_seconds() - c0
    np.testing.assert_array_equal(rows[None].draws, rows[2].draws)
    ex = rows[2].info["execution"]
    ran = ex["mode"] + (
        f", {ex['workers']} workers, {ex.get('batches', 0)} batches"
        if ex["mode"] != "sequential"
        else f" (idle cores {ex['cores_free']:.1f})"
        if "cores_free" in ex
        else " (work below the workers' start-up)"
    )
    print(
        f"{name}: {resamples} refits  sequential {best[None]:.2f} s ({cpu[None]:.2f} s CPU)  n_jobs=2 "
        f"{best[2]:.2f} s ({cpu[2]:.2f} s CPU)  ratio {best[2] / best[None]:.2f}  ({ran}; refit "
        f"{ex['refit_seconds'] * 1e3:.1f} ms; load average {min(loads):.1f}-{max(loads):.1f}; all walls: "
        f"sequential {', '.join(f'{w:.2f}' for w in walls[None])}, n_jobs=2 {', '.join(f'{w:.2f}' for w in walls[2])})",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--skip-forest", action="store_true")
    ap.add_argument("--skip-ridge", action="store_true")
    ap.add_argument(
        "--backend",
        default="auto",
        choices=["auto", "threads", "processes"],
        help="the bootstrap's backend for n_jobs=2 (default: fme's choice)",
    )
    ap.add_argument("--busy", type=int, default=0, help="processes keeping a core busy during the run")
    args = ap.parse_args()
    import subprocess
    import sys

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    if busy:
        time.sleep(65)  # the 1-minute load average takes them in
    try:
        _main(args)
    finally:
        for p in busy:
            p.kill()


def _main(args) -> None:
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import Ridge

    df = load_boston()
    X, y = df.drop(columns="medv"), df["medv"]
    print(
        f"cores: {os.cpu_count()}; data: Boston, {len(X)} rows x {X.shape[1]} features; busy processes: {args.busy}",
        flush=True,
    )
    warnings.simplefilter("ignore", fme.BootstrapWarning)
    if not args.skip_ridge:
        _bench("Ridge", Ridge(alpha=1.0).fit(X, y), X, y, args.resamples, args.repeat, args.backend)
    if not args.skip_forest:
        rf = RandomForestRegressor(n_estimators=args.trees, random_state=0).fit(X, y)
        _bench(f"RandomForest ({args.trees} trees)", rf, X, y, args.resamples, args.repeat, args.backend)


if __name__ == "__main__":
    main()
