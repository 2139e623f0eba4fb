"""fme on Dask DataFrames: equal to the pandas results on the same rows.

One module-scoped 2-process LocalCluster; the data are small (the machine has
2 cores), split into several partitions so that merging matters.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import fme  # noqa: E402
from fme._dask.quantiles import order_statistics  # noqa: E402
from fme.exceptions import ExtrapolationError, ParameterError  # noqa: E402
from tests.conftest import make_regression_frame  # noqa: E402

RTOL = 1e-12
FIGURES = ["ame", "std_error", "statistic", "conf_low", "conf_high", "q25", "q75"]


@pytest.fixture(scope="module")
def client():
    # dashboard_address=None would still bind the scheduler's HTTP server to 8787 (a warning when taken)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def frame():
    return make_regression_frame(n=3000, seed=3)


@pytest.fixture(scope="module")
def X(frame):
    return frame[["x1", "x2", "x3"]]


@pytest.fixture(scope="module")
def hgb(X, frame):
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(max_iter=30, random_state=0).fit(X, frame["y"])


@pytest.fixture(scope="module")
def svr(X, frame):
    from sklearn.svm import SVR

    return SVR(C=1.0).fit(X, frame["y"])


def _dd(frame: pd.DataFrame, npartitions: int):
    """Partitions in the frame's row order (from_pandas sorts by the index by default)."""
    return dd.from_pandas(frame, npartitions=npartitions, sort=False)


def _close(a, b, rtol=RTOL):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=0)


def _close_sd(u: pd.DataFrame, t: pd.DataFrame) -> None:
    """SDs to 1e-12 relative, or 1e-12 of |AME| absolute: a term linear in the model has constant fMEs whose
    SD is pure rounding noise (~1e-16 |AME|), different for any other order of summation."""
    for k in range(len(t)):
        np.testing.assert_allclose(u["sd"].iloc[k], t["sd"].iloc[k], rtol=RTOL, atol=RTOL * abs(t["ame"].iloc[k]))


def _close_p(u: pd.DataFrame, t: pd.DataFrame) -> None:
    """p-values: a tail probability turns a relative error e of z into about z**2 e (d log p / d z ~ -z)."""
    z = np.abs(t["statistic"].to_numpy(dtype=float))
    for k in range(len(t)):
        _close(u["p_value"].iloc[k], t["p_value"].iloc[k], rtol=RTOL * max(1.0, z[k] ** 2))


def _same_summaries(res, dres):
    assert dres.n == res.n and dres.n_excluded == res.n_excluded
    _close(dres.ame, res.ame)
    _close(dres.sd, res.sd)
    t, u = res.tidy(), dres.tidy()
    for c in FIGURES:
        _close(u[c].iloc[0], t[c].iloc[0])
    _close_p(u, t)
    _close_sd(u, t)
    assert u["inference"].iloc[0] == t["inference"].iloc[0]
    assert float(dres.median) == float(np.median(res.results["fme"]))
    if res.has_nlm:
        _close(dres.anlm, res.anlm)
        assert dres.median_nlm == res.median_nlm
        assert dres.share_linear == res.share_linear
        assert (dres.n_nlm_constant, dres.n_nlm_flat, dres.n_nlm_inaccurate) == (
            res.n_nlm_constant,
            res.n_nlm_flat,
            res.n_nlm_inaccurate,
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"nlm": True},  # exact NLM of a tree ensemble
        {"nlm": True, "extrapolation": "envelope", "on_extrapolation": "keep"},
        {"extrapolation": "envelope"},
        {"extrapolation": "envelope", "on_extrapolation": "shrink"},
    ],
)
def test_fme_equals_pandas_hgb(client, X, hgb, kwargs):
    ref = X.iloc[:1500]  # a narrower reference: some rows are extrapolation points
    kw = dict(kwargs)
    if "extrapolation" in kw:
        kw["reference_data"] = ref
    res = fme.fme(hgb, X, {"x1": 0.7, "x2": -0.4}, **kw)
    D = _dd(X, 5)
    dkw = dict(kw)
    if "reference_data" in dkw:
        dkw["reference_data"] = _dd(ref, 3)
    dres = fme.fme(hgb, D, {"x1": 0.7, "x2": -0.4}, **dkw)
    _same_summaries(res, dres)
    if "extrapolation" in kw:
        assert dres.n_excluded > 0 or kw.get("on_extrapolation") == "keep"
    pd.testing.assert_frame_equal(dres.results.compute(), res.results)
    pd.testing.assert_frame_equal(dres.excluded.compute(), res.excluded)


def test_fme_quadrature_nlm_and_rules_equal_pandas(client, X, svr):
    """A smooth model: adaptive Gauss-Kronrod NLM; the step is a rule ('sd') computed over all rows."""
    res = fme.fme(svr, X, {"x2": "0.5*sd"}, nlm=True)
    dres = fme.fme(svr, _dd(X, 4), {"x2": "0.5*sd"}, nlm=True)
    assert dres.steps == res.steps and dres.nlm_method == res.nlm_method == "gauss-kronrod"
    _same_summaries(res, dres)
    pd.testing.assert_frame_equal(dres.results.compute(), res.results)


def test_iqr_and_mad_steps_from_order_statistics(client, X, svr, monkeypatch):
    """Rules iqr and mad on Dask data: exact order statistics of the reference column (not gathered)."""
    import fme._dask.steps as dask_steps

    def gather(*args, **kwargs):
        raise AssertionError("the stepped column was gathered")

    monkeypatch.setattr(dask_steps, "rule_frame", gather)
    steps = {"x2": "iqr", "x3": "-0.5*mad"}
    X = X.copy()
    X.loc[X.index[::97], "x2"] = np.nan  # missing values carry no spread, as in memory
    res = fme.fme(svr, X, steps)
    dres = fme.fme(svr, _dd(X, 5), steps)
    assert [s.value for s in dres.steps] == [s.value for s in res.steps]
    assert dres.describe_steps() == res.describe_steps()
    _close(dres.ame, res.ame)


# Gauss-Kronrod: a budget that does not bind, so every row is refined as its own error asks on both engines (a
# binding budget goes to the worst rows of each call, i.e. of each partition: fme._nlm.budget)
@pytest.mark.parametrize(
    "method", [{"nlm_method": "gauss-legendre", "nlm_points": 8}, {"nlm_method": "gauss-kronrod", "nlm_budget": 2000}]
)
def test_flat_paths_use_the_scale_of_all_rows(client, X, method):
    """The flat test compares each path's SD with the SD of all predictions (not the partition's): on Dask it
    is decided after the one pass, when that scale is known (fme._dask.nlm), for fixed and adaptive rules."""

    def model(d):
        x = d["x1"].to_numpy()
        # nearly flat for x1 < 0 except a tiny wiggle; steep elsewhere
        return np.where(x < 0, 1e-9 * np.sin(40 * x), 10 * x**2)

    D = _dd(X.sort_values("x1"), 6)  # some partitions are entirely x1 < 0
    # the relative rule is opt-in (nlm_flat_tol > 0)
    res = fme.fme(model, X.sort_values("x1"), {"x1": 0.1}, nlm=True, nlm_flat_tol=1e-6, **method)
    dres = fme.fme(model, D, {"x1": 0.1}, nlm=True, nlm_flat_tol=1e-6, **method)
    assert res.n_nlm_flat > 100
    assert (dres.n_nlm_flat, dres.n_nlm_constant, dres.n_nlm_inaccurate) == (
        res.n_nlm_flat,
        res.n_nlm_constant,
        res.n_nlm_inaccurate,
    )
    _close(dres.anlm, res.anlm)
    assert dres.median_nlm == res.median_nlm and dres.share_linear == res.share_linear
    pd.testing.assert_frame_equal(dres.results.compute(), res.results)


def test_ame_delta_equals_pandas_statsmodels(client, frame):
    import statsmodels.formula.api as smf

    m = smf.ols("y ~ x1 + I(x1**2) + x2 + cat", data=frame).fit()
    steps = {"x1": 1.0, "x2": "sd", "cat": None}
    a = fme.ame(m, frame, steps)
    b = fme.ame(m, _dd(frame, 4), steps)
    assert (b["inference"] == "delta").all()
    pd.testing.assert_frame_equal(
        b[["feature", "level", "inference", "n", "n_excluded"]],
        a[["feature", "level", "inference", "n", "n_excluded"]],
        check_dtype=False,
    )
    for c in FIGURES + ["step"]:
        _close(b[c], a[c])
    _close_p(b, a)
    _close_sd(b, a)


def test_ame_sample_equals_pandas(client, X, hgb):
    a = fme.ame(hgb, X, {"x1": 1.0, "x3": -0.5})
    b = fme.ame(hgb, _dd(X, 3), {"x1": 1.0, "x3": -0.5})
    assert (b["inference"] == "sample").all()
    for c in FIGURES + ["step", "n", "n_excluded"]:
        _close(b[c], a[c])
    _close_p(b, a)
    _close_sd(b, a)


@pytest.mark.parametrize("name", ["isolation_forest", "lof"])
def test_sampled_detectors_equal_pandas_on_the_same_sample(client, X, hgb, name):
    D = _dd(X, 4)
    # no more rows than sample_size: fitted on all of them, as pandas
    res = fme.fme(hgb, X, {"x1": 1.0}, extrapolation=name, random_state=1)
    dres = fme.fme(hgb, D, {"x1": 1.0}, extrapolation=name, random_state=1)
    assert dres.detector_fit["n_fit"] == len(X)
    _same_summaries(res, dres)
    pd.testing.assert_frame_equal(dres.excluded.compute(), res.excluded)
    # a seeded sample: the same as pandas with that sample as reference data
    dres = fme.fme(hgb, D, {"x1": 1.0}, extrapolation=name, random_state=1, sample_size=800)
    sample = D.sample(frac=800 / len(X), random_state=1).compute()
    assert dres.detector_fit["n_fit"] == len(sample) and "seeded sample" in dres.summary()
    pd.testing.assert_frame_equal(dres.detector_frame, sample)  # the public frame the detector was fitted on
    res = fme.fme(hgb, X, {"x1": 1.0}, extrapolation=name, random_state=1, reference_data=sample)
    _same_summaries(res, dres)
    pd.testing.assert_frame_equal(dres.results.compute(), res.results)


def test_envelope_categorical_levels(client, frame):
    """The envelope from reductions: unseen levels of a categorical are flagged as with pandas."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    X = frame[["x1", "x2", "cat"]]
    m = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["cat"]), remainder="passthrough"),
        LinearRegression(),
    ).fit(X, frame["y"])
    D = _dd(X, 3)
    ref = X[X["x1"] < 1.0]  # x in a mixed numeric/categorical box: rows with x1 >= 1 are flagged
    res = fme.fme(m, X, {"cat": "b"}, extrapolation="envelope", reference_data=ref)
    dres = fme.fme(m, D, {"cat": "b"}, extrapolation="envelope", reference_data=_dd(ref, 2))
    assert 0 < res.n_excluded == dres.n_excluded
    _same_summaries(res, dres)
    pd.testing.assert_frame_equal(dres.excluded.compute(), res.excluded)
    ref = X[X["cat"] != "c"]  # level c unseen: every x + h flagged, kept and marked
    res = fme.fme(m, X, {"cat": "c"}, extrapolation="envelope", reference_data=ref, on_extrapolation="keep")
    dres = fme.fme(m, D, {"cat": "c"}, extrapolation="envelope", reference_data=_dd(ref, 2), on_extrapolation="keep")
    got = dres.results.compute()
    assert got["extrapolation"].all() and dres.summary_data.n_kept_extrapolation == res.n
    pd.testing.assert_frame_equal(got, res.results)


def test_envelope_of_parquet_categoricals_with_unknown_categories(client, tmp_path):
    """A Parquet categorical read by Dask has unknown categories ('__UNKNOWN_CATEGORIES__'): its levels still
    make the envelope (before, they became NaN and every row an extrapolation point)."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=400), "c": pd.Categorical(rng.choice(["a", "b", "c"], 400))})
    df.to_parquet(tmp_path / "d.parquet")
    D = dd.read_parquet(tmp_path / "d.parquet")
    assert "__UNKNOWN_CATEGORIES__" in list(D._meta["c"].cat.categories)
    m = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["c"]), remainder="passthrough"), LinearRegression()
    ).fit(df, df["x"] + (df["c"] == "b"))
    got = fme.ame(m, D, {"x": 0.5}, extrapolation="envelope")
    want = fme.ame(m, df, {"x": 0.5}, extrapolation="envelope")
    assert got["n"].iloc[0] == want["n"].iloc[0] == 398  # the 2 rows whose x + 0.5 leaves the range
    assert got["ame"].iloc[0] == pytest.approx(want["ame"].iloc[0], rel=1e-12)


def test_errors_are_the_library_s(client, X, hgb):
    D = _dd(X, 2)
    with pytest.raises(ParameterError, match="bootstrap"):
        fme.fme(hgb, D, {"x1": 1.0}, inference="bootstrap")
    with pytest.raises(ParameterError, match="sample_size"):
        fme.fme(hgb, D, {"x1": 1.0}, sample_size=0)
    with pytest.raises(ParameterError, match="Dask data only"):
        fme.fme(hgb, X, {"x1": 1.0}, sample_size=10)
    with pytest.raises(ExtrapolationError, match="all 3,000 rows are extrapolation points"):
        fme.fme(hgb, D, {"x1": 100.0}, extrapolation="envelope")
    with pytest.raises(ParameterError, match="Dask effects only"):
        fme.came(fme.fme(hgb, X, {"x1": 1.0}), sample_size=100)


def test_order_statistics_exact_with_ties_across_partitions():
    import dask

    rng = np.random.default_rng(0)
    values = np.round(rng.normal(size=20_011), 1)  # many ties
    parts = np.array_split(values, 7)
    with dask.config.set(scheduler="sync"):
        from dask import delayed

        sorted_parts = [delayed(np.sort)(p) for p in parts]
        ranks = [0, 1, 5000, 10_005, 20_010]
        got = order_statistics(sorted_parts, ranks)
    np.testing.assert_array_equal(got, np.sort(values)[ranks])


@pytest.mark.parametrize("nlm", [False, True])
def test_came_equals_pandas_when_the_data_fit_the_sample(client, X, hgb, nlm):
    res = fme.fme(hgb, X, {"x1": 0.7}, nlm=nlm)
    dres = fme.fme(hgb, _dd(X, 4), {"x1": 0.7}, nlm=nlm)
    a = fme.came(res, honest=False, minbucket=200, maxdepth=3)
    b = fme.came(dres, honest=False, minbucket=200, maxdepth=3)
    assert b.grown_on_sample is False and "all 3000 of 3000" in b.notes[-1]
    assert b.leaf_ids == a.leaf_ids and len(a.leaf_ids) > 2
    pd.testing.assert_series_equal(b.leaves["rule"], a.leaves["rule"])
    num = [c for c in a.leaves.columns if c not in ("rule", "inference", "covers")]
    for c in num:
        _close(b.leaves[c], a.leaves[c])
        _close(b.root[c], a.root[c])
    assert (b.leaves["inference"] == a.leaves["inference"]).all()
    assert (b.leaves["covers"] == a.leaves["covers"]).all() and (a.leaves["covers"] == "model held fixed").all()


def test_came_boxes_span_all_rows_of_the_data(client, X, hgb):
    """Unrestricted sides of a subspace's box are the range of all rows (excluded extrapolation points
    too), as in memory, though the tree is grown on the evaluated rows only."""
    ref = X[(X["x2"].abs() < 1.5) & (X["x3"].abs() < 1.5)]
    res = fme.fme(hgb, X, {"x1": 0.7}, extrapolation="envelope", reference_data=ref)
    dres = fme.fme(hgb, _dd(X, 4), {"x1": 0.7}, extrapolation="envelope", reference_data=_dd(ref, 2))
    assert res.n_excluded > 0 and dres.n_excluded == res.n_excluded
    a = fme.came(res, minbucket=200, maxdepth=2)
    b = fme.came(dres, minbucket=200, maxdepth=2)
    assert b.leaf_ids == a.leaf_ids
    for node in a.leaf_ids:
        da, db = a.describe(node), b.describe(node)
        cols = ["low", "high", "range", "restricted"]
        pd.testing.assert_frame_equal(db[cols], da[cols])
    # the data's extreme rows were excluded: the evaluated rows alone would give a narrower box
    assert X["x2"].max() > res.data.loc[res.results.index, "x2"].max()
    # each subspace's extrapolation points, counted on the cluster's workers, are the in-memory ones
    counts = b.extrapolation_counts()
    pd.testing.assert_series_equal(counts, a.extrapolation_counts())
    assert counts.sum() == res.n_extrapolation > 0


def test_came_on_a_sample_aggregates_over_all_rows(client, X, hgb):
    res = fme.fme(hgb, X, {"x1": 0.7}, nlm=True)
    dres = fme.fme(hgb, _dd(X, 4), {"x1": 0.7}, nlm=True)
    b = fme.came(dres, honest=False, minbucket=100, maxdepth=2, sample_size=1000, random_state=3)
    assert b.grown_on_sample and b.sample_rows < 3000 and "seeded sample" in b.notes[-1]
    assert b.leaves["n"].sum() == res.n == 3000
    # reference: the grown tree applied to every row in memory
    node = b._subspace[np.asarray(b.tree.apply(X[b.features]), dtype=int)]
    fmes = res.results["fme"].to_numpy()
    nlms = res.results["nlm"].to_numpy()
    for _, row in b.leaves.iterrows():
        m = node == row["node"]
        assert row["n"] == m.sum()
        _close(row["came"], fmes[m].mean())
        _close(row["sd_fme"], fmes[m].std(ddof=1))
        _close(row["canlm"], np.nanmean(nlms[m]))
        assert row["median_nlm"] == np.nanmedian(nlms[m])
    # same seed, same tree
    again = fme.came(dres, honest=False, minbucket=100, maxdepth=2, sample_size=1000, random_state=3)
    pd.testing.assert_frame_equal(again.leaves, b.leaves)


def test_bootstrap_equals_pandas(client, X, frame):
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, frame["y"])
    spec = {"X": X, "y": frame["y"], "n_resamples": 12, "random_state": 7}
    res = fme.fme(model, X, {"x1": 0.5}, inference="bootstrap", bootstrap=spec, extrapolation="envelope")
    dres = fme.fme(model, _dd(X, 3), {"x1": 0.5}, inference="bootstrap", bootstrap=spec, extrapolation="envelope")
    assert res.inference == dres.inference == "bootstrap"
    _same_summaries(res, dres)
    a = fme.ame(model, X, {"x1": 0.5, "x2": 1.0}, bootstrap=spec)
    b = fme.ame(model, _dd(X, 3), {"x1": 0.5, "x2": 1.0}, bootstrap=spec)
    for c in FIGURES + ["n"]:
        _close(b[c], a[c])


# ----------------------------------------------------------------- ame by groups (per-group sums in one pass)
def _same_table(b: pd.DataFrame, a: pd.DataFrame, keys: list[str], grouped: pd.DataFrame | None = None) -> None:
    """Group tables to 1e-12 relative. Pairwise differences (``grouped``: the by-group table they come from):
    a difference of two nearly equal AMEs (and of their gradients) cancels their relative rounding, so the
    difference is held to 1e-12 of sum |AME_g| and its standard error to 1e-12 of sum SE_g over the groups."""
    assert list(b.columns) == list(a.columns)
    pd.testing.assert_frame_equal(
        b[keys + ["inference", "n", "n_excluded"]], a[keys + ["inference", "n", "n_excluded"]], check_dtype=False
    )
    if grouped is None:
        for c in ["ame", "std_error", "statistic", "conf_low", "conf_high", "q25", "q75"]:
            _close(b[c], a[c])
        _close_p(b, a)
        _close_sd(b.fillna({"sd": 0.0}), a.fillna({"sd": 0.0}))
        return
    assert b[["sd", "q25", "q75"]].isna().all().all() and a[["sd", "q25", "q75"]].isna().all().all()
    key = grouped.assign(abs_ame=grouped["ame"].abs(), level=grouped["level"].fillna("-").astype(str))
    sums = key.groupby(["feature", "level"], sort=False)[["abs_ame", "std_error"]].sum().reset_index()
    sc = (
        a[["feature"]].assign(level=a["level"].fillna("-").astype(str)).merge(sums, on=["feature", "level"], how="left")
    )
    e_est, e_se = RTOL * sc["abs_ame"].to_numpy(), RTOL * sc["std_error"].to_numpy()
    se = a["std_error"].to_numpy(dtype=float)
    z = np.abs(a["statistic"].to_numpy(dtype=float))
    e_z = (e_est + z * e_se) / se
    for c, err in [
        ("ame", e_est),
        ("std_error", e_se),
        ("conf_low", e_est + 3 * e_se),
        ("conf_high", e_est + 3 * e_se),
        ("statistic", e_z),
        ("p_value", e_z),
    ]:  # |dp/dz| < 1
        diff = np.abs(b[c].to_numpy(dtype=float) - a[c].to_numpy(dtype=float))
        assert np.all(diff <= err), (c, diff, err)


def test_ame_by_and_pairwise_delta_equal_pandas(client, frame):
    import statsmodels.formula.api as smf

    m = smf.ols("y ~ x1 + I(x1**2) + x2 + cat", data=frame).fit()
    data = frame.assign(g=np.where(frame["k"] < 3, "low", np.where(frame["k"] < 7, "mid", "high")))
    data.loc[data.index[:40], "g"] = None  # rows in the missing-value group (never dropped silently)
    steps = {"x1": 1.0, "cat": None}
    D = _dd(data, 4)
    grouped = None
    for hyp in (None, "pairwise"):
        a = fme.ame(m, data, steps, by="g", hypothesis=hyp)
        b = fme.ame(m, D, steps, by="g", hypothesis=hyp)
        assert (b["inference"] == "delta").all() and len(b) == len(a) > 6
        _same_table(b, a, ["feature", "level", "g" if hyp is None else "hypothesis"], grouped)
        grouped = a
    # groups of two columns, with an extrapolation detector excluding rows of some groups
    a = fme.ame(m, data, {"x1": 1.0}, by=["g", "cat"], extrapolation="envelope")
    b = fme.ame(m, D, {"x1": 1.0}, by=["g", "cat"], extrapolation="envelope")
    assert len(a) == 12 and a["g"].isna().sum() == 3 and a["n_excluded"].sum() > 40
    _same_table(b, a, ["feature", "g", "cat"])
    # a group none of whose rows is evaluated: NaN figures and NaN differences on both paths
    ref = data[data["g"] != "high"]
    moved = data.assign(x1=np.where(data["g"] == "high", data["x1"] + 100.0, data["x1"]))
    for hyp in (None, "pairwise"):
        a = fme.ame(m, moved, {"x1": 1.0}, by="g", hypothesis=hyp, reference_data=ref, extrapolation="envelope")
        b = fme.ame(m, _dd(moved, 4), {"x1": 1.0}, by="g", hypothesis=hyp, reference_data=ref, extrapolation="envelope")
        empty = (a["g"] == "high") if hyp is None else a["hypothesis"].str.contains("high")
        assert empty.sum() == (1 if hyp is None else 3)  # 4 groups with the missing-value one: 3 pairs with high
        for t in (a, b):
            assert t.loc[empty.to_numpy(), ["ame", "std_error", "p_value", "conf_low"]].isna().all(axis=None)
            assert t.loc[~empty.to_numpy(), ["ame", "std_error", "p_value", "conf_low"]].notna().all(axis=None)


def test_ame_by_sample_and_bootstrap_equal_pandas(client, X, frame, hgb):
    data = X.assign(cat=frame["cat"])
    D = _dd(data, 3)
    grouped = None
    for hyp in (None, "pairwise"):
        a = fme.ame(hgb, data, {"x1": 1.0, "x3": -0.5}, by="cat", hypothesis=hyp)
        b = fme.ame(hgb, D, {"x1": 1.0, "x3": -0.5}, by="cat", hypothesis=hyp)
        assert (b["inference"] == "sample").all()
        _same_table(b, a, ["feature", "cat" if hyp is None else "hypothesis"], grouped)
        grouped = a
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, frame["y"])
    spec = {"X": X, "y": frame["y"], "n_resamples": 12, "random_state": 7}
    grouped = None
    for hyp in (None, "pairwise"):
        a = fme.ame(model, data, {"x1": 0.5}, by="cat", hypothesis=hyp, bootstrap=spec)
        b = fme.ame(model, D, {"x1": 0.5}, by="cat", hypothesis=hyp, bootstrap=spec)
        assert (b["inference"] == "bootstrap").all() and len(b) == 3
        _same_table(b, a, ["feature", "cat" if hyp is None else "hypothesis"], grouped)
        grouped = a


def test_ame_by_errors_on_dask(client, X, hgb):
    D = _dd(X, 2)
    with pytest.raises(fme.exceptions.FeatureError, match="nope"):
        fme.ame(hgb, D, {"x1": 1.0}, by="nope")
    with pytest.raises(ParameterError, match="pass by="):
        fme.ame(hgb, D, {"x1": 1.0}, hypothesis="pairwise")
    with pytest.raises(ParameterError, match="hypothesis must be"):
        fme.ame(hgb, D, {"x1": 1.0}, by="x2", hypothesis="all")


# ----------------------------------------------------------------- mer / mem (reductions, then the grid in memory)
def _same_grid(b: pd.DataFrame, a: pd.DataFrame) -> None:
    assert list(b.columns) == list(a.columns) and len(b) == len(a)
    num = [c for c in a.columns if pd.api.types.is_float_dtype(a[c])]
    other = [c for c in a.columns if c not in num]
    pd.testing.assert_frame_equal(b[other], a[other], check_dtype=False)
    for c in num:
        _close(b[c], a[c])


def test_typical_values_equal_pandas(client, frame):
    from fme._dask.margins import typical_values_dask

    data = frame.assign(
        s=np.where(frame["k"] % 3 == 0, "u", np.where(frame["k"] % 3 == 1, "v", "w")), flag=frame["k"] > 4
    )
    data.loc[data.index[:5], "x1"] = np.inf  # not finite: left out of the mean, as pandas
    data.loc[data.index[5:9], "s"] = None
    a = fme.margins.marginal.typical_values(data)
    D = _dd(data, 5)
    b = typical_values_dask(D)
    # means are floats; the other columns keep the dtype of their data (Dask reads text as its string dtype)
    assert list(b.columns) == list(a.columns) and (b.dtypes == a.dtypes)[["x1", "k", "cat", "flag"]].all()
    assert b["s"].dtype == D["s"].dtype
    _same_grid(b, a)
    # a tie between modes goes to the value seen first in row order, as with pandas
    tie = pd.DataFrame({"s": ["b", "a", "a", "b"], "x": [1.0, 2.0, 3.0, 4.0]})
    assert typical_values_dask(_dd(tie, 2))["s"].iloc[0] == fme.margins.marginal.typical_values(tie)["s"].iloc[0] == "b"


def test_mer_and_mem_equal_pandas(client, frame, X, hgb):
    import statsmodels.formula.api as smf

    m = smf.ols("y ~ x1 + I(x1**2) + x2 + cat", data=frame).fit()
    D = _dd(frame, 4)
    a = fme.mem(m, frame, {"x1": 1.0, "cat": "b"})
    b = fme.mem(m, D, {"x1": 1.0, "cat": "b"})
    assert (b["inference"] == "delta").all() and len(a) == 2
    _same_grid(b, a)
    a = fme.mer(m, frame, {"x2": "sd"}, at={"x1": [-1.0, 0.5], "cat": ["a", "c"]})
    b = fme.mer(m, D, {"x2": "sd"}, at={"x1": [-1.0, 0.5], "cat": ["a", "c"]})
    assert len(a) == 4
    _same_grid(b, a)
    # a detector: the envelope of all rows; a grid point outside is left out with its reason
    a = fme.mer(hgb, X, {"x1": 1.0}, at={"x1": [0.0, 1.9]}, extrapolation="envelope")
    b = fme.mer(hgb, _dd(X, 3), {"x1": 1.0}, at={"x1": [0.0, 1.9]}, extrapolation="envelope")
    assert a["note"].iloc[1] != "" and np.isnan(a["fme"].iloc[1])
    _same_grid(b, a)
    # a Dask reference_data with pandas data
    ref = X[X["x2"] < 1.0]
    a = fme.mer(hgb, X, {"x2": 0.5}, at={"x2": [0.2, 0.7]}, extrapolation="envelope", reference_data=ref)
    b = fme.mer(hgb, X, {"x2": 0.5}, at={"x2": [0.2, 0.7]}, extrapolation="envelope", reference_data=_dd(ref, 2))
    _same_grid(b, a)


def test_mem_object_levels_on_dask(client, frame):
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    data = frame[["x1", "x2"]].assign(s=np.asarray(frame["cat"]).astype(object))
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["s"]), remainder="passthrough"), LinearRegression()
    ).fit(data, frame["y"])
    a = fme.mem(model, data, {"s": "c", "x1": 0.5})
    b = fme.mem(model, _dd(data, 3), {"s": "c", "x1": 0.5})
    assert len(a) == 2  # the other levels a and b
    _same_grid(b, a)


# ----------------------------------------------------------------- classic categorical AME (one pass, all levels)
def test_ame_classic_equals_pandas(client, frame, X, hgb):
    """Every row set to the reference, then to each level (rows already there and missing ones count)."""
    import statsmodels.formula.api as smf

    # an interaction: the level effects vary over the rows (an additive one differs between groups by rounding only)
    m = smf.ols("y ~ x1 + I(x1**2) + x2 * cat", data=frame).fit()
    data = frame.assign(g=np.where(frame["k"] < 4, "low", "high"))
    D = _dd(data, 4)
    for steps in ({"cat": None, "x1": 1.0}, {"cat": "b"}):
        a = fme.ame(m, data, steps, categorical="classic")
        b = fme.ame(m, D, steps, categorical="classic")
        assert (b["inference"] == "delta").all() and list(b.columns) == list(a.columns)
        pd.testing.assert_frame_equal(
            b[["feature", "level", "reference", "inference", "n", "n_excluded"]],
            a[["feature", "level", "reference", "inference", "n", "n_excluded"]],
            check_dtype=False,
        )
        assert (a.loc[a["feature"] == "cat", "n"] == len(data)).all()
        for c in FIGURES + ["step"]:
            _close(b[c], a[c])
        _close_p(b, a)
        _close_sd(b, a)
    grouped = None
    for hyp in (None, "pairwise"):  # groups by another column, and by the stepped feature itself
        for by in ("g", "cat"):
            a = fme.ame(m, data, {"cat": None}, categorical="classic", by=by, hypothesis=hyp)
            b = fme.ame(m, D, {"cat": None}, categorical="classic", by=by, hypothesis=hyp)
            _same_table(
                b,
                a,
                ["feature", "level", "reference", by if hyp is None else "hypothesis"],
                None if hyp is None else grouped[by],
            )
        grouped = {by: fme.ame(m, data, {"cat": None}, categorical="classic", by=by) for by in ("g", "cat")}
    # a model without parameters (sample inference), a missing level value counted like pandas
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    cats = frame[["x1", "x2", "cat"]].copy()
    cats.loc[cats.index[:7], "cat"] = np.nan
    pipe = make_pipeline(
        make_column_transformer((OrdinalEncoder(), ["cat"]), remainder="passthrough"),
        HistGradientBoostingRegressor(max_iter=20, random_state=0),
    ).fit(cats, frame["y"])
    a = fme.ame(pipe, cats, {"cat": {"reference": "c"}}, categorical="classic")
    b = fme.ame(pipe, _dd(cats, 3), {"cat": {"reference": "c"}}, categorical="classic")
    assert (b["inference"] == "sample").all() and (b["n"] == len(cats)).all() and len(b) == 2
    for c in FIGURES + ["n", "n_excluded"]:
        _close(b[c], a[c])
    assert list(b["level"]) == list(a["level"]) and list(b["reference"]) == list(a["reference"])


def test_ame_classic_bootstrap_equals_pandas(client, frame):
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    data = frame[["x1", "x2", "cat"]]
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["cat"]), remainder="passthrough"), LinearRegression()
    ).fit(data, frame["y"])
    spec = {"X": data, "y": frame["y"], "n_resamples": 8, "random_state": 5}
    a = fme.ame(model, data, {"cat": None}, categorical="classic", bootstrap=spec)
    b = fme.ame(model, _dd(data, 3), {"cat": None}, categorical="classic", bootstrap=spec)
    assert (b["inference"] == "bootstrap").all() and len(b) == 2
    for c in FIGURES + ["n"]:
        _close(b[c], a[c])
    with pytest.raises(fme.exceptions.StepError, match="not a level"):
        fme.ame(model, _dd(data, 3), {"cat": "zz"}, categorical="classic")


# ----------------------------------------------------------------- several outputs (target_class='all', multi-output)
def _same_outputs(res, dres):
    assert dres.output_names == res.output_names and dres.n == res.n and dres.n_excluded == res.n_excluded
    for name in ["ame", "sd", "std_error"] + (["anlm"] if res.has_nlm else []):
        got, want = getattr(dres, name), getattr(res, name)
        pd.testing.assert_index_equal(got.index, want.index)
        _close(got, want)
    if res.has_nlm:
        for name in ["median_nlm", "share_linear"]:  # exact: order statistics and counts
            pd.testing.assert_series_equal(getattr(dres, name), getattr(res, name))
        assert (dres.n_nlm_undefined, dres.n_nlm_constant, dres.n_nlm_flat, dres.n_nlm_inaccurate) == (
            res.n_nlm_undefined,
            res.n_nlm_constant,
            res.n_nlm_flat,
            res.n_nlm_inaccurate,
        )
    t, u = res.tidy(), dres.tidy()
    assert list(u.columns) == list(t.columns) and list(u["class"]) == list(t["class"])
    pd.testing.assert_frame_equal(
        u[["step", "class", "inference", "n", "n_excluded"]], t[["step", "class", "inference", "n", "n_excluded"]]
    )
    for c in FIGURES:
        _close(u[c], t[c])
    _close_p(u, t)
    _close_sd(u, t)
    _close(dres.p_value, u["p_value"].set_axis(list(res.output_names)))
    _close(dres.conf_int(0.9), res.conf_int(0.9))
    pd.testing.assert_index_equal(dres.conf_int().index, res.conf_int().index)
    for k in res.ame.index:
        assert float(dres.median[k]) == float(np.median(res.results[f"fme_{k}"]))
    pd.testing.assert_frame_equal(dres.results.compute(), res.results)


# nlm_flat_tol: the relative flat-path rule (opt-in) leaves some paths undefined, whose counts
# the two engines must agree on
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"nlm": True, "nlm_flat_tol": 1e-6}, {"nlm": True, "nlm_flat_tol": 1e-6, "extrapolation": "envelope"}],
)
def test_target_class_all_equals_pandas(client, X, frame, kwargs):
    from sklearn.ensemble import HistGradientBoostingClassifier

    y = pd.cut(frame["y"], 3, labels=["lo", "mid", "hi"]).astype(str)
    clf = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    kw = dict(kwargs)
    if "extrapolation" in kw:
        kw["reference_data"] = X.iloc[:2000]
    res = fme.fme(clf, X, {"x1": 0.5}, target_class="all", **kw)
    if "reference_data" in kw:
        kw["reference_data"] = _dd(X.iloc[:2000], 2)
    dres = fme.fme(clf, _dd(X, 4), {"x1": 0.5}, target_class="all", **kw)
    assert res.has_nlm == dres.has_nlm == ("nlm" in kw) and len(res.output_names) == 3
    if res.has_nlm:
        assert res.n_nlm_undefined > 0 and res.nlm_method == dres.nlm_method == "exact"
    _same_outputs(res, dres)
    assert "fme_mid: AME" in dres.summary() and "DaskMultiFMEResult" in repr(dres)
    with pytest.raises(ParameterError, match="works on one output"):
        fme.fme(clf, _dd(X, 4), {"x1": 0.5}, target_class="all", inference="delta")
    with pytest.raises(ParameterError, match="single target_class"):
        fme.came(dres)


def test_multi_output_model_flat_paths_per_output(client, X):
    """A two-output model on very different scales: the flat-path test uses each output's own spread."""
    from fme._adapters.predictor import Predictor

    def two(d):
        x = d["x1"].to_numpy()
        wiggle = 1e-9 * np.sin(40 * x)
        return np.column_stack([np.where(x < 0, wiggle, x**2), 1e6 * np.where(x < 0.5, wiggle, np.cos(x))])

    model = Predictor(two, output_names=["small", "large"], description="two outputs")
    Xs = X.sort_values("x1")
    kw = dict(nlm=True, nlm_method="gauss-legendre", nlm_points=8, nlm_flat_tol=1e-6)  # the opt-in relative rule
    res = fme.fme(model, Xs, {"x1": 0.1}, **kw)
    dres = fme.fme(model, _dd(Xs, 6), {"x1": 0.1}, **kw)
    assert (
        res.n_nlm_flat > 100
        and (res.results["nlm_status_large"] == "flat").sum() > (res.results["nlm_status_small"] == "flat").sum()
    )
    _same_outputs(res, dres)


def test_order_statistics_with_heavy_ties_move_distinct_values_only():
    """Many equal values (fMEs of exactly 0 on a flat region): exact ranks, and each part sends its window as
    distinct values with counts, not one value per row (the report's memory guard relies on it)."""
    import dask
    from dask import delayed

    from fme._dask.quantiles import _bracket, order_statistics

    rng = np.random.default_rng(4)
    v = np.where(rng.uniform(size=30_000) < 0.6, 0.0, rng.normal(size=30_000))
    parts = [np.sort(x) for x in np.array_split(v, 3)]
    ranks = [0, 9_000, 14_999, 15_000, 22_500, 29_999]
    with dask.config.set(scheduler="sync"):
        got = order_statistics([delayed(p) for p in parts], ranks)
    np.testing.assert_array_equal(got, np.sort(v)[ranks])
    ((i, (values, counts)),) = _bracket(parts[0], [(-1e-9, 1e-9)])
    assert values.tolist() == [0.0] and counts[0] == int((parts[0] == 0).sum()) > 5_000


def test_budget_columns_and_inaccurate_rows_equal_pandas(client, X):
    """The nlm_error and nlm_route are result columns on Dask too, and the inaccurate rows (with the
    largest error estimate) are counted alike. A wrapped tree (a plain function) takes the jump route; the
    budget of each partition is its own, so a budget that does not bind gives the pandas figures exactly."""
    from sklearn.tree import DecisionTreeRegressor

    Xn = X[["x1", "x2", "x3"]]
    tree = DecisionTreeRegressor(max_depth=4, random_state=0).fit(Xn, Xn["x1"] ** 2 + Xn["x2"])

    def model(d):
        return tree.predict(d[["x1", "x2", "x3"]])

    kw = dict(nlm=True, nlm_tol=1e-9, nlm_budget=40)
    res = fme.fme(model, Xn, {"x1": 0.5}, **kw)
    dres = fme.fme(model, _dd(Xn, 4), {"x1": 0.5}, **kw)
    got = dres.results.compute()
    assert {"nlm_error", "nlm_route"} <= set(got.columns)
    assert (got["nlm_route"] == res.results["nlm_route"]).all()
    assert res.n_nlm_inaccurate > 0 and dres.n_nlm_inaccurate > 0
    assert "included in the ANLM" in res.summary() and "included in the ANLM" in dres.summary()
    big = dict(kw, nlm_budget=5000, nlm_tol=1e-6)
    res, dres = fme.fme(model, Xn, {"x1": 0.5}, **big), fme.fme(model, _dd(Xn, 4), {"x1": 0.5}, **big)
    pd.testing.assert_frame_equal(dres.results.compute(), res.results)
    assert (dres.n_nlm_inaccurate, dres.n_nlm_constant, dres.n_nlm_flat) == (
        res.n_nlm_inaccurate,
        res.n_nlm_constant,
        res.n_nlm_flat,
    )
    _close(dres.anlm, res.anlm)


def test_a_dask_leaf_of_one_row_has_no_interval_under_any_method():
    """As in memory: a subspace of fewer than 2 (estimation) rows gets no std_error and no interval, with the
    delta method too (its one row's gradient would otherwise give one)."""
    from types import SimpleNamespace

    from fme._core.summary import Moments
    from fme._dask.came import _leaf_row

    one = Moments(np.array([1.0]), np.array([0.7]), np.array([0.0]))
    effects = SimpleNamespace(inference_method="delta", summary_data=SimpleNamespace(vcov=np.eye(2)))
    row, _ = _leaf_row(effects, one, None, None, np.array([0.3, -0.2]), np.nan, 0.95)
    assert row["came"] == 0.7 and row["n"] == 1
    assert all(np.isnan(row[k]) for k in ("std_error", "conf_low", "conf_high", "p_value"))
    two = Moments(np.array([2.0]), np.array([0.7]), np.array([0.02]))
    row, _ = _leaf_row(effects, two, None, None, np.array([0.6, -0.4]), np.nan, 0.95)
    assert row["std_error"] == pytest.approx(np.hypot(0.3, 0.2), rel=1e-12)  # grad = jac / n, vcov = I
