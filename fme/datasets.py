"""Data sets bundled with :mod:`fme`.

Currently one: the Boston housing data of Harrison & Rubinfeld (1978) [1]_, used in
the Boston application of §8 of the paper (forward marginal effects,
non-linearity measures and conditional AMEs for a model of ``medv``).

The data is shipped as ``fme/data/boston.csv`` and read with
:mod:`importlib.resources`, so it works from an installed (or zipped)
package. Provenance, checksums and column meanings are in
``fme/data/README.md``. In short: the file is derived from the
BSD-3-licensed ``sklearn/datasets/data/boston_house_prices.csv`` shipped in
scikit-learn wheels (1.1.3–1.6.1), which equals ``MASS::Boston`` in R; the
column ``B`` is dropped, as in the paper, and ``medv`` is censored at 50.

References
----------
.. [1] Harrison, D. and Rubinfeld, D. L. (1978). Hedonic prices and the
   demand for clean air. *Journal of Environmental Economics and Management*
   5, 81--102.
"""

from __future__ import annotations

import io
from importlib import resources

import numpy as np
import pandas as pd

from fme.exceptions import DataError, ParameterError

__all__ = [
    "BOSTON_SHA256",
    "BOSTON_FEATURES",
    "BOSTON_TARGET",
    "load_boston",
    "boston_feature_descriptions",
]

#: sha256 of the packaged ``fme/data/boston.csv`` (checked by the tests, not at
#: load time).
BOSTON_SHA256 = "918b8125c86e6f246287e9dd2837a7cae05f03d6edbd529abaf3e99c8c5d33a4"

#: Feature columns of :func:`load_boston`, in file order.
BOSTON_FEATURES: tuple[str, ...] = (
    "crim",
    "zn",
    "indus",
    "chas",
    "nox",
    "rm",
    "age",
    "dis",
    "rad",
    "tax",
    "ptratio",
    "lstat",
)

#: Target column of :func:`load_boston`.
BOSTON_TARGET = "medv"

_BOSTON_RESOURCE = ("data", "boston.csv")

# column -> (description, unit). Units avoid "$" so that the strings can be
# used verbatim as matplotlib labels (a pair of "$" would switch to mathtext).
_BOSTON_DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "crim": ("Per capita crime rate by town", "per capita"),
    "zn": ("Residential land zoned for lots over 25,000 sq. ft.", "%"),
    "indus": ("Non-retail business acres per town", "%"),
    "chas": ("Tract bounds the Charles River", "0 = no, 1 = yes"),
    "nox": ("Nitrogen oxides concentration", "parts per 10 million"),
    "rm": ("Average number of rooms per dwelling", "rooms"),
    "age": ("Owner-occupied units built prior to 1940", "%"),
    "dis": ("Weighted mean distance to five Boston employment centres", "weighted distance"),
    "rad": ("Index of accessibility to radial highways", "index"),
    "tax": ("Full-value property-tax rate", "USD per 10,000 USD"),
    "ptratio": ("Pupil-teacher ratio by town", "pupils per teacher"),
    "lstat": ("Lower status of the population", "%"),
    "medv": ("Median value of owner-occupied homes", "1000 USD"),
}


def _check_bool(name: str, value: object) -> bool:
    # ``bool`` and ``numpy.bool_`` only: 0/1, "yes" or None are rejected so a
    # mistyped call does not silently pick a branch.
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ParameterError(f"{name} must be True or False, got {value!r} of type {type(value).__name__}.")


def _read_boston_csv() -> pd.DataFrame:
    """Parse the packaged CSV into a new frame (``chas`` still ``int64``)."""
    raw = resources.files("fme").joinpath(*_BOSTON_RESOURCE).read_bytes()
    dtypes = {col: "float64" for col in (*BOSTON_FEATURES, BOSTON_TARGET)}
    dtypes["chas"] = "int64"
    # pandas' default float parser; the tests check that every value equals
    # float(<text in the file>) exactly.
    return pd.read_csv(io.BytesIO(raw), dtype=dtypes)


def load_boston(
    *, as_frame: bool = True, return_X_y: bool = False
) -> pd.DataFrame | np.ndarray | tuple[pd.DataFrame, pd.Series] | tuple[np.ndarray, np.ndarray]:
    """Load the Boston housing data (506 rows, 12 features, target ``medv``).

    The data of Harrison & Rubinfeld (1978) as used in the paper's Boston
    application (§8): 506 census tracts, the 12 features ``crim, zn, indus,
    chas, nox, rm, age, dis, rad, tax, ptratio, lstat`` and the target
    ``medv`` (median home value in 1000 USD, censored at 50). The column
    ``B`` of the original data is not included. See ``fme/data/README.md``
    for provenance and :func:`boston_feature_descriptions` for the meaning
    and unit of each column.

    Every call parses the packaged file anew, so the returned objects are
    independent of each other and may be modified freely.

    Parameters
    ----------
    as_frame : bool, default True
        If True, return pandas objects. If False, return NumPy ``float64``
        arrays (``chas`` as 0.0/1.0), columns in the order of
        :data:`BOSTON_FEATURES` followed by ``medv``.
    return_X_y : bool, default False
        If True, return ``(X, y)`` with the features ``X`` (without ``medv``)
        and the target ``y``. If False, return a single table containing the
        features and ``medv`` as its last column.

    Returns
    -------
    pandas.DataFrame or numpy.ndarray or tuple
        * ``as_frame=True, return_X_y=False``: DataFrame of shape (506, 13).
        * ``as_frame=True, return_X_y=True``: ``(X, y)``, a DataFrame of shape
          (506, 12) and a Series named ``medv``.
        * ``as_frame=False, return_X_y=False``: array of shape (506, 13).
        * ``as_frame=False, return_X_y=True``: arrays of shape (506, 12) and
          (506,).

        In the pandas results ``chas`` is an unordered
        :class:`pandas.Categorical` with the integer categories ``[0, 1]``;
        every other column, including the integer-valued ``rad`` and
        ``tax`` and the target ``medv``, is ``float64``. The index is a
        :class:`pandas.RangeIndex` 0..505 in file order.

    Raises
    ------
    fme.exceptions.ParameterError
        If ``as_frame`` or ``return_X_y`` is not a bool.

    Notes
    -----
    The checksum of the packaged file is :data:`BOSTON_SHA256`. It is not
    verified here (the test suite does that) to keep loading cheap.

    Examples
    --------
    >>> from fme.datasets import load_boston
    >>> df = load_boston()
    >>> df.shape
    (506, 13)
    >>> X, y = load_boston(return_X_y=True)
    >>> list(X.columns) == list(df.columns[:-1]), y.name
    (True, 'medv')
    """
    as_frame = _check_bool("as_frame", as_frame)
    return_X_y = _check_bool("return_X_y", return_X_y)

    frame = _read_boston_csv()
    if not as_frame:
        values = frame.to_numpy(dtype=np.float64)
        if return_X_y:
            return values[:, :-1].copy(), values[:, -1].copy()
        return values

    chas = frame["chas"].to_numpy()
    if not np.isin(chas, (0, 1)).all():  # pragma: no cover - guards the packaged file
        raise DataError("The packaged fme/data/boston.csv is corrupt: chas is not 0/1. Reinstall fme.")
    frame["chas"] = pd.Categorical(chas, categories=[0, 1], ordered=False)
    if return_X_y:
        return frame.drop(columns=BOSTON_TARGET), frame[BOSTON_TARGET].copy()
    return frame


def boston_feature_descriptions() -> dict[str, tuple[str, str]]:
    """Describe each column of :func:`load_boston` for labels in reports.

    Returns
    -------
    dict of str to tuple of (str, str)
        Maps every column name (the 12 features and ``medv``) to
        ``(description, unit)``. The description is a short capitalised
        phrase; the unit is a short string such as ``"%"`` or
        ``"1000 USD"`` (``"%"`` columns hold values between 0 and 100). Units
        contain no ``"$"``, so ``f"{description} [{unit}]"`` is safe as a
        matplotlib axis label. A new dict is returned on every call.

    Examples
    --------
    >>> from fme.datasets import boston_feature_descriptions
    >>> desc, unit = boston_feature_descriptions()["rm"]
    >>> f"{desc} [{unit}]"
    'Average number of rooms per dwelling [rooms]'
    """
    return dict(_BOSTON_DESCRIPTIONS)
