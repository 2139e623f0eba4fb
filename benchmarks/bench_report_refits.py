"""A report's bootstrap refits against a plain loop of the same fits, in the same run.

A report with E bootstrap effects of one model calls ``fme.fme(model, data, steps_e, bootstrap=spec)`` per
effect with the same training data and seed, so every call draws the same resamples. Timed here, alternating,
best of ``--repeat`` each:

* ``loop``: the plain loop a user would write: for each of B resamples, clone and fit the model once, then
  predict x and x + h of every effect (E effects);
* ``fme, shared refits``: the E ``fme.fme`` calls sharing one :class:`fme.inference.RefitCache` (as the
  report's analysis now does): the first call refits, the others predict with its refits;
* ``fme, no cache``: the E calls as before (each refits B times).

With ``--dask K`` the evaluation rows are a Dask DataFrame of K partitions and the fme runs call
``fme.ame`` on it (a Dask report's all-row bootstrap): the cache then holds the refitted models only (the
evaluation points stay on the workers), so every call still predicts x and x + h with each refit.

The draws of the two fme runs are checked to be equal (with ``--dask``: their standard errors). Model:
``HistGradientBoostingRegressor(max_iter=50)`` on ``--rows`` training rows with 6 features; evaluation on the
same rows; sequential refits (``n_jobs=None``) in all three, so the ratios compare the work and not the
parallelism. Goal: shared refits at most 1.1x the loop.

Usage: ``python benchmarks/bench_report_refits.py [--rows 2000] [--resamples 30] [--effects 3] [--repeat 2]
[--dask K]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingRegressor

import fme
from fme.inference import RefitCache


def _data(n: int) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(n, 6)), columns=[f"x{i}" for i in range(6)])
    y = X["x0"] + np.sin(2 * X["x1"]) + X["x2"] * X["x3"] + rng.normal(scale=0.5, size=n)
    return X, y


def _loop(model, X, y, features, B: int, seed: int) -> np.ndarray:
    """AME of every effect per resample: one fit per resample, the same resamples as fme's bootstrap."""
    seeds = np.random.SeedSequence(seed).spawn(B)
    out = np.empty((B, len(features)))
    stepped = [X.assign(**{f: X[f] + 1.0}) for f in features]
    for b, s in enumerate(seeds):
        idx = np.random.default_rng(s).integers(0, len(X), len(X))
        m = clone(model).fit(X.iloc[idx], y.iloc[idx])
        base = m.predict(X)
        for j, x1 in enumerate(stepped):
            out[b, j] = float(np.mean(m.predict(x1) - base))
    return out


def _fme(model, X, y, features, B: int, seed: int, cache, lazy=None) -> list[np.ndarray]:
    spec = {"X": X, "y": y, "n_resamples": B, "random_state": seed, "progress": False}
    if cache is not None:
        spec["cache"] = cache
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in features:
            if lazy is not None:  # Dask data: the AME table's bootstrap standard error
                out.append(fme.ame(model, lazy, {f: 1.0}, bootstrap=spec)["std_error"].to_numpy())
                continue
            res = fme.fme(model, X, {f: 1.0}, bootstrap=spec)
            out.append(res.inference_rows.draws.mean(axis=0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=30)
    ap.add_argument("--effects", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dask", type=int, default=0, help="evaluate on a Dask DataFrame of this many partitions")
    args = ap.parse_args()
    X, y = _data(args.rows)
    lazy = None
    if args.dask:
        import dask
        import dask.dataframe as dd

        dask.config.set(scheduler="synchronous")  # the refits' work, not the scheduler's threads, is compared
        lazy = dd.from_pandas(X, npartitions=args.dask)
    model = HistGradientBoostingRegressor(max_iter=50, random_state=0).fit(X, y)
    features = list(X.columns[: args.effects])
    runs = {
        "loop": lambda: _loop(model, X, y, features, args.resamples, 0),
        "fme, shared refits": lambda: _fme(model, X, y, features, args.resamples, 0, RefitCache(), lazy),
        "fme, no cache": lambda: _fme(model, X, y, features, args.resamples, 0, None, lazy),
    }
    best = {k: np.inf for k in runs}
    walls: dict = {k: [] for k in runs}
    outs = {}
    loads = []
    for _ in range(args.repeat):
        for name, fn in runs.items():
            loads.append(os.getloadavg()[0])
            t0 = time.perf_counter()
            outs[name] = fn()
            walls[name].append(time.perf_counter() - t0)
            best[name] = min(best[name], walls[name][-1])
    for a, b in zip(outs["fme, shared refits"], outs["fme, no cache"]):
        np.testing.assert_array_equal(a, b)
    if lazy is None:  # the loop's AMEs equal fme's refits' (same resamples, same fits) up to summation order
        np.testing.assert_allclose(np.column_stack(outs["fme, shared refits"]), outs["loop"], rtol=1e-9, atol=1e-12)
    else:  # the bootstrap SE of each effect: the SD (ddof 1) of the loop's AMEs
        np.testing.assert_allclose(
            np.concatenate(outs["fme, shared refits"]), outs["loop"].std(axis=0, ddof=1), rtol=1e-9
        )
    print(
        f"{args.effects} effects, {args.resamples} refits of HistGradientBoostingRegressor(max_iter=50) on "
        f"{args.rows} rows{f' (Dask, {args.dask} partitions)' if lazy is not None else ''}; load average "
        f"{min(loads):.1f}-{max(loads):.1f}"
    )
    for name in runs:
        print(
            f"  {name:20s} best {best[name]:7.2f} s  ratio to loop {best[name] / best['loop']:.2f}  "
            f"(walls {', '.join(f'{w:.2f}' for w in walls[name])})"
        )


if __name__ == "__main__":
    main()
