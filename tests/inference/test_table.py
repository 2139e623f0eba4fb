"""fme.EstimatesTable: result tables that carry the joint uncertainty of their rows.

Reference: for an OLS model the AME of a unit step of x_k is the coefficient b_k and the delta method's joint
covariance of those AMEs is statsmodels' ``cov_params`` block, so the estimates a table keeps after any
selection of its rows are known in closed form; hypotheses on a selection must equal hypotheses on the
untouched table with the matching contrast.
"""

from __future__ import annotations

import copy
import pickle
import re

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import fme
from fme.inference import Estimates, EstimatesTable
from fme.inference.wald import covariance
from fme.margins.interactions import InteractionTable

FEATURES = ["x1", "x2", "x3"]
FIGURES = ["estimate", "std_error", "statistic", "p_value", "conf_low", "conf_high"]


@pytest.fixture(scope="module")
def ols():
    rng = np.random.default_rng(5)
    n = 300
    d = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "x3": rng.normal(size=n),
            "g": rng.choice(["a", "b", "c", "d"], size=n),
        }
    )
    d["y"] = 1.0 + 0.8 * d["x1"] + 0.5 * d["x2"] - 0.3 * d["x3"] + rng.normal(size=n)
    m = smf.ols("y ~ x1 + x2 + x3", data=d).fit()
    b = m.params[FEATURES].to_numpy()
    V = m.cov_params().loc[FEATURES, FEATURES].to_numpy()
    return m, d, b, V


@pytest.fixture(scope="module")
def table(ols):
    m, d, _, _ = ols
    return fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1})


def _sorted_desc(t):
    return t.sort_values("ame", ascending=False)


# (name, operation, positions in the untouched table of the rows it leaves, in order; None: the ame order)
OPERATIONS = [
    ("copy", lambda t: t.copy(), [0, 1, 2]),
    ("deepcopy", copy.deepcopy, [0, 1, 2]),
    ("columns", lambda t: t[["feature", "ame"]], [0, 1, 2]),
    ("iloc", lambda t: t.iloc[[2, 0]], [2, 0]),
    ("mask", lambda t: t.loc[t["feature"] != "x2"], [0, 2]),
    ("reset_index", lambda t: t.iloc[[2, 0]].reset_index(drop=True), [2, 0]),
    ("reset_index_kept", lambda t: t.iloc[[2, 0]].reset_index(), [2, 0]),
    ("sort_values", _sorted_desc, None),
    ("sort_values_ignore_index", lambda t: t.sort_values("ame", ascending=False, ignore_index=True), None),
    ("set_index", lambda t: t.set_index("feature").loc[["x3", "x1"]], [2, 0]),
    ("pickle", lambda t: pickle.loads(pickle.dumps(t.iloc[[2, 0]])), [2, 0]),
    ("concat", lambda t: pd.concat([t.iloc[[2]], t.iloc[[0]]]), [2, 0]),
    ("concat_ignore_index", lambda t: pd.concat([t.iloc[[2]], t.iloc[[0, 1]]], ignore_index=True), [2, 0, 1]),
    ("concat_columns", lambda t: pd.concat([t[["feature"]], t[["ame", "std_error"]]], axis=1), [0, 1, 2]),
]


def _positions(t, positions):
    return list(np.argsort(-t["ame"].to_numpy())) if positions is None else positions


@pytest.mark.parametrize("name, op, positions", OPERATIONS, ids=[o[0] for o in OPERATIONS])
def test_the_joint_covariance_follows_the_rows(ols, table, name, op, positions):
    _, _, b, V = ols
    pos = _positions(table, positions)
    out = op(table)
    assert type(out) is EstimatesTable
    assert out.conf_level == 0.95
    joint = out.joint_estimates()
    np.testing.assert_allclose(joint.estimates.estimate, b[pos], rtol=1e-10)
    np.testing.assert_allclose(covariance(joint.estimates), V[np.ix_(pos, pos)], rtol=1e-8)
    assert joint.labels == [f"b{k + 1}" for k in range(len(pos))]
    # the caller's table is untouched
    assert list(table["feature"]) == FEATURES and table.estimates_index == [0, 1, 2]


@pytest.mark.parametrize("name, op, positions", OPERATIONS, ids=[o[0] for o in OPERATIONS])
def test_hypotheses_after_each_operation_equal_the_untouched_tables(ols, table, name, op, positions):
    _, _, b, V = ols
    pos = _positions(table, positions)
    out = op(table)
    rows = fme.hypotheses(out)
    full = fme.hypotheses(table)
    np.testing.assert_allclose(rows[FIGURES].to_numpy(float), full[FIGURES].to_numpy(float)[pos], rtol=1e-12)
    # a contrast of the selection's first two rows is the same contrast of the untouched table's rows
    L_out = np.zeros(len(pos))
    L_out[:2] = [1.0, -1.0]
    L = np.zeros(3)
    L[pos[0]], L[pos[1]] = 1.0, -1.0
    np.testing.assert_allclose(
        fme.hypotheses(out, L_out)[FIGURES].to_numpy(float),
        fme.hypotheses(table, L)[FIGURES].to_numpy(float),
        rtol=1e-12,
    )
    # the same as an equation, and by hand: b_i - b_j with Var = V_ii + V_jj - 2 V_ij
    diff = fme.hypotheses(out, "b1 - b2 = 0")
    i, j = pos[0], pos[1]
    assert diff["estimate"].iloc[0] == pytest.approx(b[i] - b[j], rel=1e-9)
    assert diff["std_error"].iloc[0] == pytest.approx(np.sqrt(V[i, i] + V[j, j] - 2 * V[i, j]), rel=1e-8)


def test_printed_columns_are_those_of_a_plain_frame(table):
    plain = pd.DataFrame(table)
    assert type(plain) is pd.DataFrame
    # printed as the plain frame with the estimate and its interval first; the columns keep their order
    shown = [
        "feature",
        "step",
        "level",
        "reference",
        "ame",
        "conf_low",
        "conf_high",
        "std_error",
        "p_value",
        "statistic",
        "inference",
        "covers",
        "sd",
        "q25",
        "q75",
        "n",
        "n_excluded",
    ]
    assert table.to_string() == plain[shown].to_string()
    with pd.option_context("display.width", None, "display.max_columns", None):
        assert str(table) == str(plain[shown]) and repr(table) == repr(plain[shown])
    assert list(table.columns) == [
        "feature",
        "step",
        "level",
        "reference",
        "ame",
        "std_error",
        "statistic",
        "p_value",
        "conf_low",
        "conf_high",
        "inference",
        "covers",
        "sd",
        "q25",
        "q75",
        "n",
        "n_excluded",
    ]
    assert table.attrs == {}


def test_pickles_name_the_defining_modules_and_load_back_equal(table):
    """Classes pickle under the modules that define them (no path rewrites: fme keeps no older layout)."""
    blob = pickle.dumps(table)
    assert b"fme.inference.table" in blob and b"fme.inference.estimates" in blob
    again = pickle.loads(blob)
    assert again.equals(table) and again.estimates_index == table.estimates_index
    np.testing.assert_array_equal(again.estimates.grad, table.estimates.grad)


def test_fixed_model_rows_keep_their_t_degrees_of_freedom(ols):
    """Sample (t-based) estimates of by-groups: a row selection keeps each row's SE and df (a contrast with
    unit rows would have turned them into normal quantiles)."""
    _, d, _, _ = ols
    model = lambda x: x["x1"].to_numpy() ** 2 + x["x2"].to_numpy()  # noqa: E731
    t = fme.ame(model, d, {"x1": 0.5}, by="g", inference="sample")
    assert t.estimates.method == "sample" and np.isfinite(t.estimates.df).all()
    sel = t.iloc[[3, 1]]
    full = fme.hypotheses(t)
    np.testing.assert_allclose(
        fme.hypotheses(sel)[FIGURES].to_numpy(float), full[FIGURES].to_numpy(float)[[3, 1]], rtol=1e-12
    )
    np.testing.assert_array_equal(sel.joint_estimates().estimates.df, t.estimates.df[[3, 1]])


def test_bootstrap_rows_keep_their_draws_and_record():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(2)
    X = pd.DataFrame({"x1": rng.normal(size=150), "x2": rng.normal(size=150), "x3": rng.normal(size=150)})
    y = 2 * X["x1"] + X["x2"] - X["x3"] + rng.normal(size=150)
    lr = LinearRegression().fit(X, y)
    spec = {"X": X, "y": y, "n_resamples": 40, "random_state": 0, "ci": "normal"}
    t = fme.ame(lr, X, {"x1": 1, "x2": 1, "x3": 1}, bootstrap=spec)
    assert t.bootstrap == {"n_resamples": 40, "n_failed": 0, "n_nonconverged": 0, "errors": []}
    sel = t.sort_values("ame").reset_index(drop=True)
    order = np.argsort(t["ame"].to_numpy())
    assert sel.bootstrap == t.bootstrap
    np.testing.assert_array_equal(sel.joint_estimates().estimates.draws, t.estimates.draws[order])
    h = fme.hypotheses(sel, "b3 / b1 = 0")
    ratio = t.estimates.draws[order[2]] / t.estimates.draws[order[0]]
    assert h["std_error"].iloc[0] == pytest.approx(ratio.std(ddof=1), rel=1e-12)
    assert h.bootstrap == t.bootstrap


def test_every_producer_returns_the_table(ols):
    m, d, b, V = ols
    preds = fme.avg_predictions(m, d, by="g")
    slopes = fme.avg_slopes(m, d, ["x1", "x2"])
    comps = fme.avg_comparisons(m, d, {"x1": 1.0}, comparison="ratio")
    by_step = fme.ame(m, d, {"x1": 1.0, "x2": 1.0}, comparison="ratio")  # one call per step, stacked
    inter = fme.interaction(m, d, {"x1": 1.0}, {"x2": 1.0})
    for out in (preds, slopes, comps, by_step, inter, fme.hypotheses(preds, "pairwise")):
        # interaction's table is the subclass that also carries the per-row interactions
        assert type(out) is (InteractionTable if out is inter else EstimatesTable) and out.estimates is not None
        assert out.estimates.estimate.size == len(out)
    # by-group predictions: a selection tests its own rows
    full = fme.hypotheses(preds)
    np.testing.assert_allclose(
        fme.hypotheses(preds.iloc[[3, 0]])[FIGURES].to_numpy(float), full[FIGURES].to_numpy(float)[[3, 0]], rtol=1e-12
    )
    # the slopes of OLS are its coefficients, and one row keeps its own variance
    one = slopes[slopes["term"] == "x2"]
    assert fme.hypotheses(one)["std_error"].iloc[0] == pytest.approx(np.sqrt(V[1, 1]), rel=1e-6)
    # the ratios of two steps (separate calls, stacked by the producer) keep their joint covariance
    np.testing.assert_allclose(
        fme.hypotheses(by_step.iloc[[1, 0]], np.array([1.0, -1.0]))[FIGURES].to_numpy(float),
        fme.hypotheses(by_step, np.array([-1.0, 1.0]))[FIGURES].to_numpy(float),
        rtol=1e-12,
    )
    np.testing.assert_allclose(by_step.joint_estimates().estimates.estimate[0], comps["estimate"].iloc[0], rtol=1e-12)
    # an additive model's interaction is 0 up to rounding: its row still finds its estimate; its standard error
    # is rounding too (0), so its equivalence test is no test (before the rounding check: statistics of +-inf and
    # p_value_equiv 0.0)
    assert abs(inter["estimate"].iloc[0]) < 1e-12
    eq = fme.hypotheses(inter, equivalence=[-0.1, 0.1])
    assert eq[["statistic", "p_value_equiv", "statistic_noninf", "statistic_nonsup"]].isna().all(axis=None)
    assert eq["note"].iloc[0].startswith("standard error at rounding level")


def test_results_without_a_link_are_refused_clearly(ols, table):
    m, d, _, _ = ols
    assert type(pd.concat([pd.DataFrame(table), table])) is pd.DataFrame  # a plain frame first: a plain result
    other = fme.ame(m, d, {"x1": 1})  # another call: other estimates
    stacked = pd.concat([table, other])
    assert type(stacked) is EstimatesTable and stacked.estimates is None
    with pytest.raises(fme.ParameterError, match="keeps no joint covariance"):
        fme.hypotheses(stacked)
    mixed = EstimatesTable.from_frame(pd.DataFrame(table), None)
    with pytest.raises(fme.ParameterError, match="keeps no joint covariance"):
        mixed.joint_estimates()
    unknown = table.rename(index={0: 10})  # a label the estimates do not know
    with pytest.raises(fme.ParameterError, match="rows of this table are not those"):
        fme.hypotheses(unknown)
    with pytest.raises(fme.ParameterError, match="one estimate per row"):
        EstimatesTable.from_frame(pd.DataFrame(table), Estimates("sample", np.zeros(2), se=np.ones(2), df=np.ones(2)))
    with pytest.raises(fme.ParameterError, match="takes a DataFrame"):
        EstimatesTable.from_frame(table["ame"], table.estimates)


def test_from_frame_copies_and_leaves_the_frame_alone(table):
    plain = pd.DataFrame(table).copy()
    plain.attrs["note"] = "kept"
    out = EstimatesTable.from_frame(plain, table.estimates, conf_level=0.9, scale="rate")
    assert out.attrs == {"note": "kept"} and out.conf_level == 0.9 and out.scale == "rate"
    out.loc[0, "ame"] = -1.0
    assert plain.loc[0, "ame"] == table.loc[0, "ame"] and type(plain) is pd.DataFrame
    assert fme.hypotheses(out.iloc[[1, 2]], conf_level=0.5)["conf_low"].notna().all()


def test_effects_and_partitions_expose_joint_estimates_publicly():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.uniform(0, 1, 400), "z": rng.uniform(0, 1, 400)})
    eff = fme.fme(lambda d: d["x"].to_numpy() * (1 + 3 * (d["z"].to_numpy() > 0.5)), X, {"x": 1.0}, inference="sample")
    est, labels, undefined, level = eff.joint_estimates()
    assert est.estimate[0] == pytest.approx(eff.ame, rel=1e-12) and labels == ["b1"] and not undefined.any()
    part = fme.came(eff, features=["z"], maxdepth=1)
    assert part.joint_estimates()[1] == ["b1", "b2"]
    assert not hasattr(eff, "_joint_estimates") and not hasattr(part, "_joint_estimates")


def test_pickled_results_load_back_and_test_alike(ols):
    """A result pickled and loaded keeps its joint uncertainty: hypotheses give the same numbers."""
    model, d, _, _ = ols
    eff = fme.fme(model, d, {"x1": 1.0})
    again = pickle.loads(pickle.dumps(eff))
    pd.testing.assert_frame_equal(fme.hypotheses(again), fme.hypotheses(eff))
    assert fme.hypotheses(again)["std_error"].iloc[0] == pytest.approx(eff.std_error, rel=1e-12)


# ----------------------------------------------------------------- printed at pandas' default width
def _printed_values(frame: pd.DataFrame, column: str) -> list[str]:
    """The cells of ``column`` as pandas prints them (each column is formatted on its own)."""
    return [v.strip() for v in pd.DataFrame(frame)[[column]].to_string(index=False).splitlines()[1:]]


@pytest.mark.parametrize("max_columns", [0, 20])  # 0: fit the terminal (pandas' default there); 20: elsewhere
def test_ame_by_group_prints_estimate_and_interval_within_80_columns(ols, monkeypatch, max_columns):
    m, d, _, _ = ols
    t = fme.ame(m, d, {"x1": 1}, by="g")
    monkeypatch.setenv("COLUMNS", "80")  # the terminal's width, as pandas reads it
    with pd.option_context("display.width", 80, "display.max_columns", max_columns):
        text = repr(t)
        assert str(t) == text
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "..." not in text
    # the estimate, its interval, standard error and p-value, in this order (wrapped or not), before the rest
    at = [re.search(rf"\b{name}\b", text).start() for name in ("ame", "conf_low", "conf_high", "std_error", "p_value")]
    assert at == sorted(at) and at[0] < lines[0].index("ame") + 1 and "conf_high" in lines[0]
    hidden = re.search(r"\bstatistic\b", text)
    assert hidden is None or hidden.start() > at[-1]
    for column in ("g", "ame", "conf_low", "conf_high", "std_error"):
        for value in _printed_values(t, column):
            assert value in text, (column, value)
    assert list(t.columns)[:6] == ["feature", "step", "level", "reference", "g", "ame"]  # the frame is untouched
    if max_columns == 0:
        assert "not shown: level (empty), reference (empty), statistic" in " ".join(lines[-2:])


def test_every_table_prints_estimate_and_interval_first(ols, monkeypatch):
    m, d, _, _ = ols
    t = fme.ame(m, d, {"x1": 1, "x2": 1}, by="g")
    tables = {
        "hypotheses": fme.hypotheses(t, "b1 = b2"),
        "avg_slopes": fme.avg_slopes(m, d, variables="x1", by="g"),
        "avg_predictions": fme.avg_predictions(m, d, by="g"),
    }
    monkeypatch.setenv("COLUMNS", "80")
    for name, table in tables.items():
        with pd.option_context("display.width", 80, "display.max_columns", 0):
            text = repr(table)
        header = text.splitlines()[0].split()
        assert header[header.index("estimate") : header.index("estimate") + 3] == [
            "estimate",
            "conf_low",
            "conf_high",
        ], name
        assert "..." not in text and max(len(line) for line in text.splitlines()) <= 80, name
        assert (
            list(table.columns).index("estimate")
            < list(table.columns).index("std_error")
            < list(table.columns).index("conf_low")
        ), name  # the frame's own order is kept
