"""Input checks shared by the public functions (layer 0: no model, no effects)."""

from __future__ import annotations

import numbers
from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DataError, FeatureError, NameClashError, ParameterError
from .numfmt import count

__all__ = [
    "check_data",
    "check_feature_names",
    "as_pandas",
    "is_categorical",
    "is_numeric",
    "is_complex",
    "check_real_columns",
    "check_feature_name",
    "mixed_object_numbers",
    "check_conf_level",
    "check_random_state",
    "check_name_clash",
    "BY_MISSING",
    "check_by_missing",
    "check_weights",
    "check_dask_offsets",
    "align_rows",
]


def as_pandas(data: Any, name: str = "data") -> Any:
    """``data`` as a pandas DataFrame when it is another data frame, converted once; else unchanged.

    Accepted: pandas (returned as is); objects with the Arrow PyCapsule stream interface
    (``__arrow_c_stream__``: polars, pyarrow tables, DuckDB results, ...) through :func:`pyarrow.table`;
    objects with the dataframe interchange protocol (``__dataframe__``) through
    :func:`pandas.api.interchange.from_dataframe`. They have no index: the result has the rows' positions
    (0, 1, ...) as its index, as their own row numbers. A numpy array is refused with how to name its columns.
    """
    if isinstance(data, pd.DataFrame) or is_dask_collection(data):
        return data
    if isinstance(data, pd.Series):
        # a Series speaks Arrow too, as one column: refused here with what to pass instead
        raise DataError(
            f"`{name}` is a pandas Series ({data.name!r}, {count(len(data), 'value')}); it must be a pandas DataFrame "
            "with "
            f"one column per feature: pass {name}.to_frame() for one feature, or {name}.to_frame().T for one "
            "row whose index holds the feature names (e.g. a row taken with df.loc[label])."
        )
    if isinstance(data, np.ndarray):
        raise DataError(
            f"`{name}` is a numpy array of shape {data.shape}; it must be a pandas DataFrame (or a polars/Arrow "
            "data frame) whose columns have the model's feature names. Wrap it as "
            f"pd.DataFrame({name}, columns=model.feature_names_in_) (a scikit-learn estimator fitted on a "
            "DataFrame keeps its column names in feature_names_in_), or pass the DataFrame the model was fitted on."
        )
    lazy = _lazy_frame_hint(data, name)
    if lazy is not None:
        raise DataError(lazy)
    if hasattr(data, "__arrow_c_stream__") and not isinstance(data, type):
        try:
            import pyarrow as pa
        except ImportError:  # pragma: no cover - pyarrow comes with the dask extra
            pa = None
        if pa is not None:
            return pa.table(data).to_pandas()
        if not hasattr(data, "__dataframe__"):
            raise DataError(
                f"`{name}` is an Arrow data frame ({type(data).__name__}); converting it needs pyarrow "
                "(pip install pyarrow, or 'fme[dask]'), or pass data.to_pandas()."
            )
    if hasattr(data, "__dataframe__") and not isinstance(data, type):
        return pd.api.interchange.from_dataframe(data, allow_copy=True)
    if _module_root(data) == "polars":
        # a polars object that offers neither protocol (an old polars, a Series): no generic way in
        raise DataError(
            f"`{name}` is a polars {type(data).__name__}, which fme cannot read directly; pass "
            f"{name}.to_pandas() (a polars Series: {name}.to_frame().to_pandas())."
        )
    return data


def _module_root(obj: Any) -> str:
    """The top-level package of ``obj``'s class (``"polars"``), read without importing that package."""
    return str(getattr(type(obj), "__module__", "") or "").split(".")[0]


def _lazy_frame_hint(data: Any, name: str) -> str | None:
    """What to say of a lazy query given as data (a polars LazyFrame), or None for anything else.

    A lazy frame holds a query, not rows: it offers no data frame protocol, so without this it would be
    refused as if it were an array.
    """
    if _module_root(data) == "polars" and type(data).__name__ == "LazyFrame":
        return (
            f"`{name}` is a polars LazyFrame, a query that has not been run; run it with {name}.collect() "
            "and pass the polars DataFrame it returns (fme reads polars DataFrames)."
        )
    return None


def check_data(data: Any, name: str = "data") -> pd.DataFrame:
    """``data`` as fme's own pandas DataFrame after checking it is a non-empty DataFrame: another data frame is
    converted once (:func:`as_pandas`), a pandas one is taken as a shallow copy (its columns are shared, not
    copied; under copy-on-write a later change of either frame leaves the other as it was). Callers use the
    returned frame, so past the front door no function holds the caller's object and none can change it."""
    given = data
    data = as_pandas(data, name)
    if not isinstance(data, pd.DataFrame):
        raise DataError(
            f"`{name}` must be a pandas DataFrame with one column per feature (or a polars/Arrow data frame), "
            f"got {type(data).__name__}; wrap arrays with pd.DataFrame(X, columns=[...]) (fme.fme and fme.ame also "
            "take arrays of the array API standard with feature_names=[...])."
        )
    if data.shape[0] == 0:
        raise DataError(f"`{name}` has no rows; pass at least one observation.")
    if data.shape[1] == 0:
        raise DataError(f"`{name}` has no columns; pass the model's feature columns.")
    if isinstance(data.columns, pd.MultiIndex):
        raise DataError(
            f"`{name}` has MultiIndex (hierarchical) columns {list(data.columns[:3])}; flatten them, e.g. "
            f"{name}.columns = ['_'.join(map(str, c)) for c in {name}.columns]."
        )
    if not data.columns.is_unique:
        dup = sorted(map(str, data.columns[data.columns.duplicated()].unique()))
        raise DataError(f"`{name}` has duplicated column names {dup}; rename them.")
    if not data.index.is_unique:
        dup = data.index[data.index.duplicated()].unique()[:5].tolist()
        raise DataError(
            f"the index of `{name}` has duplicate labels (e.g. {dup}); results are matched to rows by index label, "
            f"so make it unique, e.g. {name}.reset_index(drop=True)."
        )
    return data.copy(deep=False) if data is given else data


def is_complex(series: pd.Series) -> bool:
    """True for complex-valued columns (numpy complex dtypes, or objects holding complex numbers)."""
    dtype = series.dtype
    if pd.api.types.is_complex_dtype(dtype):
        return True
    if pd.api.types.is_object_dtype(dtype):
        return any(isinstance(v, (complex, np.complexfloating)) for v in series.dropna().to_numpy()[:1000])
    return False


def check_real_columns(frame: pd.DataFrame, name: str, columns: Any = None) -> None:
    """Refuse complex-valued columns: their imaginary part would be dropped silently."""
    cols = frame.columns if columns is None else columns
    bad = [c for c in cols if is_complex(frame[c])]
    if bad:
        raise DataError(
            f"column(s) {bad} of `{name}` are complex-valued; fme works on real features (the imaginary part "
            "would be dropped). Split them into real columns, e.g. z.real and z.imag, or use abs(z)."
        )


def check_feature_name(feature: Any, name: str = "feature") -> Any:
    """One column label (a string or another scalar), not a list of them."""
    if isinstance(feature, (list, tuple, set, dict, np.ndarray, pd.Index, pd.Series)):
        raise FeatureError(
            f"`{name}` must be one column name, got {type(feature).__name__} {list(feature)[:5]!r}; "
            "call once per feature."
        )
    return feature


def check_feature_names(feature_names: Any, what: str) -> list:
    """``feature_names`` as a list of labels: a list, tuple, pandas Index or 1-D array (e.g. an estimator's
    ``feature_names_in_``) of distinct, non-empty column labels; ``what`` says what they name (in the message)."""
    names = feature_names
    if isinstance(names, (np.ndarray, pd.Series)) and names.ndim == 1:
        names = names.tolist()
    if (
        isinstance(names, (str, bytes))
        or not isinstance(names, (list, tuple, pd.Index))
        or not len(names)
        or len(set(map(str, names))) != len(names)
    ):
        raise ParameterError(
            f"feature_names must be a list (or 1-D array) of distinct column labels ({what}), got {feature_names!r}."
        )
    return list(names)


def mixed_object_numbers(series: pd.Series) -> list:
    """For an object column holding real numbers: a few of its values (else an empty list)."""
    if not pd.api.types.is_object_dtype(series.dtype):
        return []
    values = series.dropna().to_numpy()
    has_num = any(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values)
    return list(dict.fromkeys(values.tolist()))[:6] if has_num else []


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
    """True for real numeric, non-boolean columns (complex columns are neither numeric nor categorical)."""
    dtype = series.dtype
    return (
        pd.api.types.is_numeric_dtype(dtype)
        and not pd.api.types.is_bool_dtype(dtype)
        and not pd.api.types.is_complex_dtype(dtype)
    )


def check_conf_level(conf_level: Any) -> float:
    """Validate a confidence level in the open interval (0, 1)."""
    if (
        not isinstance(conf_level, numbers.Real)
        or isinstance(conf_level, bool)
        or not np.isfinite(conf_level)
        or not 0.0 < float(conf_level) < 1.0
    ):
        raise ParameterError(f"conf_level must be a number strictly between 0 and 1 (e.g. 0.95), got {conf_level!r}.")
    return float(conf_level)


def check_random_state(random_state: Any) -> np.random.Generator:
    """Turn ``None``, an int or a Generator into a numpy Generator: ``None`` is seed 0, fme's default seed (as
    :func:`seed_of` takes it), so that the same inputs give the same outputs; a Generator is used as it is (pass
    ``numpy.random.default_rng()`` for draws of fresh entropy)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng(0)
    if isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(random_state)
    raise ParameterError(f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}.")


def seed_of(random_state: Any) -> int:
    """An integer seed from ``random_state``: 0 for None, the int itself, else a draw from the generator
    (``numpy.random.default_rng(random_state)``), as every seeded sample and split of fme takes it."""
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    if isinstance(random_state, (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)):
        return int(np.random.default_rng(random_state).integers(2**31 - 1))
    raise ParameterError(f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}.")


def is_dask_collection(obj: Any) -> bool:
    """True for a Dask DataFrame (checked by module name: dask stays an optional dependency)."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr") and hasattr(obj, "npartitions")


def check_name_clash(names: Any, reserved: Any, argument: str, fix: str) -> None:
    """Refuse user column names ``names`` (from ``argument``) that equal one of fme's output columns ``reserved``.

    ``fix`` is the way out, with ``{name}`` standing for the clashing name.
    """
    reserved = list(reserved)
    clash = [c for c in names if any(c == r for r in reserved)]
    if clash:
        raise NameClashError(
            f"{argument} column {clash[0]!r} has the name of one of fme's output columns {reserved}: the table "
            f"would hold two columns {clash[0]!r} (or fme's would overwrite yours). {fix.format(name=clash[0])}"
        )


#: What fme.ame(by=) does with rows whose by value is missing.
BY_MISSING = ("group", "raise")


def check_by_missing(counts: dict, n_rows: int) -> None:
    """``by_missing='raise'``: a DataError naming the ``by`` columns with missing values (``counts``: column ->
    number of missing values among the ``n_rows`` rows)."""
    bad = {c: k for c, k in counts.items() if k}
    if bad:
        what = ", ".join(f"{c!r} ({k} of {count(n_rows, 'row')})" for c, k in bad.items())
        raise DataError(
            f"by column(s) {what} have missing values and by_missing='raise'; fill them (e.g. "
            f"data.fillna({{{next(iter(bad))!r}: 'missing'}})), or pass by_missing='group' to get them as a group."
        )


def check_weights(wts: Any, data: pd.DataFrame, on_dask: bool = False) -> Any:
    """The rows' weights of ``wts=`` (survey or frequency weights of the averaging verbs): a column of ``data``
    or one value per row, as floats (None without weights); on Dask data the column's name (its values are
    checked by the engine, chunk by chunk).

    Raises
    ------
    FeatureError
        A name that is not a column (or, on Dask data, anything but a column name).
    ParameterError
        Weights that are not finite, negative, all zero, or not one per row.
    """
    if wts is None:
        return None
    if on_dask:
        if not isinstance(wts, Hashable) or wts not in data.columns:
            raise FeatureError(
                f"on Dask data wts= names a column of the data (an array cannot follow the chunks); "
                f"got {wts!r}: add the weights as a column and pass its name."
            )
        return wts
    if isinstance(wts, str):
        if wts not in data.columns:
            raise FeatureError(f"wts={wts!r} is not a column of the data; use one of {list(data.columns)[:20]}.")
        w = data[wts].to_numpy(dtype=float)
    else:
        w = np.asarray(wts, dtype=float).reshape(-1)
        if w.size != len(data):
            raise ParameterError(
                f"wts has {count(w.size, 'value')} for {count(len(data), 'row')}; pass one weight per row."
            )
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise ParameterError("wts must be finite, non-negative and not all zero.")
    return w


def check_single_output(target_class: Any, name: str) -> None:
    """Refuse ``target_class='all'`` where a function works on one output, naming the way out."""
    if isinstance(target_class, str) and target_class == "all":
        raise ParameterError(
            f"{name}() works on one output; target_class='all' is not supported here. Pass one class "
            "(target_class=<label>) per call, or use fme.fme(..., target_class='all') for every class at once."
        )


def check_dask_offsets(exposure: Any, offset: Any) -> None:
    """On Dask data ``exposure=``/``offset=`` are a column name or a number: an array cannot follow the
    partitions."""
    for kind, value in (("exposure", exposure), ("offset", offset)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, numbers.Real))):
            raise ParameterError(
                f"on Dask data, {kind}= must be a column name or a number, got "
                f"{type(value).__name__}; add the values as a column and pass its name."
            )


def align_rows(X: Any, y: Any, x_name: str = "X", y_name: str = "y") -> Any:
    """``y`` in the row order of ``X``: matched by index label when both are pandas objects, else by position.

    Two pandas objects are matched by label because pandas users expect it (``X.join(y)`` would), and a frame
    sorted or sampled on its own would otherwise pair each row with another row's outcome without a sign. A
    numpy (or list) ``y``, or an ``X`` without an index (an array), pairs by position, so only the lengths are
    checked. ``y`` is returned unchanged when its labels are already in ``X``'s order.

    Raises
    ------
    DataError
        Different numbers of rows; either index with duplicate labels; the two label sets not equal.
    """
    if not isinstance(X, (pd.DataFrame, pd.Series)) or not isinstance(y, (pd.DataFrame, pd.Series)):
        n_x, n_y = _n_rows(X, x_name), _n_rows(y, y_name)
        if n_x != n_y:
            raise DataError(
                f"`{y_name}` has {count(n_y, 'value')} but `{x_name}` has {count(n_x, 'row')}; pass one outcome per "
                f"row of `{x_name}`."
            )
        return y
    if X.index.equals(y.index):
        return y
    for name, index in ((x_name, X.index), (y_name, y.index)):
        if not index.is_unique:
            dup = index[index.duplicated()].unique()[:5].tolist()
            raise DataError(
                f"the index of `{name}` has duplicate labels (e.g. {dup}), so `{y_name}` cannot be "
                f"matched to the rows of `{x_name}` by label; make both unique, e.g. "
                f"{name}.reset_index(drop=True) on both, or pass {y_name}.to_numpy() to pair by "
                "position."
            )
    where = y.index.get_indexer(X.index)
    if len(X) != len(y) or (where < 0).any():
        only_x = X.index[where < 0][:3].tolist()
        only_y = y.index[~y.index.isin(X.index)][:3].tolist()
        raise DataError(
            f"the index labels of `{x_name}` and `{y_name}` differ (only in `{x_name}`: {only_x}, only in "
            f"`{y_name}`: {only_y}); a pandas `{y_name}` is matched to the rows of `{x_name}` by label. "
            f"Select the same rows in both (e.g. {y_name} = {y_name}.loc[{x_name}.index]), or pass "
            f"{y_name}.to_numpy() to pair them by position."
        )
    return y.iloc[where]


def _n_rows(a: Any, name: str) -> int:
    if isinstance(a, (str, bytes)):
        raise DataError(f"`{name}` must be array-like with one value per row, got {type(a).__name__}.")
    try:
        return len(a)
    except TypeError:
        raise DataError(f"`{name}` must be array-like with one value per row, got {type(a).__name__}.") from None
