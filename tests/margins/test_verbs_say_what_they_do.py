"""No silent surprises: what a verb explains is stated in its table (the explained class), a model without column
names is given its order, rows with missing inputs follow one rule, and per-row comparisons are public verbs."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import fme
from fme.exceptions import DataError, ParameterError


@pytest.fixture(scope="module")
def case_control():
    rng = np.random.default_rng(3)
    n = 300
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    logit = 0.3 + 1.2 * X["x1"] - 0.8 * X["x2"]
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-logit)), "control", "case")
    model = LogisticRegression().fit(X, y)
    return model, X


def _p(model, X, cls):
    return model.predict_proba(X)[:, list(model.classes_).index(cls)]


def test_binary_classifier_tables_name_the_explained_class(case_control):
    model, X = case_control
    # scikit-learn's default positive class: the second of classes_ ("control")
    assert list(model.classes_) == ["case", "control"]
    expected = float(np.mean(_p(model, X.assign(x1=X["x1"] + 1), "control") - _p(model, X, "control")))
    t = fme.ame(model, X, {"x1": 1})
    assert list(t["class"]) == ["control"]
    assert list(t.columns[:5]) == ["feature", "step", "level", "reference", "class"]
    assert t["ame"].iloc[0] == pytest.approx(expected, rel=1e-12)
    other = fme.ame(model, X, {"x1": 1}, target_class="case")
    assert list(other["class"]) == ["case"]
    assert other["ame"].iloc[0] == pytest.approx(-expected, rel=1e-10)
    tidy = fme.fme(model, X, {"x1": 1}).tidy()
    assert list(tidy["class"]) == ["control"]
    assert tidy["ame"].iloc[0] == pytest.approx(expected, rel=1e-12)
    for table in (
        fme.avg_comparisons(model, X, {"x1": 1}),
        fme.avg_predictions(model, X),
        fme.avg_slopes(model, X, "x1"),
        fme.predictions(model, X),
        fme.mem(model, X, {"x1": 1}),
        fme.mer(model, X, {"x1": 1}, at={"x2": [0.0, 1.0]}),
    ):
        assert table.columns[0] == "class" and set(table["class"]) == {"control"}
    assert fme.avg_comparisons(model, X, {"x1": 1})["estimate"].iloc[0] == pytest.approx(expected, rel=1e-12)
    tested = fme.hypotheses(fme.ame(model, X, {"x1": 1, "x2": 1}), "b1 - b2 = 0")
    assert list(tested["class"]) == ["control"]
    every = fme.ame(model, X, {"x1": 1}, target_class="all")
    assert list(every["class"]) == ["case", "control"]


def test_a_regressor_has_no_class_column(case_control):
    from sklearn.linear_model import LinearRegression

    _, X = case_control
    reg = LinearRegression().fit(X, X["x1"] * 2.0 + X["x2"])
    assert "class" not in fme.ame(reg, X, {"x1": 1}).columns
    assert "class" not in fme.fme(reg, X, {"x1": 1}).tidy().columns


@pytest.fixture(scope="module")
def array_model():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = 2.0 * X["a"] + 0.5 * X["b"] ** 2
    return LinearRegression().fit(X.to_numpy(), y), X


def test_a_model_fitted_on_an_array_is_refused_without_feature_names(array_model):
    model, X = array_model
    reordered = X[["b", "a"]]
    for call in (
        lambda: fme.ame(model, reordered, {"a": 1}),
        lambda: fme.fme(model, reordered, {"a": 1}),
        lambda: fme.avg_predictions(model, reordered),
        lambda: fme.avg_slopes(model, reordered, "a"),
        lambda: fme.avg_comparisons(model, reordered, {"a": 1}),
    ):
        with pytest.raises(DataError, match=r"LinearRegression.*n_features_in_ = 2.*feature_names=\[\.\.\.\]"):
            call()


def test_feature_names_give_a_model_fitted_on_an_array_its_order(array_model):
    model, X = array_model
    coef_a = float(model.coef_[0])
    reordered = X[["b", "a"]]
    t = fme.ame(model, reordered, {"a": 1}, feature_names=["a", "b"], inference="sample")
    assert t["ame"].iloc[0] == pytest.approx(coef_a, rel=1e-12)
    res = fme.fme(model, reordered, {"a": 1}, feature_names=["a", "b"], inference="sample")
    assert res.ame == pytest.approx(coef_a, rel=1e-12)
    slopes = fme.avg_slopes(model, reordered, "a", feature_names=["a", "b"], inference="sample")
    assert slopes["estimate"].iloc[0] == pytest.approx(coef_a, rel=1e-6)
    avg = fme.avg_predictions(model, reordered, feature_names=["a", "b"], inference="sample")
    assert avg["estimate"].iloc[0] == pytest.approx(float(model.predict(X.to_numpy()).mean()), rel=1e-12)
    comp = fme.avg_comparisons(model, reordered, {"a": 1}, feature_names=["a", "b"], inference="sample")
    assert comp["estimate"].iloc[0] == pytest.approx(coef_a, rel=1e-12)
    with pytest.raises(DataError, match="n_features_in_ = 2"):
        fme.ame(model, reordered, {"a": 1}, feature_names=["a"])


def test_feature_names_take_every_sequence_of_labels_the_array_route_takes(array_model):
    """The model route and the array route read feature_names alike: a list, tuple, pandas Index or 1-D array
    (an estimator's feature_names_in_) give the same answer; a string, repeated or missing labels are refused."""
    model, X = array_model
    reordered = X[["b", "a"]]
    want = fme.ame(model, reordered, {"a": 1}, feature_names=["a", "b"], inference="sample")["ame"].iloc[0]
    for names in (("a", "b"), pd.Index(["a", "b"]), np.array(["a", "b"]), pd.Series(["a", "b"])):
        got = fme.ame(model, reordered, {"a": 1}, feature_names=names, inference="sample")["ame"].iloc[0]
        assert got == want, type(names).__name__
    for bad in ("ab", ["a", "a"], [], np.array([["a", "b"]])):
        with pytest.raises(ParameterError, match=r"feature_names must be a list \(or 1-D array\) of distinct"):
            fme.ame(model, reordered, {"a": 1}, feature_names=bad)
    with pytest.raises(DataError, match=r"feature_names names 1 column but"):
        fme.ame(model, reordered, {"a": 1}, feature_names=["a"])


def test_a_model_fitted_on_an_array_receives_an_array_and_no_warning(array_model):
    """Named by feature_names=, the inputs reach the model as the array it was fitted on: scikit-learn has no
    frame's names to warn about."""
    import warnings

    model, X = array_model
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = fme.ame(model, X[["b", "a"]], {"a": 1}, feature_names=["a", "b"], inference="sample")
    assert t["ame"].iloc[0] == pytest.approx(float(model.coef_[0]), rel=1e-12)


def test_a_model_with_feature_names_in_is_unchanged(case_control):
    model, X = case_control
    base = fme.ame(model, X, {"x1": 1}, inference="sample")
    again = fme.ame(model, X[["x2", "x1"]], {"x1": 1}, inference="sample")
    assert again["ame"].iloc[0] == base["ame"].iloc[0]


def test_every_verb_leaves_out_rows_with_a_missing_formula_input():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"x": rng.normal(size=200), "w": rng.normal(size=200)})
    d["y"] = 1 + 2 * d["x"] + d["w"] + rng.normal(size=200)
    model = smf.ols("y ~ x + w", d).fit()
    holes = d.copy()
    holes.loc[:9, "w"] = np.nan
    complete = holes.dropna()
    beta = float(model.params["x"])
    assert fme.ame(model, holes, {"x": 1})[["ame", "n", "n_excluded"]].iloc[0].tolist() == pytest.approx(
        [beta, 190, 10], rel=1e-12
    )
    comp = fme.avg_comparisons(model, holes, {"x": 1})
    assert comp[["estimate", "n", "n_excluded"]].iloc[0].tolist() == pytest.approx([beta, 190, 10], rel=1e-12)
    pred = fme.predictions(model, holes)
    assert list(pred.index) == list(complete.index)
    np.testing.assert_allclose(pred["estimate"], model.predict(complete), rtol=1e-12)
    avg = fme.avg_predictions(model, holes)
    assert avg[["estimate", "n", "n_excluded"]].iloc[0].tolist() == pytest.approx(
        [float(model.predict(complete).mean()), 190, 10], rel=1e-12
    )
    slopes = fme.avg_slopes(model, holes, "x")
    assert slopes[["estimate", "n", "n_excluded"]].iloc[0].tolist() == pytest.approx([beta, 190, 10], rel=1e-9)
    by = fme.avg_predictions(model, holes.assign(g=np.arange(200) % 2), by="g")
    assert by["n_excluded"].tolist() == [5, 5] and by["n"].tolist() == [95, 95]


@pytest.fixture(scope="module")
def cat_data():
    rng = np.random.default_rng(11)
    n = 300
    return pd.DataFrame({"x": rng.normal(size=n), "cat": pd.Categorical(rng.choice(["a", "b", "c"], n))})


LEVEL = {"a": 0.0, "b": 0.7, "c": -0.4}


def _linear(d):
    return 2.0 * d["x"].to_numpy() + d["cat"].astype(str).map(LEVEL).to_numpy(float)


def test_a_categorical_step_switches_to_the_level_under_both_modes(cat_data):
    from fme.exceptions import StepError

    obs = fme.ame(_linear, cat_data, {"cat": "b"}, inference="sample")
    classic = fme.ame(_linear, cat_data, {"cat": "b"}, categorical="classic", inference="sample")
    assert list(classic[["level", "reference"]].iloc[0]) == ["b", "a"] and len(classic) == 1
    assert classic["ame"].item() == pytest.approx(LEVEL["b"] - LEVEL["a"], abs=1e-12)
    assert obs["ame"].item() > 0 and classic["ame"].item() > 0  # both "switch to b"
    ref_b = fme.ame(_linear, cat_data, {"cat": {"reference": "b"}}, categorical="classic", inference="sample")
    assert list(ref_b["level"]) == ["a", "c"] and (ref_b["reference"] == "b").all()
    np.testing.assert_allclose(ref_b["ame"], [LEVEL["a"] - LEVEL["b"], LEVEL["c"] - LEVEL["b"]], atol=1e-12)
    one = fme.ame(
        _linear, cat_data, {"cat": {"reference": "c", "level": "b"}}, categorical="classic", inference="sample"
    )
    assert list(one[["level", "reference"]].iloc[0]) == ["b", "c"]
    assert one["ame"].item() == pytest.approx(LEVEL["b"] - LEVEL["c"], abs=1e-12)
    with pytest.raises(StepError, match="with itself"):
        fme.ame(_linear, cat_data, {"cat": "a"}, categorical="classic")
    with pytest.raises(StepError, match="categorical='classic'"):
        fme.ame(_linear, cat_data, {"cat": {"reference": "b"}})
    with pytest.raises(StepError, match="unknown key"):
        fme.ame(_linear, cat_data, {"cat": {"ref": "b"}}, categorical="classic")


@pytest.fixture(scope="module")
def logit_model():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(2)
    d = pd.DataFrame({"x": rng.normal(size=400), "w": rng.normal(size=400)})
    d["y"] = (rng.uniform(size=400) < 1 / (1 + np.exp(-(0.5 + 0.9 * d["x"] - 0.6 * d["w"])))).astype(int)
    return smf.logit("y ~ x + w", d).fit(disp=0), d


def test_per_row_comparisons_are_the_rows_that_avg_comparisons_averages(logit_model):
    model, d = logit_model
    rows = fme.comparisons(model, d, {"x": 1})
    assert len(rows) == len(d) and list(rows.index) == list(d.index)
    f0, f1 = model.predict(d).to_numpy(), model.predict(d.assign(x=d["x"] + 1)).to_numpy()
    np.testing.assert_allclose(rows["estimate"], f1 - f0, rtol=1e-10)
    assert rows["step"].iloc[0] == "x + 1" and (rows["inference"] == "delta").all()
    # the per-row delta SE by hand: the gradient of f1 - f0 in the coefficients (logistic: p (1 - p) x)
    X0 = np.column_stack([np.ones(len(d)), d["x"], d["w"]])
    X1 = X0.copy()
    X1[:, 1] += 1
    grad = (f1 * (1 - f1))[:, None] * X1 - (f0 * (1 - f0))[:, None] * X0
    se = np.sqrt(np.einsum("ij,jk,ik->i", grad, model.cov_params().to_numpy(), grad))
    np.testing.assert_allclose(rows["std_error"], se, rtol=1e-5)
    avg = fme.avg_comparisons(model, d, {"x": 1})
    assert avg["estimate"].iloc[0] == pytest.approx(rows["estimate"].mean(), rel=1e-12)
    ratio = fme.comparisons(model, d, {"x": 1}, comparison="ratio")
    np.testing.assert_allclose(ratio["estimate"], f1 / f0, rtol=1e-10)
    with pytest.raises(fme.exceptions.ParameterError, match="per-row"):
        fme.comparisons(model, d, {"x": 1}, comparison="ratioavg")


def test_per_row_slopes_are_the_rows_that_avg_slopes_averages(logit_model):
    model, d = logit_model
    rows = fme.slopes(model, d, ["x", "w"])
    assert list(rows["term"].unique()) == ["x", "w"] and len(rows) == 2 * len(d)
    p = model.predict(d).to_numpy()
    b = model.params
    np.testing.assert_allclose(rows.loc[rows["term"] == "x", "estimate"], p * (1 - p) * b["x"], rtol=1e-6)
    np.testing.assert_allclose(rows.loc[rows["term"] == "w", "estimate"], p * (1 - p) * b["w"], rtol=1e-6)
    avg = fme.avg_slopes(model, d, ["x", "w"])
    np.testing.assert_allclose(avg["estimate"], rows.groupby("term", sort=False)["estimate"].mean(), rtol=1e-12)
    assert rows["std_error"].notna().all()


def test_weights_on_every_comparison_scale(logit_model):
    model, d = logit_model
    w = np.random.default_rng(9).uniform(0.2, 3.0, len(d))  # non-integer weights
    f0, f1 = model.predict(d).to_numpy(), model.predict(d.assign(x=d["x"] + 1)).to_numpy()
    ratio = fme.avg_comparisons(model, d, {"x": 1}, comparison="ratio", wts=w)
    assert ratio["estimate"].item() == pytest.approx(np.average(f1, weights=w) / np.average(f0, weights=w), rel=1e-12)
    rows = fme.avg_comparisons(model, d, {"x": 1}, comparison="ratio_rows", wts=w)
    assert rows["estimate"].item() == pytest.approx(np.average(f1 / f0, weights=w), rel=1e-12)
    column = fme.avg_comparisons(model, d.assign(k=w), {"x": 1}, comparison="lnor", wts="k")
    p1, p0 = np.average(f1, weights=w), np.average(f0, weights=w)
    assert column["estimate"].item() == pytest.approx(np.log(p1 / (1 - p1)) - np.log(p0 / (1 - p0)), rel=1e-12)
    # delta SE by hand: the gradient of the ratio of weighted means through the logit's Jacobians
    X0 = np.column_stack([np.ones(len(d)), d["x"], d["w"]])
    X1 = X0.copy()
    X1[:, 1] += 1
    J1 = np.average((f1 * (1 - f1))[:, None] * X1, axis=0, weights=w)
    J0 = np.average((f0 * (1 - f0))[:, None] * X0, axis=0, weights=w)
    g = J1 / p0 - p1 / p0**2 * J0
    assert ratio["std_error"].item() == pytest.approx(np.sqrt(g @ model.cov_params().to_numpy() @ g), rel=1e-5)
    via_ame = fme.ame(model, d, {"x": 1}, comparison="ratio", wts=w)
    assert via_ame["estimate"].item() == pytest.approx(ratio["estimate"].item(), rel=1e-12)


def test_mem_and_mer_tables_show_the_step_and_the_point(cat_data):
    d = cat_data.assign(z=np.linspace(-1.0, 2.0, len(cat_data)))

    def f(frame):
        return (frame["x"] ** 2 * frame["z"]).to_numpy(float)

    mem = fme.mem(f, d[["x", "z"]], {"x": 0.5}, inference="sample")
    mx, mz = d["x"].mean(), d["z"].mean()
    assert list(mem.columns[:3]) == ["step", "x", "z"] and mem["step"].item() == "x + 0.5"
    assert mem[["x", "z"]].iloc[0].tolist() == pytest.approx([mx, mz], rel=1e-12)
    assert mem["fme"].item() == pytest.approx(((mx + 0.5) ** 2 - mx**2) * mz, rel=1e-12)
    mer = fme.mer(f, d[["x", "z"]], {"x": 0.5}, at={"z": [0.0, 1.0]}, inference="sample")
    assert list(mer.columns[:3]) == ["step", "z", "x"]
    assert mer["z"].tolist() == [0.0, 1.0] and mer["x"].tolist() == pytest.approx([mx, mx], rel=1e-12)
    np.testing.assert_allclose(mer["fme"], [0.0, (mx + 0.5) ** 2 - mx**2], rtol=1e-12, atol=1e-15)


def test_weights_and_classic_steps_on_dask_data_equal_pandas(logit_model, cat_data):
    import dask
    import dask.dataframe as dd

    model, d = logit_model
    k = np.random.default_rng(4).uniform(0.2, 3.0, len(d))
    frame = d.assign(k=k)
    with dask.config.set(scheduler="synchronous"):
        a = fme.avg_comparisons(model, frame, {"x": 1}, comparison="ratio", wts="k")
        b = fme.avg_comparisons(model, dd.from_pandas(frame, npartitions=3), {"x": 1}, comparison="ratio", wts="k")
        np.testing.assert_allclose(b[["estimate", "std_error"]], a[["estimate", "std_error"]], rtol=1e-10)
        pa = fme.ame(_linear, cat_data, {"cat": {"reference": "b"}}, categorical="classic", inference="sample")
        pb = fme.ame(
            _linear,
            dd.from_pandas(cat_data, npartitions=3),
            {"cat": {"reference": "b"}},
            categorical="classic",
            inference="sample",
        )
        assert list(pb["level"]) == list(pa["level"]) == ["a", "c"] and (pb["reference"] == "b").all()
        np.testing.assert_allclose(pb["ame"], pa["ame"], atol=1e-12)
        one = fme.ame(
            _linear, dd.from_pandas(cat_data, npartitions=3), {"cat": "c"}, categorical="classic", inference="sample"
        )
        assert list(one[["level", "reference"]].iloc[0]) == ["c", "a"]
        assert one["ame"].item() == pytest.approx(LEVEL["c"] - LEVEL["a"], abs=1e-12)


def test_came_leaves_name_the_explained_class(case_control):
    model, X = case_control
    effects = fme.fme(model, X, {"x1": 1}, inference="sample")
    part = fme.came(effects, features=["x2"], n_partitions=2, honest=False)
    assert part.leaves.columns[0] == "class" and set(part.leaves["class"]) == {"control"}
    np.testing.assert_allclose(
        part.leaves["came"],
        [effects.results["fme"][part.leaf_of_row == node].mean() for node in part.leaves["node"]],
        rtol=1e-12,
    )
