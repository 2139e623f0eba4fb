"""A matrix of model families for the report suite: small seeded data, a fitted model and a config per family.

Each entry of :data:`FAMILIES` writes into a folder of its own the generated data (a few hundred seeded rows),
the fitted model (``model.joblib``; ``challenger.joblib``, ``train.csv`` where used) and ``c.yaml``, the report
config. The builds are shared by the checks of ``test_matrix.py`` (one build per config, cached for the
session). Every feature the matrix must cover appears in at least one config:

=======================  ==========================================================================================
config                   features
=======================  ==========================================================================================
ols-contracts            Gaussian identity (statsmodels OLS formula with an interaction term), delta inference,
                         contracts met (sign, at_least) and not met (at_most), honest partition, overview
glm-gaussian-paper       Gaussian identity GLM (sm.GLM formula), paper-mode (honest: false) and honest partitions
                         side by side, partition-stability refits
poisson-exposure         Poisson log GLM with an exposure column, a categorical level step, overview
poisson-offset           Poisson log GLM with an offset column, over-dispersion (negative-binomial counts):
                         dispersion flag and Pearson-scaled delta intervals
gamma-log                Gamma GLM with a log link, a negative step
binomial-var-weights     binomial logit GLM of shares with var_weights
formula-splines          statsmodels OLS formula with bs() splines, NLM along the spline
gbr-interactions         scikit-learn regressor (GradientBoostingRegressor), interactions, a two-feature step
ridge-bootstrap          scikit-learn Ridge, bootstrap inference (few resamples), a challenger compared by
                         paired bootstrap refits
binary-strings           binary classifier with string labels (no/yes), a challenger (decision tree), interactions
                         on the probability scale read in percentage points, a contract in percentage points
three-class              3-class classifier (multinomial logistic regression) explaining class "mid"
pipeline-levels          scikit-learn Pipeline (one-hot + Ridge), learner and data levels, a categorical step
                         over all levels
changelog                a change log: the previous results are the ols-contracts build's, the model refitted on
                         other rows
dask-local-sample        engine dask on a Parquet dataset with the local cluster the build starts,
                         sample_size below the rows
dask-scheduler           engine dask through a ``scheduler:`` address (a LocalCluster the test starts), a
                         statsmodels Poisson GLM with delta inference
logit-delta              statsmodels Logit (probability scale, delta), contracts met and not met, interactions by
                         the delta method
=======================  ==========================================================================================
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Family", "FAMILIES", "NAMES", "frame"]

N_ROWS = 300


def frame(n: int = N_ROWS, seed: int = 0) -> pd.DataFrame:
    """x1 uniform on [0, 10], x2 standard normal, x3 uniform on [0, 1], k in {a, b, c}, t (exposure) in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x1": rng.uniform(0, 10, n),
            "x2": rng.normal(0, 1, n),
            "x3": rng.uniform(0, 1, n),
            "k": rng.choice(["a", "b", "c"], n),
            "t": rng.uniform(0.5, 2.0, n),
        }
    )


def _k_effect(d: pd.DataFrame) -> np.ndarray:
    return d["k"].map({"a": 0.0, "b": 0.5, "c": -0.3}).to_numpy()


def _config(folder: Path, name: str, body: str, *, target_unit: str, model: str = "{joblib: model.joblib}") -> None:
    head = (
        f'title: "Matrix: {name}"\nowner: "fme test suite"\nintended_use: "A generated model family of the test '
        f'matrix."\nmodel: {model}\ndata: {{path: data.csv}}\ntarget: y\ntarget_unit: "{target_unit}"\n'
        "seed: 1\npdf: true\n"
    )
    (folder / "c.yaml").write_text(head + textwrap.dedent(body), encoding="utf-8")


def _dump(folder: Path, model: Any, name: str = "model.joblib") -> None:
    import joblib

    joblib.dump(model, folder / name)


def _fit(fn: Callable[[], Any]) -> Any:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # BLAS/OpenMP threads on a shared 2-core machine: far slower than one
        return fn()


# ------------------------------------------------------------------ statsmodels families
def _ols(d: pd.DataFrame) -> Any:
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(11)
    d = d.assign(y=2.0 * d["x1"] - d["x2"] + 0.3 * d["x1"] * d["x2"] + _k_effect(d) + rng.normal(0, 1, len(d)))
    return smf.ols("y ~ x1 * x2 + C(k)", data=d).fit(), d


OLS_EFFECTS = """\
inference: delta
overview: {step: sd}
units: {x1: "years", x2: "score points"}
effects:
  - id: x1
    steps: {x1: 1}
    expected_sign: "+"
    expect: {sign: "+", at_least: 1.0}
    partition: {minbucket: 40}
  - id: x2
    steps: {x2: 1}
    expect: {at_most: -5}
    partition: false
"""


def ols_contracts(folder: Path, ctx: dict) -> None:
    model, d = _fit(lambda: _ols(frame()))
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(folder, "ols-contracts", OLS_EFFECTS, target_unit="EUR")


def changelog(folder: Path, ctx: dict) -> None:
    import shutil

    model, d = _fit(lambda: _ols(frame(seed=5)))  # the next model version: refitted on other rows
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    shutil.copy(ctx["previous"], folder / "previous.json")
    _config(folder, "changelog", OLS_EFFECTS + "previous: previous.json\n", target_unit="EUR")


def glm_gaussian_paper(folder: Path, ctx: dict) -> None:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(12)
    d = frame()
    d["y"] = 1.5 * d["x1"] - 0.1 * d["x1"] ** 2 + d["x2"] * (d["x1"] > 5) + rng.normal(0, 0.5, len(d))
    model = _fit(lambda: smf.glm("y ~ x1 + I(x1**2) + x2 * x3", data=d, family=sm.families.Gaussian()).fit())
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "glm-gaussian-paper",
        """\
        effects:
          - id: paper
            steps: {x2: 1}
            partition: {honest: false, minbucket: 40}
            stability: {subsamples: 3, fraction: 0.5}
          - id: honest
            steps: {x2: 1}
            partition: {minbucket: 40}
          - id: x1
            steps: {x1: 1}
            partition: false
        """,
        target_unit="mm",
    )


def _counts(d: pd.DataFrame, overdispersed: bool, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu = d["t"] * np.exp(0.2 + 0.15 * d["x1"] - 0.3 * d["x2"] + _k_effect(d))
    if overdispersed:  # negative binomial with size 1: variance mu + mu^2
        return rng.negative_binomial(1, 1 / (1 + mu))
    return rng.poisson(mu)


def poisson_exposure(folder: Path, ctx: dict) -> None:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    d = frame()
    d["y"] = _counts(d, False, 13)
    model = _fit(lambda: smf.glm("y ~ x1 + x2 + C(k)", data=d, family=sm.families.Poisson(), exposure=d["t"]).fit())
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "poisson-exposure",
        """\
        overview: {step: sd}
        units: {t: "policy-years"}
        effects:
          - id: x1
            steps: {x1: 1}
            partition: {minbucket: 40}
          - id: kb
            steps: {k: b}
            partition: false
        """,
        target_unit="claims",
    )


def poisson_offset(folder: Path, ctx: dict) -> None:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    d = frame()
    d["y"] = _counts(d, True, 14)
    d["log_t"] = np.log(d["t"])
    d = d.drop(columns="t")
    model = _fit(lambda: smf.glm("y ~ x1 + x2", data=d, family=sm.families.Poisson(), offset=d["log_t"]).fit())
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "poisson-offset",
        """\
        effects:
          - id: x1
            steps: {x1: 1}
            partition: {minbucket: 40}
          - id: x2
            steps: {x2: 0.5}
            partition: false
        """,
        target_unit="claims",
    )


def gamma_log(folder: Path, ctx: dict) -> None:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(15)
    d = frame()
    mu = np.exp(1.0 + 0.1 * d["x1"] + 0.2 * d["x2"])
    d["y"] = rng.gamma(4.0, mu / 4.0)
    family = sm.families.Gamma(link=sm.families.links.Log())
    model = _fit(lambda: smf.glm("y ~ x1 + x2 + x3", data=d, family=family).fit())
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "gamma-log",
        """\
        effects:
          - id: x1
            steps: {x1: 1}
            partition: {minbucket: 40}
          - id: x2-down
            steps: {x2: -0.5}
            expected_sign: "-"
            partition: false
        """,
        target_unit="hours",
    )


def binomial_var_weights(folder: Path, ctx: dict) -> None:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(16)
    d = frame()
    d["w"] = rng.integers(1, 20, len(d))
    p = 1 / (1 + np.exp(-(-2.0 + 0.4 * d["x1"] + 0.5 * d["x2"])))
    d["y"] = rng.binomial(d["w"], p) / d["w"]
    model = _fit(lambda: smf.glm("y ~ x1 + x2", data=d, family=sm.families.Binomial(), var_weights=d["w"]).fit())
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "binomial-var-weights",
        """\
        effects:
          - id: x1
            steps: {x1: 1}
            partition: {minbucket: 40}
          - id: x2
            steps: {x2: sd}
            partition: false
        """,
        target_unit="share of trials",
    )


def formula_splines(folder: Path, ctx: dict) -> None:
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(17)
    d = frame()
    d["y"] = np.sin(d["x1"] / 2) * 3 + d["x2"] + rng.normal(0, 0.3, len(d))
    model = _fit(lambda: smf.ols("y ~ bs(x1, df=5, lower_bound=-2, upper_bound=12) + x2", data=d).fit())
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "formula-splines",
        """\
        effects:
          - id: x1
            steps: {x1: 0.5}
            nlm: true
            partition: {minbucket: 40}
        """,
        target_unit="degrees",
    )


# ------------------------------------------------------------------ scikit-learn families
def _reg_frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = frame(seed=seed)
    d["y"] = 2.0 * d["x1"] + np.sin(d["x2"] * 2) + 3 * d["x1"] * d["x3"] + rng.normal(0, 0.5, len(d))
    return d


def gbr_interactions(folder: Path, ctx: dict) -> None:
    from sklearn.ensemble import GradientBoostingRegressor

    d = _reg_frame(18)
    cols = ["x1", "x2", "x3"]
    model = _fit(lambda: GradientBoostingRegressor(n_estimators=40, max_depth=3, random_state=0).fit(d[cols], d["y"]))
    _dump(folder, model)
    d[cols + ["y"]].to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "gbr-interactions",
        """\
        interactions:
          - {a: {x1: 1}, b: {x3: 0.2}}
        effects:
          - id: x1
            steps: {x1: 1}
            partition: {minbucket: 40}
          - id: x1-x2
            steps: {x1: 1, x2: 0.5}
            partition: false
        """,
        target_unit="kWh",
    )


def ridge_bootstrap(folder: Path, ctx: dict) -> None:
    from sklearn.linear_model import LinearRegression, Ridge

    d = _reg_frame(19)
    cols = ["x1", "x2", "x3"]
    _dump(folder, _fit(lambda: Ridge(alpha=1.0).fit(d[cols], d["y"])))
    _dump(folder, _fit(lambda: LinearRegression().fit(d[cols], d["y"])), "challenger.joblib")
    d[cols + ["y"]].to_csv(folder / "data.csv", index=False)
    d[cols + ["y"]].to_csv(folder / "train.csv", index=False)
    _config(
        folder,
        "ridge-bootstrap",
        """\
        challenger: {joblib: challenger.joblib}
        inference: {method: bootstrap, train_data: {path: train.csv}, n_resamples: 20}
        effects:
          - id: x1
            steps: {x1: 1}
            partition: false
          - id: x3
            steps: {x3: 0.1}
            partition: false
        """,
        target_unit="kWh",
    )


def _labels(d: pd.DataFrame, seed: int, classes: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    score = 0.5 * (d["x1"] - 5) + d["x2"] + rng.logistic(0, 1, len(d))
    if classes == 2:
        return np.where(score > 0, "yes", "no")
    return np.select([score < -1.0, score < 1.0], ["low", "mid"], "high")


def binary_strings(folder: Path, ctx: dict) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    d = frame()
    d["y"] = _labels(d, 20, 2)
    cols = ["x1", "x2", "x3"]
    _dump(folder, _fit(lambda: LogisticRegression().fit(d[cols], d["y"])))
    _dump(
        folder,
        _fit(lambda: DecisionTreeClassifier(max_depth=3, random_state=0).fit(d[cols], d["y"])),
        "challenger.joblib",
    )
    d[cols + ["y"]].to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "binary-strings",
        """\
        challenger: {joblib: challenger.joblib}
        interactions:
          - {a: {x1: 1}, b: {x2: 1}}
        effects:
          - id: x1
            steps: {x1: 1}
            expect: {at_least: 0.5}
            partition: {minbucket: 40}
          - id: x2
            steps: {x2: -1}
            partition: false
        """,
        target_unit="probability",
        model='{joblib: model.joblib, prediction_scale: "P(yes)"}',
    )


def three_class(folder: Path, ctx: dict) -> None:
    from sklearn.linear_model import LogisticRegression

    d = frame()
    d["y"] = _labels(d, 21, 3)
    cols = ["x1", "x2"]
    _dump(folder, _fit(lambda: LogisticRegression(max_iter=500).fit(d[cols], d["y"])))
    d[cols + ["y"]].to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "three-class",
        """\
        effects:
          - id: x1
            steps: {x1: 1}
            partition: {minbucket: 40}
          - id: x2
            steps: {x2: 1}
            partition: false
        """,
        target_unit="probability",
        model="{joblib: model.joblib, target_class: mid}",
    )


def pipeline_levels(folder: Path, ctx: dict) -> None:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    d = _reg_frame(22)
    d["y"] = d["y"] + 2 * _k_effect(d)
    cols = ["x1", "x2", "k"]
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["k"])], remainder="passthrough")
    _dump(folder, _fit(lambda: make_pipeline(pre, Ridge(alpha=1.0)).fit(d[cols], d["y"])))
    d[cols + ["y"]].to_csv(folder / "data.csv", index=False)
    d[cols + ["y"]].to_csv(folder / "train.csv", index=False)
    _config(
        folder,
        "pipeline-levels",
        """\
        effects:
          - id: x1
            steps: {x1: 1}
            partition: false
            learner: {repeats: 3, train_data: {path: train.csv}}
            data_level: {folds: 2, train_data: {path: train.csv}}
          - id: k
            steps: {k: all}
            partition: false
        """,
        target_unit="kWh",
    )


def logit_delta(folder: Path, ctx: dict) -> None:
    import statsmodels.formula.api as smf

    d = frame()
    d["y"] = (_labels(d, 23, 2) == "yes").astype(int)
    model = _fit(lambda: smf.logit("y ~ x1 + x2 + x3", data=d).fit(disp=0))
    _dump(folder, model)
    d.to_csv(folder / "data.csv", index=False)
    _config(
        folder,
        "logit-delta",
        """\
        interactions:
          - {a: {x1: 1}, b: {x2: 1}}
        effects:
          - id: x1
            steps: {x1: 1}
            expect: {sign: "+"}
            partition: {minbucket: 40}
          - id: x3
            steps: {x3: 0.5}
            expect: {at_least: 0.5}
            partition: false
        """,
        target_unit="probability",
    )


# ------------------------------------------------------------------ Dask families
def _parquet(folder: Path, d: pd.DataFrame, parts: int = 3) -> None:
    (folder / "ds").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(d)), parts)):
        d.iloc[rows].reset_index(drop=True).to_parquet(folder / "ds" / f"part-{i:03d}.parquet")


def _dask_config(folder: Path, name: str, body: str, target_unit: str) -> None:
    _config(folder, name, body, target_unit=target_unit)
    text = (folder / "c.yaml").read_text(encoding="utf-8").replace("data: {path: data.csv}", "data: {path: ds}")
    (folder / "c.yaml").write_text(text, encoding="utf-8")


def dask_local_sample(folder: Path, ctx: dict) -> None:
    from sklearn.ensemble import GradientBoostingRegressor

    d = _reg_frame(24)
    d = pd.concat([d, _reg_frame(25)], ignore_index=True)  # 600 rows, a sample of 200
    cols = ["x1", "x2", "x3"]
    model = _fit(lambda: GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(d[cols], d["y"]))
    _dump(folder, model)
    _parquet(folder, d[cols + ["y"]])
    _dask_config(
        folder,
        "dask-local-sample",
        """\
        engine: dask
        sample_size: 200
        effects:
          - id: x1
            steps: {x1: 1}
            partition: {minbucket: 40}
          - id: x2
            steps: {x2: sd}
            partition: false
        """,
        "kWh",
    )


def dask_scheduler(folder: Path, ctx: dict) -> None:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    d = frame()
    d["y"] = _counts(d.assign(t=1.0), False, 26)
    d = d.drop(columns="t")
    model = _fit(lambda: smf.glm("y ~ x1 + x2", data=d, family=sm.families.Poisson()).fit())
    _dump(folder, model)
    _parquet(folder, d)
    _dask_config(
        folder,
        "dask-scheduler",
        f"""\
        engine: dask
        scheduler: {ctx["scheduler"]}
        inference: delta
        effects:
          - id: x1
            steps: {{x1: 1}}
            partition: {{minbucket: 40}}
        """,
        "claims",
    )


@dataclass(frozen=True)
class Family:
    """One config of the matrix: ``write(folder, ctx)`` writes its inputs and ``c.yaml`` into ``folder``.

    ``ctx`` carries what a family needs from the session: ``previous`` (the results.json its change log
    compares with, built first from ``needs``) and ``scheduler`` (the address of a running Dask scheduler).
    """

    name: str
    write: Callable[[Path, dict], None]
    needs: str | None = None
    scheduler: bool = False


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("ols-contracts", ols_contracts),
        Family("glm-gaussian-paper", glm_gaussian_paper),
        Family("poisson-exposure", poisson_exposure),
        Family("poisson-offset", poisson_offset),
        Family("gamma-log", gamma_log),
        Family("binomial-var-weights", binomial_var_weights),
        Family("formula-splines", formula_splines),
        Family("gbr-interactions", gbr_interactions),
        Family("ridge-bootstrap", ridge_bootstrap),
        Family("binary-strings", binary_strings),
        Family("three-class", three_class),
        Family("pipeline-levels", pipeline_levels),
        Family("changelog", changelog, needs="ols-contracts"),
        Family("dask-local-sample", dask_local_sample),
        Family("dask-scheduler", dask_scheduler, scheduler=True),
        Family("logit-delta", logit_delta),
    )
}
NAMES = tuple(FAMILIES)
