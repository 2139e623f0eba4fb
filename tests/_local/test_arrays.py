"""The array route of fme.fme and fme.ame (fme._local.arrays): data as NumPy or array_api_strict arrays with
feature_names=, the model a plain function of such arrays. Every figure equals the DataFrame route's on
pd.DataFrame(array, columns=feature_names) with the same function reading the frame's values."""

from __future__ import annotations

import array_api_strict
import numpy as np
import pandas as pd
import pytest
from array_api_compat import array_namespace

import fme
from fme._dask import arrays as dask_arrays
from fme.exceptions import DataError, ParameterError, PredictionError

NAMES = ["a", "b", "c"]
LIBRARIES = {"numpy": np.asarray, "array_api_strict": array_api_strict.asarray}
try:  # PyTorch's CPU build where installed (not a test dependency: CI runs NumPy and array_api_strict)
    import torch

    LIBRARIES["torch"] = lambda a: torch.asarray(np.asarray(a), dtype=torch.float64)
except ImportError:  # pragma: no cover - depends on the environment
    pass
pytestmark = [
    pytest.mark.filterwarnings("ignore::fme.FixedModelWarning"),
    # fme hands a library only arrays it may own: PyTorch warns on a tensor made from a read-only NumPy array
    pytest.mark.filterwarnings("error:The given NumPy array is not writable"),
]


def _data(n: int = 240) -> np.ndarray:
    X = np.random.default_rng(7).normal(size=(n, 3))
    X[3, 0] = np.nan  # left out: missing stepped value
    X[5, 2] = np.inf  # left out: infinite stepped value
    X[8, 1] = np.nan  # kept: not stepped
    return X


class Model:
    """A smooth part, a jump (the Gauss-Kronrod jump route) and a constant region (NLM status 'constant'),
    written once in the array API, so the same function serves arrays and (through .to_numpy()) frames; it keeps
    the type and the row count of every array it is called with."""

    def __init__(self) -> None:
        self.types: set[type] = set()
        self.rows: list[int] = []

    def __call__(self, x):
        xp = array_namespace(x)
        self.types.add(type(x))
        self.rows.append(int(x.shape[0]))
        b = xp.where(xp.isnan(x[:, 1]), xp.zeros_like(x[:, 1]), x[:, 1])
        smooth = xp.tanh(x[:, 0] * b) + 0.3 * x[:, 0] ** 2
        jump = xp.where(x[:, 2] > 0.4, xp.ones_like(b), xp.zeros_like(b))
        flat = xp.where(x[:, 0] > 1.5, xp.zeros_like(b), smooth)
        return flat + 0.5 * jump


def _frame_model(d: pd.DataFrame):
    return Model()(d.to_numpy())


def _same(got: fme.FMEResult, want: fme.FMEResult) -> None:
    pd.testing.assert_frame_equal(got.results, want.results, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(got.excluded, want.excluded)
    pd.testing.assert_frame_equal(got.predictions, want.predictions, rtol=1e-12, atol=1e-12)
    assert got.steps == want.steps and got.nlm_method == want.nlm_method
    np.testing.assert_array_equal(got.positions, want.positions)


OPTIONS = {
    "fme only": {},
    "default NLM (Gauss-Kronrod with a budget)": {"nlm": True},
    "Gauss-Legendre": {"nlm": True, "nlm_points": 8},
    "Simpson 3/8": {"nlm": True, "nlm_intervals": 4},
}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_fme_equals_the_dataframe_route(library, option):
    X = _data()
    model = Model()
    steps = {"a": 0.7, "c": "0.5*sd"}
    got = fme.fme(model, LIBRARIES[library](X), steps, feature_names=NAMES, **OPTIONS[option])
    want = fme.fme(_frame_model, pd.DataFrame(X, columns=NAMES), steps, **OPTIONS[option])
    _same(got, want)
    assert model.types == {type(LIBRARIES[library](X))}  # the model saw arrays of the data's own library
    assert got.results.shape[0] == X.shape[0] - 2 and sorted(got.excluded.index) == [3, 5]
    if option.startswith("default"):
        # the function exercises every status and both routes of the budget NLM
        assert set(got.results["nlm_route"]) == {"quadrature", "jumps"}
        assert (got.results["nlm_status"] == "constant").sum() > 0
    pd.testing.assert_frame_equal(got.data, pd.DataFrame(X, columns=NAMES))


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_bounded_batches_give_the_same_numbers(library):
    X = _data()
    model = Model()
    whole = fme.fme(Model(), LIBRARIES[library](X), {"a": 1.0}, nlm=True, feature_names=NAMES)
    batched = fme.fme(model, LIBRARIES[library](X), {"a": 1.0}, nlm=True, feature_names=NAMES, batch_size=40)
    _same(batched, whole)
    # f(x), f(x + h) in batches of 40 rows; the 21 nodes of 40 rows; refinement frames of 40 x 21 points
    assert max(model.rows) <= 40 * 21
    assert model.rows[:2] == [40, 40]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_ame_equals_the_dataframe_route(library):
    for steps in ({"a": 0.5, "c": "sd"}, None):
        X = _data()[9:]
        X[0, 2] = np.inf  # left out of c's row only (each feature's step is its own fME)
        got = fme.ame(Model(), LIBRARIES[library](X), steps, feature_names=NAMES)
        want = fme.ame(_frame_model, pd.DataFrame(X, columns=NAMES), steps)
        pd.testing.assert_frame_equal(pd.DataFrame(got), pd.DataFrame(want), rtol=1e-12, atol=1e-12)
        assert list(got["feature"]) == (["a", "c"] if steps else NAMES)
    joint = fme.hypotheses(got, "b1 - b2 = 0")
    pd.testing.assert_frame_equal(
        pd.DataFrame(joint), pd.DataFrame(fme.hypotheses(want, "b1 - b2 = 0")), rtol=1e-12, atol=1e-12
    )


def test_integer_arrays_are_stepped_as_floats():
    X = np.arange(12).reshape(6, 2)
    got = fme.fme(lambda x: x[:, 0] * x[:, 1], X, {"x": 1}, feature_names=["x", "y"])
    np.testing.assert_array_equal(got.results["fme"].to_numpy(), X[:, 1].astype(float))


def test_an_estimator_reads_the_array_as_a_dataframe():
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(1).normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    model = LinearRegression().fit(X, y)
    got = fme.ame(model, X, {"b": 1.0}, feature_names=NAMES, inference="sample")
    assert got["ame"].iloc[0] == pytest.approx(-2.0, abs=1e-12)
    # every option of the DataFrame route works: here a detector fitted on the array's rows
    eff = fme.fme(model, X, {"b": 1.0}, feature_names=NAMES, extrapolation="envelope", inference="sample")
    frame = pd.DataFrame(X, columns=NAMES)
    want = fme.fme(model, frame, {"b": 1.0}, feature_names=NAMES, extrapolation="envelope", inference="sample")
    pd.testing.assert_frame_equal(eff.results, want.results)
    assert eff.n_excluded == want.n_excluded > 0


def test_an_estimator_that_names_its_inputs_reads_them_by_name():
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(1).normal(size=(50, 3))
    frame = pd.DataFrame(X, columns=NAMES)
    model = LinearRegression().fit(frame[["c", "a", "b"]], X @ np.array([1.0, -2.0, 0.5]))  # its own order
    got = fme.fme(model, X, {"b": 1.0}, feature_names=NAMES, inference="sample")
    pd.testing.assert_frame_equal(got.results, fme.fme(model, frame, {"b": 1.0}, inference="sample").results)
    assert got.ame == pytest.approx(-2.0, abs=1e-12)


def test_a_failing_model_names_the_array_and_the_step():
    calls = []

    def broken(x):  # fails at f(x + h), whose message names the caller's step
        calls.append(1)
        if len(calls) > 1:
            raise TypeError("no")
        return x[:, 0]

    with pytest.raises(PredictionError, match=r"f\(x \+ h\) for the step a \+ 1 .*numpy array.*feature_names order"):
        fme.fme(broken, np.ones((4, 3)), {"a": 1.0}, feature_names=NAMES)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"extrapolation": "envelope"}, "extrapolation="),
        ({"target_class": 1}, "target_class="),
        ({"reference_data": np.ones((3, 3))}, "reference_data="),
        ({"inference": "delta"}, "inference='sample' only"),
    ],
)
def test_fme_refuses_what_needs_a_frame(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        fme.fme(Model(), _data(), {"a": 1.0}, feature_names=NAMES, **kwargs)


def test_ame_refuses_by_groups_and_weights():
    with pytest.raises(ParameterError, match="fme.ame on an array does not take by"):
        fme.ame(Model(), _data(), {"a": 1.0}, feature_names=NAMES, by="b")
    with pytest.raises(ParameterError, match="does not take wts"):
        fme.ame(Model(), _data(), {"a": 1.0}, feature_names=NAMES, wts=np.ones(240))


def test_arrays_need_feature_names_and_other_verbs_refuse_them():
    with pytest.raises(DataError, match="without feature_names"):
        fme.fme(Model(), _data(), {"a": 1.0})
    with pytest.raises(ParameterError, match="fme.avg_comparisons takes a pandas"):
        fme.avg_comparisons(Model(), _data(), {"a": 1.0}, feature_names=NAMES)
    with pytest.raises(ParameterError, match="fme.fme on Dask takes a dask.dataframe"):
        dask_arrays.fme(None, None, None, {})  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="fme.ame on Dask"):
        dask_arrays.ame(None, None, None, {}, None)  # type: ignore[arg-type]


def test_the_model_gets_arrays_on_the_data_device():
    """array_api_strict refuses to mix devices: data on a second device are stepped and predicted there."""
    device = array_api_strict.Device("device1")
    X = _data()[9:]
    model = Model()
    got = fme.fme(model, array_api_strict.asarray(X, device=device), {"a": 1.0}, feature_names=NAMES, nlm=True)
    want = fme.fme(_frame_model, pd.DataFrame(X, columns=NAMES), {"a": 1.0}, nlm=True)
    _same(got, want)
    seen = set()

    def where(x):
        seen.add(x.device)
        return model(x)

    fme.ame(where, array_api_strict.asarray(X, device=device), {"c": "sd"}, feature_names=NAMES)
    assert seen == {device}


def test_float32_data_reach_the_model_as_float32_and_stay_untouched():
    X = _data()[9:].astype(np.float32)
    before = X.copy()
    dtypes = set()

    def rude(x):  # writes into what it is given: the caller's array must not change
        dtypes.add(x.dtype)
        out = np.tanh(x[:, 0]) * x[:, 1]
        x[:, 0] = 0.0
        return out

    got = fme.fme(rude, X, {"a": 0.5}, feature_names=NAMES, nlm=True, nlm_points=4)
    np.testing.assert_array_equal(X, before)
    assert dtypes == {np.dtype(np.float32)}
    # the points are x and x + h in float32, the model's own arithmetic; the difference is taken in float64
    f1 = (np.tanh(X[:, 0] + np.float32(0.5)) * X[:, 1]).astype(np.float64)
    f0 = (np.tanh(X[:, 0]) * X[:, 1]).astype(np.float64)
    np.testing.assert_array_equal(got.results["fme"].to_numpy(), f1 - f0)


def test_no_evaluable_row_is_the_dataframe_routes_error():
    X = np.full((4, 3), np.nan)
    with pytest.raises(DataError, match=r"no row can be evaluated for the step a \+ 1"):
        fme.fme(Model(), array_api_strict.asarray(X), {"a": 1.0}, feature_names=NAMES)


def test_feature_names_from_an_estimator_s_feature_names_in_():
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(7).normal(size=(60, 3))
    frame = pd.DataFrame(X, columns=NAMES)
    est = LinearRegression().fit(frame, frame["a"] * 2.0 + frame["b"])
    got = fme.fme(est, X, {"a": 1.0}, feature_names=est.feature_names_in_)
    want = fme.fme(est, frame, {"a": 1.0})
    pd.testing.assert_frame_equal(got.results, want.results)


def test_a_dask_array_is_refused_naming_the_fix():
    da = pytest.importorskip("dask.array")
    with pytest.raises(DataError, match=r"`data` is a Dask Array.*from_dask_array"):
        fme.fme(Model(), da.from_array(_data(), chunks=60), {"a": 1.0}, feature_names=NAMES)


def test_integer_feature_names_are_the_dataframe_route_s_labels():
    # pd.DataFrame(X, columns=[0, 1, 2]) has integer labels: the steps name them as integers on both routes
    X = np.random.default_rng(3).normal(size=(30, 3))
    beta = np.array([1.0, 2.0, -1.0])
    got = fme.fme(lambda x: np.tanh(x @ beta), X, {1: 0.5}, feature_names=[0, 1, 2])
    want = fme.fme(lambda d: np.tanh(d.to_numpy() @ beta), pd.DataFrame(X, columns=[0, 1, 2]), {1: 0.5})
    assert got.steps == want.steps
    pd.testing.assert_frame_equal(got.results, want.results)
    pd.testing.assert_frame_equal(got.data, want.data)


def test_an_estimator_reads_integer_feature_names_as_strings():
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(3).normal(size=(30, 3))
    est = LinearRegression().fit(X, X @ np.array([1.0, 2.0, -1.0]))
    got = fme.fme(est, X, {"1": 1.0}, feature_names=[0, 1, 2], reference_data=X)
    want = fme.fme(est, pd.DataFrame(X, columns=["0", "1", "2"]), {"1": 1.0}, feature_names=["0", "1", "2"])
    pd.testing.assert_frame_equal(got.results, want.results)
    np.testing.assert_allclose(got.results["fme"], 2.0, rtol=1e-12)
