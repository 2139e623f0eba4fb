"""The error-controlled NLM of a black box at a bounded cost: a wrapped HistGradientBoosting model.

``fme.fme(f, X, {"x0": 1, "x1": 1}, nlm=True)`` where ``f`` is a plain function around the model's
``predict`` (fme cannot read its trees, so the NLM is Gauss-Kronrod with the budget: the jump route
for its piecewise-constant paths), against the model's own ``predict`` of the same number of rows in
one call, timed alternately ``--repeat`` times in one run (best wall time of each: the machine is
shared, the ratio is what matters). Also: rows predicted per observation, the routes and statuses,
the median error bound (``nlm_error``; infinite where the bound exceeds the path's variance), the
mean distance to the exact NLM of the same model (read from its trees), the rows whose distance
exceeds their bound, and the peak memory of the fme call above the data (a fresh process; Linux's peak
RSS, reset before the call through /proc/self/clear_refs).

10 standard-normal features; y = sin(2 x0) + x1^2 + x2 x3 + noise; model fitted on 20 000 rows
(100 iterations). Usage::

    python benchmarks/bench_nlm_budget.py [--n 100000] [--repeat 2] [--budget 34 --budget 60] [--model hgb|mlp]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd

COLS = [f"x{i}" for i in range(10)]
STEPS = {"x0": 1.0, "x1": 1.0}


def setup(n: int, kind: str = "hgb"):
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.neural_network import MLPRegressor

    rng = np.random.default_rng(0)
    train = pd.DataFrame(rng.normal(size=(20_000, 10)), columns=COLS)
    y = np.sin(2 * train["x0"]) + train["x1"] ** 2 + train["x2"] * train["x3"] + rng.normal(0, 0.1, len(train))
    if kind == "hgb":
        model = HistGradientBoostingRegressor(max_iter=100, random_state=0).fit(train, y)
    else:  # a smooth-ish black box (ReLU kinks): the quadrature route
        model = MLPRegressor(hidden_layer_sizes=(32,), max_iter=200, random_state=0).fit(train, y)
    return model, pd.DataFrame(rng.normal(size=(n, 10)), columns=COLS)


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def memory_child(n: int, budget: float, kind: str = "hgb") -> None:
    """In a fresh process: peak RSS of one fme call above the RSS with model and data loaded (MiB)."""
    import fme

    model, X = setup(n, kind)
    before = _rss_kib("VmRSS:")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the peak (VmHWM) to the current RSS
    fme.fme(lambda d: model.predict(d), X, STEPS, nlm=True, nlm_budget=budget)
    print(json.dumps({"peak_above_data_mib": (_rss_kib("VmHWM:") - before) / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--budget", type=float, action="append")
    ap.add_argument(
        "--model",
        choices=["hgb", "mlp"],
        default="hgb",
        help="hgb: the wrapped boosting model (jump route, compared with its exact NLM); mlp: a wrapped "
        "MLPRegressor(32) (quadrature route; no exact reference, accuracy columns n/a)",
    )
    ap.add_argument("--memory-child", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child is not None:
        memory_child(args.n, args.memory_child, args.model)
        return
    import fme

    model, X = setup(args.n, args.model)
    exact = (
        fme.fme(model, X, STEPS, nlm=True, nlm_method="exact").results["nlm"].to_numpy()
        if args.model == "hgb"
        else np.full(len(X), np.nan)
    )
    print(
        "| budget | n | rows predicted per row | fme wall s | predict (same rows, one call) wall s | ratio | "
        "routes (jumps / quadrature) | inaccurate | median nlm_error (infinite) | mean abs error vs exact | "
        "max abs error vs exact | rows with error > nlm_error | peak above data |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for budget in args.budget or [34.0]:
        count = {"rows": 0}

        def f(d):
            count["rows"] += len(d)
            return model.predict(d)

        best_fme = best_pred = np.inf
        res = None
        for _ in range(args.repeat):
            count["rows"] = 0
            w = time.perf_counter()
            res = fme.fme(f, X, STEPS, nlm=True, nlm_budget=budget)
            best_fme = min(best_fme, time.perf_counter() - w)
            rows = count["rows"]
            big = pd.DataFrame(np.tile(X.to_numpy(), (int(np.ceil(rows / len(X))), 1))[:rows], columns=COLS)
            w = time.perf_counter()
            model.predict(big)
            best_pred = min(best_pred, time.perf_counter() - w)
            del big
        r = res.results
        d = np.abs(r["nlm"].to_numpy() - exact)
        err = r["nlm_error"].to_numpy()
        defined = ~np.isnan(exact)
        routes = r["nlm_route"].value_counts()
        mem = subprocess.run(
            [sys.executable, __file__, "--n", str(args.n), "--model", args.model, "--memory-child", str(budget)],
            capture_output=True,
            text=True,
            check=True,
        )
        peak = json.loads(mem.stdout.strip().splitlines()[-1])["peak_above_data_mib"]
        acc = (
            f"{np.nanmean(d):.3g} | {np.nanmax(d):.3g} | {int(np.sum(d[defined] > err[defined])):,}"
            if defined.any()
            else "n/a | n/a | n/a"
        )
        print(
            f"| {budget:g} | {args.n:,} | {rows / len(X):.2f} | {best_fme:.2f} | {best_pred:.2f} | "
            f"**{best_fme / best_pred:.2f}** | {routes.get('jumps', 0):,} / {routes.get('quadrature', 0):,} | "
            f"{res.n_nlm_inaccurate:,} | {np.nanmedian(err):.3g} ({np.sum(np.isinf(err)):,}) | {acc} | "
            f"{peak:.0f} MiB |",
            flush=True,
        )


if __name__ == "__main__":
    main()
