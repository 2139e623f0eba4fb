"""Input checks shared by the public functions (layer 0: no model, no effects)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd

from .exceptions import DataError, ParameterError

__all__ = ["check_data", "is_categorical", "is_numeric", "check_conf_level", "check_random_state"]


def check_data(data: Any, name: str = "data") -> pd.DataFrame:
    """Return ``data`` unchanged after checking it is a non-empty DataFrame."""
    if not isinstance(data, pd.DataFrame):
        raise DataError(
            f"`{name}` must be a pandas DataFrame with one column per feature, got "
            f"{type(data).__name__}; wrap arrays with pd.DataFrame(X, columns=[...])."
        )
    if data.shape[0] == 0:
        raise DataError(f"`{name}` has no rows; pass at least one observation.")
    if data.shape[1] == 0:
        raise DataError(f"`{name}` has no columns; pass the model's feature columns.")
    if not data.columns.is_unique:
        dup = sorted(map(str, data.columns[data.columns.duplicated()].unique()))
        raise DataError(f"`{name}` has duplicated column names {dup}; rename them.")
    return data


def is_categorical(series: pd.Series) -> bool:
    """True for pandas categoricals, strings/objects and booleans (treated as factors)."""
    dtype = series.dtype
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_bool_dtype(dtype)
    )


def is_numeric(series: pd.Series) -> bool:
    """True for numeric, non-boolean columns."""
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def check_conf_level(conf_level: Any) -> float:
    """Validate a confidence level in the open interval (0, 1)."""
    if (
        not isinstance(conf_level, numbers.Real)
        or isinstance(conf_level, bool)
        or not np.isfinite(conf_level)
        or not 0.0 < float(conf_level) < 1.0
    ):
        raise ParameterError(
            f"conf_level must be a number strictly between 0 and 1 (e.g. 0.95), got {conf_level!r}."
        )
    return float(conf_level)


def check_random_state(random_state: Any) -> np.random.Generator:
    """Turn ``None``, an int or a Generator into a numpy Generator (seeded when given)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(random_state)
    raise ParameterError(
        f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}."
    )
