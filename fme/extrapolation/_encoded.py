"""Shared plumbing of the detectors that encode the reference data (paper Appendix "Model Extrapolation").

The convex hull (:mod:`._hull`), the risk detectors MCEC and CERT
(:mod:`._risk`) and the outlier detectors (:mod:`._outlier`) subclass
:class:`EncodedDetector`, which follows the conventions of
:class:`fme.extrapolation.ExtrapolationDetector` (``fit(reference) -> self``,
``flag(points) -> bool array``, ``score`` larger = more extrapolated,
``explain`` a reason per flagged point).

Conventions shared by every encoded detector:

* Numeric features are standardised with the reference mean and SD (SD 0 ->
  1) before any geometry, so that features on different scales weigh alike
  and the linear programs stay well conditioned.
* The reference data must have no missing value in the columns used
  (:class:`~fme.exceptions.ExtrapolationError` otherwise); a *point* with a
  missing value is flagged ("missing value in <feature>"), because no
  detector can place it.
* A categorical level the reference data lacks is always flagged, as in the
  envelope.
"""

from __future__ import annotations

import numbers
from abc import abstractmethod
from typing import Any

import numpy as np
import pandas as pd

from .._utils.validation import is_categorical
from ..exceptions import ExtrapolationError, ParameterError
from ._base import ExtrapolationDetector


# ----------------------------------------------------------------- helpers
def check_fraction(value: Any, name: str, low: float, high: float, *, closed_high: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = low < float(value) < high or (closed_high and float(value) == high)
    if not ok:
        right = "]" if closed_high else ")"
        raise ParameterError(f"{name} must be a number in ({low:g}, {high:g}{right}, got {value!r}.")
    return float(value)


def check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def draw_seed(rng: np.random.Generator) -> int:
    """An int seed for scikit-learn estimators, drawn from the detector's generator."""
    return int(rng.integers(0, 2**31 - 1))


def _join(parts: list[np.ndarray], n: int) -> np.ndarray:
    out = np.full(n, "", dtype=object)
    for p in parts:
        sep = np.where((out != "") & (p != ""), "; ", "")
        out = out + sep + p
    return out


class _Encoding:
    """Standardised numeric columns and reference levels of categorical ones.

    Parameters
    ----------
    reference : DataFrame
        The reference (training) data.
    """

    def __init__(self, reference: pd.DataFrame) -> None:
        self.numeric = [c for c in reference.columns if not is_categorical(reference[c])]
        self.categorical = [c for c in reference.columns if is_categorical(reference[c])]
        for c in self.numeric:
            if not pd.api.types.is_numeric_dtype(reference[c].dtype):
                raise ExtrapolationError(f"reference column {c!r} has dtype {reference[c].dtype}; expected numbers.")
        num = reference[self.numeric].to_numpy(dtype=float)
        bad = [c for j, c in enumerate(self.numeric) if np.isnan(num[:, j]).any()]
        bad += [c for c in self.categorical if reference[c].isna().any()]
        if bad:
            raise ExtrapolationError(
                f"reference_data has missing values in {bad}; detectors need complete reference rows "
                "(drop or impute them first)."
            )
        if not np.isfinite(num).all():
            raise ExtrapolationError("reference_data has infinite values in numeric columns.")
        self.mean = num.mean(axis=0) if num.size else np.empty(0)
        sd = num.std(axis=0) if num.size else np.empty(0)
        self.sd = np.where(sd > 0, sd, 1.0)
        self.levels = {c: list(pd.unique(reference[c])) for c in self.categorical}
        self.z_reference = self.standardise(reference)
        self.low = self.z_reference.min(axis=0) if num.size else np.empty(0)
        self.high = self.z_reference.max(axis=0) if num.size else np.empty(0)

    def standardise(self, frame: pd.DataFrame) -> np.ndarray:
        return (frame[self.numeric].to_numpy(dtype=float) - self.mean) / self.sd

    def unseen(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Per categorical column, True where the level is not in the reference data."""
        return {c: ~frame[c].isin(self.levels[c]).to_numpy() & frame[c].notna().to_numpy() for c in self.categorical}

    def missing(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        return {c: frame[c].isna().to_numpy() for c in self.numeric + self.categorical}

    def one_hot(self, frame: pd.DataFrame) -> np.ndarray:
        """Standardised numeric columns followed by 0/1 indicators of the reference levels."""
        blocks = [self.standardise(frame)]
        for c in self.categorical:
            col = frame[c].to_numpy(dtype=object)
            blocks.append(np.column_stack([col == lv for lv in self.levels[c]]).astype(float))
        return np.hstack(blocks) if blocks else np.empty((len(frame), 0))

    def outside_box(self, z: np.ndarray, tol: float = 0.0) -> np.ndarray:
        if z.shape[1] == 0:
            return np.zeros(len(z), dtype=bool)
        with np.errstate(invalid="ignore"):
            return ((z < self.low - tol) | (z > self.high + tol)).any(axis=1)

    def basic_reasons(self, frame: pd.DataFrame) -> tuple[np.ndarray, list[np.ndarray]]:
        """Rows with a missing value or an unseen level, and the reasons for them."""
        n = len(frame)
        hit = np.zeros(n, dtype=bool)
        parts = []
        for c, m in self.missing(frame).items():
            hit |= m
            parts.append(np.where(m, f"missing value in {c}", ""))
        for c, m in self.unseen(frame).items():
            hit |= m
            parts.append(np.where(m, f"{c} level not in reference data", ""))
        return hit, parts


class EncodedDetector(ExtrapolationDetector):
    """Shared fit/flag plumbing: encode, then a numeric test on complete, seen rows."""

    def _fit(self, reference: pd.DataFrame) -> None:
        self.encoding_ = _Encoding(reference)
        self._fit_encoded(reference)

    @abstractmethod
    def _fit_encoded(self, reference: pd.DataFrame) -> None:
        """Fit on the reference data once it is encoded."""

    @abstractmethod
    def _numeric_flags(self, pts: pd.DataFrame, usable: np.ndarray) -> np.ndarray:
        """Flags for points without missing values or unseen levels."""

    def flag(self, points: pd.DataFrame) -> np.ndarray:
        """Boolean array, True where a point is an extrapolation point."""
        pts = self._check_fitted(points)
        basic, _ = self.encoding_.basic_reasons(pts)
        out = basic.copy()
        usable = ~basic
        if usable.any():
            out[usable] = self._numeric_flags(pts.iloc[np.flatnonzero(usable)], usable)
        return out

    @abstractmethod
    def _reason(self, pts: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        """Reason per point (only read where flagged)."""

    def explain(self, points: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        """Reason per point (empty string where not flagged)."""
        pts = self._check_fitted(points)
        flagged = np.asarray(flagged, dtype=bool)
        basic, parts = self.encoding_.basic_reasons(pts)
        out = _join(parts, len(pts))
        rest = flagged & ~basic
        if rest.any():
            out[rest] = self._reason(pts.iloc[np.flatnonzero(rest)], rest)
        out[~flagged] = ""
        return out
