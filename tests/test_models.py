"""fme.models: what fme knows of a model, the same answers as the model adapters give."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fme import _adapters, models


@pytest.fixture(scope="module")
def poisson():
    smf = pytest.importorskip("statsmodels.formula.api")
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(4)
    n = 400
    d = pd.DataFrame({"x": rng.normal(size=n), "g": rng.integers(0, 2, n)})
    mu = np.exp(0.3 + 0.5 * d["x"] + 0.4 * d["g"])
    d["y"] = rng.negative_binomial(2, 2 / (2 + mu))  # overdispersed counts: a dispersion above 1
    return smf.glm("y ~ x + C(g)", data=d, family=sm.families.Poisson()).fit()


@pytest.fixture(scope="module")
def forest():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=100), "b": rng.normal(size=100)})
    return RandomForestRegressor(n_estimators=5, random_state=0).fit(X, X["a"] - X["b"])


def test_identity_and_packages(poisson, forest):
    assert models.fingerprint(forest) == _adapters.fingerprint(forest)
    assert models.fingerprint((poisson, [1, 2])) == _adapters.fingerprint((poisson, [1, 2]))
    assert models.fingerprint(forest) != models.fingerprint(poisson)
    assert models.model_modules(forest) == {"sklearn"}
    assert {"statsmodels"} <= models.model_modules(poisson) and models.model_modules(poisson) & {"patsy", "formulaic"}
    assert models.class_name(forest) == "RandomForestRegressor"
    assert models.formula_categoricals(poisson) == {"g": "treatment coding (C() in the model formula)"}
    assert models.formula_categoricals(forest) == {}


def test_dispersion_and_its_scaled_copy(poisson, forest):
    d = models.glm_dispersion(poisson)
    resid = np.asarray(poisson.resid_pearson)
    assert d["family"] == "Poisson" and d["df_resid"] == poisson.df_resid == 397
    assert d["dispersion"] == pytest.approx(float(resid @ resid) / 397, rel=1e-12) and d["dispersion"] > 1
    assert models.glm_dispersion(forest) is None
    scaled = models.dispersion_scaled_copy(poisson, d["dispersion"])
    np.testing.assert_allclose(
        np.asarray(scaled.cov_params()), np.asarray(poisson.cov_params()) * d["dispersion"], rtol=1e-14
    )
    np.testing.assert_array_equal(np.asarray(scaled.params), np.asarray(poisson.params))
    assert models.scaled_dispersion(scaled) == d["dispersion"] and models.scaled_dispersion(poisson) is None
    assert models.dispersion_scaled_copy(scaled, 5.0) is scaled  # never scaled twice


def test_refit_support(poisson, forest):
    assert models.refit_support(forest) == (True, "")
    assert models.refit_support(poisson) == _adapters.adapt(poisson, None).refit_support()
    no = models.refit_support(lambda d: d["a"].to_numpy())
    assert not no and isinstance(no, models.Support)
    assert no.reason == _adapters.adapt(lambda d: d, None).refit_support().reason
    assert no.reason.startswith("cannot refit a ")
