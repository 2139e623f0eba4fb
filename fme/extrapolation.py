"""Extrapolation detection (paper §3.2 and Appendix "Model Extrapolation").

An fME is only trustworthy when neither x nor x + h lies where the model never
saw data. A detector is fitted on reference data (the training data) and flags
points:

>>> det = EnvelopeDetector().fit(train)        # doctest: +SKIP
>>> det.flag(points)                            # doctest: +SKIP
array([False,  True, ...])

Any object with ``fit(reference) -> self`` and ``flag(points) -> bool array``
can be passed as ``extrapolation=`` to :func:`fme.fme`; subclass
:class:`ExtrapolationDetector` to get ``score``/``explain`` defaults.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import pandas as pd

from ._validation import check_data, check_real_columns, is_categorical
from .exceptions import ExtrapolationError, NotFittedError

__all__ = [
    "ExtrapolationDetector",
    "EnvelopeDetector",
    "ConvexHullDetector",
    "MCECDetector",
    "CERTDetector",
    "IsolationForestDetector",
    "LOFDetector",
    "DETECTORS",
    "make_detector",
]


class ExtrapolationDetector(ABC):
    """Base class of extrapolation detectors.

    Subclasses implement :meth:`_fit` and :meth:`flag`; they may override
    :meth:`score` (a number per point, larger = more extrapolated) and
    :meth:`explain` (a reason per flagged point).
    """

    #: Short name used in summaries and reports.
    name = "detector"
    #: Whether categorical features are checked (numeric ones always are).
    supports_categorical = False

    def fit(self, reference: pd.DataFrame) -> "ExtrapolationDetector":
        """Learn where the reference (training) data lies."""
        check_data(reference, "reference_data")
        check_real_columns(reference, "reference_data")
        self.feature_names_in_ = list(reference.columns)
        self._fit(reference)
        return self

    @abstractmethod
    def _fit(self, reference: pd.DataFrame) -> None:
        """Learn from the reference data (columns already checked)."""

    def _check_fitted(self, points: pd.DataFrame) -> pd.DataFrame:
        if not hasattr(self, "feature_names_in_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(reference_data) first.")
        missing = [c for c in self.feature_names_in_ if c not in points.columns]
        if missing:
            raise ExtrapolationError(f"points lack the feature(s) {missing} the detector was fitted on.")
        return points[self.feature_names_in_]

    @abstractmethod
    def flag(self, points: pd.DataFrame) -> np.ndarray:
        """Boolean array, True where a point is an extrapolation point."""

    def score(self, points: pd.DataFrame) -> np.ndarray:
        """Extrapolation score per point (NaN when the detector has none)."""
        return np.full(len(points), np.nan)

    def explain(self, points: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        """Reason per point (empty string where not flagged)."""
        out = np.full(len(points), "", dtype=object)
        out[np.asarray(flagged, dtype=bool)] = f"flagged by {self.name}"
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


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


#: Registry of detectors by name (``extrapolation=<name>`` in :func:`fme.fme`).
DETECTORS: dict[str, type] = {"envelope": EnvelopeDetector}


def make_detector(spec: Any, random_state: Any = None) -> ExtrapolationDetector | Any:
    """Turn ``extrapolation=`` (a name or a detector object) into a detector.

    Randomised detectors receive ``random_state`` when they accept one.
    """
    if isinstance(spec, str):
        cls = DETECTORS.get(spec.lower())
        if cls is None:
            raise ExtrapolationError(
                f"unknown extrapolation detector {spec!r}; valid names: {', '.join(sorted(DETECTORS))}, "
                "or pass a detector object with fit() and flag()."
            )
        try:
            return cls(random_state=random_state)
        except TypeError:
            return cls()
    if isinstance(spec, type):
        raise ExtrapolationError(
            f"extrapolation={spec.__name__} is a detector class; pass an instance, e.g. "
            f"extrapolation={spec.__name__}() (or a name such as 'envelope')."
        )
    if not (callable(getattr(spec, "flag", None)) and callable(getattr(spec, "fit", None))):
        raise ExtrapolationError(
            f"extrapolation={spec!r} is neither a detector name ({', '.join(sorted(DETECTORS))}) nor an object "
            "with fit(reference) and flag(points) methods."
        )
    return spec


# The other detectors live in a private module that subclasses ExtrapolationDetector;
# importing it here (after the base class exists) registers them without a cycle.
from ._detectors import (  # noqa: E402
    CERTDetector,
    ConvexHullDetector,
    IsolationForestDetector,
    LOFDetector,
    MCECDetector,
)

DETECTORS.update({
    "hull": ConvexHullDetector,
    "mcec": MCECDetector,
    "cert": CERTDetector,
    "isolation_forest": IsolationForestDetector,
    "lof": LOFDetector,
})
