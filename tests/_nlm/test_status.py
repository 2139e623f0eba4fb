"""The NLMs' statuses in one compiled pass equal the rules written in NumPy, on every kind of value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import fme
from fme._nlm.evaluate import NLM_STATUS, classify
from fme._nlm.status import prediction_spread
from fme.nlm import FLAT_ULPS


def _rules_in_numpy(nlm, sd, f0, f1, flat_tol, err=None, tol=np.inf, spread=None, scale=None):
    """The status rules as NumPy passes over every row (how classify applied them before its kernel)."""
    constant = np.isnan(nlm)
    flat = np.zeros(nlm.shape, dtype=bool)
    if scale is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            flat = ~constant & (sd <= FLAT_ULPS * np.finfo(float).eps * scale)
    if flat_tol > 0:
        if spread is None:
            with np.errstate(over="ignore", invalid="ignore"):
                spread = np.std(np.concatenate([f0, f1]), axis=0)
        flat |= ~constant & (sd <= flat_tol * spread)
    status = np.zeros(nlm.shape, dtype=np.int8)
    if err is not None:
        status[~constant & ~flat & ~(err <= tol)] = NLM_STATUS.index("inaccurate")
    status[flat] = NLM_STATUS.index("flat")
    status[constant] = NLM_STATUS.index("constant")
    return np.where(flat, np.nan, nlm), status


_value = st.one_of(st.floats(-2.0, 2.0), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1e-300, 1e-14, 1e300]))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 3),
    st.data(),
    st.sampled_from([0.0, 1e-3, 0.5]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_the_compiled_statuses_are_the_rules_in_numpy(k, data, flat_tol, with_scale, with_err, with_spread):
    n = data.draw(st.integers(0, 40))
    shape = (n,) if k == 1 else (n, k)
    draw = lambda: data.draw(arrays(np.float64, shape, elements=_value))  # noqa: E731
    nlm, sd, f0, f1 = draw(), np.abs(draw()), draw(), draw()
    scale = np.abs(draw()) if with_scale else None
    err, tol = (np.abs(draw()), 1e-3) if with_err else (None, np.inf)
    spread = None  # known beyond these rows (a Dask partition's), one per output, else found from f0 and f1
    if with_spread:
        spread = np.abs(data.draw(arrays(np.float64, (k,), elements=_value)))
        spread = spread[0] if k == 1 else spread
    want = _rules_in_numpy(nlm, sd, f0, f1, flat_tol, err, tol, spread, scale)
    for codes in (True, False):
        got = classify(nlm, sd, f0, f1, flat_tol, err, tol, spread=spread, scale=scale, codes=codes)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[0].shape == nlm.shape
        np.testing.assert_array_equal(got[1], want[1] if codes else np.asarray(NLM_STATUS, dtype=object)[want[1]])


@pytest.mark.parametrize("threads", [1, 2])
def test_the_spread_found_beside_the_nlm_is_the_one_found_after_it(monkeypatch, threads):
    """The relative flat-path test's scale, computed on a spare thread while the NLM runs, gives the statuses
    and NLMs of one computed after it on the caller's thread."""
    import fme._utils.threads as th

    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["a", "b", "c"])

    def model(d: pd.DataFrame) -> np.ndarray:
        x = d.to_numpy()
        return np.where(x[:, 1] > 0.8, 3.0, np.tanh(x[:, 0]) + 1e-9 * x[:, 2])

    want = fme.fme(model, X, {"a": 0.5}, nlm=True, nlm_flat_tol=1e-3).results
    monkeypatch.setattr(th, "thread_count", lambda: threads)
    got = fme.fme(model, X, {"a": 0.5}, nlm=True, nlm_flat_tol=1e-3).results
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert (got["nlm_status"] == "flat").any() and (got["nlm_status"] == "ok").any()
    spread = prediction_spread(model(X), model(X.assign(a=X["a"] + 0.5)))
    assert spread == np.std(np.concatenate([model(X), model(X.assign(a=X["a"] + 0.5))]))
