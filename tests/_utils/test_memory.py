"""The float memory kept between calls for the x + h frames (fme._utils.memory): reused only when nothing else
refers to it, bounded, freed on demand, and never visible in a number."""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pandas as pd
import pytest

import fme
from fme._utils import memory
from fme._utils.memory import MIN_CELLS, Scratch, keep_limit, kept_bytes, release_memory

BIG = MIN_CELLS * 2


@pytest.fixture(autouse=True)
def _empty_pool(monkeypatch):
    monkeypatch.delenv("FME_KEEP_MEMORY_MB", raising=False)
    release_memory()
    yield
    release_memory()


def _returned(cells: int) -> weakref.ref:
    """A weak reference to the owner of a block taken and given back unshared (a strong one would share it)."""
    s = Scratch()
    view = s.take(cells)
    owner = weakref.ref(view.base)
    del view
    assert s.give_back()
    return owner


def test_a_block_given_back_unshared_is_the_next_take_of_at_most_its_size():
    owner = _returned(BIG)
    assert kept_bytes() == BIG * 8
    s = Scratch()
    again = s.take(BIG - 8)
    assert again.base is owner() and again.size == BIG - 8
    assert kept_bytes() == 0  # taken out while in use


def test_a_block_still_referred_to_is_not_kept():
    s = Scratch()
    view = s.take(BIG)
    frame = pd.DataFrame(view.reshape(2, -1).T, copy=False)
    held = frame.to_numpy()  # what a model keeping its input holds
    del view, frame
    assert not s.give_back()
    assert kept_bytes() == 0
    assert not any(np.shares_memory(held, a) for a in memory._kept)


def test_the_smallest_fitting_block_is_taken():
    small, large = _returned(BIG), _returned(4 * BIG)
    assert sorted(a.size for a in memory._kept) == [BIG, 4 * BIG]
    s = Scratch()
    assert s.take(BIG).base is small()
    t = Scratch()
    assert t.take(BIG).base is large()  # the only one left that fits
    assert Scratch().take(8 * BIG).base is not large()  # none fits: fresh memory


def test_blocks_below_the_least_size_are_not_kept():
    s = Scratch()
    view = s.take(MIN_CELLS - 1)
    del view
    assert not s.give_back()
    assert kept_bytes() == 0


def test_the_limit_keeps_the_most_recently_returned(monkeypatch):
    monkeypatch.setenv("FME_KEEP_MEMORY_MB", str(2.5 * BIG * 8 / (1 << 20)))
    holders = [Scratch() for _ in range(3)]
    owners = []
    for s in holders:  # three blocks in use at once, then given back in order
        view = s.take(BIG)
        owners.append(weakref.ref(view.base))
        del view
    assert [s.give_back() for s in holders[:2]] == [True, True]
    assert kept_bytes() == 2 * BIG * 8
    assert holders[2].give_back()  # three do not fit: the least recently returned goes
    assert [a is b() for a, b in zip(memory._kept, owners[1:], strict=True)] == [True, True]
    assert owners[0]() is None  # freed


def test_a_limit_of_zero_keeps_nothing(monkeypatch):
    monkeypatch.setenv("FME_KEEP_MEMORY_MB", "0")
    s = Scratch()
    view = s.take(BIG)
    del view
    assert not s.give_back()
    assert kept_bytes() == 0


@pytest.mark.parametrize(("raw", "expected"), [("", 256 << 20), ("1", 1 << 20), ("0.5", 1 << 19), ("x", 256 << 20)])
def test_the_limit_is_read_from_the_environment(monkeypatch, raw, expected):
    monkeypatch.setenv("FME_KEEP_MEMORY_MB", raw)
    assert keep_limit() == expected


def test_release_memory_frees_what_is_kept_and_says_how_much():
    owner = _returned(BIG)
    assert fme.release_memory() == BIG * 8
    assert owner() is None
    assert kept_bytes() == 0 and fme.release_memory() == 0


def test_one_holder_holds_one_block():
    s = Scratch()
    s.take(8)
    with pytest.raises(RuntimeError, match="give it back"):
        s.take(8)


# ------------------------------------------------------------------- end to end through fme.fme
N = 2 * MIN_CELLS // 4 + 3  # x + h of 4 columns: above the least kept size, not a round row count


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(rng.normal(size=(N, 4)), columns=["a", "b", "c", "d"])


def _model(df: pd.DataFrame) -> np.ndarray:
    return np.tanh(df.to_numpy() @ np.array([0.5, -1.0, 0.25, 2.0]))


def test_fme_keeps_the_x_plus_h_memory_and_its_numbers_do_not_change():
    X = _data()
    fresh = fme.fme(_model, X, {"a": 1.0}, inference="sample").results
    assert kept_bytes() >= 4 * N * 8  # the x + h block is kept
    again = fme.fme(_model, X, {"a": 1.0}, inference="sample").results  # written into the kept block
    pd.testing.assert_frame_equal(fresh, again, check_exact=True)
    expected = _model(X.assign(a=X["a"] + 1.0)) - _model(X)
    np.testing.assert_array_equal(again["fme"].to_numpy(), expected)


def test_a_model_keeping_its_inputs_keeps_them_unchanged():
    X = _data()
    seen: list[pd.DataFrame] = []

    def keeper(df: pd.DataFrame) -> np.ndarray:
        seen.append(df)
        return _model(df)

    fme.fme(keeper, X, {"a": 1.0}, inference="sample")
    fme.fme(keeper, X, {"b": -2.0}, inference="sample")  # a third frame, which must not be written into the first's
    np.testing.assert_array_equal(seen[1].to_numpy(), X.assign(a=X["a"] + 1.0).to_numpy())
    np.testing.assert_array_equal(seen[3].to_numpy(), X.assign(b=X["b"] - 2.0).to_numpy())
    assert kept_bytes() == 0


def test_predictions_that_are_a_view_of_the_input_stay_the_results():
    X = _data()

    def column(df: pd.DataFrame) -> np.ndarray:
        return df.to_numpy()[:, 0]  # f = a, a view of the frame it was handed

    first = fme.fme(column, X, {"a": 1.0}, inference="sample")
    fme.fme(column, X, {"a": 5.0}, inference="sample")
    np.testing.assert_array_equal(first.predictions["f_x_step"].to_numpy(), X["a"].to_numpy() + 1.0)
    np.testing.assert_array_equal(first.results["fme"].to_numpy(), (X["a"] + 1.0 - X["a"]).to_numpy())


def test_a_model_that_raises_leaves_the_next_call_right():
    X = _data()
    calls = {"n": 0}

    def flaky(df: pd.DataFrame) -> np.ndarray:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ValueError("broken at f(x + h)")
        return _model(df)

    with pytest.raises(fme.PredictionError, match="broken"):
        fme.fme(flaky, X, {"a": 1.0}, inference="sample")
    res = fme.fme(flaky, X, {"a": 1.0}, inference="sample").results
    np.testing.assert_array_equal(res["fme"].to_numpy(), _model(X.assign(a=X["a"] + 1.0)) - _model(X))


def test_calls_on_several_threads_each_get_their_own_block():
    X = _data()
    steps = [{"a": 1.0}, {"b": 2.0}, {"c": -1.0}, {"d": 0.5}]
    expected = [_model(X.assign(**{k: X[k] + v for k, v in s.items()})) - _model(X) for s in steps]
    got: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        for _ in range(3):
            got[i] = fme.fme(_model, X, steps[i], inference="sample").results["fme"].to_numpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(steps))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, e in enumerate(expected):
        np.testing.assert_array_equal(got[i], e)


def test_held_elsewhere_tells_a_models_own_new_array_from_memory_something_else_keeps():
    """One local of the caller refers to the array (read in a plain statement: an assertion's rewriting keeps
    references of its own): new arrays, views of new arrays and arrays of a dropped Series are nobody else's; a
    second name, a buffer the array was made from, or a frame's block are."""
    from fme._utils.memory import held_elsewhere

    seen = []
    x = np.tanh(np.ones(5))
    seen.append(held_elsewhere(x))
    x = np.ones((5, 2))[:, 1]
    seen.append(held_elsewhere(x))
    x = np.ones(6).reshape(2, 3)[:, 0]
    seen.append(held_elsewhere(x))
    x = np.frombuffer(bytearray(40))
    seen.append(held_elsewhere(x))
    x = pd.Series(np.ones(5)).to_numpy()
    seen.append(held_elsewhere(x))
    assert seen == [False] * 5
    kept = np.ones(5)
    x = kept[:]  # its owner has a name here
    seen.append(held_elsewhere(x))
    buffer = bytearray(40)
    x = np.frombuffer(buffer)
    seen.append(held_elsewhere(x))
    frame = pd.DataFrame(np.ones((5, 3)))
    x = frame.to_numpy()[:, 0]  # a view of the frame's block
    seen.append(held_elsewhere(x))
    x = np.ones(4)
    y = x  # a second name
    seen.append(held_elsewhere(x))
    del y
    assert seen[5:] == [True] * 4
