"""Benchmark of ``on_extrapolation='shrink'`` with the convex-hull detector in many dimensions.

The diabetes data (442 rows x 10 features, scikit-learn's bundled copy): in 10
dimensions every point lies outside the hull of the others, so the hull is
degenerate for this reference data. Before issue 11 a two-feature shrink ran
for over 12 minutes and reported steps of ~1e-8 h under the nominal step; now
rows whose step would shrink below ``MIN_STEP_FRACTION`` of h are excluded
after one detector call, and the detector warns that it is degenerate.

Run: ``.venv/bin/python benchmarks/bench_shrink.py``
"""

from __future__ import annotations

import time
import warnings

from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import fme


def main() -> None:
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


if __name__ == "__main__":
    main()
