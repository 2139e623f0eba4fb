"""Count models with an exposure or offset are predicted on the count scale (each row's
exposure, as Stata's margins), the delta method differentiates the same predictions, and an exposure
that cannot be matched to the rows is an error naming it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme.exceptions import DataError, ParameterError

sm = pytest.importorskip("statsmodels.api")
smf = pytest.importorskip("statsmodels.formula.api")

FORMULA = "mdvis ~ lncoins + disea"


@pytest.fixture(scope="module")
def rh() -> pd.DataFrame:
    data = sm.datasets.randhie.load_pandas().data.iloc[:3000].copy()
    data["expo"] = np.random.default_rng(23).uniform(0.5, 3.0, len(data))  # randhie has no exposure: seeded
    return data


@pytest.fixture(scope="module")
def glm(rh):
    return smf.glm(FORMULA, data=rh, family=sm.families.Poisson(), exposure=rh.expo).fit()


def _design(rh: pd.DataFrame, disea_step: float = 0.0) -> np.ndarray:
    return np.column_stack([np.ones(len(rh)), rh["lncoins"], rh["disea"] + disea_step])


def test_ame_on_the_count_scale_with_delta_se(glm, rh):
    out = fme.ame(glm, rh, {"disea": 1})
    row = out.iloc[0]
    b = glm.params.to_numpy()
    lo = np.log(rh["expo"].to_numpy())
    X0, X1 = _design(rh), _design(rh, 1.0)
    mu0, mu1 = np.exp(X0 @ b + lo), np.exp(X1 @ b + lo)
    assert row["ame"] == pytest.approx(np.mean(mu1 - mu0), rel=1e-10)
    assert row["inference"] == "delta"
    # the gradient of the AME in beta: analytic, and checked against central differences of the hand formula
    g = (mu1[:, None] * X1 - mu0[:, None] * X0).mean(axis=0)

    def ame_at(beta):
        return np.mean(np.exp(X1 @ beta + lo) - np.exp(X0 @ beta + lo))

    eps = 1e-6
    fd = np.array([(ame_at(b + eps * e) - ame_at(b - eps * e)) / (2 * eps) for e in np.eye(b.size)])
    np.testing.assert_allclose(fd, g, rtol=1e-7)
    V = glm.cov_params().to_numpy()
    assert row["std_error"] == pytest.approx(float(np.sqrt(g @ V @ g)), rel=1e-8)
    assert "expo" in out.scale and "count scale" in out.scale
    # statsmodels' own predict(newdata) drops the exposure: the rate scale, which fme no longer gives silently
    rate = np.mean(np.exp(X1 @ b) - np.exp(X0 @ b))
    assert abs(row["ame"] - rate) > 1e-3


def test_fme_result_says_the_scale_and_matches_statsmodels_with_exposure(glm, rh):
    res = fme.fme(glm, rh, {"lncoins": 0.5})
    stepped = rh.assign(lncoins=rh["lncoins"] + 0.5)
    expected = glm.predict(stepped, exposure=rh["expo"]) - glm.predict(rh, exposure=rh["expo"])
    np.testing.assert_allclose(res.results["fme"].to_numpy(), expected.to_numpy(), rtol=1e-12, atol=1e-12)
    assert res.inference_rows.info["kernel"] == "analytic"
    assert res.scale is not None and "'expo'" in res.scale
    assert "  scale: predictions on the count scale" in res.summary()


def test_exposure_keyword_array_number_and_column(glm, rh):
    named = fme.ame(glm, rh, {"disea": 1}).iloc[0]
    bare = rh.drop(columns="expo")
    by_array = fme.ame(glm, bare, {"disea": 1}, exposure=rh["expo"].to_numpy())
    assert by_array.iloc[0]["ame"] == pytest.approx(named["ame"], rel=1e-12)
    assert by_array.iloc[0]["std_error"] == pytest.approx(named["std_error"], rel=1e-10)
    assert "exposure=" in by_array.scale
    assert "(exposure)" not in bare.columns and "expo" not in bare.columns  # the caller's frame is untouched
    by_name = fme.ame(glm, rh.rename(columns={"expo": "t"}), {"disea": 1}, exposure="t").iloc[0]
    assert by_name["ame"] == pytest.approx(named["ame"], rel=1e-12)
    # exposure=1: the rate per unit of exposure, by request
    b = glm.params.to_numpy()
    rate = fme.ame(glm, bare, {"disea": 1}, exposure=1).iloc[0]
    assert rate["ame"] == pytest.approx(np.mean(np.exp(_design(bare, 1.0) @ b) - np.exp(_design(bare) @ b)), rel=1e-10)


def test_offset_given_as_log_column_is_found(rh):
    model = smf.poisson(FORMULA, data=rh, offset=np.log(rh["expo"])).fit(disp=0)
    row = fme.ame(model, rh, {"disea": 1}).iloc[0]
    b = model.params.to_numpy()
    lo = np.log(rh["expo"].to_numpy())
    assert row["ame"] == pytest.approx(
        np.mean(np.exp(_design(rh, 1.0) @ b + lo) - np.exp(_design(rh) @ b + lo)), rel=1e-10
    )


def test_unmatched_exposure_is_an_error_naming_it(glm, rh):
    with pytest.raises(DataError, match=r"exposure.*'expo'.*exposure=<column name or array"):
        fme.ame(glm, rh.drop(columns="expo"), {"disea": 1})
    # fitted with a bare array: no column can be matched
    arr = smf.glm(
        FORMULA, data=rh.drop(columns="expo"), family=sm.families.Poisson(), exposure=rh["expo"].to_numpy()
    ).fit()
    with pytest.raises(DataError, match="passed as an array"):
        fme.fme(arr, rh.drop(columns="expo"), {"disea": 1})
    ols = smf.ols(FORMULA, data=rh).fit()
    with pytest.raises(ParameterError, match="fitted without an exposure"):
        fme.ame(ols, rh, {"disea": 1}, exposure="expo")
    with pytest.raises(DataError, match="has 5 values for 3,000 rows"):
        fme.ame(glm, rh, {"disea": 1}, exposure=np.ones(5))


def test_dask_data_uses_the_exposure_too(glm, rh):
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(rh, npartitions=3)
    local = fme.ame(glm, rh, {"disea": 1})
    out = fme.ame(glm, ddf, {"disea": 1})
    assert out.iloc[0]["ame"] == pytest.approx(local.iloc[0]["ame"], rel=1e-12)
    assert out.iloc[0]["std_error"] == pytest.approx(local.iloc[0]["std_error"], rel=1e-10)
    assert out.scale == local.scale
    res = fme.fme(glm, ddf, {"disea": 1}, exposure=1)
    assert "exposure=" in res.scale and "scale:" in res.summary()
    with pytest.raises(fme.exceptions.ParameterError, match="on Dask data, exposure= must be a column name"):
        fme.fme(glm, ddf, {"disea": 1}, exposure=rh["expo"].to_numpy())
