"""Bootstrap intervals of the margins vocabulary: predictions, slopes and comparison scales.

Reference: the same seeded refits by hand. fme's bootstrap draws resample b's training rows with
``np.random.default_rng(SeedSequence(random_state).spawn(B)[b]).integers(0, n, n)`` and refits
``sklearn.base.clone(model)`` on them (:mod:`fme.inference.bootstrap`); the draws of an average are the
refitted model's average on the same evaluated rows, so the standard error (SD of the draws) and the
percentile interval (their quantiles) follow exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme

B = 40


@pytest.fixture(scope="module")
def setup():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(31)
    n = 300
    X = pd.DataFrame({"x": rng.normal(size=n), "z": rng.uniform(1, 3, n)})
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.5 * X["x"] - 0.4 * X["z"] + 0.6)))).astype(int)
    clf = LogisticRegression().fit(X, y)
    g = pd.Series(rng.choice(["a", "b"], n), index=X.index)
    spec = {"X": X, "y": y, "n_resamples": B, "random_state": 5, "ci": "percentile"}
    return clf, X, y, g, spec


def _refits(clf, X, y, spec):
    from sklearn.base import clone

    seeds = np.random.SeedSequence(spec["random_state"]).spawn(spec["n_resamples"])
    out = []
    for s in seeds:
        idx = np.random.default_rng(s).integers(0, len(X), len(X))
        out.append(clone(clf).fit(X.iloc[idx], y.iloc[idx]))
    return out


@pytest.fixture(scope="module")
def refits(setup):
    clf, X, y, _, spec = setup
    return _refits(clf, X, y, spec)


def _p(m, X):
    return m.predict_proba(X)[:, 1]


@pytest.mark.filterwarnings("ignore::fme.exceptions.BootstrapWarning")  # 40 refits: a noisy percentile bound
def test_lnratio_bootstrap_se_and_interval_by_hand(setup, refits):
    clf, X, y, _, spec = setup
    out = fme.avg_comparisons(clf, X, {"x": 0.5}, comparison="lnratio_rows", target_class=1, bootstrap=spec).iloc[0]
    X1 = X.assign(x=X["x"] + 0.5)
    draws = np.array([np.mean(np.log(_p(m, X1) / _p(m, X))) for m in refits])
    assert out["inference"] == "bootstrap" and out["n"] == len(X)
    assert out["estimate"] == pytest.approx(np.mean(np.log(_p(clf, X1) / _p(clf, X))), rel=1e-12)
    assert out["std_error"] == pytest.approx(draws.std(ddof=1), rel=1e-10)
    lo, hi = np.quantile(draws, [0.025, 0.975])
    assert out["conf_low"] == pytest.approx(lo, rel=1e-10) and out["conf_high"] == pytest.approx(hi, rel=1e-10)
    # percentile interval: within the draws' range, around the estimate, nested in the wider level's
    assert draws.min() <= out["conf_low"] < out["estimate"] < out["conf_high"] <= draws.max()
    narrow = fme.avg_comparisons(
        clf, X, {"x": 0.5}, comparison="lnratio_rows", target_class=1, bootstrap=spec, conf_level=0.8
    ).iloc[0]
    assert out["conf_low"] <= narrow["conf_low"] < narrow["conf_high"] <= out["conf_high"]
    assert narrow["std_error"] == out["std_error"]
    # the ...avg form: the scale of each refit's two averages
    avg = fme.avg_comparisons(clf, X, {"x": 0.5}, comparison="lnratioavg", target_class=1, bootstrap=spec).iloc[0]
    d_avg = np.array([np.log(_p(m, X1).mean() / _p(m, X).mean()) for m in refits])
    assert avg["std_error"] == pytest.approx(d_avg.std(ddof=1), rel=1e-10)
    plain = fme.avg_comparisons(clf, X, {"x": 0.5}, comparison="lnratio", target_class=1, bootstrap=spec).iloc[0]
    assert plain["estimate"] == avg["estimate"] and plain["std_error"] == avg["std_error"]
    # fme.ame's comparison= hands the bootstrap on
    via_ame = fme.ame(clf, X, {"x": 0.5}, comparison="lnratio_rows", target_class=1, bootstrap=spec).iloc[0]
    assert via_ame["std_error"] == out["std_error"]


@pytest.mark.filterwarnings("ignore::fme.exceptions.BootstrapWarning")
@pytest.mark.parametrize("comparison", ["ratio_rows", "lnor_rows", "lift_rows", "differenceavg", "lnoravg", "lift"])
def test_every_scale_bootstraps_by_hand(setup, refits, comparison):
    clf, X, y, g, spec = setup
    data = X.assign(g=g)
    out = fme.avg_comparisons(
        clf, data, {"x": 1.0}, comparison=comparison, by="g", target_class=1, bootstrap={**spec, "X": X}
    )
    X1 = X.assign(x=X["x"] + 1.0)

    def scale(p1, p0):
        kind = comparison.removesuffix("avg").removesuffix("_rows")
        if not comparison.endswith("_rows"):  # the scale of the two averages (marginaleffects' convention)
            p1, p0 = p1.mean(), p0.mean()
        odds = lambda p: p / (1 - p)
        v = {"ratio": p1 / p0, "lnor": np.log(odds(p1) / odds(p0)), "lift": (p1 - p0) / p0, "difference": p1 - p0}[kind]
        return np.mean(v)

    for _, row in out.iterrows():
        rows = (g == row["g"]).to_numpy()
        draws = np.array([scale(_p(m, X1)[rows], _p(m, X)[rows]) for m in refits])
        assert row["estimate"] == pytest.approx(scale(_p(clf, X1)[rows], _p(clf, X)[rows]), rel=1e-12)
        assert row["std_error"] == pytest.approx(draws.std(ddof=1), rel=1e-10)


@pytest.mark.filterwarnings("ignore::fme.exceptions.BootstrapWarning")
def test_predictions_and_slopes_bootstrap_by_hand(setup, refits):
    clf, X, y, g, spec = setup
    rows = fme.predictions(clf, X, target_class=1, bootstrap=spec)
    per_row = np.column_stack([_p(m, X) for m in refits])
    np.testing.assert_allclose(rows["std_error"], per_row.std(axis=1, ddof=1), rtol=1e-10)
    np.testing.assert_allclose(rows["conf_low"], np.quantile(per_row, 0.025, axis=1), rtol=1e-10)
    assert rows.index.equals(X.index) and (rows["inference"] == "bootstrap").all()
    avg = fme.avg_predictions(clf, X.assign(g=g), by="g", target_class=1, bootstrap={**spec, "X": X})
    for _, row in avg.iterrows():
        sel = (g == row["g"]).to_numpy()
        assert row["std_error"] == pytest.approx(per_row[sel].mean(axis=0).std(ddof=1), rel=1e-10)
    eps = 1e-4 * float(X["z"].max() - X["z"].min())
    lo, hi = X.assign(z=X["z"] - eps / 2), X.assign(z=X["z"] + eps / 2)
    for slope in ("eyex", "eydx", "dyex"):
        out = fme.avg_slopes(clf, X, "z", slope=slope, target_class=1, bootstrap=spec).iloc[0]

        def value(m):
            s = (_p(m, hi) - _p(m, lo)) / eps
            z, f = X["z"].to_numpy(), _p(m, X)
            return np.mean({"eyex": s * z / f, "eydx": s / f, "dyex": s * z}[slope])

        draws = np.array([value(m) for m in refits])
        assert out["estimate"] == pytest.approx(value(clf), rel=1e-10)
        assert out["std_error"] == pytest.approx(draws.std(ddof=1), rel=1e-8)


@pytest.mark.filterwarnings("ignore::fme.exceptions.BootstrapWarning")
def test_dask_bootstrap_equals_pandas(setup):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    clf, X, y, g, spec = setup
    data = X.assign(g=g)
    D = dd.from_pandas(data, npartitions=3, sort=False)
    small = {**spec, "X": X, "n_resamples": 12}
    with dask.config.set(scheduler="synchronous"):
        for call in (
            lambda d: fme.avg_comparisons(
                clf, d, {"x": 0.5}, comparison="lnratio", by="g", target_class=1, bootstrap=small
            ),
            lambda d: fme.avg_predictions(clf, d, target_class=1, bootstrap=small),
            lambda d: fme.avg_slopes(clf, d, "z", slope="eyex", target_class=1, bootstrap=small),
        ):
            a, b = call(data), call(D)
            assert (b["inference"] == "bootstrap").all()
            for c in ("estimate", "std_error", "conf_low", "conf_high"):
                np.testing.assert_allclose(b[c], a[c], rtol=1e-10, err_msg=c)
        # weighted AMEs by group: each refit's weighted sums per chunk
        k = pd.Series(np.arange(len(X)) % 3 + 1.0, index=X.index)
        a = fme.ame(clf, data.assign(k=k), {"x": 0.5}, by="g", wts="k", target_class=1, bootstrap=small)
        b = fme.ame(
            clf,
            dd.from_pandas(data.assign(k=k), npartitions=3, sort=False),
            {"x": 0.5},
            by="g",
            wts="k",
            target_class=1,
            bootstrap=small,
        )
        for c in ("ame", "std_error", "conf_low", "conf_high"):
            np.testing.assert_allclose(b[c], a[c], rtol=1e-10, err_msg=c)
        # a hypothesis over the groups' rows: the refits' joint draws, the same on both
        ha, hb = fme.hypotheses(a, "b1 - b2 = 0"), fme.hypotheses(b, "b1 - b2 = 0")
        assert ha["inference"].iloc[0] == "bootstrap"
        for c in ("estimate", "std_error", "conf_low", "conf_high"):
            np.testing.assert_allclose(hb[c], ha[c], rtol=1e-9, err_msg=c)
        # per-row predictions: the refits fitted once, each chunk predicted with all of them
        pa = fme.predictions(clf, data, target_class=1, bootstrap=small)
        pb = fme.predictions(clf, D, target_class=1, bootstrap=small).compute()
        for c in ("estimate", "std_error", "conf_low", "conf_high"):
            np.testing.assert_allclose(pb[c], pa[c], rtol=1e-10, err_msg=c)


class _Flaky:
    """A least-squares regressor whose prediction fails when its training rows hold an odd number of distinct
    index labels: some refits fail, deterministically per resample."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        A = np.column_stack([np.ones(len(X)), np.asarray(X, dtype=float)])
        self.coef_ = np.linalg.lstsq(A, np.asarray(y, dtype=float), rcond=None)[0]
        self.bad_ = len(np.unique(np.asarray(X.index))) % 2 == 1
        return self

    def predict(self, X):
        if self.bad_:
            raise ValueError("flaky refit")
        return np.column_stack([np.ones(len(X)), np.asarray(X, dtype=float)]) @ self.coef_


def test_failed_refit_predictions_are_counted_and_named():
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"x": rng.normal(size=200)})
    y = 1 + 2 * X["x"] + rng.normal(size=200)
    model = _Flaky().fit(X, y)
    spec = {"X": X, "y": y, "n_resamples": 30, "random_state": 2, "ci": "normal"}
    seeds = np.random.SeedSequence(2).spawn(30)
    odd = sum(len(np.unique(np.random.default_rng(s).integers(0, 200, 200))) % 2 == 1 for s in seeds)
    assert 0 < odd < 28
    with pytest.warns(fme.exceptions.BootstrapWarning, match="flaky refit"):
        out = fme.avg_predictions(model, X, bootstrap=spec)
    assert out.bootstrap["n_failed"] == odd and out.bootstrap["n_resamples"] == 30
    assert out["estimate"].iloc[0] == pytest.approx(model.predict(X).mean(), rel=1e-12)
