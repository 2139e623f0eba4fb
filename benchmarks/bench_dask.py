"""fME + NLM on Dask data (a 2-worker LocalCluster) against the single-process path, in one run.

Data: ``P`` = 5 standard-normal features, generated lazily on the workers by
``dd.from_map`` (one seeded chunk of ``--chunk`` rows per partition) and, for
the baseline, the same chunks built in memory in a fresh process.

For each model (``LinearRegression``; ``HistGradientBoostingRegressor`` with
50 iterations, exact NLM) one run times

* ``single``: ``fme.fme(model, X, {"x0": 1}, nlm=True)`` on a pandas frame of
  ``--single-rows`` rows in a fresh process limited to one BLAS/OpenMP thread
  like each worker (its peak RSS is that process's, data included);
* ``dask``: the same call on the lazy Dask frame of ``--dask-rows`` rows on
  ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``; the
  time includes generating the chunks on the workers (``gen`` below times a
  pass that only generates them; fME + NLM read the data in one pass, and the
  first partition once more for the arguments' checks), and peak memory is
  each worker process's peak RSS (``ru_maxrss``) after the run. The compute
  seconds of each kind of task (distributed's task stream) are printed too.

Reported: seconds per 10^7 rows for both, their ratio, and the per-core
ratio ``dask_rate x 2 / single_rate`` (1.0 = perfect scaling over 2 cores;
the goal of issue 14 is at most 1.3); and, because wall times on a shared
machine depend on everyone else's load, the CPU seconds (user + system) per
10^7 rows of the single process and of both workers together, and their
ratio (the work Dask adds per row, whatever the load).

Usage: ``python benchmarks/bench_dask.py [--single-rows 10000000] [--dask-rows 100000000]
[--models linear hgb] [--chunk 1000000] [--hgb-iter 50]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import resource
import time

import numpy as np
import pandas as pd

P = 5
FEATURES = [f"x{j}" for j in range(P)]


def make_chunk(seed: int, rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(rows, P)), columns=FEATURES)
    frame.index = pd.RangeIndex(seed * rows, (seed + 1) * rows)
    return frame


def make_model(kind: str, hgb_iter: int = 50):
    X = make_chunk(10_000, 100_000)
    rng = np.random.default_rng(1)
    y = X["x0"] ** 2 + np.sin(X["x1"]) + 0.5 * X["x2"] * X["x3"] + rng.normal(size=len(X)) * 0.1
    if kind == "linear":
        from sklearn.linear_model import LinearRegression

        return LinearRegression().fit(X, y)
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(max_iter=hgb_iter, random_state=0).fit(X, y)


def _single(kind: str, rows: int, chunk: int, hgb_iter: int = 50) -> tuple[float, float, float]:
    from threadpoolctl import threadpool_limits

    import fme

    # one core, as each Dask worker (distributed sets OMP/OPENBLAS_NUM_THREADS=1 in its workers; the
    # exact NLM's traversal threads follow OMP_NUM_THREADS too)
    threadpool_limits(1)
    os.environ["OMP_NUM_THREADS"] = "1"

    model = make_model(kind, hgb_iter)
    X = pd.concat([make_chunk(i, chunk) for i in range(rows // chunk)])
    cpu0 = _cpu()
    start = time.perf_counter()
    res = fme.fme(model, X, {"x0": 1.0}, nlm=True, progress=False)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return elapsed, _cpu() - cpu0, peak, res.ame


def _cpu() -> float:
    """CPU seconds (user + system) of this process: less sensitive than wall time to other load."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _task_seconds(stream: list) -> dict:
    """Seconds the workers spent computing each kind of task (the key's prefix), from distributed's task stream."""
    out: dict = {}
    for t in stream:
        name = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
        prefix = name.rsplit("-", 1)[0] if "-" in name else name
        for s in t.get("startstops", ()):
            if s["action"] == "compute":
                out[prefix] = out.get(prefix, 0.0) + s["stop"] - s["start"]
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def _peak_rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--single-rows", type=int, default=10_000_000)
    ap.add_argument("--dask-rows", type=int, default=100_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--models", nargs="+", default=["linear", "hgb"])
    ap.add_argument("--hgb-iter", type=int, default=50, help="boosting iterations of the HistGradientBoosting model")
    ap.add_argument(
        "--scheduler",
        choices=["cluster", "sync"],
        default="cluster",
        help="sync: the Dask path in this process on dask's synchronous scheduler (its overhead "
        "without distributed's worker processes)",
    )
    ap.add_argument(
        "--malloc",
        choices=["distributed", "glibc"],
        default="glibc",
        help="distributed: workers get distributed's default MALLOC_TRIM_THRESHOLD_=65536 (which "
        "turns off glibc's dynamic mmap threshold: every large temporary array is page-faulted "
        "anew); glibc: workers keep glibc's default (one BLAS thread either way)",
    )
    args = ap.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import fme

    rows = []
    for kind in args.models:
        # the baseline first, in a fresh process, while the cluster does not exist yet
        with cf.ProcessPoolExecutor(1) as pool:
            t_single, cpu_single, peak_single, ame_single = pool.submit(
                _single, kind, args.single_rows, args.chunk, args.hgb_iter
            ).result()
        model = make_model(kind, args.hgb_iter)
        n_parts = args.dask_rows // args.chunk
        meta = make_chunk(0, 0)
        if args.scheduler == "sync":
            import dask
            from threadpoolctl import threadpool_limits

            threadpool_limits(1)
            with dask.config.set(scheduler="sync"):
                D = dd.from_map(make_chunk, list(range(n_parts)), rows=args.chunk, meta=meta)
                cpu0, start = _cpu(), time.perf_counter()
                res = fme.fme(model, D, {"x0": 1.0}, nlm=True, progress=False)
                t_dask, cpu_dask = time.perf_counter() - start, _cpu() - cpu0
            per_single, per_dask = t_single / args.single_rows * 1e7, t_dask / args.dask_rows * 1e7
            rows.append(
                {
                    "model": kind,
                    "scheduler": "sync (1 process)",
                    "single rows": args.single_rows,
                    "single s/1e7": round(per_single, 2),
                    "dask rows": args.dask_rows,
                    "dask s/1e7": round(per_dask, 2),
                    "dask/single": round(per_dask / per_single, 3),
                    "single CPU s/1e7": round(cpu_single / args.single_rows * 1e7, 1),
                    "dask CPU s/1e7": round(cpu_dask / args.dask_rows * 1e7, 1),
                    "CPU ratio": round((cpu_dask / args.dask_rows) / (cpu_single / args.single_rows), 3),
                }
            )
            print(rows[-1], flush=True)
            continue
        import dask

        environ = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}
        if args.malloc == "distributed":
            environ["MALLOC_TRIM_THRESHOLD_"] = 65536
        with (
            dask.config.set({"distributed.nanny.pre-spawn-environ": environ}),
            LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0", memory_limit="8GiB"
            ) as cluster,
            Client(cluster) as client,
        ):
            D = dd.from_map(make_chunk, list(range(n_parts)), rows=args.chunk, meta=meta)
            start = time.perf_counter()
            D["x0"].sum().compute()
            t_gen = time.perf_counter() - start
            cpu0 = sum(client.run(_cpu).values())
            from distributed import get_task_stream

            start = time.perf_counter()
            with get_task_stream(client) as ts:
                res = fme.fme(model, D, {"x0": 1.0}, nlm=True, progress=False)
            t_dask = time.perf_counter() - start
            cpu_dask = sum(client.run(_cpu).values()) - cpu0
            print("task compute seconds by kind:", _task_seconds(ts.data), flush=True)
            peaks = client.run(_peak_rss)
            summary = res.summary()
        per_single = t_single / args.single_rows * 1e7
        per_dask = t_dask / args.dask_rows * 1e7
        rows.append(
            {
                "model": kind,
                "nlm": res.nlm_method,
                "malloc": args.malloc,
                "single rows": args.single_rows,
                "single s/1e7": round(per_single, 2),
                "single peak GiB": round(peak_single, 2),
                "dask rows": args.dask_rows,
                "partitions": n_parts,
                "dask s": round(t_dask, 1),
                "dask s/1e7": round(per_dask, 2),
                "gen s/1e7": round(t_gen / args.dask_rows * 1e7, 2),
                "dask/single": round(per_dask / per_single, 3),
                "per-core ratio": round(per_dask * 2 / per_single, 3),
                "single CPU s/1e7": round(cpu_single / args.single_rows * 1e7, 1),
                "dask worker CPU s/1e7": round(cpu_dask / args.dask_rows * 1e7, 1),
                "CPU ratio": round((cpu_dask / args.dask_rows) / (cpu_single / args.single_rows), 3),
                "worker peak GiB": "/".join(f"{v:.2f}" for v in peaks.values()),
            }
        )
        print(summary, flush=True)
        print(rows[-1], flush=True)
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
