"""Benchmark of ``on_extrapolation='shrink'`` with the convex-hull detector in many dimensions.

The diabetes data (442 rows x 10 features, scikit-learn's bundled copy): in 10
dimensions every point lies outside the hull of the others, so the hull is
degenerate for this reference data. Before issue 11 a two-feature shrink ran
for over 12 minutes and reported steps of ~1e-8 h under the nominal step; now
rows whose step would shrink below ``MIN_STEP_FRACTION`` of h are excluded
after one detector call, and the detector warns that it is degenerate.

Baseline in the same run: the search as it was before (``_bisect_every_row``, commit 2455dab^: 40
bisection calls per stage, each on every row, no minimum share), timed against
:func:`fme._core.shrink.shrink_steps` on the same rows and steps, for the one-feature step (the two-feature
baseline makes three times as many detector calls; ``--both`` runs it too). The baseline is stopped
after ``--budget`` seconds (default 600) and then reports how many of its calls it made: the ratio is
then an upper bound.

Run: ``.venv/bin/python benchmarks/bench_shrink.py [--both] [--budget 600]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from fme._utils.guards import call_detector, check_flags
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import fme
from fme._core.shrink import MIN_STEP_FRACTION, shrink_steps
from fme.extrapolation import make_detector
from fme.steps import apply_steps, parse_steps


class _OverBudget(Exception):
    pass


def _bisect_every_row(
    detector, cols, X: pd.DataFrame, steps, todo: np.ndarray, iterations: int = 40, budget: float = np.inf
):
    """The shrink search before issue 11 item 20 (verbatim but for names and the time budget): every
    stage bisects all rows. Raises _OverBudget(calls done) once ``budget`` seconds have passed."""
    start = time.perf_counter()
    n = len(X)
    h = {s.feature: np.full(n, s.value, dtype=float) for s in steps}
    idx = np.flatnonzero(todo)
    Xt = X.iloc[idx]
    calls = [0]

    def inside(scales):
        if time.perf_counter() - start > budget:
            raise _OverBudget(calls[0])
        calls[0] += 1
        moved = apply_steps(Xt, steps, {s.feature: s.value * scales[s.feature] for s in steps})
        return ~check_flags(call_detector(detector, "flag", moved[cols], "baseline"), len(Xt), detector)

    def bisect(active, base, upper):
        lo, hi = np.zeros(idx.size), np.ones(idx.size)
        ok = inside({f: (upper[f] if f in active else base[f]) for f in base})
        lo[ok] = 1.0
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            good = inside({f: (upper[f] * mid if f in active else base[f]) for f in base}) & ~ok
            lo = np.where(good, mid, lo)
            hi = np.where(good | ok, hi, mid)
        return lo

    zeros = {s.feature: np.zeros(idx.size) for s in steps}
    ones = {s.feature: np.ones(idx.size) for s in steps}
    scales = (
        {f: bisect([f], zeros, ones) for f in zeros} if len(steps) > 1 else {steps[0].feature: ones[steps[0].feature]}
    )
    common = bisect(list(scales), zeros, scales)
    for s in steps:
        h[s.feature][idx] = s.value * scales[s.feature] * common
    return h, calls[0]


def search_only(X: pd.DataFrame, steps: dict, budget: float) -> None:
    """The shrink search alone, new against the pre-issue-11 baseline, same rows, same detector."""
    parsed = parse_steps(X, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = make_detector("hull", 0).fit(X)
    cols = list(X.columns)
    flag_x = check_flags(det.flag(X), len(X), det)
    flag_xh = check_flags(det.flag(apply_steps(X, parsed)[cols]), len(X), det)
    todo = flag_xh & ~flag_x
    t0 = time.perf_counter()
    new = shrink_steps(det, cols, X, parsed, todo)
    t_new = time.perf_counter() - t0
    n_calls = (len(parsed) + 1 if len(parsed) > 1 else 1) * 41
    t0 = time.perf_counter()
    try:
        _bisect_every_row(det, cols, X, parsed, todo, budget=budget)
    except _OverBudget as stop:
        t_old = time.perf_counter() - t0
        print(
            f"search only {list(steps)} on {int(todo.sum())} rows: new {t_new:.2f} s; before: stopped after "
            f"{t_old:.0f} s having made {stop.args[0]} of its {n_calls} detector calls on all rows, so "
            f"ratio < {t_new / t_old:.4f}"
        )
        return
    t_old = time.perf_counter() - t0
    excluded = int((np.column_stack(list(new.values()))[todo] == 0).all(axis=1).sum())
    print(
        f"search only {list(steps)} on {int(todo.sum())} rows: new {t_new:.2f} s, before {t_old:.2f} s "
        f"({n_calls} detector calls on all rows), ratio {t_new / t_old:.4f}; new: {excluded} rows below "
        f"{MIN_STEP_FRACTION} h excluded"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--both", action="store_true", help="also time the two-feature baseline (3x as long)")
    p.add_argument("--budget", type=float, default=600.0, help="seconds after which the baseline is stopped")
    a = p.parse_args()
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = RandomForestRegressor(n_estimators=50, max_depth=5, random_state=0, n_jobs=1).fit(X, y)
    for steps in ({"bmi": "0.5*sd"}, {"bmi": "0.5*sd", "bp": "0.5*sd"}):
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                res = fme.fme(model, X, steps, extrapolation="hull", on_extrapolation="shrink")
                outcome = f"evaluated {res.n} of {len(X)}, excluded {res.n_excluded}"
            except fme.ExtrapolationError as exc:
                outcome = f"ExtrapolationError: {str(exc)[:70]}..."
        dt = time.perf_counter() - t0
        print(f"{list(steps)}: {dt:.2f} s, {outcome}; warnings: {[str(w.message)[:70] for w in caught]}")
    search_only(X, {"bmi": "0.5*sd"}, a.budget)
    if a.both:
        search_only(X, {"bmi": "0.5*sd", "bp": "0.5*sd"}, a.budget)


if __name__ == "__main__":
    main()
