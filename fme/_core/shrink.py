"""Per-row step shrinking for ``on_extrapolation='shrink'`` (paper §4.2, "Step Size and Extrapolation Risk").

A row whose x + h is an extrapolation point gets its numeric steps shrunk toward
0 until x + s h is inside. A step that has to shrink below
:data:`fme.steps.MIN_STEP_FRACTION` of h no longer answers the question asked (in a
high-dimensional hull every point may be on the boundary and steps shrink to
~1e-8 h, reporting an AME of 0 under the nominal step), so such rows are left
out as extrapolation points instead.

Cost: one detector call for all rows at the smallest allowed fraction, then
:data:`SHRINK_ITERATIONS` bisection calls per stage, each on the rows still
searched; never a call per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..extrapolation.guards import call_detector, check_flags
from ..steps import MIN_STEP_FRACTION, Step, apply_steps

__all__ = ["SHRINK_ITERATIONS", "shrink_steps"]

#: Bisection steps per stage: the effective step is found to 2**-40 of h.
SHRINK_ITERATIONS = 40


def shrink_steps(
    detector: Any, cols: list[str], X: pd.DataFrame, steps: tuple[Step, ...], todo: np.ndarray
) -> dict[str, np.ndarray]:
    """Per row, the effective numeric step of each feature (``h`` where ``todo`` is False).

    First each feature's step is shrunk on its own (the others at 0), then, if
    the combined point is still outside, all are shrunk together. Steps are
    never lengthened. Rows that cannot stay inside with every step at least
    :data:`fme.steps.MIN_STEP_FRACTION` of h get 0 for every step (the caller excludes them).
    """
    n = len(X)
    h = {s.feature: np.full(n, s.value, dtype=float) for s in steps}
    idx = np.flatnonzero(todo)
    if idx.size == 0:
        return h

    def inside(rows: np.ndarray, scales: dict[str, np.ndarray]) -> np.ndarray:
        Xt = X.iloc[idx[rows]]
        moved = apply_steps(Xt, steps, {s.feature: s.value * scales[s.feature] for s in steps})
        flags = call_detector(detector, "flag", moved[cols], "the shrink search (x + s h)")
        return ~check_flags(flags, len(Xt), detector)

    # Rows outside even with every step at the smallest allowed share are settled by one call.
    alive = np.flatnonzero(
        inside(np.arange(idx.size), {s.feature: np.full(idx.size, MIN_STEP_FRACTION) for s in steps})
    )
    final = {s.feature: np.zeros(idx.size) for s in steps}
    if alive.size:
        m = alive.size

        def bisect(active: list[str], base: dict[str, np.ndarray], upper: dict[str, np.ndarray]) -> np.ndarray:
            lo = np.full(m, MIN_STEP_FRACTION) if len(active) == len(steps) else np.zeros(m)
            hi = np.ones(m)
            ok = inside(alive, {f: (upper[f] if f in active else base[f]) for f in base})
            lo[ok] = 1.0
            rows = np.flatnonzero(~ok)
            for _ in range(SHRINK_ITERATIONS):
                if rows.size == 0:
                    break
                mid = 0.5 * (lo[rows] + hi[rows])
                trial = {f: (upper[f][rows] * mid if f in active else base[f][rows]) for f in base}
                good = inside(alive[rows], trial)
                lo[rows] = np.where(good, mid, lo[rows])
                hi[rows] = np.where(good, hi[rows], mid)
            return lo

        zeros = {s.feature: np.zeros(m) for s in steps}
        ones = {s.feature: np.ones(m) for s in steps}
        scales = {f: bisect([f], zeros, ones) for f in zeros} if len(steps) > 1 else {steps[0].feature: np.ones(m)}
        common = bisect(list(scales), zeros, scales)
        for f in scales:
            final[f][alive] = scales[f] * common
        share = np.min(np.column_stack([final[f][alive] for f in final]), axis=1)
        too_small = alive[share < MIN_STEP_FRACTION]
        for f in final:
            final[f][too_small] = 0.0
    for s in steps:
        h[s.feature][idx] = s.value * final[s.feature]
    return h
