"""Edges of the front doors: name clashes, what an interval covers, missing by values, other frames.

Data shipped with scikit-learn (diabetes) and statsmodels (spector); no downloads.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression

import fme
from fme.exceptions import NameClashError
from fme.margins.marginal import AME_COLUMNS as _AME_COLUMNS
from fme.margins.marginal import MER_COLUMNS as _MER_COLUMNS


@pytest.fixture(scope="module")
def diabetes():
    d = load_diabetes(as_frame=True)
    return d.data, d.target


@pytest.fixture(scope="module")
def linreg(diabetes):
    X, y = diabetes
    return LinearRegression().fit(X, y)


# ----------------------------------------------------------------- name clashes
@pytest.mark.parametrize("name", _AME_COLUMNS)
def test_by_column_named_like_an_output_column_is_refused(diabetes, linreg, name):
    X, _ = diabetes
    data = X.assign(**{name: (X["sex"] > 0).map({True: "m", False: "f"})})
    with pytest.raises(NameClashError, match=rf"by column '{name}'.*by='{name}_group'"):
        fme.ame(linreg, data, {"bmi": 0.01}, by=name, inference="sample")
    # the way out named by the message works and keeps the labels
    out = fme.ame(
        linreg, data.assign(**{f"{name}_group": data[name]}), {"bmi": 0.01}, by=f"{name}_group", inference="sample"
    )
    assert list(out[f"{name}_group"]) == ["f", "m"]
    assert list(out.columns).count(name) == 1


def test_by_clash_is_refused_on_dask_data_too(diabetes, linreg):
    dd = pytest.importorskip("dask.dataframe")
    X, _ = diabetes
    data = X.assign(n=np.where(X["sex"] > 0, "m", "f"))
    ddf = dd.from_pandas(data, npartitions=3)
    for name in _AME_COLUMNS:  # refused up front, on the frame's _meta: nothing is computed
        with pytest.raises(NameClashError, match=f"by column '{name}'"):
            fme.ame(linreg, ddf.assign(**{name: ddf["n"]}), {"bmi": 0.01}, by=name, inference="sample")


def test_by_groups_keep_their_labels_beside_a_pairwise_table(diabetes, linreg):
    # with hypothesis='pairwise' the by column is not a column of the table: any name works
    X, _ = diabetes
    data = X.assign(n=np.where(X["sex"] > 0, "m", "f"))
    out = fme.ame(linreg, data, {"bmi": 0.01}, by="n", hypothesis="pairwise", inference="sample")
    assert list(out["hypothesis"]) == ["(m) - (f)"]


@pytest.mark.parametrize("name", _MER_COLUMNS)
def test_at_feature_named_like_an_output_column_is_refused(diabetes, name):
    X, y = diabetes
    data = X.rename(columns={"s1": name})
    model = LinearRegression().fit(data, y)
    with pytest.raises(NameClashError, match=rf"at column '{name}'.*fme\.fme\(model, grid, steps\)"):
        fme.mer(model, data, {"bmi": 0.01}, at={name: [-0.01, 0.02]})


def test_at_clash_with_a_step_column(diabetes):
    X, y = diabetes
    data = X.rename(columns={"s1": "step_bmi"})
    model = LinearRegression().fit(data, y)
    with pytest.raises(NameClashError, match="step_bmi"):
        fme.mer(model, data, {"bmi": 0.01}, at={"step_bmi": [0.0]}, extrapolation="envelope", on_extrapolation="shrink")


def test_at_without_clash_keeps_the_grid_values(diabetes, linreg):
    X, _ = diabetes
    out = fme.mer(linreg, X, {"bmi": 0.01}, at={"s1": [-0.01, 0.02]})
    assert list(out["s1"]) == [-0.01, 0.02]
    np.testing.assert_allclose(out["fme"], linreg.coef_[list(X.columns).index("bmi")] * 0.01, rtol=1e-10)
    assert (out["note"] == "").all()


# ----------------------------------------------------------------- missing by values, missing regressors
def _with_missing_group(X):
    g = np.where(X["sex"] > 0, "m", "f").astype(object)
    g[:10] = None
    return X.assign(g=g)


def _nonlinear(d):
    return d["bmi"].to_numpy(dtype=float) ** 2 * 100 + d["s5"].to_numpy(dtype=float)


def test_missing_by_values_form_a_group_of_their_own(diabetes):
    X, _ = diabetes
    data = _with_missing_group(X)
    out = fme.ame(_nonlinear, data, {"bmi": 0.01}, by="g", inference="sample")
    assert len(out) == 3 and list(out["g"][:2]) == ["f", "m"] and pd.isna(out["g"].iloc[2])
    assert out["n"].sum() == len(data) and list(out["n"]) == [
        int((data["g"] == "f").sum()),
        int((data["g"] == "m").sum()),
        10,
    ]
    bmi = data["bmi"].to_numpy()
    fm = ((bmi + 0.01) ** 2 - bmi**2) * 100
    np.testing.assert_allclose(out["ame"].iloc[2], fm[:10].mean(), rtol=1e-12)
    np.testing.assert_allclose(out["std_error"].iloc[2], fm[:10].std(ddof=1) / np.sqrt(10), rtol=1e-10)
    pair = fme.ame(_nonlinear, data, {"bmi": 0.01}, by="g", hypothesis="pairwise", inference="sample")
    assert list(pair["hypothesis"]) == ["(m) - (f)", "(NA) - (f)", "(NA) - (m)"]


def test_missing_by_values_raise_when_asked(diabetes):
    X, _ = diabetes
    data = _with_missing_group(X)
    with pytest.raises(fme.DataError, match=r"'g' \(10 of 442 rows\).*by_missing='group'"):
        fme.ame(_nonlinear, data, {"bmi": 0.01}, by="g", by_missing="raise")
    with pytest.raises(fme.ParameterError, match="by_missing"):
        fme.ame(_nonlinear, data, {"bmi": 0.01}, by="g", by_missing="drop")


def test_missing_by_values_on_dask_data_equal_pandas(diabetes):
    dd = pytest.importorskip("dask.dataframe")
    X, _ = diabetes
    data = _with_missing_group(X)
    ddf = dd.from_pandas(data, npartitions=4)
    a = fme.ame(_nonlinear, data, {"bmi": 0.01}, by="g", inference="sample")
    b = fme.ame(_nonlinear, ddf, {"bmi": 0.01}, by="g", inference="sample")
    assert list(b["n"]) == list(a["n"]) and pd.isna(b["g"].iloc[2])
    np.testing.assert_allclose(b["ame"], a["ame"], rtol=1e-12)
    np.testing.assert_allclose(b["std_error"], a["std_error"], rtol=1e-10)
    with pytest.raises(fme.DataError, match=r"'g' \(10 of 442 rows\)"):
        fme.ame(_nonlinear, ddf, {"bmi": 0.01}, by="g", by_missing="raise")


@pytest.fixture(scope="module")
def spector():
    import statsmodels.api as sm

    return sm.datasets.spector.load_pandas().data


def test_statsmodels_rows_with_a_missing_regressor_are_excluded_and_counted(spector):
    import statsmodels.formula.api as smf

    data = spector.copy()
    data.loc[[0, 3, 5], "TUCE"] = np.nan
    before = data.copy()
    m = smf.logit("GRADE ~ GPA + TUCE + PSI", data).fit(disp=0)
    res = fme.fme(m, data, {"GPA": 0.5})
    assert res.n == 29 and res.n_excluded == 3
    assert list(res.excluded.index) == [0, 3, 5]
    assert (res.excluded["reason_type"] == "incomplete").all()
    assert (res.excluded["reason"] == "missing value in TUCE (a model input)").all()
    assert "excluded (missing value in a model input, left out as the model's fit did): 3" in res.summary()
    out = fme.ame(m, data, {"GPA": 0.5, "PSI": 1})
    ref = fme.ame(m, data.dropna(subset=["TUCE"]), {"GPA": 0.5, "PSI": 1})  # Stata's e(sample)
    np.testing.assert_allclose(out["ame"], ref["ame"], rtol=1e-13)
    np.testing.assert_allclose(out["std_error"], ref["std_error"], rtol=1e-12)
    assert list(out["n"]) == [29, 29] and list(out["n_excluded"]) == [3, 3] and list(ref["n_excluded"]) == [0, 0]
    pd.testing.assert_frame_equal(data, before)


def test_statsmodels_missing_regressor_on_dask_data(spector):
    dd = pytest.importorskip("dask.dataframe")
    import statsmodels.formula.api as smf

    data = spector.copy()
    data.loc[[0, 3, 5], "TUCE"] = np.nan
    m = smf.logit("GRADE ~ GPA + TUCE + PSI", data).fit(disp=0)
    a = fme.fme(m, data, {"GPA": 0.5})
    b = fme.fme(m, dd.from_pandas(data, npartitions=3), {"GPA": 0.5})
    assert b.n == 29 and b.n_excluded == 3
    np.testing.assert_allclose(b.ame, a.ame, rtol=1e-12)
    np.testing.assert_allclose(b.std_error, a.std_error, rtol=1e-10)
    assert "excluded (missing value in a model input, left out as the model's fit did): 3" in b.summary()


# ----------------------------------------------------------------- what an interval covers
def _fixed_model_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [w for w in caught if issubclass(w.category, fme.FixedModelWarning)]


def test_auto_falling_back_to_the_fixed_model_interval_warns_once(diabetes, linreg):
    X, _ = diabetes
    res, ws = _fixed_model_warnings(lambda: fme.fme(linreg, X, {"bmi": 0.01}))
    assert len(ws) == 1 and issubclass(ws[0].category, fme.FMEWarning)
    msg = str(ws[0].message)
    assert "LinearRegression" in msg and "bootstrap=" in msg and "model held fixed" in msg
    assert ws[0].filename == __file__  # attributed to the caller's line, not to fme's internals
    assert res.inference == "sample"
    # one warning per call, whatever the number of table rows
    out, ws = _fixed_model_warnings(lambda: fme.ame(linreg, X, {"bmi": 0.01, "bp": 0.01, "s5": 0.01}))
    assert len(ws) == 1 and len(out) == 3
    _, ws = _fixed_model_warnings(lambda: fme.mer(linreg, X, {"bmi": 0.01}, at={"s1": [0.0, 0.01]}))
    assert len(ws) == 1
    # asked for: no warning; model uncertainty available: no warning
    _, ws = _fixed_model_warnings(lambda: fme.ame(linreg, X, {"bmi": 0.01}, inference="sample"))
    assert ws == []
    boot = {"X": X, "y": diabetes[1], "n_resamples": 20, "random_state": 0}
    _, ws = _fixed_model_warnings(lambda: fme.ame(linreg, X, {"bmi": 0.01}, bootstrap=boot))
    assert ws == []


def test_auto_with_delta_does_not_warn(spector):
    import statsmodels.formula.api as smf

    m = smf.logit("GRADE ~ GPA + TUCE + PSI", spector).fit(disp=0)
    res, ws = _fixed_model_warnings(lambda: fme.fme(m, spector, {"GPA": 0.5}))
    assert ws == [] and res.tidy()["covers"].iloc[0] == "model uncertainty"
    assert "(delta: model uncertainty)" in res.summary()


def test_auto_on_dask_data_warns_once(diabetes, linreg):
    dd = pytest.importorskip("dask.dataframe")
    X, _ = diabetes
    ddf = dd.from_pandas(X, npartitions=3)
    out, ws = _fixed_model_warnings(lambda: fme.ame(linreg, ddf, {"bmi": 0.01, "bp": 0.01}))
    assert len(ws) == 1 and list(out["covers"]) == ["model held fixed"] * 2
    res, ws = _fixed_model_warnings(lambda: fme.fme(linreg, ddf, {"bmi": 0.01}))
    assert len(ws) == 1 and "(sample: model held fixed)" in res.summary()


def test_summary_and_tidy_say_the_model_is_held_fixed(diabetes, linreg):
    X, _ = diabetes
    res = fme.fme(linreg, X, {"bmi": 0.01}, inference="sample")
    t = res.tidy()
    assert t["covers"].iloc[0] == "model held fixed" and t["inference"].iloc[0] == "sample"
    lo, hi = res.conf_int()
    assert (
        f"    std_error {res.std_error:.6g}  95% CI [{lo:.6g}, {hi:.6g}]  (sample: model held fixed)"
        in res.summary().splitlines()
    )


@pytest.mark.parametrize("steps", [{"bmi": 0.01}, {"sex_cat": "m"}])
def test_tidy_of_fme_and_ame_share_their_columns(diabetes, steps):
    X, y = diabetes
    data = X.assign(sex_cat=np.where(X["sex"] > 0, "m", "f"))
    model = lambda d: _nonlinear(d) + (d["sex_cat"] == "m").to_numpy() * 3.0  # noqa: E731
    t = fme.fme(model, data, steps, inference="sample").tidy()
    a = fme.ame(model, data, steps, inference="sample")
    assert list(a.columns) == [c for c in t.columns if c != "contrast"]
    pd.testing.assert_frame_equal(t.drop(columns="contrast"), a, check_exact=False, rtol=1e-14, check_frame_type=False)
    assert t["contrast"].iloc[0] == ("bmi + 0.01" if "bmi" in steps else "sex_cat -> 'm'")


# ----------------------------------------------------------------- refits that did not converge
def _nonconverged_seeds(data, n_resamples, random_state):
    """Independently: which resamples' logit refits do not converge (statsmodels' own flag)."""
    import statsmodels.formula.api as smf

    out = []
    for s in np.random.SeedSequence(random_state).spawn(n_resamples):
        idx = np.random.default_rng(s).integers(0, len(data), len(data))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = smf.logit("GRADE ~ GPA + TUCE + PSI", data.iloc[idx].reset_index(drop=True)).fit(disp=0)
        out.append(not fit.mle_retvals["converged"])
    return np.array(out)


def test_statsmodels_refits_that_did_not_converge_count_as_failed(spector):
    import statsmodels.formula.api as smf

    m = smf.logit("GRADE ~ GPA + TUCE + PSI", spector).fit(disp=0)
    expected = int(_nonconverged_seeds(spector, 60, 0).sum())
    assert expected > 0
    spec = {"data": spector, "n_resamples": 60, "random_state": 0}
    with pytest.warns(
        fme.BootstrapWarning,
        match=rf"{expected} of 60 bootstrap refits failed.*{expected} of them "
        r"because the fit did not converge.*'keep_nonconverged': True",
    ):
        out = fme.ame(m, spector, {"GPA": 0.5}, bootstrap=spec)
    assert out.bootstrap["n_failed"] == expected
    assert out.bootstrap["n_nonconverged"] == expected
    assert "ConvergenceWarning" in out.bootstrap["errors"][0]
    with pytest.warns(fme.BootstrapWarning, match=rf"{expected} of 60 bootstrap refits did not converge and are kept"):
        res = fme.fme(m, spector, {"GPA": 0.5}, bootstrap={**spec, "keep_nonconverged": True})
    rows = res.inference_rows
    assert rows.n_failed == 0 and rows.n_nonconverged == expected and rows.draws.shape[1] == 60
    # the kept draws are those left out before, in seed order
    kept = fme.fme(m, spector, {"GPA": 0.5}, bootstrap=spec, inference="bootstrap").inference_rows.draws
    np.testing.assert_array_equal(rows.draws[:, ~_nonconverged_seeds(spector, 60, 0)], kept)


def test_scikit_learn_convergence_warnings_count_as_failed(diabetes):
    from sklearn.linear_model import LogisticRegression

    X, y = diabetes
    yb = (y > y.median()).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(max_iter=2).fit(X, yb)
    spec = {"X": X, "y": yb, "n_resamples": 10, "random_state": 0}
    with pytest.raises(fme.ModelError, match="10 of 10 bootstrap refits failed.*ConvergenceWarning"):
        fme.ame(clf, X, {"bmi": 0.01}, bootstrap=spec, target_class=1)
    with pytest.warns(fme.BootstrapWarning, match="10 of 10 bootstrap refits did not converge and are kept"):
        out = fme.ame(
            clf, X, {"bmi": 0.01}, bootstrap={**spec, "keep_nonconverged": True, "ci": "normal"}, target_class=1
        )
    assert out.bootstrap == {"n_resamples": 10, "n_failed": 0, "n_nonconverged": 10, "errors": []}
    with pytest.raises(fme.ParameterError, match="keep_nonconverged must be True or False"):
        fme.ame(clf, X, {"bmi": 0.01}, bootstrap={**spec, "keep_nonconverged": "yes"}, target_class=1)


def test_nonconverged_refits_on_dask_data(spector):
    dd = pytest.importorskip("dask.dataframe")
    import statsmodels.formula.api as smf

    m = smf.logit("GRADE ~ GPA + TUCE + PSI", spector).fit(disp=0)
    expected = int(_nonconverged_seeds(spector, 30, 1).sum())
    spec = {"data": spector, "n_resamples": 30, "random_state": 1, "ci": "normal"}
    with pytest.warns(fme.BootstrapWarning, match=f"{expected} of them because the fit did not converge"):
        res = fme.fme(m, dd.from_pandas(spector, npartitions=2), {"GPA": 0.5}, bootstrap=spec)
    draws, info = res.bootstrap_draws
    assert info["n_nonconverged"] == expected == info["n_failed"] and draws.size == 30 - expected


def test_percentile_interval_on_few_refits_warns(diabetes, linreg):
    X, y = diabetes
    spec = {"X": X, "y": y, "n_resamples": 50, "random_state": 0}
    with pytest.warns(
        fme.BootstrapWarning,
        match=r"95% percentile bootstrap interval rests on 50 refits.*"
        r"'n_resamples': 200",
    ):
        fme.ame(linreg, X, {"bmi": 0.01}, bootstrap=spec)
    for kw in ({"conf_level": 0.8}, {"bootstrap": {**spec, "ci": "normal"}}):
        with warnings.catch_warnings():
            warnings.simplefilter("error", fme.BootstrapWarning)
            fme.ame(linreg, X, {"bmi": 0.01}, **{"bootstrap": spec, **kw})


# ----------------------------------------------------------------- other data frames
class _ArrowStream:
    """Only the Arrow PyCapsule stream interface (as polars, DuckDB, ... offer it); counts conversions."""

    calls = 0

    def __init__(self, table):
        self.table = table

    def __arrow_c_stream__(self, requested_schema=None):
        type(self).calls += 1
        return self.table.__arrow_c_stream__(requested_schema)


class _Interchange:
    """Only the dataframe interchange protocol."""

    def __init__(self, table):
        self.table = table

    def __dataframe__(self, nan_as_null=False, allow_copy=True):
        return self.table.__dataframe__(nan_as_null, allow_copy)


def test_arrow_and_interchange_frames_are_accepted(diabetes, linreg):
    pa = pytest.importorskip("pyarrow")
    X, _ = diabetes
    data = X.assign(g=np.where(X["sex"] > 0, "m", "f")).reset_index(drop=True)
    table = pa.table(data)
    ref = fme.fme(linreg, data, {"bmi": 0.01}, inference="sample")
    for frame in (table, _ArrowStream(table), _Interchange(table)):
        res = fme.fme(linreg, frame, {"bmi": 0.01}, inference="sample")
        assert isinstance(res.data, pd.DataFrame)
        pd.testing.assert_frame_equal(res.results, ref.results)  # indexed by row position, as the input
    # a model whose fMEs are not constant (a linear model's sample SE is rounding noise, layout-dependent)
    a = fme.ame(_nonlinear, table, {"bmi": 0.01, "s5": 0.01}, by="g", inference="sample")
    pd.testing.assert_frame_equal(a, fme.ame(_nonlinear, data, {"bmi": 0.01, "s5": 0.01}, by="g", inference="sample"))
    m = fme.mer(_nonlinear, table, {"bmi": 0.01}, at={"s1": [0.0, 0.01]}, inference="sample")
    pd.testing.assert_frame_equal(
        m, fme.mer(_nonlinear, data, {"bmi": 0.01}, at={"s1": [0.0, 0.01]}, inference="sample")
    )
    # converted once per call, however many table rows
    _ArrowStream.calls = 0
    fme.ame(linreg, _ArrowStream(table), {"bmi": 0.01, "s5": 0.01, "bp": 0.01}, inference="sample")
    assert _ArrowStream.calls == 1


def test_numpy_array_gets_an_error_naming_feature_names_in(diabetes, linreg):
    X, _ = diabetes
    for fn in (
        lambda d: fme.fme(linreg, d, {"bmi": 0.01}),
        lambda d: fme.ame(linreg, d, {"bmi": 0.01}),
        lambda d: fme.mer(linreg, d, {"bmi": 0.01}),
    ):
        with pytest.raises(fme.DataError, match=r"numpy array of shape \(442, 10\).*feature_names_in_"):
            fn(X.to_numpy())


def test_a_series_gets_the_data_error_with_the_way_out(diabetes, linreg):
    """A pandas Series (one row taken with df.loc, or one column) speaks Arrow too; it is refused as data, not
    handed to pyarrow."""
    X, _ = diabetes
    for fn in (
        lambda d: fme.fme(linreg, d, {"bmi": 0.01}),
        lambda d: fme.ame(linreg, d, {"bmi": 0.01}),
        lambda d: fme.avg_predictions(linreg, d),
    ):
        with pytest.raises(fme.DataError, match=r"is a pandas Series \(0, 10 values\).*to_frame\(\)\.T"):
            fn(X.iloc[0])


def test_duplicated_index_gets_an_error_naming_it(diabetes, linreg):
    X, _ = diabetes
    dup = X.set_axis(np.repeat(np.arange(221), 2))
    for fn in (
        lambda d: fme.fme(linreg, d, {"bmi": 0.01}),
        lambda d: fme.ame(linreg, d, {"bmi": 0.01}),
        lambda d: fme.mer(linreg, d, {"bmi": 0.01}),
        lambda d: fme.dme(linreg, d, "bmi"),
    ):
        with pytest.raises(fme.DataError, match=r"index of `data` has duplicate labels.*reset_index\(drop=True\)"):
            fn(dup)


# ----------------------------------------------------------------- parallel refits
def _boot_rows(model, X, y, **spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fme.BootstrapWarning)
        res = fme.fme(model, X, {"bmi": 0.01}, bootstrap={"X": X, "y": y, "random_state": 3, **spec})
    return res.inference_rows


def test_cheap_refits_start_no_workers(diabetes, monkeypatch):
    from sklearn.linear_model import Ridge

    import fme.inference.execution as execution

    # two idle cores and a probe that timed a cheap refit: the decision's inputs, whatever the machine
    monkeypatch.setattr(execution, "_free_cores", lambda: 2.0)
    monkeypatch.setattr(execution, "_probe_seconds", lambda wall, cpu: (0.01, 0.01))

    X, y = diabetes
    model = Ridge().fit(X, y)
    seq = _boot_rows(model, X, y, n_resamples=30)
    par = _boot_rows(model, X, y, n_resamples=30, n_jobs=2)
    assert par.info["execution"]["mode"] == "sequential" and par.info["execution"]["workers"] == 1
    assert par.info["execution"]["estimated_sequential_seconds"] == pytest.approx(0.3)  # 30 refits of 0.01 s
    np.testing.assert_array_equal(par.draws, seq.draws)


#: What the probe measures on the machine the plan is written for: half a second of wall and CPU time a refit.
PROBED_SECONDS = (0.5, 0.5)


@pytest.fixture
def idle_machine(monkeypatch):
    """Every input of the execution plan injected: both cores idle and a probe that timed half a second a
    refit, whatever else runs on the machine and however fast it refits (the tests check the parallel paths;
    the idle-core rule and the plan's arithmetic have their own tests)."""

    import fme.inference.execution as execution

    monkeypatch.setattr(execution, "_free_cores", lambda: 2.0)
    monkeypatch.setattr(execution, "_probe_seconds", lambda wall, cpu: PROBED_SECONDS)


def test_tree_refits_run_on_threads_in_batches(diabetes, idle_machine):
    from sklearn.ensemble import RandomForestRegressor

    X, y = diabetes
    model = RandomForestRegressor(n_estimators=20, random_state=0).fit(X, y)
    seq = _boot_rows(model, X, y, n_resamples=24)
    par = _boot_rows(model, X, y, n_resamples=24, n_jobs=2)
    ex = par.info["execution"]
    assert ex["mode"] == "threads" and ex["workers"] == 2 and ex["batches"] == 4
    np.testing.assert_array_equal(par.draws, seq.draws)  # seeded per refit: the same numbers
    assert seq.info["execution"]["mode"] == "sequential"


def test_the_backend_is_the_faster_by_start_up_and_gil_share():
    """A forest on small data holds the GIL for about a third of each refit (its per-tree Python work): on two
    workers threads would take 0.69 of the sequential time, processes 0.5 plus their start-up, so a minute of
    refits goes to processes; a forest on large data (GIL share 2 %) to threads; cheap work to neither."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import fme.inference.execution as boot
    from fme._adapters import adapt

    X, y = np.arange(20.0).reshape(10, 2), np.arange(10.0)
    rf = RandomForestRegressor(n_estimators=100, random_state=0).fit(X, y)
    share = boot._gil_share(adapt(rf), 0.31)  # Boston: 0.31 s CPU per refit
    assert share == pytest.approx(100 * boot.GIL_SECONDS_PER_TREE / 0.31)
    assert boot._gil_share(adapt(make_pipeline(StandardScaler(), rf).fit(X, y)), 0.31) == share
    assert boot._gil_share(adapt(Ridge().fit(X, y)), 0.01) == 1.0 and boot._gil_share(adapt(rf), 1e-3) == 1.0
    kind, parallel, predicted = boot._plan(60.0, 2, "auto", share)
    assert (kind, parallel) == ("processes", True)
    assert predicted["threads"] == pytest.approx(boot.STARTUP["threads"] + 60 * (share + (1 - share) / 2))
    assert predicted["processes"] == pytest.approx(boot.STARTUP["processes"] + 30)
    assert boot._plan(60.0, 2, "auto", 0.02)[:2] == ("threads", True)
    assert boot._plan(2.0, 2, "auto", 1.0)[1] is False  # Ridge: 2 s of refits start no worker
    # a forced backend runs when the work exceeds its start-up, whatever the GIL share
    assert boot._plan(10.0, 2, "threads", 1.0)[:2] == ("threads", True)
    assert boot._plan(5.0, 2, "processes", 0.0)[:2] == ("processes", False)


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_workers_refit_an_unfitted_single_threaded_clone_with_the_same_numbers(
    diabetes, monkeypatch, backend, idle_machine
):
    """The workers get the model's parameters, not the fitted model, with every scikit-learn n_jobs at 1 (the
    workers are the parallelism); the draws equal the sequential ones, and the user's model is untouched."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import fme.inference.execution as boot
    from fme._adapters import adapt

    X, y = diabetes
    model = make_pipeline(StandardScaler(), RandomForestRegressor(n_estimators=8, random_state=0, n_jobs=2))
    model.fit(X, y)
    worker = adapt(model, None).for_workers()
    assert worker.model.get_params()["randomforestregressor__n_jobs"] == 1
    assert not hasattr(worker.model[-1], "estimators_")  # unfitted: nothing fitted is sent
    assert model.get_params()["randomforestregressor__n_jobs"] == 2 and hasattr(model[-1], "estimators_")
    monkeypatch.setitem(boot.STARTUP, backend, 0.0)  # always worth it: the workers run
    seq = _boot_rows(model, X, y, n_resamples=8)
    par = _boot_rows(model, X, y, n_resamples=8, n_jobs=2, backend=backend)
    assert par.info["execution"]["mode"] == backend
    np.testing.assert_array_equal(par.draws, seq.draws)


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_parallel_refits_count_nonconvergence_on_any_backend(diabetes, monkeypatch, backend, idle_machine):
    from sklearn.linear_model import LogisticRegression

    import fme.inference.execution as boot

    monkeypatch.setitem(boot.STARTUP, backend, 0.0)  # always worth it: the workers run
    X, y = diabetes
    yb = (y > y.median()).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(max_iter=2).fit(X, yb)
    spec = {
        "X": X,
        "y": yb,
        "n_resamples": 12,
        "random_state": 0,
        "keep_nonconverged": True,
        "ci": "normal",
        "n_jobs": 2,
        "backend": backend,
    }
    with pytest.warns(fme.BootstrapWarning, match="12 of 12 bootstrap refits did not converge and are kept"):
        res = fme.fme(clf, X, {"bmi": 0.01}, bootstrap=spec, target_class=1)
    rows = res.inference_rows
    assert rows.info["execution"]["mode"] == backend and rows.n_nonconverged == 12 and rows.n_failed == 0
    with pytest.warns(fme.BootstrapWarning):
        seq = fme.fme(clf, X, {"bmi": 0.01}, bootstrap={**spec, "n_jobs": None}, target_class=1).inference_rows
    np.testing.assert_array_equal(rows.draws, seq.draws)
