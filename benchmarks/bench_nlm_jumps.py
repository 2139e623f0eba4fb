"""Does the error-controlled NLM's ``nlm_error`` bound the true error on paths with jumps and kinks?

Black boxes (plain functions, so fme cannot read any structure) whose paths are not smooth, each against an
independent reference computed here:

* ``function``: f = 2 x1 + sin(x2) + 3 (x3 > 0.5) + x1 x4, step {x1: 1, x2: 1, x3: 0.3}, 2000 rows
  (x1, x2, x4 standard normal, x3 uniform on [0, 1]: 30% of the paths cross the jump). Reference:
  ``scipy.integrate.quad`` of the three integrals with the jump t* = (0.5 - x3) / 0.3 as a break point.
* ``knn-uniform`` / ``knn-distance``: a ``KNeighborsRegressor(n_neighbors=10)`` on 2000 training rows of the
  same features and function (plus noise), 500 rows, the same step. Uniform weights give a piecewise-constant
  path (the jump route), distance weights a smooth path with a jump wherever the neighbour set changes
  (about 21 per path). Reference: the neighbour set of x + t h on 513 points, every change located by
  bisection on the set to 2^-46, then 20-node Gauss-Legendre on every piece between changes.
* ``relu-mlp``: benchmarks/bench_nlm_budget.py's wrapped ``MLPRegressor(32)`` (kinks), 400 rows, its step.
  Reference: the path is linear between the kinks of its 32 ReLU units (read from ``coefs_``): 4-node
  Gauss-Legendre on every piece between them.

Per budget: rows with |nlm - reference| > nlm_error, "ok" rows with |nlm - reference| > nlm_tol, the worst and
mean |nlm - reference|, the largest ratio of the two, the median nlm_error and the inaccurate rows. Usage::

    python benchmarks/bench_nlm_jumps.py [--case function --case knn-distance ...] [--budget 34 --budget 100]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy import integrate
from scipy.special import roots_legendre

STEP = {"x1": 1.0, "x2": 1.0, "x3": 0.3}
COLS = ["x1", "x2", "x3", "x4"]


def jump_function(d: pd.DataFrame) -> np.ndarray:
    x1, x2, x3, x4 = (d[c].to_numpy() for c in COLS)
    return 2.0 * x1 + np.sin(x2) + 3.0 * (x3 > 0.5) + x1 * x4


def _rows(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"x1": rng.normal(size=n), "x2": rng.normal(size=n), "x3": rng.uniform(size=n), "x4": rng.normal(size=n)}
    )


def function_reference(X: pd.DataFrame) -> np.ndarray:
    out = np.empty(len(X))
    for i, (x1, x2, x3, x4) in enumerate(X[COLS].to_numpy()):

        def g(t):
            return 2.0 * (x1 + t) + np.sin(x2 + t) + 3.0 * (x3 + 0.3 * t > 0.5) + (x1 + t) * x4

        ts = (0.5 - x3) / 0.3
        opts = dict(epsabs=1e-15, epsrel=1e-14, limit=200, points=[ts] if 0.0 < ts < 1.0 else None)
        f0, f1 = g(0.0), g(1.0)
        fbar = integrate.quad(g, 0, 1, **opts)[0]
        num = integrate.quad(lambda t: (g(t) - f0 - t * (f1 - f0)) ** 2, 0, 1, **opts)[0]
        den = integrate.quad(lambda t: (g(t) - fbar) ** 2, 0, 1, **opts)[0]
        out[i] = 1.0 - num / den
    return out


def _frame(X: pd.DataFrame, rows: np.ndarray, t: np.ndarray, step: dict) -> pd.DataFrame:
    base = X.to_numpy(dtype=float)[rows]
    h = np.array([step.get(c, 0.0) for c in X.columns])
    return pd.DataFrame(base + t[:, None] * h, columns=X.columns)


def knn_breakpoints(knn, X: pd.DataFrame, step: dict, points: int = 512, iters: int = 46) -> list[np.ndarray]:
    """Per row, the t where the neighbour set of x + t h changes: a grid, then bisection on the set."""
    n = len(X)

    def nset(rows, t):
        return np.sort(knn.kneighbors(_frame(X, rows, t, step), return_distance=False), axis=1)

    ts = np.linspace(0.0, 1.0, points + 1)
    S = nset(np.repeat(np.arange(n), ts.size), np.tile(ts, n)).reshape(n, ts.size, -1)
    r, j = np.nonzero(np.any(S[:, 1:] != S[:, :-1], axis=2))
    lo, hi, sl, sh = ts[j], ts[j + 1], S[r, j], S[r, j + 1]
    for _ in range(iters):
        m = 0.5 * (lo + hi)
        sm = nset(r, m)
        left, right = np.all(sm == sl, axis=1), np.all(sm == sh, axis=1)
        both = ~left & ~right  # two changes or more inside: keep both halves
        lo, hi = np.r_[np.where(left, m, lo), m[both]], np.r_[np.where(left, hi, m), hi[both]]
        sl = np.r_[np.where(left[:, None], sm, sl), sm[both]]
        sh = np.r_[np.where(left[:, None], sh, sm), sh[both]]
        r = np.r_[r, r[both]]
    mid = 0.5 * (lo + hi)
    return [np.sort(mid[r == i]) for i in range(n)]


def piecewise_reference(predict, X: pd.DataFrame, step: dict, breaks: list[np.ndarray], nodes: int = 20) -> np.ndarray:
    """The NLM with Gauss-Legendre on every piece between the break points (smooth pieces)."""
    z, w = roots_legendre(nodes)
    z, w = (z + 1.0) / 2.0, w / 2.0
    R, T, W = [], [], []
    for i, b in enumerate(breaks):
        e = np.r_[0.0, b, 1.0]
        lo, width = e[:-1], np.diff(e)
        T.append((lo[:, None] + z[None] * width[:, None]).ravel())
        W.append((w[None] * width[:, None]).ravel())
        R.append(np.full(T[-1].size, i))
    R, T, W = (np.concatenate(v) for v in (R, T, W))
    n = len(X)
    f0 = np.asarray(predict(X), dtype=float)
    F = np.asarray(predict(_frame(X, np.arange(n), np.ones(n), step)), dtype=float) - f0
    v = (
        np.concatenate(
            [
                np.asarray(predict(_frame(X, R[k : k + 500_000], T[k : k + 500_000], step)), dtype=float)
                for k in range(0, R.size, 500_000)
            ]
        )
        - f0[R]
    )
    S1 = np.bincount(R, W * v, n)
    D = np.bincount(R, W * (v - S1[R]) ** 2, n)
    N = np.bincount(R, W * (v - T * F[R]) ** 2, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(D > 0, 1.0 - N / D, np.nan)


def setup(case: str):
    """(black box, rows, step, reference NLMs)."""
    if case == "function":
        X = _rows(2000, 0)
        return jump_function, X, STEP, function_reference(X)
    if case.startswith("knn"):
        from sklearn.neighbors import KNeighborsRegressor

        train = _rows(2000, 1)
        y = jump_function(train) + np.random.default_rng(2).normal(0, 0.1, len(train))
        knn = KNeighborsRegressor(n_neighbors=10, weights=case.split("-")[1]).fit(train, y)
        X = _rows(500, 3)
        return (
            (lambda d: knn.predict(d)),
            X,
            STEP,
            piecewise_reference(knn.predict, X, STEP, knn_breakpoints(knn, X, STEP)),
        )
    from bench_nlm_budget import STEPS
    from bench_nlm_budget import setup as mlp_setup

    model, X = mlp_setup(400, "mlp")
    # one ReLU layer: unit k's input is a_k + b_k t along the path, so the path is linear between the kinks
    # t_k = -a_k / b_k; two Gauss nodes per piece integrate it exactly (four here)
    h = np.array([STEPS.get(c, 0.0) for c in X.columns])
    a = X.to_numpy() @ model.coefs_[0] + model.intercepts_[0]
    b = h @ model.coefs_[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        kinks = -a / b
    breaks = [np.sort(k[(k > 0.0) & (k < 1.0)]) for k in kinks]
    return (lambda d: model.predict(d)), X, STEPS, piecewise_reference(model.predict, X, STEPS, breaks, nodes=4)


def main() -> None:
    import fme

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=["function", "knn-uniform", "knn-distance", "relu-mlp"])
    ap.add_argument("--budget", type=float, action="append")
    args = ap.parse_args()
    print(
        "| case | rows | budget | routes (jumps / quadrature) | rows with error > nlm_error | ok rows with error > "
        "nlm_tol | worst error | mean error | largest error / nlm_error | median nlm_error | inaccurate | "
        "fme wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for case in args.case or ["function", "knn-uniform", "knn-distance", "relu-mlp"]:
        f, X, step, ref = setup(case)
        for budget in args.budget or [34.0, 100.0, 300.0, 1000.0]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", fme.exceptions.FMEWarning)
                w = time.perf_counter()
                res = fme.fme(f, X, step, nlm=True, nlm_budget=budget, inference="sample", progress=False)
                wall = time.perf_counter() - w
            r = res.results
            diff = np.abs(r["nlm"].to_numpy() - ref)
            err = r["nlm_error"].to_numpy()
            ok = (r["nlm_status"] == "ok").to_numpy()
            routes = r["nlm_route"].value_counts()
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.nanmax(diff / err)
            print(
                f"| {case} | {len(X):,} | {budget:g} | {routes.get('jumps', 0):,} / {routes.get('quadrature', 0):,} | "
                f"**{int(np.sum(diff > err))}** | **{int(np.sum(diff[ok] > res.nlm_tol))}** | {np.nanmax(diff):.3g} | "
                f"{np.nanmean(diff):.3g} | {ratio:.3g} | {np.nanmedian(err):.3g} | {res.n_nlm_inaccurate:,} | "
                f"{wall:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
