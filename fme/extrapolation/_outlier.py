"""Outlier-based extrapolation detectors: isolation forest and LOF (paper Appendix "Model Extrapolation").

scikit-learn novelty detectors fitted on the encoded reference data (numeric
features standardised, categorical ones one-hot); a point is flagged when its
``decision_function`` is < 0. Registered as ``"isolation_forest"`` and ``"lof"``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import pandas as pd

from .._utils.validation import check_random_state
from ._base import register_detector
from ._encoded import EncodedDetector, check_fraction, check_int, draw_seed

__all__ = ["IsolationForestDetector", "LOFDetector"]


class _OutlierDetector(EncodedDetector):
    """scikit-learn novelty detector on standardised numeric + one-hot categorical features."""

    label = "outlier detector"

    def __init__(self, contamination: float = 0.01, random_state: Any = None) -> None:
        self.contamination = check_fraction(contamination, "contamination", 0.0, 0.5, closed_high=True)
        self.random_state = random_state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(contamination={self.contamination!r})"

    @abstractmethod
    def _make(self, rng: np.random.Generator) -> Any:
        """The unfitted scikit-learn outlier estimator."""

    def _fit_encoded(self, reference: pd.DataFrame) -> None:
        rng = check_random_state(self.random_state)
        self.estimator_ = self._make(rng).fit(self.encoding_.one_hot(reference))

    def _decision(self, pts: pd.DataFrame) -> np.ndarray:
        return self.estimator_.decision_function(self.encoding_.one_hot(pts))

    def _numeric_flags(self, pts: pd.DataFrame, usable: np.ndarray) -> np.ndarray:
        return self._decision(pts) < 0

    def score(self, points: pd.DataFrame) -> np.ndarray:
        """Minus scikit-learn's ``decision_function`` (> 0 flagged; NaN with missing values or unseen levels)."""
        pts = self._check_fitted(points)
        basic, _ = self.encoding_.basic_reasons(pts)
        out = np.full(len(pts), np.nan)
        if (~basic).any():
            out[~basic] = -self._decision(pts.iloc[np.flatnonzero(~basic)])
        return out

    def _reason(self, pts: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        v = self._decision(pts)
        return np.array([f"{self.label} decision_function={x:.3g} < 0" for x in v], dtype=object)


@register_detector
class IsolationForestDetector(_OutlierDetector):
    """Isolation forest outliers (Liu et al.; paper Appendix "Model Extrapolation").

    ``sklearn.ensemble.IsolationForest(contamination=contamination)`` fitted
    on the reference data (numeric features standardised, categorical ones
    one-hot); a point is flagged when its ``decision_function`` is < 0, so
    about a ``contamination`` share of the reference rows themselves would be
    flagged (default 1%). An unseen categorical level is flagged.

    Parameters
    ----------
    contamination : float in (0, 0.5], default=0.01
    random_state : None, int or numpy Generator
        Seeds the forest (None: seed 0); deterministic given it.
    """

    name = "isolation_forest"
    label = "isolation forest"

    def _make(self, rng: np.random.Generator) -> Any:
        from sklearn.ensemble import IsolationForest

        return IsolationForest(contamination=self.contamination, random_state=draw_seed(rng))


@register_detector
class LOFDetector(_OutlierDetector):
    """Local outlier factor (Breunig et al.; paper Appendix, local density-based outlier scores).

    ``sklearn.neighbors.LocalOutlierFactor(novelty=True,
    n_neighbors=n_neighbors, contamination=contamination)`` fitted on the
    reference data (numeric features standardised, categorical ones one-hot);
    a point is flagged when its ``decision_function`` is < 0 (about a
    ``contamination`` share of reference rows would be flagged, default 1%).
    An unseen categorical level is flagged. Deterministic.

    Parameters
    ----------
    contamination : float in (0, 0.5], default=0.01
    n_neighbors : int, default=20
    """

    name = "lof"
    label = "LOF"

    def __init__(self, contamination: float = 0.01, n_neighbors: int = 20, random_state: Any = None) -> None:
        super().__init__(contamination, random_state)
        self.n_neighbors = check_int(n_neighbors, "n_neighbors", 1)

    def _make(self, rng: np.random.Generator) -> Any:
        from sklearn.neighbors import LocalOutlierFactor

        return LocalOutlierFactor(n_neighbors=self.n_neighbors, novelty=True, contamination=self.contamination)
