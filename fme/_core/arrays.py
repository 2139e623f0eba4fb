"""Data given as an array of the Python array API standard (NumPy, CuPy, PyTorch, ...), named by ``feature_names``.

:func:`check_array_data` validates such an array once at the front door (:func:`fme._core.plan.front_plan`) into an
:class:`ArrayData`: the array itself (never copied nor modified), its namespace and device (through
``array-api-compat``) and its columns' names. The array route of :func:`fme.fme` and :func:`fme.ame`
(:mod:`fme._local.arrays`) builds every stepped point in that namespace on that device; what comes to the host
(NumPy) is each row's exclusion flags, the model's predictions and, for the result's ``data``, one copy of the
array (no copy for a CPU array that exports DLPack).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._utils.arrays import device_of, library_name, namespace, to_host
from .._utils.numfmt import count
from .._utils.validation import check_feature_names, is_dask_collection
from ..exceptions import DataError
from ..steps import Step

__all__ = ["ArrayData", "check_array_data", "array_exclusions", "refuse_dask_arrays"]

#: (positions, point, reason) per exclusion note, as :data:`fme._core.exclusions.Notes`.
Notes = list[tuple[np.ndarray, Any, Any]]


@dataclass(frozen=True, eq=False)
class ArrayData:
    """A 2-D array of the array API standard with one name per column.

    Attributes
    ----------
    values : array
        The caller's array (rows x features), never modified; an integer or boolean array is converted to float64
        in its namespace, on its device (a floating one is kept, float32 included).
    xp : module
        Its namespace (``array_api_compat.array_namespace``).
    device : object
        Its device.
    feature_names : tuple
        The columns' labels as given (strings, or integers as ``pd.DataFrame(array, columns=...)`` keeps them), in
        the array's column order.
    library : str
        The array library's name, for messages.
    """

    values: Any
    xp: Any
    device: Any
    feature_names: tuple[Any, ...]
    library: str

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    def column(self, feature: str) -> int:
        """The position of ``feature`` among the columns."""
        return self.feature_names.index(feature)

    def empty_frame(self) -> pd.DataFrame:
        """A frame without rows with the array's columns (float): what the plan's checks read."""
        return pd.DataFrame({c: np.empty(0) for c in self.feature_names})

    def host_frame(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The array (or ``columns`` of it) on the host as a DataFrame; a CPU array that exports DLPack is not
        copied."""
        cols = list(self.feature_names) if columns is None else list(columns)
        if len(cols) == len(self.feature_names):
            values = to_host(self.values)
        else:
            idx = self.xp.asarray(np.asarray([self.column(c) for c in cols], dtype=np.int64), device=self.device)
            values = to_host(self.xp.take(self.values, idx, axis=1))
        return pd.DataFrame(values, columns=pd.Index(cols), copy=False)


def _names(feature_names: Any, shape: tuple[int, ...], library: str, name: str) -> tuple[Any, ...]:
    p = int(shape[1])
    if feature_names is None:
        raise DataError(
            f"`{name}` is a {library} array of shape {tuple(int(k) for k in shape)} without feature_names: pass a "
            f"pandas DataFrame whose columns have the model's feature names (pd.DataFrame({name}, "
            "columns=model.feature_names_in_): a scikit-learn estimator fitted on a DataFrame keeps them in "
            f"feature_names_in_), or name the array's "
            f"{count(p, 'column')} with feature_names=[...] (one label per column, in "
            "the array's order; e.g. feature_names=model.feature_names_in_)."
        )
    feature_names = check_feature_names(feature_names, "one per column of the array")
    if len(feature_names) != p:
        raise DataError(
            f"feature_names names {count(len(feature_names), 'column')} but `{name}` has {p}; name each column of "
            "the "
            "array once, in its order."
        )
    # the labels as given: a step names a column as it would in pd.DataFrame(array, columns=feature_names)
    return tuple(feature_names)


def refuse_dask_arrays(data: Any, reference_data: Any, verb: str | None) -> None:
    """A Dask collection other than a DataFrame (a Dask Array, a Series) as ``data`` or ``reference_data``: a
    DataError that names the conversion (Dask data are DataFrames; the array route takes in-memory arrays)."""
    for name, obj in (("data", data), ("reference_data", reference_data)):
        if is_dask_collection(obj) and not isinstance(getattr(obj, "_meta", None), pd.DataFrame):
            raise DataError(
                f"`{name}` is a Dask {type(obj).__name__}; {verb or 'fme'} takes Dask data as a "
                "dask.dataframe.DataFrame: wrap it as dask.dataframe.from_dask_array(X, columns=[...]), or pass an "
                "in-memory array (X.compute()) with feature_names=."
            )


def check_array_data(data: Any, feature_names: Any, name: str = "data") -> ArrayData:
    """Validate an array of the array API standard named by ``feature_names`` (see :class:`ArrayData`).

    Raises
    ------
    DataError
        No ``feature_names``, ``feature_names`` of the wrong length, not 2-D, no rows or no columns, complex or
        non-numeric values.
    ParameterError
        ``feature_names`` that is not a list of distinct labels.
    """
    xp = namespace(data)
    library = library_name(data)
    shape = tuple(data.shape)
    if len(shape) != 2:
        raise DataError(
            f"`{name}` is a {library} array of shape {shape}; pass a 2-D array (rows x features), e.g. "
            f"{name}.reshape(-1, 1) for one feature."
        )
    if shape[0] == 0 or shape[1] == 0:
        raise DataError(f"`{name}` has shape {shape}; pass at least one row and one column.")
    names = _names(feature_names, tuple(shape), library, name)
    values = data
    if not xp.isdtype(data.dtype, "real floating"):
        if not xp.isdtype(data.dtype, ("integral", "bool")):
            raise DataError(
                f"`{name}` has dtype {data.dtype}; fme steps real numbers: pass a floating (or integer) array."
            )
        # a step moves a value by a real h: integers are stepped as float64, as the DataFrame route does
        values = xp.astype(data, xp.float64)
    return ArrayData(values, xp, device_of(data), names, library)


def array_exclusions(data: ArrayData, steps: Sequence[Step]) -> tuple[np.ndarray, Notes]:
    """Code 1 (a missing or infinite value in a stepped feature) per row, with the notes of
    :func:`fme._core.exclusions.value_exclusions` in the same order; the tests run in the array's namespace and
    only one flag per row and step comes to the host."""
    xp = data.xp
    code = np.zeros(data.n, dtype=np.int8)
    notes: Notes = []
    for s in steps:
        col = data.values[:, data.column(s.feature)]
        for test, what in ((xp.isnan, "missing"), (xp.isinf, "infinite")):
            flag = to_host(test(col)).astype(bool) & (code == 0)
            code[flag] = 1
            notes.append((np.flatnonzero(flag), "", f"{what} value in {s.feature}"))
    return code, notes
