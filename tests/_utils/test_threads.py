"""Row ranges on several threads (fme._utils.threads): every row once, in aligned ranges, errors raised after
every range has ended."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fme._utils import threads


@pytest.fixture
def three_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "thread_count", lambda: 3)


@settings(deadline=None)
@given(n=st.integers(0, 5_000), align=st.sampled_from([1, 8, 64]), min_rows=st.integers(1, 2_000))
def test_ranges_cover_every_row_once_with_aligned_starts(n: int, align: int, min_rows: int) -> None:
    seen = np.zeros(n, dtype=np.int64)
    starts: list[int] = []
    lock = threading.Lock()

    def work(lo: int, hi: int) -> None:
        with lock:
            starts.append(lo)
        seen[lo:hi] += 1

    k = threads.run_ranges(work, n, align=align, min_rows=min_rows)
    assert (seen == 1).all()
    assert len(starts) == k
    assert all(lo % align == 0 for lo in starts)
    assert k <= max(1, min(threads.thread_count(), n // min_rows))


def test_small_calls_run_on_the_callers_thread(three_threads: None) -> None:
    names: list[str] = []
    k = threads.run_ranges(lambda lo, hi: names.append(threading.current_thread().name), 100, min_rows=64)
    assert k == 1 and names == [threading.current_thread().name]


def test_large_calls_use_the_configured_threads(three_threads: None) -> None:
    names: set[str] = set()
    k = threads.run_ranges(lambda lo, hi: names.add(threading.current_thread().name), 3_000, min_rows=1_000)
    assert k == 3 and len(names) == 3


def test_an_error_is_raised_after_every_range_has_ended(three_threads: None) -> None:
    ended: list[int] = []

    def work(lo: int, hi: int) -> None:
        if lo == 0:
            raise ValueError("first range")
        time.sleep(0.05)
        ended.append(lo)

    with pytest.raises(ValueError, match="first range"):
        threads.run_ranges(work, 3_000, align=1, min_rows=1_000)
    assert sorted(ended) == [1_000, 2_000]


def test_the_count_is_numbas(monkeypatch: pytest.MonkeyPatch) -> None:
    import numba

    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 5)
    assert threads.thread_count() == 5
    assert threads.rows_per_thread(10) == threads.MIN_CELLS_PER_THREAD // 10
