"""Frames around fme's own arrays equal pandas' dict-built frames, share the arrays, and never share labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fme._utils.columns import column_index, frame_of

_N = 6


def _cases() -> list[dict]:
    rng = np.random.default_rng(0)
    f = rng.normal(size=_N)
    return [
        {"fme": f},
        {"f_x": f, "f_x_step": f + 1.0},
        {"fme": f, "nlm": f * 0.5, "nlm_status": np.array(["linear"] * _N, dtype=object)},
        {"flag": np.arange(_N) % 2 == 0},
        {"k": np.arange(_N, dtype=np.int8)},
        {"reason_type": np.array(["a"] * _N).astype(str), "point": np.array([""] * _N, dtype=object)},
        {"label": np.array(["a", "b", None, "c", "d", "e"], dtype=object)},
        {0: f, ("a", 1): f},
        {},
    ]


@pytest.mark.parametrize("index", [pd.RangeIndex(_N), pd.Index([10, 3, 7, 1, 0, 2]), pd.Index(list("uvwxyz"))])
@pytest.mark.parametrize("columns", _cases())
def test_a_frame_of_columns_equals_the_dict_built_frame(columns: dict, index: pd.Index) -> None:
    want = pd.DataFrame(columns, index=index, copy=False)
    got = frame_of(columns, index)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.columns.dtype == want.columns.dtype and list(got.dtypes) == list(want.dtypes)
    for label, arr in columns.items():
        if isinstance(arr, np.ndarray) and arr.dtype.kind in "biufc":
            assert np.shares_memory(got[label].to_numpy(), arr)  # wrapped, not copied


def test_frames_get_their_own_label_index_so_naming_one_leaves_the_next() -> None:
    a = frame_of({"fme": np.zeros(3)}, pd.RangeIndex(3))
    a.columns.name = "renamed by a user"
    b = frame_of({"fme": np.zeros(3)}, pd.RangeIndex(3))
    assert b.columns.name is None and a.columns is not b.columns
    assert column_index(("x", "y")).equals(pd.Index(["x", "y"])) and column_index(("x",)) is not column_index(("x",))
