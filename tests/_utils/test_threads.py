"""Row ranges on several threads (fme._utils.threads): every row once, in aligned ranges, errors raised after
every range has ended."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pandas as pd
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
    """Each range waits for the other two: the three run at once, on the caller's thread and two helpers."""
    names: set[str] = set()
    everyone = threading.Barrier(3, timeout=30)

    def work(lo: int, hi: int) -> None:
        names.add(threading.current_thread().name)
        everyone.wait()

    for _ in range(3):  # the helpers are kept: later calls get them as the first did
        names.clear()
        k = threads.run_ranges(work, 3_000, min_rows=1_000)
        assert k == 3 and len(names) == 3 and threading.current_thread().name in names


def test_work_started_on_a_helper_runs_there_and_never_waits_for_a_helper(three_threads: None) -> None:
    """Ranges, chunks and tasks started from a pool thread run on that thread, in order (no task waits for a
    worker that waits for it), with the same result."""
    seen: list[tuple[str, int]] = []

    def inner() -> list[int]:
        here = threading.current_thread().name
        threads.run_ranges(lambda lo, hi: seen.append((threading.current_thread().name, lo)), 3_000, min_rows=1_000)
        threads.chunks_beside(lambda lo, hi: seen.append((threading.current_thread().name, lo)), 1_000, 500, 2)()
        assert threads.beside(threading.current_thread)().name == here
        return [lo for name, lo in seen if name == here]

    assert threads.beside(inner)() == [0, 1_024, 2_048, 0, 500]  # ranges start at multiples of 64


def test_a_forked_child_makes_its_own_helpers() -> None:
    """The parent's pool has no threads in a child made by fork: the child's calls make their own."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    threads.beside(lambda: None)()  # the parent's pool exists
    with multiprocessing.get_context("fork").Pool(1) as child:
        assert child.apply(_ranges_in_child) == 3_000


def _ranges_in_child() -> int:
    threads.thread_count = lambda: 3  # the child's own module state: three ranges, two helpers
    seen = np.zeros(3_000, dtype=np.int64)

    def work(lo: int, hi: int) -> None:
        seen[lo:hi] += 1

    threads.run_ranges(work, 3_000, min_rows=1_000)
    return int(seen.sum()) if threads.beside(lambda: 1)() == 1 else -1


def test_chunks_beside_cover_every_row_once_and_the_caller_shares_what_is_left(three_threads: None) -> None:
    seen = np.zeros(10_000, dtype=np.int64)
    who: dict[int, int] = {}
    lock = threading.Lock()
    # each thread's first chunk waits for the other two's: the two helpers and the caller each take one
    everyone = threading.Barrier(3, timeout=30)

    def work(lo: int, hi: int) -> None:
        with lock:
            first = threading.get_ident() not in who.values()
            seen[lo:hi] += 1
            who[lo] = threading.get_ident()
        if first:
            everyone.wait()

    finish = threads.chunks_beside(work, 10_000, 500, helpers=2)
    finish()
    assert (seen == 1).all() and sorted(who) == list(range(0, 10_000, 500))
    assert threading.get_ident() in who.values() and len(set(who.values())) == 3
    alone: list[int] = []
    later = threads.chunks_beside(lambda lo, hi: alone.append(lo), 1_001, 500, helpers=0)
    assert alone == []  # no helper: nothing runs before the caller waits
    later()
    assert alone == [0, 500, 1_000]


def test_chunks_beside_raise_the_lowest_failing_chunks_error_on_the_caller(three_threads: None) -> None:
    def work(lo: int, hi: int) -> None:
        if lo in (1_000, 3_000):
            raise ValueError(f"chunk {lo}")

    finish = threads.chunks_beside(work, 5_000, 1_000, helpers=2)
    with pytest.raises(ValueError, match="chunk 1000"):
        finish()


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


def test_the_count_is_numbas_at_most_openmps(monkeypatch: pytest.MonkeyPatch) -> None:
    import numba

    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 5)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.thread_count() == 5
    for omp, want in [("1", 1), ("3", 3), ("8", 5), ("2,1", 2), ("", 5), ("0", 5), ("many", 5)]:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
        assert threads.thread_count() == want, omp
    assert threads.rows_per_thread(10) == threads.MIN_CELLS_PER_THREAD // 10


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize(
    ("where", "value", "finite"),
    [(None, 0.0, True), (5, np.nan, False), (-1, np.inf, False), (77_777, -np.inf, False), (0, 1e308, False)],
)
def test_finite_sum_sees_every_non_finite_value_on_any_threads(
    monkeypatch: pytest.MonkeyPatch, k: int, where: int | None, value: float, finite: bool
) -> None:
    """A NaN or an infinity anywhere (in any range) makes the sum non-finite; values that overflow the total
    (1e308 beside others near it) make it non-finite too, which the callers then check value by value."""
    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(threads, "MIN_CELLS_PER_THREAD", 1_000)
    a = np.random.default_rng(0).normal(size=(30_000, 3))
    if where is not None:
        a.reshape(-1)[where] = value
    if value == 1e308:
        a.reshape(-1)[:5] = 1e308
    assert threads.finite_sum(a) is finite
    column = a[:, 1]  # strided: summed on the caller's thread
    with np.errstate(over="ignore", invalid="ignore"):
        assert threads.finite_sum(column) is bool(np.isfinite(column.sum()))


def _paths_model(df: pd.DataFrame) -> np.ndarray:
    """Stairs in x0 where x1 > 0.5 (the jump route), elsewhere smooth with a kink (the quadrature route, refined)."""
    x = df.to_numpy()
    smooth = np.tanh(x[:, 0] + 0.3 * x[:, 1]) + np.abs(x[:, 0] - 0.2) * x[:, 3]
    return np.where(x[:, 1] > 0.5, np.floor(3.0 * x[:, 0]), smooth)


def _smooth_model(df: pd.DataFrame) -> np.ndarray:
    x = df.to_numpy()
    return np.tanh(x[:, 0] + 0.3 * x[:, 1]) * x[:, 3]


@pytest.mark.parametrize(
    ("model", "routes"), [(_paths_model, {"quadrature", "jumps"}), (_smooth_model, {"quadrature"})]
)
def test_every_result_is_the_same_on_one_or_three_threads(
    monkeypatch: pytest.MonkeyPatch, model: Any, routes: set[str]
) -> None:
    """fme.fme with the error-controlled NLM, its AME table and an AME with a per-row step: every column equal
    (with ``==``) whether the row ranges run on one thread or three, each thread given a few rows."""
    import fme

    rng = np.random.default_rng(11)
    X = pd.DataFrame(rng.normal(size=(3_000, 4)), columns=["x0", "x1", "x2", "x3"])

    def run() -> tuple[pd.DataFrame, ...]:
        res = fme.fme(model, X, {"x0": 0.5, "x3": -0.25}, nlm=True, inference="sample")
        table = fme.ame(model, X, {"x0": 0.5}, inference="sample")
        return res.results, res.predictions, table

    monkeypatch.setattr(threads, "thread_count", lambda: 1)
    one = run()
    monkeypatch.setattr(threads, "thread_count", lambda: 3)
    monkeypatch.setattr(threads, "MIN_ROWS_PER_THREAD", 64)
    monkeypatch.setattr(threads, "MIN_CELLS_PER_THREAD", 256)
    many = run()
    assert set(one[0]["nlm_route"]) == routes
    for a, b in zip(one, many):
        pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b), check_exact=True)


def test_a_task_beside_runs_on_its_own_thread_and_gives_its_result(three_threads: None) -> None:
    seen: list[int] = []
    started = threading.Event()

    def task() -> int:
        seen.append(threading.get_ident())
        started.set()
        return 42

    result = threads.beside(task)
    assert started.wait(timeout=30)
    assert result() == 42 and result() == 42
    assert seen == [seen[0]] and seen[0] != threading.get_ident()  # once, on a helper


def test_a_task_no_helper_has_started_is_run_once_by_the_caller(three_threads: None) -> None:
    """Every helper busy: the caller, once it waits, takes the queued task back and runs it itself, once."""
    release = threading.Event()
    busy = [threads.beside(release.wait) for _ in range(4)]  # more than the pool's workers
    seen: list[int] = []
    result = threads.beside(lambda: (seen.append(threading.get_ident()), 7)[1])
    assert result() == 7 and result() == 7 and seen == [threading.get_ident()]
    release.set()
    assert all(b() is True for b in busy)


def test_a_task_beside_raises_its_error_on_the_callers_thread(three_threads: None) -> None:
    def broken() -> None:
        raise ValueError("in the task")

    result = threads.beside(broken)
    with pytest.raises(ValueError, match="in the task"):
        result()


def test_a_task_beside_runs_at_once_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    seen: list[int] = []
    result = threads.beside(lambda: seen.append(threading.get_ident()))
    assert seen == [threading.get_ident()]  # done before the caller goes on
    assert result() is None


def test_a_small_task_beside_runs_at_once(three_threads: None) -> None:
    seen: list[int] = []
    result = threads.beside(lambda: seen.append(threading.get_ident()), now=True)
    assert seen == [threading.get_ident()]
    assert result() is None


def test_the_tables_figures_are_the_same_with_their_selections_beside(monkeypatch: pytest.MonkeyPatch) -> None:
    """An AME table (its quartiles selected beside the row-order sums) and an fME result's figures (its median
    beside the sums) on one thread and on three, compared with ``==``: rows enough for both to go beside."""
    import fme

    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(60_000, 3)), columns=["a", "b", "c"])

    def model(d: pd.DataFrame) -> np.ndarray:
        return np.tanh(d["a"].to_numpy() * d["b"].to_numpy()) + 0.1 * d["c"].to_numpy() ** 2

    def run() -> tuple[Any, ...]:
        table = fme.ame(model, X, {"a": 0.5, "c": 1.0}, inference="sample")
        res = fme.fme(model, X, {"b": -1.0}, nlm=True, inference="sample")
        return table, res.tidy(), pd.DataFrame([res._figures("fme"), res._nlm_figures("nlm")])

    monkeypatch.setattr(threads, "thread_count", lambda: 1)
    one = run()
    monkeypatch.setattr(threads, "thread_count", lambda: 3)
    many = run()
    for a, b in zip(one, many, strict=True):
        pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b), check_exact=True)
    assert one[0]["q25"].notna().all() and one[2]["median"].notna().all()


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize(
    ("spoil", "where", "value", "finite"),
    [
        (None, 0, 0.0, True),
        ("a", 5, np.nan, False),
        ("b", 29_999, np.inf, False),
        ("a", 17_777, -np.inf, False),
        ("b", 3, np.nan, False),
        ("both", 40, np.inf, False),  # inf - inf: NaN
        ("a", 0, 1.7e308, False),  # finite operands whose difference overflows
    ],
)
def test_finite_difference_is_numpys_and_sees_every_non_finite_operand_on_any_threads(
    monkeypatch: pytest.MonkeyPatch, k: int, spoil: str | None, where: int, value: float, finite: bool
) -> None:
    """The differences equal NumPy's to the bit in every range; the sum is non-finite when an operand anywhere is
    NaN or infinite, and when a difference overflows (which the callers then settle value by value)."""
    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(threads, "MIN_CELLS_PER_THREAD", 1_000)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=30_000), rng.normal(size=30_000)
    if spoil in ("a", "both"):
        a[where] = value
    if spoil in ("b", "both"):
        b[where] = value
    if value == 1.7e308:
        b[where] = -1.7e308
    with np.errstate(over="ignore", invalid="ignore"):
        want = a - b
    got, ok = threads.finite_difference(a, b)
    assert ok is finite
    np.testing.assert_array_equal(got, want)
    assert got.flags.c_contiguous and not np.shares_memory(got, a) and not np.shares_memory(got, b)


def test_finite_difference_of_other_layouts_is_numpys() -> None:
    """Strided, 2-D and float32 operands: NumPy's subtraction, checked by a summing pass."""
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(500, 3)), rng.normal(size=(500, 3))
    for x, y in [(a, b), (a[:, 1], b[:, 1]), (a.astype(np.float32), b.astype(np.float32))]:
        got, ok = threads.finite_difference(x, y)
        np.testing.assert_array_equal(got, x - y)
        assert ok
    b[7, 2] = np.nan
    assert threads.finite_difference(a, b)[1] is False


def test_work_beside_is_waited_for_when_the_block_raises_and_its_own_error_is_left_out() -> None:
    waited: list[str] = []

    def wait() -> None:
        waited.append("waited")
        raise RuntimeError("the work's own error")

    with pytest.raises(ValueError, match="the block's error"), threads.waited_on_error(wait):
        raise ValueError("the block's error")
    assert waited == ["waited"]
    with threads.waited_on_error(wait):  # the block ends: the caller waits where it needs the result
        pass
    assert waited == ["waited"]
