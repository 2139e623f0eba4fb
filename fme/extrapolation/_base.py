"""Detector interface and registry (paper §4.2 and Appendix A.2, "Model Extrapolation").

:class:`ExtrapolationDetector` is the base class of every detector;
:data:`DETECTORS` maps the names accepted by ``extrapolation=<name>`` to
detector classes, which the family modules (:mod:`._envelope`, :mod:`._hull`,
:mod:`._risk`, :mod:`._outlier`) add with :func:`register_detector`;
:func:`make_detector` turns a name or an object into a detector. This module
imports no family: the families import it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import pandas as pd

from .._utils.validation import check_data, check_real_columns
from ..exceptions import ExtrapolationError, NotFittedError

__all__ = ["ExtrapolationDetector", "DETECTORS", "register_detector", "make_detector"]


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

    def fit(self, reference: pd.DataFrame) -> ExtrapolationDetector:
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


#: Registry of detectors by name (``extrapolation=<name>`` in :func:`fme.fme`). Filled by
#: :func:`register_detector` as :mod:`fme.extrapolation` imports the family modules, in the order
#: envelope, hull, mcec, cert, isolation_forest, lof.
DETECTORS: dict[str, type] = {}


def register_detector(cls: type) -> type:
    """Class decorator: register a detector class in :data:`DETECTORS` under its ``name``."""
    if cls.name in DETECTORS:
        raise ExtrapolationError(
            f"two detectors are named {cls.name!r}: {DETECTORS[cls.name].__name__} and {cls.__name__}."
        )
    DETECTORS[cls.name] = cls
    return cls


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
