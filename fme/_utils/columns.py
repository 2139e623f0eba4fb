"""DataFrames around fme's own column arrays, built without copies and without inferring their labels' dtype.

pandas infers the dtype of a frame's column labels each time a frame is built from a dict (strings become its
``str`` dtype, an Arrow array), and after a pass over 10^6 rows has streamed the caches out that inference is
most of a small frame's cost (0.2-0.3 ms of a result frame's 0.3 ms: benchmarks/README.md, "Seventh pass").
:func:`column_index` makes each set of labels once per process and hands every frame a shallow copy (an Index
is immutable, but its ``name`` can be set, so frames never share the object itself); :func:`frame_of` wraps the
arrays as they are. The frames equal those ``pd.DataFrame(dict, copy=False)`` builds: the same labels and
their dtype, the same column dtypes, the arrays not copied.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["column_index", "frame_of"]


@functools.lru_cache(maxsize=256)
def _index(labels: tuple[Hashable, ...]) -> pd.Index:
    return pd.Index(list(labels))


def column_index(labels: tuple[Hashable, ...]) -> pd.Index:
    """``pd.Index(list(labels))``, its dtype inferred once per process for each ``labels``; a new Index object
    (sharing the cached one's values) each call."""
    return _index(labels).copy()


def frame_of(columns: Mapping[Any, Any], index: pd.Index) -> pd.DataFrame:
    """``pd.DataFrame(columns, index=index, copy=False)``: the frame of these arrays (each of ``len(index)``
    values), their labels' Index from :func:`column_index`. One 1-D numeric NumPy array is the frame's block as it
    is (a view, not a copy); several keep a block each, as the dict constructor leaves them."""
    labels = tuple(columns)
    arrays = list(columns.values())
    if not arrays:
        return pd.DataFrame(dict(columns), index=index, copy=False)
    first = arrays[0]
    if len(arrays) == 1 and isinstance(first, np.ndarray) and first.ndim == 1 and first.dtype.kind in "biufc":
        # a 2-D array's column block is its transpose: the array itself (an object array would be inferred anew)
        return pd.DataFrame(first[:, None], index=index, columns=column_index(labels), copy=False)
    out = pd.DataFrame(dict(enumerate(arrays)), index=index, copy=False)
    out.columns = column_index(labels)
    return out
