"""Bootstrap inference (fme.inference.bootstrap): agreement with the delta method, seeds, failures, coverage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import fme
from fme.exceptions import DataError, ModelError, ParameterError

REFS = Path(__file__).parents[1] / "fixtures" / "marginaleffects"


def add_square(X: pd.DataFrame) -> pd.DataFrame:
    return X.assign(age2=X["age"] ** 2)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(REFS / "data.csv")


@pytest.fixture(scope="module")
def pipe(data):
    X = data[["age", "income"]]
    return make_pipeline(FunctionTransformer(add_square), LinearRegression()).fit(X, data["y"])


def test_pipeline_bootstrap_se_close_to_hc0_delta(data, pipe):
    """The pipeline is the OLS y ~ age + age^2 + income: its bootstrap SE (pairs bootstrap, heteroskedasticity
    robust) must be within 20% of the HC0 delta-method SE of the same AME."""
    X, y = data[["age", "income"]], data["y"]
    ols = smf.ols("y ~ age + I(age**2) + income", data).fit(cov_type="HC0")
    delta = fme.ame(ols, data, {"age": 1, "income": 0.5})
    boot = fme.ame(
        pipe, X, {"age": 1, "income": 0.5}, bootstrap={"X": X, "y": y, "n_resamples": 200, "random_state": 0}
    )
    np.testing.assert_allclose(boot["ame"], delta["ame"], rtol=1e-9)
    assert (boot["inference"] == "bootstrap").all() and (delta["inference"] == "delta").all()
    ratio = boot["std_error"].to_numpy() / delta["std_error"].to_numpy()
    assert np.all(np.abs(ratio - 1) < 0.2), ratio
    # percentile interval around the estimate, p-value from z = ame / se
    assert (boot["conf_low"] < boot["ame"]).all() and (boot["ame"] < boot["conf_high"]).all()
    np.testing.assert_allclose(boot["statistic"], boot["ame"] / boot["std_error"], rtol=1e-12)


def test_same_seed_same_numbers_for_any_n_jobs(data, pipe):
    X, y = data[["age", "income"]], data["y"]
    spec = {"X": X, "y": y, "n_resamples": 16, "random_state": 7}
    one = fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "n_jobs": 1})
    two = fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "n_jobs": 2})
    pd.testing.assert_frame_equal(one, two)
    other = fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "random_state": 8})
    assert other["std_error"].iloc[0] != one["std_error"].iloc[0]
    res = fme.fme(pipe, X, {"age": 1}, bootstrap={**spec, "n_jobs": 2})
    assert res.inference == "bootstrap" and res.inference_rows.draws.shape == (len(X), 16)
    assert res.std_error == pytest.approx(one["std_error"].iloc[0], rel=1e-12)


def test_normal_ci_and_by_groups_share_the_refits(data, pipe):
    X, y = data[["age", "income", "g"]], data["y"]
    spec = {"X": X[["age", "income"]], "y": y, "n_resamples": 30, "random_state": 1, "ci": "normal"}
    out = fme.ame(pipe, X, {"age": 1}, by="g", bootstrap=spec)
    from scipy import stats

    q = stats.norm.ppf(0.975)
    np.testing.assert_allclose(out["conf_high"] - out["ame"], q * out["std_error"], rtol=1e-12)
    pw = fme.ame(pipe, X, {"age": 1}, by="g", hypothesis="pairwise", bootstrap=spec)
    assert list(pw["hypothesis"]) == ["(b) - (a)", "(c) - (a)", "(c) - (b)"]
    np.testing.assert_allclose(pw["ame"].iloc[0], out["ame"].iloc[1] - out["ame"].iloc[0], rtol=1e-12)


def test_statsmodels_formula_bootstrap(data):
    ols = smf.ols("y ~ age + I(age**2) + income", data).fit(cov_type="HC0")
    boot = fme.ame(
        ols, data, {"age": 1}, inference="bootstrap", bootstrap={"data": data, "n_resamples": 100, "random_state": 3}
    )
    delta = fme.ame(ols, data, {"age": 1})
    assert boot["inference"].iloc[0] == "bootstrap"
    assert abs(boot["std_error"].iloc[0] / delta["std_error"].iloc[0] - 1) < 0.2


class Flaky(RegressorMixin, BaseEstimator):
    """Linear regression that refuses resamples whose first target value is above 1.5."""

    def fit(self, X, y):
        if np.asarray(y)[0] > 1.5:
            raise RuntimeError("refused this resample")
        self.lr_ = LinearRegression().fit(X, y)
        return self

    def predict(self, X):
        return self.lr_.predict(X)


def test_failed_refits_are_counted_and_reported(data):
    X, y = data[["age", "income"]], data["y"]
    model = Flaky().fit(X.iloc[1:], y.iloc[1:]) if y.iloc[1] <= 1.5 else Flaky().fit(X.iloc[2:], y.iloc[2:])
    with pytest.warns(RuntimeWarning, match=r"(\d+) of 40 bootstrap refits failed.*refused this resample"):
        res = fme.fme(model, X, {"age": 1}, bootstrap={"X": X, "y": y, "n_resamples": 40, "random_state": 0})
    rows = res.inference_rows
    assert rows.n_failed > 0 and rows.draws.shape[1] == 40 - rows.n_failed
    assert rows.errors == ("RuntimeError: refused this resample",)
    # the count is the number of resamples whose first drawn target exceeds 1.5, drawn as the kernel draws
    seeds = np.random.SeedSequence(0).spawn(40)
    expected = sum(y.to_numpy()[np.random.default_rng(s).integers(0, len(y), len(y))][0] > 1.5 for s in seeds)
    assert rows.n_failed == expected


def test_bootstrap_errors(data, pipe):
    X, y = data[["age", "income"]], data["y"]
    with pytest.raises(ParameterError, match="needs \\{'X'"):
        fme.ame(pipe, X, {"age": 1}, bootstrap={"n_resamples": 10})
    with pytest.raises(ParameterError, match="unknown bootstrap key"):
        fme.ame(pipe, X, {"age": 1}, bootstrap={"X": X, "y": y, "B": 10})
    with pytest.raises(DataError, match="must match"):
        fme.ame(pipe, X, {"age": 1}, bootstrap={"X": X, "y": y.iloc[:10]})
    with pytest.raises(ModelError, match="cannot refit"):
        fme.ame(lambda d: d["age"] * 1.0, X, {"age": 1}, bootstrap={"X": X, "y": y})
    with pytest.raises(ParameterError, match="n_resamples"):
        fme.ame(pipe, X, {"age": 1}, bootstrap={"X": X, "y": y, "n_resamples": 1})


def f_true(x: np.ndarray) -> np.ndarray:
    return 1.0 + 0.8 * x - 0.3 * x**2


@pytest.mark.slow
def test_bootstrap_and_delta_coverage():
    """On y = 1 + 0.8 x - 0.3 x^2 + e (heteroskedastic e), the 95% bootstrap (percentile, pairs) and
    HC0 delta intervals of the AME of x + 1 cover the true AME = mean f(x + 1) - f(x) over the sample
    in 90-98% of 150 replications."""
    rng = np.random.default_rng(12)
    n, reps, B = 200, 150, 100
    hit_boot = hit_delta = 0
    for r in range(reps):
        x = rng.uniform(-2, 2, n)
        y = f_true(x) + rng.normal(0, 0.5 + 0.25 * np.abs(x), n)
        d = pd.DataFrame({"x": x, "y": y})
        truth = float(np.mean(f_true(x + 1) - f_true(x)))
        pipe = make_pipeline(FunctionTransformer(lambda X: X.assign(x2=X["x"] ** 2)), LinearRegression())
        pipe.fit(d[["x"]], y)
        b = fme.ame(
            pipe, d[["x"]], {"x": 1}, bootstrap={"X": d[["x"]], "y": y, "n_resamples": B, "random_state": r}
        ).iloc[0]
        hit_boot += b["conf_low"] <= truth <= b["conf_high"]
        ols = smf.ols("y ~ x + I(x**2)", d).fit(cov_type="HC0")
        dl = fme.ame(ols, d, {"x": 1}).iloc[0]
        hit_delta += dl["conf_low"] <= truth <= dl["conf_high"]
    assert 0.90 <= hit_boot / reps <= 0.98, hit_boot / reps
    assert 0.90 <= hit_delta / reps <= 0.98, hit_delta / reps


def _hand_draws(model, X_train, y_train, X0, X1, B, random_state):
    """Per-row bootstrap fMEs by hand: the documented seeds, clone + fit on the resample, predict."""
    from sklearn.base import clone

    out = []
    for seed in np.random.SeedSequence(random_state).spawn(B):
        idx = np.random.default_rng(seed).integers(0, len(X_train), len(X_train))
        refit = clone(model).fit(X_train.iloc[idx], y_train.iloc[idx])
        out.append(refit.predict(X1) - refit.predict(X0))
    return np.column_stack(out)


def test_ame_keeps_only_group_averages_with_the_same_numbers(data, pipe, monkeypatch):
    """ame() knows its groups up front: no n x B per-row draws are allocated, and the group averages of
    every refit are exactly those of the per-row draws fme() stores (and of refits done by hand)."""
    import fme.inference as fi
    import fme.inference.bootstrap as fb

    X, y = data[["age", "income", "g"]], data["y"]
    spec = {"X": X[["age", "income"]], "y": y, "n_resamples": 25, "random_state": 4}
    res = fme.fme(pipe, X, {"age": 1}, bootstrap=spec)
    codes, keys = X["g"].astype("category").cat.codes.to_numpy(), sorted(X["g"].unique())
    want = res.inference_rows.average(codes, len(keys))
    hand = _hand_draws(
        pipe, X[["age", "income"]], y, X[["age", "income"]], X[["age", "income"]].assign(age=X["age"] + 1), 25, 4
    )
    np.testing.assert_allclose(res.inference_rows.draws, hand, rtol=1e-12, atol=1e-12)

    def refuse(n, B, limit):
        raise AssertionError(f"an {n} x {B} draws array was allocated")

    monkeypatch.setattr(fb, "alloc_draws", refuse)
    monkeypatch.setattr(fi, "alloc_draws", refuse)
    by = fme.ame(pipe, X, {"age": 1}, by="g", bootstrap=spec)
    assert by["g"].tolist() == keys
    table = want.table()
    for col in ["std_error", "statistic", "p_value", "conf_low", "conf_high"]:
        np.testing.assert_array_equal(by[col].to_numpy(dtype=float), table[col].to_numpy(dtype=float))
    pw = fme.ame(pipe, X, {"age": 1}, by="g", hypothesis="pairwise", bootstrap=spec)
    L = np.array([[-1.0, 1, 0], [-1, 0, 1], [0, -1, 1]])
    np.testing.assert_array_equal(
        pw["std_error"].to_numpy(dtype=float), want.contrast(L).table()["std_error"].to_numpy()
    )
    with pytest.raises(AssertionError, match="draws array was allocated"):
        fme.fme(pipe, X, {"age": 1}, bootstrap=spec)


def test_draws_beyond_memory_limit_live_in_a_memory_map_with_the_same_numbers(data, pipe):
    X, y = data[["age", "income", "g"]], data["y"]
    spec = {"X": X[["age", "income"]], "y": y, "n_resamples": 12, "random_state": 9}
    ram = fme.fme(pipe, X, {"age": 1, "income": -0.5}, bootstrap=spec)
    disk = fme.fme(pipe, X, {"age": 1, "income": -0.5}, bootstrap={**spec, "memory_limit": 0})
    assert not isinstance(ram.inference_rows.draws, np.memmap)
    assert isinstance(disk.inference_rows.draws, np.memmap) and disk.inference_rows.draws.shape == (len(X), 12)
    np.testing.assert_array_equal(disk.inference_rows.draws, ram.inference_rows.draws)
    pd.testing.assert_frame_equal(disk.tidy(), ram.tidy(), check_exact=True)
    # cAME leaves and subsets (partition_stability) average the stored rows: same numbers, still mapped
    a = fme.came(ram, features=["age", "income"], method="cart", n_partitions=3).leaves
    b = fme.came(disk, features=["age", "income"], method="cart", n_partitions=3).leaves
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    sub = disk.inference_rows.take(np.arange(0, len(X), 2))
    assert isinstance(sub.draws, np.memmap)
    np.testing.assert_array_equal(sub.draws, ram.inference_rows.draws[::2])
    one_fits = fme.fme(pipe, X, {"age": 1}, bootstrap={**spec, "memory_limit": 8 * len(X) * 12})
    assert not isinstance(one_fits.inference_rows.draws, np.memmap)
    with pytest.raises(ParameterError, match="memory_limit must be a number of bytes"):
        fme.fme(pipe, X, {"age": 1}, bootstrap={**spec, "memory_limit": "1GB"})


def test_failed_refits_leave_contiguous_draws_and_are_reported_by_ame(data):
    X, y = data[["age", "income"]], data["y"]
    model = Flaky().fit(X.iloc[1:], y.iloc[1:]) if y.iloc[1] <= 1.5 else Flaky().fit(X.iloc[2:], y.iloc[2:])
    spec = {"X": X, "y": y, "n_resamples": 30, "random_state": 2}
    with pytest.warns(RuntimeWarning, match="bootstrap refits failed"):
        res = fme.fme(model, X, {"age": 1}, bootstrap={**spec, "memory_limit": 0})
    draws = res.inference_rows.draws
    assert draws.flags["C_CONTIGUOUS"] and draws.shape[1] == 30 - res.inference_rows.n_failed
    seeds = np.random.SeedSequence(2).spawn(30)
    ok = [s for s in seeds if y.to_numpy()[np.random.default_rng(s).integers(0, len(y), len(y))][0] <= 1.5]
    hand = []
    for s in ok:
        idx = np.random.default_rng(s).integers(0, len(y), len(y))
        lr = LinearRegression().fit(X.iloc[idx], y.iloc[idx])
        hand.append(lr.predict(X.assign(age=X["age"] + 1)) - lr.predict(X))
    np.testing.assert_allclose(draws, np.column_stack(hand), rtol=1e-12, atol=1e-12)
    # which resamples the columns are (positions in the seed order): what pairs two models' refits
    kept = [
        b for b, s in enumerate(seeds) if y.to_numpy()[np.random.default_rng(s).integers(0, len(y), len(y))][0] <= 1.5
    ]
    np.testing.assert_array_equal(res.inference_rows.info["kept"], kept)
    with pytest.warns(RuntimeWarning, match="bootstrap refits failed"):
        out = fme.ame(model, X, {"age": 1}, bootstrap=spec)
    info = out.bootstrap
    assert info["n_resamples"] == 30 and info["n_failed"] == 30 - len(ok)
    assert info["errors"] == ["RuntimeError: refused this resample"]


def test_bootstrap_memory_is_bounded(data, pipe):
    """Traced peak memory: ame() with by-groups stays well below the 8 n B bytes of per-row draws, as does
    fme() with memory_limit=0 (draws in a temporary memory map); fme() in RAM holds them."""
    import tracemalloc

    X, y = data[["age", "income"]], data["y"]
    big = pd.concat([data[["age", "income", "g"]]] * 100, ignore_index=True)
    B = 64
    draws_bytes = 8 * len(big) * B
    spec = {"X": X, "y": y, "n_resamples": B, "random_state": 0}
    peaks = {}
    for name, call in [
        ("ame", lambda: fme.ame(pipe, big, {"age": 1}, by="g", bootstrap=spec)),
        ("fme_ram", lambda: fme.fme(pipe, big, {"age": 1}, bootstrap=spec)),
        ("fme_map", lambda: fme.fme(pipe, big, {"age": 1}, bootstrap={**spec, "memory_limit": 0})),
    ]:
        tracemalloc.start()
        try:
            call()
            peaks[name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks["fme_ram"] > draws_bytes, peaks
    assert peaks["ame"] < 0.5 * draws_bytes, peaks
    assert peaks["fme_map"] < 0.5 * draws_bytes, peaks


class Rescaling(RegressorMixin, BaseEstimator):
    """A linear regression whose predict rescales its input frame in place."""

    def fit(self, X, y):
        self.lr_ = LinearRegression().fit(X, y)
        self.feature_names_in_ = self.lr_.feature_names_in_
        return self

    def predict(self, X):
        out = self.lr_.predict(X)
        X["age"] = X["age"] * 10.0
        return out


def test_refits_whose_predict_modifies_its_input_each_get_their_own_frame(data):
    X, y = data[["age", "income"]], data["y"]
    before = X.copy()
    spec = {"X": X, "y": y, "n_resamples": 8, "random_state": 3}
    got = fme.fme(Rescaling().fit(X, y), X, {"age": 1}, bootstrap=spec).inference_rows.draws
    want = fme.fme(LinearRegression().fit(X, y), X, {"age": 1}, bootstrap=spec).inference_rows.draws
    np.testing.assert_array_equal(got, want)
    pd.testing.assert_frame_equal(X, before)


def test_bootstrap_options_validated_up_front(data, pipe):
    X, y = data[["age", "income"]], data["y"]
    spec = {"X": X, "y": y, "n_resamples": 4}
    cases = [
        ({"random_state": "x"}, "bootstrap random_state must be a non-negative integer or None, got 'x'"),
        ({"random_state": -1}, "bootstrap random_state must be a non-negative integer"),
        ({"n_jobs": "2"}, r"bootstrap n_jobs must be None or a non-zero integer \(-1: all cores\), got '2'"),
        ({"n_jobs": 0}, "bootstrap n_jobs must be None or a non-zero integer"),
        ({"progress": "yes"}, "bootstrap progress must be True, False or None"),
        ({"X": "train.csv"}, "bootstrap X must be a DataFrame or 2-d array of training features, got str"),
        ({"X": 3}, "bootstrap X must be a DataFrame or 2-d array of training features, got int"),
        ({"y": 5}, "bootstrap y must be a Series or 1-d array of training targets, got int"),
    ]
    for extra, message in cases:
        with pytest.raises(ParameterError, match=message):
            fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, **extra})


def test_progress_bar_shows_the_refits(data, pipe, capsys):
    X, y = data[["age", "income"]], data["y"]
    spec = {"X": X, "y": y, "n_resamples": 5, "random_state": 0}
    quiet = fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "progress": False})
    assert "bootstrap refits" not in capsys.readouterr().err
    loud = fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "progress": True})
    err = capsys.readouterr().err
    assert "bootstrap refits" in err and "5/5" in err
    pd.testing.assert_frame_equal(quiet, loud)


def test_parallel_refits_take_no_more_workers_than_idle_cores(monkeypatch):
    """On a machine whose other processes keep every core busy, n_jobs=2 runs the refits in this process (the
    cut is recorded), with the same numbers as n_jobs=None."""
    import os

    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = X.a + rng.normal(size=200)
    model = Ridge().fit(X, y)
    spec = {"X": X, "y": y, "n_resamples": 30, "random_state": 3, "progress": False}
    import fme.inference.execution as execution

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0, 3.0, 3.0))  # two busy processes beside this one
    # refits slow enough that two idle cores would run them on threads: only the busy cores keep them here
    monkeypatch.setattr(execution, "_probe_seconds", lambda wall, cpu: (0.5, 0.5))
    busy = fme.fme(model, X, {"a": 1.0}, bootstrap={**spec, "n_jobs": 2, "backend": "threads"}).inference_rows
    assert busy.info["execution"]["cores_free"] == 1.0 and busy.info["execution"]["mode"] == "sequential"
    alone = fme.fme(model, X, {"a": 1.0}, bootstrap={**spec, "n_jobs": None}).inference_rows
    np.testing.assert_array_equal(busy.draws, alone.draws)


def test_a_weighted_glm_refusal_names_its_weights_and_only_the_relevant_advice():
    """A GLM's `weights` attribute is the product of the user's weights: the message names the argument given
    (var_weights) and advises the delta method, nothing about training-data columns."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(1)
    d = pd.DataFrame({"a": rng.normal(size=80)})
    d["y"] = rng.poisson(np.exp(0.3 * d["a"]))
    glm = smf.glm("y ~ a", data=d, family=sm.families.Poisson(), var_weights=np.full(80, 2.0)).fit()
    with pytest.raises(fme.ModelError) as err:
        fme.ame(glm, d, {"a": 1.0}, bootstrap={"data": d})
    assert str(err.value) == (
        "bootstrap refits of a GLM with var_weights are not supported (the weights are not a "
        "column the formula can take again); use inference='delta'."
    )


def test_a_pandas_training_y_is_matched_to_the_training_X_by_label(data, pipe):
    X, y = data[["age", "income"]], data["y"]
    spec = {"X": X, "n_resamples": 8, "random_state": 3, "ci": "normal"}
    ref = fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "y": y.to_numpy()})
    got = fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "y": y.sample(frac=1, random_state=4)})
    np.testing.assert_array_equal(got["std_error"].to_numpy(), ref["std_error"].to_numpy())
    np.testing.assert_array_equal(got["conf_low"].to_numpy(), ref["conf_low"].to_numpy())
    with pytest.raises(DataError, match=r"index labels of `bootstrap X` and `bootstrap y` differ"):
        fme.ame(pipe, X, {"age": 1}, bootstrap={**spec, "y": y.set_axis(y.index + 1)})
