"""Champion and challenger: the same effects for a second model on the same rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")


_HEAD = (
    "title: T\nowner: O\nintended_use: U\nmodel: {joblib: a.joblib}\nchallenger: {joblib: b.joblib}\n"
    "data: {path: data.csv}\ntarget: y\n"
)
_EFFECT_X = "effects:\n  - id: x\n    steps: {x: 1}\n    extrapolation: none\n"


def _write_case(tmp_path, champion, challenger, X: pd.DataFrame, settings: str, effect: str) -> None:
    """The champion and challenger as a.joblib and b.joblib, the rows as data.csv, and c.yaml: the common
    header, then ``settings`` (top-level lines), then the effect of x + 1 with ``effect`` (its further lines)."""
    import joblib

    joblib.dump(champion, tmp_path / "a.joblib")
    joblib.dump(challenger, tmp_path / "b.joblib")
    X.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "c.yaml").write_text(_HEAD + settings + _EFFECT_X + effect, encoding="utf-8")


def _case(tmp_path, slope_b: float):
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(4)
    n = 300
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n)})
    d["y"] = 1 + 0.8 * d["x"] + rng.normal(size=n)
    d["y2"] = 1 + slope_b * d["x"] + rng.normal(size=n)
    a = smf.ols("y ~ x + w", data=d).fit()
    b = smf.ols("y2 ~ x + w", data=d).fit()
    _write_case(
        tmp_path,
        a,
        b,
        d[["x", "w"]],
        "inference: delta\n",
        "    partition: false\n    stability: false\n    expect: {sign: '+'}\n",
    )
    return a, b, d


def test_paired_difference_by_hand_and_the_disagreement_sentences(tmp_path):
    from fme.report.analysis import run_effects
    from fme.report.inputs.config import load_config
    from fme.report.present.context import challenger_cells

    a, b, d = _case(tmp_path, -0.6)
    cfg = load_config(tmp_path / "c.yaml")
    X = d[["x", "w"]]
    (g,) = run_effects(a, X, X, cfg, tmp_path / "out")
    c = g["variants"][0]["challenger"]
    # OLS: each AME is the x coefficient; the two fits' delta SEs combine as independent
    assert c["ame"] == pytest.approx(b.params["x"], rel=1e-10)
    assert c["difference"] == pytest.approx(a.params["x"] - b.params["x"], rel=1e-10)
    se = np.hypot(a.bse["x"], b.bse["x"])
    assert c["difference_high"] - c["difference"] == pytest.approx(1.959963984540054 * se, rel=1e-6)
    assert c["difference_inference"].startswith("delta") and c["n_common"] == len(d)
    assert c["sign_disagrees"] and c["contracts"][0]["verdict"] == "not met"
    cells = challenger_cells([g])
    assert any("disagree in sign" in n for n in cells["notes"])
    assert any("contract AME > 0 is met for the champion and not met for the challenger" in n for n in cells["notes"])


def test_a_model_without_covariance_gets_the_paired_fixed_model_interval(tmp_path):
    import joblib
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis import run_effects
    from fme.report.inputs.config import load_config

    a, _, d = _case(tmp_path, 0.8)
    X = d[["x", "w"]]
    lr = LinearRegression().fit(X, d["y2"])
    joblib.dump(lr, tmp_path / "b.joblib")
    cfg = load_config(tmp_path / "c.yaml")
    (g,) = run_effects(a, X, X, cfg, tmp_path / "out")
    c = g["variants"][0]["challenger"]
    diff = a.params["x"] - lr.coef_[0]  # constant per row: no spread over the rows
    assert c["difference"] == pytest.approx(diff, rel=1e-8)
    assert c["difference_inference"] == "fixed model, paired over the rows"
    assert not c["sign_disagrees"]


def test_bootstrap_difference_equals_the_same_seeded_refits_by_hand(tmp_path):
    """Both models refitted on the same resamples (the report's seed): the per-resample AME difference by hand,
    from the same seeds, gives the report's interval to rounding; the challenger's own interval is bootstrap."""
    import warnings

    from scipy import stats
    from sklearn.base import clone
    from sklearn.linear_model import Ridge
    from sklearn.tree import DecisionTreeRegressor

    from fme.report.analysis import run_effects
    from fme.report.inputs.config import load_config

    rng = np.random.default_rng(11)
    n, B, seed = 120, 40, 7
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n)})
    d["y"] = 1 + 0.8 * d["x"] + 0.3 * d["x"] ** 2 + rng.normal(size=n)
    X, y = d[["x", "w"]], d["y"]
    a = Ridge(alpha=1.0).fit(X, y)
    b = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    d.to_csv(tmp_path / "train.csv", index=False)
    for ci in ("percentile", "normal"):
        _write_case(
            tmp_path,
            a,
            b,
            X,
            f"seed: {seed}\ninference: {{method: bootstrap, train_data: {{path: train.csv}}, "
            f"n_resamples: {B}, ci: {ci}}}\n",
            "    partition: false\n    stability: false\n",
        )
        cfg = load_config(tmp_path / "c.yaml")
        train = pd.read_csv(tmp_path / "train.csv")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 40 percentile refits: the few-resamples warning is expected
            (g,) = run_effects(a, X, X, cfg, tmp_path / f"out-{ci}")
        c = g["variants"][0]["challenger"]
        # by hand: resample r draws the same rows for both models (one seed per resample, spawned from the seed)
        Xt, yt = train[["x", "w"]], train["y"]
        X1 = X.assign(x=X["x"] + 1)
        diffs = []
        for s in np.random.SeedSequence(seed).spawn(B):
            idx = np.random.default_rng(s).integers(0, n, n)
            ra = clone(a).fit(Xt.iloc[idx], yt.iloc[idx])
            rb = clone(b).fit(Xt.iloc[idx], yt.iloc[idx])
            diffs.append(np.mean(ra.predict(X1) - ra.predict(X)) - np.mean(rb.predict(X1) - rb.predict(X)))
        diffs = np.array(diffs)
        est = np.mean((a.predict(X1) - a.predict(X)) - (b.predict(X1) - b.predict(X)))
        assert c["difference"] == pytest.approx(est, rel=1e-12)
        assert c["difference_inference"] == f"bootstrap, both models refitted on the same {B} resamples (paired)"
        assert c["difference_n_resamples"] == B and c["inference"] == "bootstrap"
        assert c["difference_std_error"] == pytest.approx(diffs.std(ddof=1), rel=1e-12)
        if ci == "percentile":
            lo, hi = np.quantile(diffs, [0.025, 0.975])
        else:
            q = stats.norm.ppf(0.975)
            lo, hi = est - q * diffs.std(ddof=1), est + q * diffs.std(ddof=1)
        assert [c["difference_low"], c["difference_high"]] == pytest.approx([lo, hi], rel=1e-12, abs=1e-14)


def test_bootstrap_difference_pairs_only_resamples_where_both_refits_succeeded():
    """A refit that failed for one model drops that resample from the difference (never a shifted pairing)."""
    import fme
    from fme.inference import RowInference
    from fme.report.analysis.challenger import _paired_bootstrap

    rng = np.random.default_rng(2)
    da, db = rng.normal(size=(3, 5)), rng.normal(size=(3, 4))
    ra = RowInference("bootstrap", np.zeros(3), draws=da, info={"kept": np.array([0, 1, 2, 3, 5])})
    rb = RowInference("bootstrap", np.zeros(3), draws=db, info={"kept": np.array([0, 2, 3, 4])})
    pa = pb = np.array([0, 2])  # the rows both models evaluated
    with pytest.warns(fme.BootstrapWarning, match="rests on 3 refits"):  # 3 draws: the percentile warning
        se, lo, hi, k = _paired_bootstrap(ra, rb, pa, pb, 0.0, 0.9)
    paired = da[[0, 2]][:, [0, 2, 3]].mean(axis=0) - db[[0, 2]][:, [0, 1, 2]].mean(axis=0)  # resamples 0, 2, 3
    assert k == 3 and se == pytest.approx(paired.std(ddof=1), rel=1e-12)
    assert [lo, hi] == pytest.approx(np.quantile(paired, [0.05, 0.95]).tolist(), rel=1e-12)


def test_the_challengers_tree_grows_with_the_reports_seed(tmp_path):
    """The same model as champion and challenger: with the report's seed (5) for both honest trees, their first
    splits and leaves are the same (the challenger's tree grew with seed 0 before)."""
    import statsmodels.formula.api as smf

    from fme.report.analysis import run_effects
    from fme.report.inputs.config import load_config

    rng = np.random.default_rng(8)
    n = 400
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.uniform(-2, 2, size=n)})
    d["y"] = 1 + d["x"] + 0.7 * d["x"] * d["w"] + rng.normal(size=n)
    a = smf.ols("y ~ x * w", data=d).fit()  # fME of x + 1: b_x + b_xw w, so the tree splits on w
    _write_case(tmp_path, a, a, d[["x", "w"]], "seed: 5\ninference: delta\n", "    stability: false\n")
    X = d[["x", "w"]]
    (g,) = run_effects(a, X, X, load_config(tmp_path / "c.yaml"), tmp_path / "out")
    v = g["variants"][0]
    assert v["partition"]["root_split"]["feature"] == "w"
    assert v["challenger"]["root_split"] == v["partition"]["root_split"]
    assert v["challenger"]["difference"] == pytest.approx(0.0, abs=1e-12)


def _some_columns_case(tmp_path, seed: int, B: int):
    """A Ridge champion on x, w and z; a linear challenger fitted on x and w only; train.csv with x, w, z, y."""
    from sklearn.linear_model import LinearRegression, Ridge

    rng = np.random.default_rng(13)
    n = 120
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n), "z": rng.uniform(size=n)})
    d["y"] = 1 + 0.8 * d["x"] - 0.5 * d["w"] + 2.0 * d["z"] + rng.normal(size=n)
    X = d[["x", "w", "z"]]
    a, b = Ridge(alpha=1.0).fit(X, d["y"]), LinearRegression().fit(d[["x", "w"]], d["y"])
    d.to_csv(tmp_path / "train.csv", index=False)
    _write_case(
        tmp_path,
        a,
        b,
        X,
        f"seed: {seed}\ninference: {{method: bootstrap, train_data: {{path: train.csv}}, n_resamples: {B}, "
        "ci: normal}\n",
        "    partition: false\n    stability: false\n",
    )
    return a, b, d


def test_a_challenger_fitted_on_some_training_columns_is_refitted_on_its_own(tmp_path):
    """Every bootstrap refit of the challenger fits on its own columns (x, w) of the training data (x, w, z),
    the champion's on all three, on the same resamples: the paired differences by hand give the report's."""
    from sklearn.base import clone

    from fme.report.analysis import run_effects
    from fme.report.inputs.config import load_config

    seed, B = 3, 20
    a, b, d = _some_columns_case(tmp_path, seed, B)
    X = d[["x", "w", "z"]]
    (g,) = run_effects(a, X, X, load_config(tmp_path / "c.yaml"), tmp_path / "out")
    c = g["variants"][0]["challenger"]
    assert c["difference_inference"] == f"bootstrap, both models refitted on the same {B} resamples (paired)"
    assert c["inference"] == "bootstrap" and c["difference_n_resamples"] == B
    X1 = X.assign(x=X["x"] + 1)
    diffs = []
    for s in np.random.SeedSequence(seed).spawn(B):
        idx = np.random.default_rng(s).integers(0, len(d), len(d))
        ra = clone(a).fit(X.iloc[idx], d["y"].iloc[idx])
        rb = clone(b).fit(d[["x", "w"]].iloc[idx], d["y"].iloc[idx])
        diffs.append(
            np.mean(ra.predict(X1) - ra.predict(X)) - np.mean(rb.predict(X1[["x", "w"]]) - rb.predict(X[["x", "w"]]))
        )
    assert c["difference_std_error"] == pytest.approx(np.std(diffs, ddof=1), rel=1e-10)


def test_refit_columns_are_the_models_own_in_the_training_datas_order():
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis.checks import refit_columns

    train = pd.DataFrame({"z": [0.0, 1, 2, 3], "y": [1.0, 2, 4, 3], "x": [1.0, 0, 2, 5], "w": [3.0, 1, 0, 2]})
    model = LinearRegression().fit(train[["x", "z"]], train["y"])
    assert refit_columns(model, train, "y") == ["z", "x"]
    assert refit_columns(LinearRegression().fit(train[["x", "z"]].to_numpy(), train["y"]), train, "y") is None
    assert refit_columns(model, train.drop(columns=["z"]), "y") is None  # lacking one: the check names it


def test_training_data_without_a_challenger_column_names_the_challenger_key(tmp_path):
    """The challenger reads a column the training data lack: one error before any refit, at the challenger's
    line, naming the column and the fix in config words."""
    from fme.report.analysis import run_effects
    from fme.report.inputs.config import ConfigError, load_config

    a, b, d = _some_columns_case(tmp_path, 3, 20)
    d.drop(columns=["w"]).to_csv(tmp_path / "train.csv", index=False)
    X = d[["x", "w", "z"]]
    cfg = load_config(tmp_path / "c.yaml")
    with pytest.raises(ConfigError) as err:
        run_effects(a.fit(X[["x", "z"]], d["y"]), X, X, cfg, tmp_path / "out")
    assert str(err.value) == (
        f"{cfg.shown or cfg.path}:5: challenger: the training data of inference.train_data lack 'w', which the "
        "challenger model reads (it was fitted on 'x', 'w'); every bootstrap refit would fail: add the column to "
        "the training data file"
    )
    # the report's model reading it too: named at the training data's own key, first
    with pytest.raises(ConfigError) as err:
        run_effects(a.fit(X, d["y"]), X, X, cfg, tmp_path / "out")
    assert str(err.value) == (
        f"{cfg.shown or cfg.path}:9: inference.train_data: these training data lack 'w', which the model reads "
        "(it was fitted on 'x', 'w', 'z'); every bootstrap refit would fail: add the column to the training data "
        "file"
    )


def test_a_refit_that_cannot_predict_the_evaluation_rows_fails_up_front_at_the_challenger(tmp_path):
    """The probe refit predicts some evaluation rows: a challenger whose one-hot encoder meets a level the
    training data lack (every refit would fail to predict) is named before the first of the refits."""
    import joblib
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fme.report.analysis import run_effects
    from fme.report.inputs.config import ConfigError, load_config

    rng = np.random.default_rng(5)
    n = 90
    d = pd.DataFrame({"x": rng.normal(size=n), "k": np.repeat(["a", "b", "c"], n // 3)})
    d["y"] = d["x"] + (d["k"] == "c") + rng.normal(size=n)

    def pipe(unknown: str):
        enc = make_column_transformer((OneHotEncoder(handle_unknown=unknown), ["k"]), remainder="passthrough")
        return make_pipeline(enc, LinearRegression()).fit(d[["x", "k"]], d["y"])

    _write_case(
        tmp_path,
        pipe("ignore"),
        pipe("error"),
        d[["x", "k"]],
        "inference: {method: bootstrap, train_data: {path: train.csv}, n_resamples: 5}\n",
        "    partition: false\n    stability: false\n",
    )
    d[d["k"] != "c"].to_csv(tmp_path / "train.csv", index=False)  # the training rows lack level c
    cfg = load_config(tmp_path / "c.yaml")
    X = d[["x", "k"]]
    with pytest.raises(ConfigError) as err:
        run_effects(joblib.load(tmp_path / "a.joblib"), X, X, cfg, tmp_path / "out")
    msg = str(err.value)
    assert msg.startswith(
        f"{cfg.shown or cfg.path}:5: challenger: the challenger model refitted on the training data of "
        "inference.train_data cannot predict the evaluation rows of data (ValueError: Found unknown categories "
        "['c'] in column 0 during transform); "
    )
    assert msg.endswith(
        "every bootstrap refit would fail: give the training data the columns the challenger model was fitted "
        "on, with the types and levels of data"
    )
    # the champion's own refits: named at the training data's key
    joblib.dump(pipe("error"), tmp_path / "a.joblib")
    with pytest.raises(ConfigError) as err:
        run_effects(joblib.load(tmp_path / "a.joblib"), X, X, cfg, tmp_path / "out")
    assert str(err.value).startswith(
        f"{cfg.shown or cfg.path}:8: inference.train_data: the model refitted on these training data cannot "
        "predict the evaluation rows of data (ValueError: Found unknown categories "
    )
