"""The array route's points (fme._adapters.array_function): a NumPy array's points by ranges on threads, the
same numbers as the namespace's own operations, and x + h written while the model predicts f(x)."""

from __future__ import annotations

import array_api_strict
import numpy as np
import pytest

import fme
from fme._adapters import array_function
from fme._adapters.array_function import ArrayPredictor, Pairs

pytestmark = pytest.mark.filterwarnings("ignore::fme.FixedModelWarning")


def _predictor(values, model=lambda x: x[:, 0]):
    import array_api_compat

    xp = array_api_compat.array_namespace(values)
    return ArrayPredictor(model, values, xp, None, [0, 2], [0.5, -1.25], "a model", "NumPy")


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [1, 3])
def test_a_numpy_arrays_points_on_any_threads_are_the_namespaces_own(monkeypatch, order, dtype, k):
    """Rows by a slice (a stepped one too) or by positions, t 0, 1 or one per point: the points the array API
    operations give (array_api_strict's, on the same values), to the bit, on one or three threads, in the layout
    NumPy's own copy of the rows has (a model's arithmetic may round by layout)."""
    from fme._utils import threads

    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(array_function, "rows_per_thread", lambda cells: 8)
    rng = np.random.default_rng(3)
    values = rng.normal(size=(301, 4)).astype(dtype) * 10.0 ** rng.integers(-4, 5, size=4).astype(dtype)
    values = np.asarray(values, order=order)
    fast = _predictor(values).func
    strict = _predictor(array_api_strict.asarray(values)).func
    rows = rng.integers(0, 301, size=257)
    t = rng.random(257)
    cases = ((slice(7, 250), 0.0), (slice(7, 250), 1.0), (slice(3, 290, 5), 1.0), (rows, 0.0), (rows, 1.0), (rows, t))
    for r, tt in cases:
        got = fast.points(r, tt)
        want = np.asarray(strict.points(r, tt))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        if isinstance(r, slice) and r.step is None:
            assert got.flags.f_contiguous == np.array(values[r], copy=True).flags.f_contiguous
        assert not np.shares_memory(got, values)  # a fresh array: the model may write into it


def _events_model(events):
    def model(x):
        events.append(f"predict {x.shape[0]}")
        return np.tanh(x @ np.array([1.0, -0.5, 0.25]))

    return model


@pytest.fixture
def beside_from_small_arrays(monkeypatch):
    """x + h of the small arrays below written beside f(x) on two threads, and the order of the events."""
    from fme._utils import threads

    monkeypatch.setattr(threads, "thread_count", lambda: 2)
    monkeypatch.setattr(array_function, "MIN_CELLS_PER_THREAD", 64)
    events: list[str] = []
    real = array_function.beside

    def recorded(task, now=False):
        events.append("x + h started")
        wait = real(task, now)

        def waited():
            out = wait()
            events.append("x + h written")
            return out

        return waited

    monkeypatch.setattr(array_function, "beside", recorded)
    return events


def test_x_plus_h_of_a_numpy_array_is_written_while_the_model_predicts_f_x(beside_from_small_arrays):
    events = beside_from_small_arrays
    X = np.random.default_rng(5).normal(size=(500, 3))
    got = fme.fme(_events_model(events), X, {"a": 0.5}, feature_names=["a", "b", "c"], inference="sample")
    assert events == ["x + h started", "predict 500", "x + h written", "predict 500"]
    moved = X.copy()
    moved[:, 0] += 0.5
    beta = np.array([1.0, -0.5, 0.25])
    np.testing.assert_array_equal(got.results["fme"], np.tanh(moved @ beta) - np.tanh(X @ beta))


def test_f_x_failing_while_x_plus_h_is_written_raises_its_own_error(beside_from_small_arrays):
    X = np.random.default_rng(5).normal(size=(500, 3))

    def failing(x):
        raise ValueError("the model's own fault")

    with pytest.raises(fme.PredictionError, match="the model's own fault"):
        fme.fme(failing, X, {"a": 0.5}, feature_names=["a", "b", "c"], inference="sample")
    assert beside_from_small_arrays == ["x + h started", "x + h written"]


def test_a_device_arrays_points_are_written_when_predicted():
    """Not NumPy (array_api_strict here, a GPU's arrays in use): no helper, the namespace's own operations."""
    values = array_api_strict.asarray(np.random.default_rng(1).normal(size=(3000, 4)))
    pairs = Pairs(slice(0, 3000), 1.0)
    assert _predictor(values).points_beside(pairs)() is pairs
