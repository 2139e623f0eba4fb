"""Positivity diagnostics of the data-level AME (:func:`fme.levels.dgp.dgp_ame`): how far the weights of the
one-step correction and the moved rows tell that the data can support the shifted distribution.

The one-step estimator reweights the residuals Y - mu(X) by the density ratio r(x) of the moved to the
observed features (or the inverse propensity of a categorical switch). Where the moved rows leave the
support, r is unbounded and no estimator can learn mu(x + h) from the data: the verdict says so instead of
printing a confident interval.

Thresholds of the verdict (on the weights w, normalised to mean 1 over the rows that carry weight):

* ``"fails"`` when more than :data:`FAIL_SHARE` (20 %) of the moved rows are flagged by the extrapolation
  detector, or the effective sample size is below :data:`FAIL_ESS` (5 %) of the rows that carry weight. A
  fifth of the moved rows outside the data means the effect is mostly a statement about regions without
  observations; an ESS of 5 % means the correction rests on a handful of rows, so that the influence terms are
  heavy-tailed and their standard deviation does not describe the estimator's spread.
* ``"weak"`` when more than :data:`WEAK_SHARE` (5 %) are flagged, the ESS is below :data:`WEAK_ESS` (20 %),
  or a single row holds more than :data:`WEAK_TOP_WEIGHT` (5 %) of the total weight. The estimate and its
  interval stand but depend on a part of the data (or one row) that a different sample may not have.
* ``"ok"`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FAIL_SHARE", "FAIL_ESS", "WEAK_SHARE", "WEAK_ESS", "WEAK_TOP_WEIGHT", "Diagnostics", "diagnose", "verdict"]

#: Share of moved rows out of support above which the data cannot support the shift.
FAIL_SHARE = 0.2
#: Effective sample size (share of the rows that carry weight) below which the correction is unusable.
FAIL_ESS = 0.05
#: Share of moved rows out of support above which the verdict is "weak".
WEAK_SHARE = 0.05
#: Effective sample size (share) below which the verdict is "weak".
WEAK_ESS = 0.2
#: Share of the total weight held by the single heaviest row above which the verdict is "weak".
WEAK_TOP_WEIGHT = 0.05


@dataclass(frozen=True)
class Diagnostics:
    """The positivity figures of one table row."""

    max_weight: float
    p99_weight: float
    ess: float
    ess_share: float
    top_weight: float
    share_extrapolated: float
    propensity_min: float
    propensity_max: float

    @property
    def verdict(self) -> str:
        return verdict(self.share_extrapolated, self.ess_share, self.top_weight)


def verdict(share_extrapolated: float, ess_share: float, top_weight: float) -> str:
    """ "ok", "weak" or "fails" by the thresholds of this module (a NaN share, no detector, is not counted)."""
    share = 0.0 if np.isnan(share_extrapolated) else share_extrapolated
    if share > FAIL_SHARE or not ess_share >= FAIL_ESS:
        return "fails"
    if share > WEAK_SHARE or ess_share < WEAK_ESS or top_weight > WEAK_TOP_WEIGHT:
        return "weak"
    return "ok"


def diagnose(
    weights: np.ndarray,
    carriers: np.ndarray,
    flagged: np.ndarray,
    moved: np.ndarray,
    propensity: np.ndarray | None = None,
) -> Diagnostics:
    """Diagnostics of ``weights`` over the rows ``carriers`` (those that can carry weight: every evaluated row for
    a numeric shift, the rows already at the level for a categorical switch), with ``flagged`` (the detector's
    flags of the moved points, or None) over the ``moved`` rows; ``propensity`` the fitted P(A = a | W) of a
    switch. Weights are normalised to mean 1 over the carriers, so that the maximum reads "times the average
    row"."""
    w = np.asarray(weights, dtype=float)[carriers]
    nan = float("nan")
    if w.size == 0 or not np.isfinite(w).all() or w.sum() <= 0:
        ess = 0.0 if w.size else nan
        return Diagnostics(float(np.max(w)) if w.size else nan, nan, ess, 0.0, 1.0, _share(flagged, moved), nan, nan)
    w = w / w.mean()
    ess = float(w.sum() ** 2 / np.sum(w * w))
    p = None if propensity is None else np.asarray(propensity, dtype=float)[moved | carriers]
    return Diagnostics(
        float(w.max()),
        float(np.quantile(w, 0.99)),
        ess,
        ess / w.size,
        float(w.max() / w.sum()),
        _share(flagged, moved),
        nan if p is None or not p.size else float(p.min()),
        nan if p is None or not p.size else float(p.max()),
    )


def _share(flagged: np.ndarray | None, moved: np.ndarray) -> float:
    if flagged is None or not moved.any():
        return float("nan")
    return float(np.mean(flagged[moved]))
