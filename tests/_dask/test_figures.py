"""Public figures of Dask results that the report reads instead of the engine's internals: the frame a Dask
detector was fitted on (DaskFMEResult.detector_frame), the default sample size (fme.effects.DASK_SAMPLE_SIZE)
and the SDs of merged moments (fme.effects.feature_sd)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme.effects import DASK_SAMPLE_SIZE, feature_sd
from fme.exceptions import FeatureError

dd = pytest.importorskip("dask.dataframe")


def _model(d):
    return d["a"].to_numpy() ** 2 + d["b"].to_numpy()


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(8)
    n = 500
    return pd.DataFrame(
        {
            "a": rng.uniform(0, 4, n),
            "b": rng.normal(1e3, 1.0, n),
            "g": pd.Categorical(rng.choice(["u", "v", "w"], n)),
            "extra": rng.normal(size=n),
        }
    )


def _ddf(frame, k=3):
    return dd.from_pandas(frame, npartitions=k, sort=False)


def test_the_envelope_frame_holds_the_reference_bounds_and_levels(frame):
    ref = frame.iloc[:300]
    res = fme.fme(
        _model, _ddf(frame), {"a": 1.0}, extrapolation="envelope", reference_data=_ddf(ref, 2), inference="sample"
    )
    fit = res.detector_frame
    assert isinstance(fit, pd.DataFrame) and list(fit.columns) == list(frame.columns)  # a function: every column
    for c in ("a", "b", "extra"):
        assert (fit[c].min(), fit[c].max()) == (ref[c].min(), ref[c].max())
    assert set(fit["g"].dropna()) == set(ref["g"])
    # a detector fitted on it in memory flags as the Dask one does: the same rows left out
    mem = fme.fme(_model, frame, {"a": 1.0}, extrapolation="envelope", reference_data=fit, inference="sample")
    assert mem.n_extrapolation == res.n_extrapolation > 0
    assert sorted(mem.excluded.index) == sorted(res.excluded.compute().index)


def test_other_detectors_keep_their_seeded_reference_sample(frame):
    from fme._dask.common import reference_sample

    D = _ddf(frame)
    res = fme.fme(
        _model, D, {"a": 1.0}, extrapolation="isolation_forest", random_state=4, sample_size=200, inference="sample"
    )
    fit = res.detector_frame
    assert len(fit) == res.detector_fit["n_fit"] and 150 < len(fit) < 250 and fit.index.isin(frame.index).all()
    pd.testing.assert_frame_equal(fit, frame.loc[fit.index])  # rows of the reference, as they are
    pd.testing.assert_frame_equal(fit, reference_sample(D, 200, 4)[0])  # the engine's own seeded sample
    whole = fme.fme(_model, D, {"a": 1.0}, extrapolation="isolation_forest", random_state=4, inference="sample")
    pd.testing.assert_frame_equal(whole.detector_frame, frame)  # no more rows than sample_size: every row
    assert fme.fme(_model, D, {"a": 1.0}, inference="sample").detector_frame is None


def test_the_default_sample_size():
    from fme._dask.common import FIT_SAMPLE_SIZE, check_sample_size

    assert DASK_SAMPLE_SIZE == FIT_SAMPLE_SIZE == check_sample_size(None) == 1_000_000


def test_feature_sd_equals_pandas_and_the_merged_moments(frame):
    from fme._dask.steps import lazy_moments

    data = frame.copy()
    data.loc[[3, 7], "a"] = [np.nan, np.inf]
    got = feature_sd(_ddf(data, 4), ["a", "b", "extra"])
    mem = feature_sd(data, ["a", "b", "extra"])
    assert list(got.index) == ["a", "b", "extra"] and got["n"].tolist() == [498, 500, 500] == mem["n"].tolist()
    finite = data["a"][np.isfinite(data["a"])]
    assert mem.at["a", "sd"] == pytest.approx(np.std(finite, ddof=1), rel=1e-14)
    # SD of values near 1e3 from merged moments: the in-memory two-pass SD
    np.testing.assert_allclose(
        got["sd"], [np.std(finite, ddof=1), np.std(data["b"], ddof=1), np.std(data["extra"], ddof=1)], rtol=1e-12
    )
    np.testing.assert_allclose(got["sd"], mem["sd"], rtol=1e-12)
    merged = lazy_moments(_ddf(data, 4), ["a", "b", "extra"]).compute()
    np.testing.assert_array_equal(got["sd"].to_numpy(), merged.sd(ddof=1))  # the engine's own route
    one = feature_sd(data.iloc[:1], ["a"])
    assert one.at["a", "n"] == 1 and np.isnan(one.at["a", "sd"])
    assert feature_sd(data, []).empty
    with pytest.raises(FeatureError, match="lack"):
        feature_sd(_ddf(data), ["zz"])
    with pytest.raises(FeatureError, match="categorical"):
        feature_sd(data, ["g"])
