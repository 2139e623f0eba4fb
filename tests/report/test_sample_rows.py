"""The seeded sample of a Dask frame (:func:`fme.report.inputs.sources.sample_rows`), on the local scheduler.

With more rows than the sample, each partition keeps the drawn rows by their row number (``_pick``, whose
``rows: np.ndarray`` annotation names numpy only for type checkers); the draw depends on ``n``, ``size`` and
``seed``, never on how the rows are split into partitions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

# imported after the importorskip guard, so that a missing dask skips this module, not fails it
from fme.report.inputs.sources import sample_rows  # noqa: E402 - after importorskip


def _frame(n: int, partitions: int):
    data = pd.DataFrame({"x": np.arange(n, dtype=float) * 10.0}, index=pd.RangeIndex(n))
    return data, dd.from_pandas(data, npartitions=partitions)


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_the_sample_is_the_seeded_draw_in_row_order_whatever_the_partitions(partitions):
    data, frame = _frame(50, partitions)
    with dask.config.set(scheduler="synchronous"):
        sample, everything = sample_rows(frame, 50, 10, seed=3)
    rows = np.sort(np.random.default_rng(3).choice(50, size=10, replace=False))
    assert everything is False
    pd.testing.assert_frame_equal(sample, data.iloc[rows])


def test_no_more_rows_than_the_sample_gives_them_all():
    data, frame = _frame(8, 2)
    sample, everything = sample_rows(frame, 8, 10, seed=3)
    assert everything is True
    pd.testing.assert_frame_equal(sample, data)
