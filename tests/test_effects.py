"""fme() and FMEResult: result frame, aggregates, summary, extrapolation exclusion
(envelope of the reference data) and its errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme.exceptions import ExtrapolationError, FMEError, ParameterError
from tests.conftest import CallRecorder


def cubic(d):
    x1 = d["x1"].to_numpy(dtype=float)
    return x1**3 - d["x2"].to_numpy(dtype=float) * x1


@pytest.fixture
def data():
    # x1 = 0, 1, ..., 9; x2 alternating
    return pd.DataFrame(
        {"x1": np.arange(10, dtype=float), "x2": np.tile([1.0, -1.0], 5)}, index=[f"obs{i}" for i in range(10)]
    )


def test_docstring_example():
    X = pd.DataFrame({"x": [-2.0, 0.0, 1.0]})
    res = fme.fme(lambda d: d["x"] ** 2, X, {"x": 1}, nlm=True)
    assert res.results["fme"].tolist() == [-3.0, 1.0, 3.0]
    assert list(res.results.columns) == ["fme", "nlm", "nlm_status", "nlm_error", "nlm_route"]  # Gauss-Kronrod


def test_result_values_and_aggregates(data):
    before = data.copy(deep=True)
    res = fme.fme(cubic, data, {"x1": 2.0}, nlm=True)
    x1, x2 = data["x1"].to_numpy(), data["x2"].to_numpy()
    expected = (x1 + 2) ** 3 - x1**3 - 2 * x2
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)
    assert res.results.index.equals(data.index)
    assert list(res.results.columns) == ["fme", "nlm", "nlm_status", "nlm_error", "nlm_route"]  # Gauss-Kronrod
    assert res.ame == pytest.approx(expected.mean(), rel=1e-15)
    assert isinstance(res.ame, float)
    assert res.sd == pytest.approx(np.std(expected, ddof=1), rel=1e-14)
    assert res.anlm == pytest.approx(res.results["nlm"].mean(), rel=1e-14)
    assert res.n == 10 and res.n_excluded == 0 and res.extrapolated.empty
    np.testing.assert_array_equal(res.predictions["f_x"].to_numpy(), cubic(data))
    np.testing.assert_array_equal(res.predictions["f_x_step"].to_numpy() - res.predictions["f_x"].to_numpy(), expected)
    assert res.step_dict == {"x1": 2.0}
    pd.testing.assert_frame_equal(data, before)
    out = res.to_frame()
    out.iloc[0, 0] = -1.0
    assert res.results.iloc[0, 0] == expected[0]


def test_summary_contents(data):
    res = fme.fme(cubic, data, {"x1": 2.0, "x2": -0.5}, nlm=True)
    text = res.summary()
    v = res.results["fme"].to_numpy()
    q25, q75 = np.quantile(v, [0.25, 0.75])
    assert "step: x1 + 2, x2 - 0.5" in text
    assert "rows evaluated: 10 of 10" in text
    assert f"AME {v.mean():.6g}" in text
    assert f"SD {np.std(v, ddof=1):.6g}" in text
    assert f"q25 {q25:.6g}" in text and f"q75 {q75:.6g}" in text
    assert f"ANLM {res.anlm:.6g}" in text
    assert "undefined 0 (constant 0, flat 0)  inaccurate 0  (method: gauss-kronrod, 21 nodes, tol 1e-06)" in text
    assert res.nlm_method == "gauss-kronrod"
    gl = fme.fme(cubic, data, {"x1": 2.0, "x2": -0.5}, nlm=True, nlm_method="gauss-legendre").summary()
    assert "(method: gauss-legendre, 16 nodes)" in gl
    assert "ANLM" not in fme.fme(cubic, data, {"x1": 2.0}).summary()
    assert repr(res).startswith("FMEResult(step='x1 + 2, x2 - 0.5', n=10, excluded=0, ame=")


def test_summary_counts_exclusions(data):
    d = data.assign(x1=data["x1"].where(data["x1"] != 3.0))
    res = fme.fme(cubic, d, {"x1": 2.0}, extrapolation="envelope")
    # x1 = 8, 9 step beyond max 9 (x1 = 3 is missing); x1 = 7 lands exactly on max: inside
    assert set(res.extrapolated.index) == {"obs8", "obs9"}
    assert res.excluded.loc["obs3", "reason_type"] == "missing"
    text = res.summary()
    assert "rows evaluated: 7 of 10" in text
    assert "excluded (missing or infinite value in a stepped feature): 1" in text
    assert "excluded (extrapolation): 2" in text
    assert "extrapolation: envelope, policy exclude" in text


def test_envelope_excludes_x_plus_h_outside(data):
    rec = CallRecorder(cubic)
    res = fme.fme(rec, data, {"x1": -2.5}, extrapolation="envelope")
    assert list(res.extrapolated.index) == ["obs0", "obs1", "obs2"]
    ex = res.extrapolated
    assert (ex["point"] == "x+h").all()
    assert ex["reason"].str.contains("x1 < min 0").all()
    assert res.results.index.equals(data.index[3:])
    assert rec.lengths == [7, 7]  # excluded rows are never predicted
    np.testing.assert_array_equal(
        res.results["fme"].to_numpy(), cubic(data.iloc[3:].assign(x1=data["x1"].iloc[3:] - 2.5)) - cubic(data.iloc[3:])
    )


def test_envelope_with_reference_data(data):
    ref = pd.DataFrame({"x1": [2.0, 7.5], "x2": [-1.0, 1.0]})
    res = fme.fme(cubic, data, {"x1": 1.0}, extrapolation="envelope", reference_data=ref)
    points = res.extrapolated["point"].to_dict()
    # x1 in [2, 7.5] for both x and x + 1
    assert points == {"obs0": "x and x+h", "obs1": "x", "obs7": "x+h", "obs8": "x and x+h", "obs9": "x and x+h"}
    assert list(res.results.index) == ["obs2", "obs3", "obs4", "obs5", "obs6"]
    assert "x1 > max 7.5" in res.extrapolated.loc["obs7", "reason"]
    assert "x1 < min 2" in res.extrapolated.loc["obs0", "reason"]
    # a multivariate step: the other feature leaves the envelope too
    res2 = fme.fme(cubic, data, {"x1": 1.0, "x2": 0.5}, extrapolation="envelope")
    assert set(res2.extrapolated.index) == {f"obs{i}" for i in range(0, 10, 2)} | {"obs9"}


def test_all_rows_extrapolated(data):
    before = data.copy(deep=True)
    with pytest.raises(ExtrapolationError) as info:
        fme.fme(cubic, data, {"x1": 100.0}, extrapolation="envelope")
    msg = str(info.value)
    assert "all 10 rows are extrapolation points" in msg
    assert "x1 + 100" in msg
    assert "x1 in [0, 9]" in msg
    assert "use a smaller step" in msg
    assert isinstance(info.value, ValueError) and isinstance(info.value, FMEError)
    pd.testing.assert_frame_equal(data, before)


def test_keep_policy_flags(data):
    res = fme.fme(cubic, data, {"x1": 3.0}, extrapolation="envelope", on_extrapolation="keep")
    assert res.n == 10 and res.n_excluded == 0
    np.testing.assert_array_equal(res.results["extrapolation"].to_numpy(), data["x1"].to_numpy() + 3 > 9)


def test_extrapolation_argument_errors(data):
    with pytest.raises(ParameterError, match="without a detector"):
        fme.fme(cubic, data, {"x1": 1.0}, on_extrapolation="exclude")
    with pytest.raises(ParameterError, match="on_extrapolation must be one of"):
        fme.fme(cubic, data, {"x1": 1.0}, extrapolation="envelope", on_extrapolation="drop")
    with pytest.raises(ExtrapolationError, match="unknown extrapolation detector 'no_such_detector'"):
        fme.fme(cubic, data, {"x1": 1.0}, extrapolation="no_such_detector")
    with pytest.raises(ExtrapolationError, match="neither a detector name"):
        fme.fme(cubic, data, {"x1": 1.0}, extrapolation=42)


def test_reference_data_must_have_model_features(gbr, Xnum):
    with pytest.raises(ExtrapolationError, match=r"reference_data lacks the model feature\(s\) \['x3'\]"):
        fme.fme(gbr, Xnum, {"x1": 0.5}, extrapolation="envelope", reference_data=Xnum[["x1", "x2"]])


def test_envelope_on_sklearn_model(gbr, df):
    """Only the model's features are checked: non-feature columns in data do not matter."""
    X = df[["x1", "x2", "x3", "y"]]
    res = fme.fme(gbr, X, {"x1": 1.0}, extrapolation="envelope")
    assert set(res.extrapolated.index) == set(X.index[X["x1"] + 1.0 > X["x1"].max()])


def test_default_no_extrapolation_check(data):
    res = fme.fme(cubic, data, {"x1": 100.0})
    assert res.n == 10
    assert "extrapolation: not checked" in res.summary()


# ------------------------------------------------------------------ users' models and detectors
class _RescalingModel:
    """predict() rescales a column of its input frame in place (a common preprocessing slip)."""

    def predict(self, d):
        d["x1"] = d["x1"] / 10.0
        return 100.0 * d["x1"].to_numpy() ** 2 + d["x2"].to_numpy()


def _rescaled_truth(d):
    return 100.0 * (d["x1"].to_numpy() / 10.0) ** 2 + d["x2"].to_numpy()


@pytest.mark.parametrize("batch_size", [None, 3])
def test_predict_modifying_its_input_gives_correct_fme_and_nlm(data, batch_size):
    before = data.copy()
    got = fme.fme(_RescalingModel(), data, {"x1": 2.0}, nlm=True, batch_size=batch_size)
    want = fme.fme(_rescaled_truth, data, {"x1": 2.0}, nlm=True)
    np.testing.assert_allclose(got.results["fme"], want.results["fme"], rtol=1e-12)
    np.testing.assert_allclose(got.results["nlm"], want.results["nlm"], rtol=1e-12)
    # analytic: 100 ((x + 2)^2 - x^2) / 100 = 4 x + 4
    np.testing.assert_allclose(got.results["fme"], 4.0 * data["x1"] + 4.0, rtol=1e-12)
    pd.testing.assert_frame_equal(data, before)


def test_max_linear_step_with_input_modifying_model(data):
    got = fme.max_linear_step(_RescalingModel(), data.iloc[1:4], "x1", {"x1": 1.0})
    want = fme.max_linear_step(_rescaled_truth, data.iloc[1:4], "x1", {"x1": 1.0})
    np.testing.assert_allclose(got["scale"], want["scale"], rtol=1e-12)
    assert np.isfinite(got["scale"]).all()


class _ScoreDetector:
    """A custom detector whose flag() returns scores in [0, 1) instead of booleans."""

    def fit(self, reference):
        return self

    def flag(self, points):
        return np.linspace(0.0, 0.9, len(points))


def test_detector_returning_scores_is_refused(data):
    with pytest.raises(ExtrapolationError, match=r"flag\(\) returned float64 values.*must return booleans"):
        fme.fme(cubic, data, {"x1": 1.0}, extrapolation=_ScoreDetector())


def test_detector_returning_0_1_integers_works(data):
    class Ints(_ScoreDetector):
        def flag(self, points):
            return (points["x1"].to_numpy() > 7).astype(np.int64)

    res = fme.fme(cubic, data, {"x1": 1.0}, extrapolation=Ints())
    assert list(res.extrapolated.index) == ["obs7", "obs8", "obs9"]  # x + h > 7 for x1 >= 7


def test_predict_raising_in_a_later_batch_names_model_stage_rows(data):
    def model(d):
        if (d["x1"] > 8).any():
            raise RuntimeError("boom in the model")
        return d["x1"].to_numpy()

    with pytest.raises(
        fme.PredictionError,
        match=r"raised RuntimeError at f\(x \+ h\) for the step x1 \+ 1 "
        r"\(rows 6-8 of 10\): boom in the model",
    ) as info:
        fme.fme(model, data, {"x1": 1.0}, batch_size=3)
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(fme.PredictionError, match=r"raised RuntimeError at f\(x\) \(rows 9-9 of 10\)"):
        fme.fme(model, data, {"x1": -1.0}, batch_size=3)
    with pytest.raises(fme.PredictionError, match=r"at the NLM nodes x \+ t h for the step x1 \+ 1"):
        fme.fme(lambda d: model(d) if len(d) > 10 else d["x1"].to_numpy(), data, {"x1": 1.0}, nlm=True)


def test_detector_fit_and_flag_raising_name_the_detector_and_stage(data):
    class Broken(_ScoreDetector):
        name = "broken"

        def fit(self, reference):
            raise KeyError("no such column")

    with pytest.raises(
        ExtrapolationError, match=r"detector broken.fit\(\) raised KeyError at fit\(reference_data\)"
    ) as info:
        fme.fme(cubic, data, {"x1": 1.0}, extrapolation=Broken())
    assert isinstance(info.value.__cause__, KeyError)

    class BadShrink(_ScoreDetector):
        def flag(self, points):
            if (points["x1"] % 1 != 0).any():
                raise ValueError("cannot flag fractions")
            return (points["x1"] > 9).to_numpy()

    with pytest.raises(ExtrapolationError, match=r"_?BadShrink.flag\(\) raised ValueError at the shrink search"):
        fme.fme(cubic, data, {"x1": 1.0}, extrapolation=BadShrink(), on_extrapolation="shrink")


def test_detector_class_instead_of_instance(data):
    with pytest.raises(
        ExtrapolationError,
        match=r"is a detector class; pass an instance, e.g. "
        r"extrapolation=ConvexHullDetector\(\)",
    ):
        fme.fme(cubic, data, {"x1": 1.0}, extrapolation=fme.ConvexHullDetector)
