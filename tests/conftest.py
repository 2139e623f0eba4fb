"""Shared fixtures for the fME engine tests: small seeded data sets and fitted models.

Models are fitted once per test session (they are never mutated by fme).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def make_regression_frame(n: int = 120, seed: int = 0) -> pd.DataFrame:
    """Numeric x1..x3, a pandas categorical ``cat`` (levels a, b, c), an int column
    ``k``, a numeric target ``y`` and a 0/1 target ``yb``; a shuffled integer index."""
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(-2, 2, n)
    x2 = rng.normal(0, 1, n)
    x3 = rng.uniform(0, 5, n)
    cat = pd.Categorical(rng.choice(["a", "b", "c"], n), categories=["a", "b", "c"])
    k = rng.integers(0, 10, n)
    eff = {"a": 0.0, "b": 1.5, "c": -1.0}
    y = 2.0 * x1 - x2**2 + 0.5 * x3 + np.array([eff[c] for c in cat]) + rng.normal(0, 0.3, n)
    lin = 1.2 * x1 - 0.8 * x2 + 0.3 * (x3 - 2.5)
    yb = (rng.uniform(size=n) < 1 / (1 + np.exp(-lin))).astype(int)
    index = rng.permutation(np.arange(1000, 1000 + n))
    return pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "cat": cat, "k": k, "y": y, "yb": yb}, index=index)


FEATURES = ["x1", "x2", "x3"]


class CallRecorder:
    """A callable model f(DataFrame) -> array that records every call."""

    def __init__(self, func=None):
        self.func = func or (lambda d: d["x1"].to_numpy(dtype=float) * 2.0 + np.sin(d["x2"].to_numpy(dtype=float)))
        self.lengths: list[int] = []
        self.frames: list[pd.DataFrame] = []

    def __call__(self, frame: pd.DataFrame) -> np.ndarray:
        self.lengths.append(len(frame))
        self.frames.append(frame)
        return np.asarray(self.func(frame), dtype=float)


@pytest.fixture(scope="session")
def df() -> pd.DataFrame:
    return make_regression_frame()


@pytest.fixture(scope="session")
def X(df) -> pd.DataFrame:
    return df[FEATURES + ["cat"]]


@pytest.fixture(scope="session")
def Xnum(df) -> pd.DataFrame:
    return df[FEATURES]


@pytest.fixture(scope="session")
def gbr(df):
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(df[FEATURES], df["y"])


@pytest.fixture(scope="session")
def rf_binary(df):
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=25, max_depth=4, random_state=0).fit(df[FEATURES], df["yb"])


@pytest.fixture(scope="session")
def multiclass(df):
    """Logistic regression on three string classes 'lo', 'mid', 'hi'."""
    from sklearn.linear_model import LogisticRegression

    y = np.where(df["y"] < -0.5, "lo", np.where(df["y"] < 1.5, "mid", "hi"))
    return LogisticRegression(max_iter=500).fit(df[FEATURES], y)


@pytest.fixture(scope="session")
def pipeline(df):
    """Pipeline: one-hot encoding of the categorical ``cat`` inside, raw columns in."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    pre = ColumnTransformer([("oh", OneHotEncoder(handle_unknown="ignore"), ["cat"])], remainder="passthrough")
    pipe = Pipeline([("pre", pre), ("rf", RandomForestRegressor(n_estimators=20, max_depth=5, random_state=0))])
    return pipe.fit(df[FEATURES + ["cat"]], df["y"])


@pytest.fixture(scope="session")
def ols(df):
    import statsmodels.formula.api as smf

    return smf.ols("y ~ x1 + x2 + x3 + C(cat)", data=df).fit()


@pytest.fixture(scope="session")
def glm_binomial(df):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    return smf.glm("yb ~ x1 + x2 + x3", data=df, family=sm.families.Binomial()).fit()


@pytest.fixture(scope="session")
def logit(df):
    import statsmodels.formula.api as smf

    return smf.logit("yb ~ x1 + I(x2 ** 2) + x3", data=df).fit(disp=0)


@pytest.fixture
def recorder() -> CallRecorder:
    return CallRecorder()


def piecewise_sim(d: pd.DataFrame) -> np.ndarray:
    # Paper §7.1: f(x) = x for x < 0, 5 sin(2x) otherwise.
    x = d["x"].to_numpy()
    return np.where(x < 0, x, 5 * np.sin(2 * x))


@pytest.fixture(scope="module")
def sim_effects():
    """fMEs and NLMs (Simpson 3/8) of the paper's piecewise simulation, step 2, 1500 rows (the cAME and
    partition tests)."""
    import fme

    rng = np.random.default_rng(123)
    X = pd.DataFrame({"x": rng.uniform(-5, 5, 1500)})
    return fme.fme(piecewise_sim, X, {"x": 2}, nlm=True, nlm_method="simpson38")


@pytest.fixture(scope="module")
def sim_part(sim_effects):
    import fme

    return fme.came(sim_effects, honest=False, minbucket=30, testtype="teststatistic", mincriterion=0.99)
