"""A detector as fme names and calls it: its display name, guards around its ``fit``/``flag`` and their outputs.

Any object with ``fit(reference)`` and ``flag(points)`` may be a detector (paper §4.2, appendix A.2 "Model
Extrapolation"), so fme never assumes more of it: :func:`detector_name` is the one way a detector is named
(in results, exclusion reasons and error messages), :func:`call_detector` and :func:`check_flags` turn its
failures into :class:`~fme.exceptions.ExtrapolationError` naming it. Loads no detector family.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._utils.numfmt import count
from ..exceptions import ExtrapolationError, FMEError

__all__ = ["check_flags", "call_detector", "detector_name"]


def detector_name(detector: Any) -> str:
    """The name a detector is shown by: its ``name`` (a registered detector's registry name, e.g.
    ``"envelope"``), else its class name (a user's object without one)."""
    return getattr(detector, "name", None) or type(detector).__name__


def check_flags(flags: Any, n: int, detector: Any) -> np.ndarray:
    """``flags`` as a boolean array of length ``n``; booleans or 0/1 integers only.

    Scores (floats), probabilities or labels are refused: casting them to bool
    would silently flag every non-zero value.
    """
    if isinstance(flags, (pd.Series, pd.Index)):
        if flags.hasnans:
            raise ExtrapolationError(
                f"{detector_name(detector)}.flag() returned missing values; flag() must return one boolean per point."
            )
        flags = flags.to_numpy()
    arr = np.asarray(flags)
    if arr.shape != (n,):
        raise ExtrapolationError(
            f"detector {detector!r} returned flags of shape {arr.shape} for {count(n, 'point')}; flag() must return "
            "one boolean per point."
        )
    if arr.dtype == bool:
        return arr
    if np.issubdtype(arr.dtype, np.integer) and ((arr == 0) | (arr == 1)).all():
        return arr.astype(bool)
    shown = np.unique(arr)[:5].tolist() if arr.dtype != object else list(dict.fromkeys(arr.tolist()))[:5]
    raise ExtrapolationError(
        f"{detector_name(detector)}.flag() returned {arr.dtype} values such as {shown}; flag() must return booleans "
        "(True = extrapolation point) or 0/1 integers. If it returns scores, threshold them, e.g. "
        "`return scores > cutoff`."
    )


def call_detector(detector: Any, method: str, frame: pd.DataFrame, stage: str) -> Any:
    """``detector.<method>(frame)``; a non-fme exception becomes :class:`ExtrapolationError` naming
    the detector and the stage, chained from the original."""
    try:
        return getattr(detector, method)(frame)
    except FMEError:
        raise
    except Exception as exc:
        raise ExtrapolationError(
            f"extrapolation detector {detector_name(detector)}.{method}() raised {type(exc).__name__} at {stage} "
            f"({count(len(frame), 'point')}, columns {list(map(str, frame.columns))[:10]}): {exc}. Check that it "
            "accepts the "
            "reference data's columns and dtypes."
        ) from exc
