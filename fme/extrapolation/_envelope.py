"""Envelope extrapolation detector (paper §4.2 and §8); registered as ``"envelope"``.

The detector of the paper's Boston example and the default of :func:`fme.fme`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .._utils.validation import is_categorical
from ._base import ExtrapolationDetector, register_detector

__all__ = ["EnvelopeDetector"]


@register_detector
class EnvelopeDetector(ExtrapolationDetector):
    """Outside the per-feature envelope: any numeric feature outside [min, max]
    of the reference data, or a categorical level the reference data lacks.

    The multivariate envelope of the paper's Boston example (§8). It cannot
    see empty regions inside the box; see the other detectors for that.
    Missing and infinite reference values do not widen the box.
    """

    name = "envelope"
    supports_categorical = True

    def _fit(self, reference: pd.DataFrame) -> None:
        self.numeric_ = [c for c in reference.columns if not is_categorical(reference[c])]
        self.categorical_ = [c for c in reference.columns if is_categorical(reference[c])]
        num = reference[self.numeric_].to_numpy(dtype=float)
        # An infinite reference value would make the box unbounded and flag nothing: ignored like NaN.
        num = np.where(np.isfinite(num), num, np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: no bounds (NaN), never flagged
            self.min_ = np.nanmin(num, axis=0) if num.size else np.empty(0)
            self.max_ = np.nanmax(num, axis=0) if num.size else np.empty(0)
        self.levels_ = {c: set(reference[c].dropna().unique().tolist()) for c in self.categorical_}

    def _violations(self, points: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, dict]:
        pts = self._check_fitted(points)
        x = pts[self.numeric_].to_numpy(dtype=float)
        below = x < self.min_
        above = x > self.max_
        unseen = {c: ~pts[c].isin(self.levels_[c]).to_numpy() & pts[c].notna().to_numpy() for c in self.categorical_}
        return below, above, unseen

    def flag(self, points: pd.DataFrame) -> np.ndarray:
        below, above, unseen = self._violations(points)
        out = (below | above).any(axis=1)
        for mask in unseen.values():
            out |= mask
        return out

    def score(self, points: pd.DataFrame) -> np.ndarray:
        """Largest distance outside the box, in units of each feature's range (0 inside)."""
        pts = self._check_fitted(points)
        x = pts[self.numeric_].to_numpy(dtype=float)
        span = np.where(self.max_ > self.min_, self.max_ - self.min_, 1.0)
        dist = np.maximum(self.min_ - x, 0.0) + np.maximum(x - self.max_, 0.0)
        return (dist / span).max(axis=1) if x.shape[1] else np.zeros(len(pts))

    def explain(self, points: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        below, above, unseen = self._violations(points)
        out = np.full(len(points), "", dtype=object)
        parts: list[np.ndarray] = []
        for j, c in enumerate(self.numeric_):
            parts.append(np.where(below[:, j], f"{c} < min {self.min_[j]:.6g}", ""))
            parts.append(np.where(above[:, j], f"{c} > max {self.max_[j]:.6g}", ""))
        for c, mask in unseen.items():
            parts.append(np.where(mask, f"{c} level not in reference data", ""))
        for p in parts:
            sep = np.where((out != "") & (p != ""), "; ", "")
            out = out + sep + p
        return out
