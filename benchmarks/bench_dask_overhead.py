"""What Dask costs on small jobs: ``fme.ame`` (delta SEs), ``fme.ame(..., by=)`` and ``fme.came`` on a
2-worker LocalCluster against the same calls on the pandas rows, in one run.

Model: a statsmodels Logit (formula ``y ~ x1 + x2 + x3``; ``--formula`` for another) fitted on 20 000
simulated rows; ``x1``..``x3`` standard normal, ``g`` a pandas categorical with 4 levels that shifts the
outcome (the ``by`` column; ``--formula "y ~ x1 + x2 + x3 + C(g)"`` makes it a feature too, whose
levels are then table rows of ``ame``: patsy's conversion of a categorical column, a Python loop over
the rows, then dominates both engines' time). For each ``n`` the same
``n`` simulated rows are a pandas frame and a Dask frame (``dd.from_pandas(..., npartitions=P)``,
default ``P = 4``: two chunks per worker, so that both workers are busy and the chunks' sums are
merged, while each pass stays a handful of tasks; at 10^5 rows a chunk is 25 000 rows, at 10^6
250 000, both far below the sizes where a chunk's memory matters). The Dask frame is persisted on the
workers first, so that the timings hold fME's work and not the shipping of the pandas rows.

Cases (each timed on pandas and on Dask alternately, ``--repeats`` times):

* ``ame``: ``fme.ame(model, data, inference="delta")``: a table row per model feature (3 numeric
  steps of 1; with ``C(g)`` in the formula also the 4 levels of ``g``);
* ``ame_by``: ``fme.ame(model, data, {"x1": 1, "x2": 1, "x3": 1}, by="g", inference="delta")``;
* ``came``: ``fme.came(effects, features=["x1", "x2", "x3", "g"], n_partitions=6, random_state=0)`` on
  the fME result ``fme.fme(model, data, {"x1": 1}, inference="delta")``, computed once beforehand on
  each engine (the time is the ``came`` call's only; honest, the default: the tree grows on half the
  rows, with fmeffects' alpha = 0.35 and minbucket = 2% of them, and is cut to 6 subspaces);
* ``came_deep`` (not run by default): the same without ``n_partitions``: CTREE's defaults grow
  thousands of subspaces on smooth fMEs (3089 at 10^5 rows), which the Dask pass must sum separately.

Printed per case: the medians of both times, the median of the paired ratios Dask/pandas (and their
range), the CPU seconds of both (pandas: this process; Dask: this process, which also runs the
scheduler, plus both workers) and their median ratio, which other sessions' load disturbs less than
wall time (a starved worker waits without burning CPU), and the
number of graph executions of one Dask call (every graph the client sends to the scheduler:
``compute``, ``persist`` and the ``compute`` of a persisted result, counted by wrapping
``distributed.Client._graph_to_futures``) and of its ``Client.scatter`` calls (objects sent to the
workers once, e.g. the model). ``--trace`` prints, per execution, the fme function that
sent it and the seconds until the next one.

Usage: ``python benchmarks/bench_dask_overhead.py [--sizes 100000 1000000] [--repeats 5]
[--partitions 4] [--cases ame ame_by came] [--formula F] [--trace]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback
import warnings

import numpy as np
import pandas as pd

LEVELS = ["a", "b", "c", "d"]


def make_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = pd.Categorical(rng.choice(LEVELS, n), categories=LEVELS)
    x = rng.normal(size=(n, 3))
    eta = -0.2 + 0.8 * x[:, 0] - 0.5 * x[:, 1] + 0.3 * x[:, 2] + np.array([0.0, 0.4, -0.3, 0.8])[g.codes]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "g": g, "y": y})


def fit_model(formula: str = "y ~ x1 + x2 + x3"):
    import statsmodels.formula.api as smf

    return smf.logit(formula, data=make_frame(20_000, 0)).fit(disp=0)


class Executions:
    """Counts the graphs the client sends to the scheduler (and, with ``trace``, who sent them)."""

    def __init__(self, trace: bool = False) -> None:
        from distributed import Client

        self.count = self.scatters = 0
        self.trace = trace
        self.events: list[tuple[float, str]] = []
        graph, scatter = Client._graph_to_futures, Client.scatter
        counter = self

        def counting(client, *args, **kwargs):
            counter.count += 1
            if counter.trace:
                counter.events.append((time.perf_counter(), _caller()))
            return graph(client, *args, **kwargs)

        def scattering(client, *args, **kwargs):
            counter.scatters += 1
            if counter.trace:
                counter.events.append((time.perf_counter(), "scatter <- " + _caller()))
            return scatter(client, *args, **kwargs)

        Client._graph_to_futures = counting
        Client.scatter = scattering

    def reset(self) -> None:
        self.count = self.scatters = 0
        self.events = []

    def report(self, end: float) -> str:
        lines = []
        for k, (t, where) in enumerate(self.events):
            nxt = self.events[k + 1][0] if k + 1 < len(self.events) else end
            lines.append(f"    {k + 1:3d} {nxt - t:8.4f} s  {where}")
        return "\n".join(lines)


def _cpu() -> float:
    """CPU seconds (user + system, all threads) of the calling process."""
    return time.process_time()


def _caller() -> str:
    """The innermost frames of fme's own code on the stack (the pass's origin)."""
    frames = [f for f in traceback.extract_stack() if f"{os.sep}fme{os.sep}" in f.filename]
    return " <- ".join(f"{os.path.basename(f.filename)}:{f.name}" for f in reversed(frames[-3:]))


def cases(model, names: list[str]) -> dict:
    import fme

    def ame(data):
        return fme.ame(model, data, inference="delta")

    def ame_by(data):
        return fme.ame(model, data, {"x1": 1.0, "x2": 1.0, "x3": 1.0}, by="g", inference="delta")

    def came(effects):
        return fme.came(effects, features=["x1", "x2", "x3", "g"], n_partitions=6, random_state=0)

    def came_deep(effects):
        return fme.came(effects, features=["x1", "x2", "x3", "g"], random_state=0)

    def came_input(data):
        return fme.fme(model, data, {"x1": 1.0}, inference="delta")

    table = {
        "ame": (ame, None),
        "ame_by": (ame_by, None),
        "came": (came, came_input),
        "came_deep": (came_deep, came_input),
    }
    return {k: table[k] for k in names}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument(
        "--cases", nargs="+", default=["ame", "ame_by", "came"], choices=["ame", "ame_by", "came", "came_deep"]
    )
    ap.add_argument("--formula", default="y ~ x1 + x2 + x3")
    ap.add_argument("--trace", action="store_true", help="print every graph execution of the first Dask run")
    args = ap.parse_args()

    import dask
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    print("load average:", " ".join(f"{v:.2f}" for v in os.getloadavg()), flush=True)
    model = fit_model(args.formula)
    environ = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}
    rows = []
    with (
        dask.config.set({"distributed.nanny.pre-spawn-environ": environ}),
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster) as client,
    ):
        execs = Executions(args.trace)
        for n in args.sizes:
            print(f"n = {n}: load average", " ".join(f"{v:.2f}" for v in os.getloadavg()), flush=True)
            frame = make_frame(n, 1)
            with warnings.catch_warnings():  # "Sending large graph": the benchmark's rows, sent once
                warnings.simplefilter("ignore", UserWarning)
                ddf = dd.from_pandas(frame, npartitions=args.partitions).persist()
            client.wait_for_workers(2)
            from distributed import wait

            wait(ddf)
            for name, (run, prepare) in cases(model, args.cases).items():
                inputs = (frame, ddf) if prepare is None else (prepare(frame), prepare(ddf))
                # a first untimed call on each engine: imports, numba caches and the workers' first unpickling
                run(inputs[0])
                run(inputs[1])
                t_pd, t_dk, counts, scatters, c_pd, c_dk = [], [], [], [], [], []
                for r in range(args.repeats):
                    cpu, start = _cpu(), time.perf_counter()
                    run(inputs[0])
                    t_pd.append(time.perf_counter() - start)
                    c_pd.append(_cpu() - cpu)
                    execs.reset()
                    execs.trace = args.trace and r == 0
                    workers = sum(client.run(_cpu).values())
                    cpu, start = _cpu(), time.perf_counter()
                    run(inputs[1])
                    end = time.perf_counter()
                    c_dk.append(_cpu() - cpu + sum(client.run(_cpu).values()) - workers)
                    t_dk.append(end - start)
                    counts.append(execs.count)
                    scatters.append(execs.scatters)
                    if execs.trace:
                        print(f"  {name} n={n}: {execs.count} graph executions, {end - start:.3f} s")
                        print(execs.report(end), flush=True)
                        execs.trace = False
                ratios = [d / p for d, p in zip(t_dk, t_pd)]
                cpu_ratios = [d / p for d, p in zip(c_dk, c_pd)]
                row = {
                    "case": name,
                    "n": n,
                    "partitions": args.partitions,
                    "pandas s": round(statistics.median(t_pd), 4),
                    "dask s": round(statistics.median(t_dk), 4),
                    "ratio": round(statistics.median(ratios), 2),
                    "ratio range": f"{min(ratios):.2f}-{max(ratios):.2f}",
                    "pandas CPU s": round(statistics.median(c_pd), 3),
                    "dask CPU s": round(statistics.median(c_dk), 3),
                    "CPU ratio": round(statistics.median(cpu_ratios), 2),
                    "executions": counts[0],
                    "scatters": scatters[0],
                }
                assert len(set(counts)) == 1, counts  # the number of passes does not depend on timing
                rows.append(row)
                print(row, flush=True)
            del ddf  # released by the client's reference count
    print("load average:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
