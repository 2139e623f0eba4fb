"""Exact NLM (``nlm_method="exact"``) against 16-node Gauss-Legendre on the same model and rows.

One run per model: ``fme.fme(model, X, {"x0": 1, "x1": 1}, nlm=True, nlm_method=m)`` for
m = "exact" and "gauss-legendre", timed alternately ``--repeat`` times (best wall and best
CPU time of each; the machine is shared, the ratio is what matters). Reports the route of
the exact NLM (tree traversal or midpoint predictions), the rows predicted by Gauss-Legendre
(18 per row) and the segments of the exact NLM, the ANLM by both, and the mean
|NLM_GL - NLM_exact| (the quadrature error). Peak memory: each method once more in a spawned child
process (given the model and rows), its peak resident set (``VmHWM``) minus its resident set just before
the call (Linux; the model's own allocations included), after the timings.

10 standard-normal features; y = sin(2 x0) + x1^2 + x2 x3 + noise; models fitted
on 20 000 rows. Usage::

    python benchmarks/bench_nlm_exact.py [--n-hgb 100000] [--n-xgb 100000] [--n-other 10000] [--only A,B] [--repeat 3]
        [--own 400]

``--own k``: the exact NLMs of the first k rows against the NLM of the model's own predictions along the path,
found from ``predict`` alone (:func:`own_path_nlm`); the classifiers are fitted on y > median(y).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
import warnings

import numpy as np
import pandas as pd

import fme
from fme._adapters.predictor import make_predictor
from fme._nlm.exact import exact_nlm, tree_thresholds
from fme._nlm.tree_paths import read_forest, traverse_nlm
from fme.exceptions import FixedModelWarning


def models():
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor

    out = {
        "HistGradientBoostingRegressor(100 iterations)": HistGradientBoostingRegressor(max_iter=100, random_state=0),
        "RandomForestRegressor(200 trees, max_depth 10)": RandomForestRegressor(
            200, max_depth=10, n_jobs=1, random_state=0
        ),
    }
    try:
        import lightgbm as lgb

        out["LGBMRegressor(100 trees)"] = lgb.LGBMRegressor(n_estimators=100, verbose=-1, n_jobs=1, random_state=0)
    except ImportError:  # optional
        pass
    try:
        import xgboost as xgb

        out["XGBRegressor(100 trees)"] = xgb.XGBRegressor(n_estimators=100, max_depth=6, n_jobs=1, random_state=0)
        out["XGBClassifier(100 trees)"] = xgb.XGBClassifier(n_estimators=100, max_depth=6, n_jobs=1, random_state=0)
    except ImportError:
        pass
    return out


def own_path_nlm(model, X: pd.DataFrame, steps: dict, grid: int = 2048, iters: int = 56) -> np.ndarray:
    """The NLM of the model's own predictions along each path (piecewise constant): ``predict`` on a grid of
    ``grid + 1`` points, every change between neighbours located by bisection on ``predict`` (a bracket whose
    midpoint equals neither end is split), then the integrals of the piecewise-constant prediction in closed
    form. Only the model's ``predict`` (``predict_proba[:, 1]`` for a classifier), one call per bisection step."""
    predict = make_predictor(model)
    n = len(X)
    base = X.to_numpy(dtype=float)
    h = np.array([steps.get(c, 0.0) for c in X.columns])

    def at(rows, t):
        return np.asarray(predict(pd.DataFrame(base[rows] + t[:, None] * h, columns=X.columns)), dtype=float)

    ts = np.linspace(0.0, 1.0, grid + 1)
    V = at(np.repeat(np.arange(n), ts.size), np.tile(ts, n)).reshape(n, ts.size)
    r, j = np.nonzero(V[:, 1:] != V[:, :-1])
    lo, hi, vl, vh = ts[j], ts[j + 1], V[r, j], V[r, j + 1]
    for _ in range(iters):
        m = 0.5 * (lo + hi)
        vm = at(r, m)
        left, right = vm == vl, vm == vh
        both = ~left & ~right
        lo, hi = np.r_[np.where(left, m, lo), m[both]], np.r_[np.where(left, hi, m), hi[both]]
        vl, vh = np.r_[np.where(left, vm, vl), vm[both]], np.r_[np.where(left, vh, vm), vh[both]]
        r = np.r_[r, r[both]]
    out = np.full(n, np.nan)
    for i in range(n):  # closed forms row by row (a few hundred rows)
        sel = np.flatnonzero(r == i)
        order = sel[np.argsort(lo[sel])]
        edges = np.r_[0.0, 0.5 * (lo[order] + hi[order]), 1.0]
        d = np.r_[V[i, 0], vh[order]] - V[i, 0]
        F = V[i, -1] - V[i, 0]
        a, b = edges[:-1], edges[1:]
        mean = np.sum((b - a) * d)
        num = np.sum(((d - a * F) ** 3 - (d - b * F) ** 3) / (3 * F)) if F != 0 else np.sum((b - a) * d**2)
        den = np.sum((b - a) * (d - mean) ** 2)
        out[i] = 1.0 - num / den if den > 0 else np.nan
    return out


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _peak_child(model, X, steps, method, queue) -> None:
    warnings.simplefilter("ignore", FixedModelWarning)
    start = _status_kib("VmRSS")
    fme.fme(model, X, steps, nlm=True, nlm_method=method)
    queue.put((_status_kib("VmHWM") - start) / 1024.0)


def peak_mib(model, X, steps, method) -> float:
    """Peak resident memory of one ``fme.fme`` call above the process's at its start, in a fresh (spawned)
    child process, MiB (a forked child of a process that ran OpenMP code can hang in it)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_peak_child, args=(model, X, steps, method, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-hgb", type=int, default=100_000)
    ap.add_argument("--n-xgb", type=int, default=100_000)
    ap.add_argument("--n-other", type=int, default=10_000)
    ap.add_argument("--only", default="", help="run only models whose name contains this (comma-separated: any)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--own",
        type=int,
        default=0,
        help="also compare the exact NLMs of this many rows with the NLM of "
        "the model's own predictions along the path (bisection on predict; one more table)",
    )
    args = ap.parse_args()
    warnings.simplefilter("ignore", FixedModelWarning)  # fixed-model intervals are what is timed here
    rng = np.random.default_rng(0)
    cols = [f"x{i}" for i in range(10)]
    train = pd.DataFrame(rng.normal(size=(20_000, 10)), columns=cols)
    y = np.sin(2 * train["x0"]) + train["x1"] ** 2 + train["x2"] * train["x3"] + rng.normal(0, 0.1, len(train))
    steps = {"x0": 1.0, "x1": 1.0}
    print(
        "| model | n | exact route | segments exact / rows predicted GL | exact wall s | GL16 wall s | ratio wall "
        "| ratio CPU | peak MiB exact | peak MiB GL16 | ANLM exact | ANLM GL16 | mean abs NLM error GL16 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    own = []
    for name, model in models().items():
        if not any(part in name for part in args.only.split(",")):
            continue
        model.fit(train, y > np.median(y) if "Classifier" in name else y)
        n = args.n_hgb if name.startswith("HistGradient") else args.n_xgb if name.startswith("XGB") else args.n_other
        X = pd.DataFrame(rng.normal(size=(n, 10)), columns=cols)
        best = {"exact": [np.inf, np.inf], "gauss-legendre": [np.inf, np.inf]}
        out = {}
        for _ in range(args.repeat):
            for m in best:
                out[m], w, c = timed(lambda: fme.fme(model, X, steps, nlm=True, nlm_method=m))
                best[m] = [min(best[m][0], w), min(best[m][1], c)]
        ex, gl = out["exact"], out["gauss-legendre"]
        peak = {m: peak_mib(model, X, steps, m) for m in best}
        forest = read_forest(model)
        shifts = {f: np.full(n, h) for f, h in steps.items()}
        f0, f1 = ex.predictions["f_x"].to_numpy(), ex.predictions["f_x_step"].to_numpy()
        if forest is not None:
            route = "traversal"
            _, _, segs = traverse_nlm(forest, X, shifts, f0, f1)
        else:
            route = "midpoints"
            _, _, segs = exact_nlm(make_predictor(model), X, shifts, tree_thresholds(model, list(steps), cols), f0, f1)
        err = np.nanmean(np.abs(gl.results["nlm"].to_numpy() - ex.results["nlm"].to_numpy()))
        (we, ce), (wg, cg) = best["exact"], best["gauss-legendre"]
        print(
            f"| {name} | {n:,} | {route} | {segs:,} / {18 * n:,} | {we:.2f} | {wg:.2f} | {we / wg:.2f} | "
            f"{ce / cg:.2f} | {peak['exact']:.0f} | {peak['gauss-legendre']:.0f} | {ex.anlm:.4f} | {gl.anlm:.4f} "
            f"| {err:.3g} |",
            flush=True,
        )
        if args.own:
            got = ex.results["nlm"].to_numpy()[: args.own]
            ref = own_path_nlm(model, X.iloc[: args.own], steps)
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
            own.append(f"| {name} | {args.own} | {np.nanmax(rel):.3g} | {int(np.sum(rel > 1e-9))} |")
    if own:
        print("\n| model | rows | largest relative distance to the NLM of its own predictions | rows above 1e-9 |")
        print("|---|---|---|---|")
        print("\n".join(own))


if __name__ == "__main__":
    main()
