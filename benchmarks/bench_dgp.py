"""Coverage of the data-level AME (fme.dgp_ame) for a known theta = E[mu(X + h) - mu(X)], beside the coverage of
a gradient-boosting model's own AME interval for the same theta.

Settings (n rows, features x1, x2 correlated Gaussian with correlation 0.6, x3 ~ U(-1, 1) independent):

* ``regression``: y = 3 tanh(x1) + x1 x2 + sin(2 x3) + N(0, 1); step x1 + 0.5.
* ``binary``: P(y = 1 | x) = expit(-0.3 + 1.2 x1 - 0.8 x2 + x1 x3); step x1 + 0.5.

theta is known up to Monte Carlo error: the mean of mu(x + h) - mu(x) over 2 * 10^6 draws of X (fixed seed),
mu being the true regression function. Each repetition draws n rows, runs ``fme.dgp_ame`` (defaults:
HistGradientBoosting learners, 5 folds, the envelope detector) and fits a ``HistGradientBoostingRegressor``
(classifier for the binary setting; max_iter=100) on all rows, whose own AME interval is ``fme.ame(model, X,
steps, inference='sample')`` (the model held fixed, the interval fme.ame gives a scikit-learn model).

A third setting shows positivity failing: x ~ U(0, 1)^2, y = x1 + x2 + N(0, 0.1), step x1 + 0.3 (30 % of the
moved rows leave the data), once with each ``on_extrapolation``.

    OMP_NUM_THREADS=1 python benchmarks/bench_dgp.py [--repeats 200] [--n 2000]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # noqa: E402 -- one core, set before scikit-learn loads OpenMP

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

import fme

H = 0.5


def draw(n: int, rng: np.random.Generator) -> pd.DataFrame:
    x1 = rng.normal(size=n)
    x2 = 0.6 * x1 + 0.8 * rng.normal(size=n)
    return pd.DataFrame({"x1": x1, "x2": x2, "x3": rng.uniform(-1, 1, size=n)})


def mu_regression(X: pd.DataFrame) -> np.ndarray:
    return 3 * np.tanh(X["x1"]) + X["x1"] * X["x2"] + np.sin(2 * X["x3"])


def mu_binary(X: pd.DataFrame) -> np.ndarray:
    return expit(-0.3 + 1.2 * X["x1"] - 0.8 * X["x2"] + X["x1"] * X["x3"])


SETTINGS = {"regression": mu_regression, "binary": mu_binary}


def truth(mu, draws: int = 2_000_000) -> tuple[float, float]:
    X = draw(draws, np.random.default_rng(12345))
    d = np.asarray(mu(X.assign(x1=X["x1"] + H)) - mu(X))
    return float(d.mean()), float(d.std() / np.sqrt(draws))


def one(setting: str, n: int, rep: int, theta: float) -> dict:
    rng = np.random.default_rng(1000 + rep)
    X = draw(n, rng)
    p = np.asarray(SETTINGS[setting](X))
    binary = setting == "binary"
    y = rng.binomial(1, p) if binary else p + rng.normal(size=n)
    model = (HistGradientBoostingClassifier if binary else HistGradientBoostingRegressor)(
        max_iter=100, random_state=rep
    )
    model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fme.PositivityWarning)
        t = fme.dgp_ame(X, y, {"x1": H}, random_state=rep, model=model, target_class=1 if binary else None)
    m = fme.ame(model, X, {"x1": H}, inference="sample", target_class=1 if binary else None)
    r = t.iloc[0]
    return dict(
        est=r["ame"],
        se=r["std_error"],
        low=r["conf_low"],
        high=r["conf_high"],
        positivity=r["positivity"],
        ess_share=r["ess_share"],
        plug=r["plug_in"],
        model=m["ame"].iloc[0],
        mlow=m["conf_low"].iloc[0],
        mhigh=m["conf_high"].iloc[0],
    )


def coverage(setting: str, n: int, repeats: int) -> dict:
    theta, mc = truth(SETTINGS[setting])
    rows = pd.DataFrame([one(setting, n, rep, theta) for rep in range(repeats)])
    cover = float(np.mean((rows["low"] <= theta) & (theta <= rows["high"])))
    half = 1.96 * np.sqrt(cover * (1 - cover) / repeats)
    return dict(
        setting=setting,
        theta=theta,
        theta_mc_se=mc,
        coverage=cover,
        coverage_mc=half,
        bias=float(rows["est"].mean() - theta),
        mean_se=float(rows["se"].mean()),
        sd_est=float(rows["est"].std()),
        bias_over_se=float(abs(rows["est"].mean() - theta) / rows["se"].mean()),
        plug_in_bias=float(rows["plug"].mean() - theta),
        model_bias=float(rows["model"].mean() - theta),
        model_coverage=float(np.mean((rows["mlow"] <= theta) & (theta <= rows["mhigh"]))),
        positivity=", ".join(f"{k} {v}" for k, v in rows["positivity"].value_counts().items()),
        median_ess_share=float(rows["ess_share"].median()),
    )


def leaving(n: int) -> None:
    rng = np.random.default_rng(7)
    X = pd.DataFrame({"x1": rng.uniform(size=n), "x2": rng.uniform(size=n)})
    y = X["x1"] + X["x2"] + rng.normal(scale=0.1, size=n)
    for policy in ("warn", "exclude", "shrink"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = fme.dgp_ame(X, y, {"x1": 0.3}, on_extrapolation=policy)
        r = t.iloc[0]
        msgs = [str(w.message) for w in caught if issubclass(w.category, fme.PositivityWarning)]
        print(
            f"on_extrapolation={policy!r}: ame {r['ame']:.4f} [{r['conf_low']:.4f}, {r['conf_high']:.4f}] "
            f"share_extrapolated {r['share_extrapolated']:.3f} ess_share {r['ess_share']:.3f} max_weight "
            f"{r['max_weight']:.3g} positivity {r['positivity']} n {r['n']} note {r['note']!r}"
        )
        for msg in msgs:
            print(f"  PositivityWarning: {msg}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    start = time.time()
    out = pd.DataFrame([coverage(s, args.n, args.repeats) for s in SETTINGS])
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(out.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print()
    leaving(args.n)
    print(f"\nwall time {time.time() - start:.0f} s (n = {args.n}, {args.repeats} repetitions)")


if __name__ == "__main__":
    main()
