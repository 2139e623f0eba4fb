"""RefitCache: bootstrap calls on the same model and resamples refit once; the draws equal refitting again."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge

import fme
from fme.inference import RefitCache


class CountingRidge(Ridge):
    """A Ridge that counts its fits (class-wide: bootstrap refits clone it) and fails on resamples whose first
    row's label is a multiple of 4 (a refit that fails, deterministically; the fit on all rows, in order, never
    does)."""

    fits = 0

    def fit(self, X, y, sample_weight=None):
        CountingRidge.fits += 1
        if not X.index.is_monotonic_increasing and X.index[0] % 4 == 0:
            raise ValueError("first row's label is a multiple of 4")
        return super().fit(X, y, sample_weight)


@pytest.fixture()
def case():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    y = X["a"] - 0.5 * X["b"] + rng.normal(size=120)
    model = CountingRidge().fit(X, y)
    spec = {"X": X, "y": y, "n_resamples": 12, "random_state": 5, "progress": False}
    return model, X, y, spec


def _fme(model, X, steps, spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fme.fme(model, X, steps, bootstrap=spec)


def test_a_second_call_reuses_the_refits_and_gives_the_same_draws(case):
    model, X, y, spec = case
    plain = [_fme(model, X, {f: 1.0}, spec) for f in ("a", "b")]
    cache = RefitCache()
    CountingRidge.fits = 0
    first = _fme(model, X, {"a": 1.0}, {**spec, "cache": cache})
    assert CountingRidge.fits == 12
    # training data of equal content (another object) find the same refits
    second = _fme(model, X, {"b": 1.0}, {**spec, "X": X.copy(), "y": y.copy(), "cache": cache})
    assert CountingRidge.fits == 12  # no refit
    for p, q in zip(plain, (first, second)):
        np.testing.assert_array_equal(p.inference_rows.draws, q.inference_rows.draws)
        assert p.inference_rows.n_failed == q.inference_rows.n_failed > 0  # the failed refits fail again
        assert p.inference_rows.errors == q.inference_rows.errors
    assert second.inference_rows.info["execution"]["mode"] == "cached"
    assert cache.reused == cache.fitted == 12 - first.inference_rows.n_failed
    assert cache.nbytes > 0 and cache.skipped == 0


def test_other_resamples_or_data_refit(case):
    model, X, y, spec = case
    cache = RefitCache()
    _fme(model, X, {"a": 1.0}, {**spec, "cache": cache})
    CountingRidge.fits = 0
    _fme(model, X, {"a": 1.0}, {**spec, "random_state": 6, "cache": cache})
    assert CountingRidge.fits == 12
    _fme(model, X, {"a": 1.0}, {**spec, "y": y + 1.0, "cache": cache})
    assert CountingRidge.fits == 24
    other = CountingRidge().fit(X, y)  # another model object: its own refits
    _fme(other, X, {"a": 1.0}, {**spec, "cache": cache})
    assert CountingRidge.fits == 37  # its own fit above, and 12 refits


def test_beyond_the_memory_budget_nothing_is_kept_and_the_numbers_stay(case):
    model, X, y, spec = case
    cache = RefitCache(memory_limit=0)
    a = _fme(model, X, {"a": 1.0}, {**spec, "cache": cache})
    CountingRidge.fits = 0
    b = _fme(model, X, {"a": 1.0}, {**spec, "cache": cache})
    assert CountingRidge.fits == 12 and cache.skipped == 1 and cache.nbytes == 0 and cache.reused == 0
    np.testing.assert_array_equal(a.inference_rows.draws, b.inference_rows.draws)


def test_the_cache_must_be_a_refit_cache(case):
    model, X, y, spec = case
    with pytest.raises(fme.ParameterError, match=r"bootstrap cache must be a fme.inference.RefitCache, got dict"):
        _fme(model, X, {"a": 1.0}, {**spec, "cache": {}})


def test_ame_rows_share_the_refits_of_fme(case):
    """fme.ame's bootstrap (group averages) reads the same cache as fme.fme."""
    model, X, y, spec = case
    cache = RefitCache()
    per_row = _fme(model, X, {"a": 1.0}, {**spec, "cache": cache})
    CountingRidge.fits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fme.ame(model, X, {"a": 1.0}, bootstrap={**spec, "cache": cache})
    assert CountingRidge.fits == 0
    assert table["std_error"].iloc[0] == pytest.approx(
        float(per_row.inference_rows.draws.mean(axis=0).std(ddof=1)), rel=1e-12
    )


def _two_effect_report(tmp_path, case, engine: str = "", data=None) -> list:
    """run_effects of a report with two bootstrap effects (10 resamples) of the case's model, counting fits from 0;
    ``engine``: an extra top-level line (``engine: dask``), ``data``: the evaluation rows (default: the case's)."""
    pytest.importorskip("jsonschema")
    from fme.report.analysis import run_effects
    from fme.report.inputs.config import load_config

    model, X, y, _ = case
    X.assign(y=y).to_csv(tmp_path / "train.csv", index=False)
    X.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "c.yaml").write_text(
        "title: T\nowner: O\nintended_use: U\nmodel: {joblib: m.joblib}\ndata: {path: data.csv}\ntarget: y\n"
        f"{engine}inference: {{method: bootstrap, train_data: {{path: train.csv}}, n_resamples: 10}}\neffects:\n"
        "  - {id: a, steps: {a: 1}, extrapolation: none, partition: false, stability: false, nlm: false}\n"
        "  - {id: b, steps: {b: 1}, extrapolation: none, partition: false, stability: false, nlm: false}\n",
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    data = X if data is None else data
    CountingRidge.fits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_effects(model, data, data, cfg, tmp_path / "out")


def test_a_report_refits_the_model_once_for_all_its_bootstrap_effects(tmp_path, case):
    model, X, y, _ = case
    groups = _two_effect_report(tmp_path, case)
    # one check refit on all training rows, then the 10 resamples once (the second effect reuses them)
    assert CountingRidge.fits == 1 + 10
    spec = {
        "X": pd.read_csv(tmp_path / "train.csv").drop(columns="y"),
        "y": pd.read_csv(tmp_path / "train.csv")["y"],
        "n_resamples": 10,
        "random_state": 0,
        "progress": False,
        "ci": "percentile",
    }
    for g, f in zip(groups, ("a", "b")):
        mc = g["variants"][0]["model_ci"]
        draws = _fme(model, X, {f: 1.0}, spec).inference_rows.draws
        assert mc["std_error"] == pytest.approx(float(draws.mean(axis=0).std(ddof=1)), rel=1e-12)


def test_dask_data_share_the_refits_with_pandas_and_each_other(case):
    """On Dask data the bootstrap takes its refits from the cache too (kept by a pandas call or an earlier Dask
    call on the same model and resamples): no refit, and the same standard errors and intervals as without."""
    dd = pytest.importorskip("dask.dataframe")
    model, X, y, spec = case
    lazy = dd.from_pandas(X, npartitions=3)

    def ame(data, steps, boot):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fme.ame(model, data, steps, bootstrap=boot)

    plain = ame(lazy, {"b": 1.0}, spec)
    cache = RefitCache()
    CountingRidge.fits = 0
    _fme(model, X, {"a": 1.0}, {**spec, "cache": cache})
    assert CountingRidge.fits == 12
    shared = ame(lazy, {"b": 1.0}, {**spec, "cache": cache})
    again = ame(lazy, {"c": 1.0}, {**spec, "cache": cache})
    assert CountingRidge.fits == 12  # the pandas call's refits, for both Dask calls
    cols = ["ame", "std_error", "conf_low", "conf_high", "p_value"]
    assert shared[cols].to_numpy().tolist() == plain[cols].to_numpy().tolist()
    assert cache.reused == 2 * cache.fitted and cache.fitted > 0
    assert np.isfinite(again["std_error"]).all()

    fresh = RefitCache()  # a Dask call keeps its refits for the next one
    CountingRidge.fits = 0
    first = ame(lazy, {"b": 1.0}, {**spec, "cache": fresh})
    ame(lazy, {"c": 1.0}, {**spec, "cache": fresh})
    assert CountingRidge.fits == 12 and first[cols].to_numpy().tolist() == plain[cols].to_numpy().tolist()


def test_a_dask_report_refits_the_model_once_for_all_its_bootstrap_effects(tmp_path, case):
    """engine: dask: the all-row bootstrap of every effect (on Dask data) and the sample's share the build's
    refits: the 10 resamples are fitted once for the two effects."""
    dd = pytest.importorskip("dask.dataframe")
    model, X, y, _ = case
    lazy = dd.from_pandas(X, npartitions=2)
    groups = _two_effect_report(tmp_path, case, "engine: dask\n", lazy)
    assert CountingRidge.fits == 1 + 10  # the check refit, then the resamples once for both effects
    spec = {"X": X, "y": y, "n_resamples": 10, "random_state": 0, "progress": False, "ci": "percentile"}
    for g, f in zip(groups, ("a", "b")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            own = fme.ame(model, lazy, {f: 1.0}, bootstrap=spec)
        assert g["variants"][0]["model_ci"]["std_error"] == pytest.approx(own["std_error"].iloc[0], rel=1e-12)


def test_the_margins_vocabulary_shares_the_refits(case):
    """fme.avg_comparisons and fme.predictions take their refits from the cache fme.fme filled (and keep theirs
    for fme.fme): no refit, the same standard errors as refitting."""
    model, X, y, spec = case

    def quiet(fn, *a, **k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*a, **k)

    plain_cmp = quiet(fme.avg_comparisons, model, X, {"a": 1.0}, comparison="ratio", bootstrap=spec)
    plain_pred = quiet(fme.predictions, model, X.head(5), bootstrap=spec)
    cache = RefitCache()
    CountingRidge.fits = 0
    _fme(model, X, {"b": 1.0}, {**spec, "cache": cache})
    assert CountingRidge.fits == 12
    cmp_ = quiet(fme.avg_comparisons, model, X, {"a": 1.0}, comparison="ratio", bootstrap={**spec, "cache": cache})
    pred = quiet(fme.predictions, model, X.head(5), bootstrap={**spec, "cache": cache})
    assert CountingRidge.fits == 12
    cols = ["estimate", "std_error", "conf_low", "conf_high"]
    assert cmp_[cols].to_numpy().tolist() == plain_cmp[cols].to_numpy().tolist()
    assert pred[cols].to_numpy().tolist() == plain_pred[cols].to_numpy().tolist()

    fresh = RefitCache()  # and the other way: the vocabulary's refits serve fme.fme
    CountingRidge.fits = 0
    quiet(fme.predictions, model, X.head(5), bootstrap={**spec, "cache": fresh})
    _fme(model, X, {"b": 1.0}, {**spec, "cache": fresh})
    assert CountingRidge.fits == 12
