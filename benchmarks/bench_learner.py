"""Coverage of the learner-level AME intervals (fme.learner_ame) against a Monte Carlo truth.

Two simulated settings, each with a known learner-level truth: the AME of the step, in expectation over
training sets of ``n_train`` rows, of the learner fitted on such a set, evaluated on the population.

(a) ``rf``: RandomForestRegressor(50 trees, random_state=0) on y = 2 sin(x1) + x2^2 + x1 x3 + N(0, 1),
    x ~ U(-2, 2)^3; step x1 + 1.
(b) ``hgb``: HistGradientBoostingClassifier(max_iter=30, random_state=0) on P(y=1) = logistic(x1 +
    sin(2 x2) + x1 x3 / 2), x ~ U(-2, 2)^3; step x1 + 1 on the probability of class 1 (target_class=1).

Truth: ``--truth-sets`` (200) independent training sets of n_train rows, each fitted learner's AME on one
population sample of ``--population`` (20,000) rows; the truth is their mean (its Monte Carlo standard
error is printed). Then ``--repeats`` (200) data sets of n rows, each giving

* the learner interval: ``fme.learner_ame(learner, X, y, {"x1": 1}, repeats=J, test_size=...)``;
* the fixed-model interval: ``fme.ame(model fitted on all n rows, X, inference="sample")``;
* on the first ``--boot-repeats`` data sets, the bootstrap interval: ``fme.ame(model, X,
  bootstrap={"X": X, "y": y, "n_resamples": B, "ci": "normal"})`` (refits on resamples of the n rows);

and the share of the 95 % intervals that cover the truth (binomial standard error beside it), with the
mean interval width, the estimates' mean minus the truth (``bias``) and the ratio of the estimates'
standard deviation over the data sets to their mean standard error (``sd_ratio``; 1 when the standard
error is right). Everything runs on one core (n_jobs=1, BLAS/OpenMP limited to one thread).

Usage: ``python benchmarks/bench_learner.py [--repeats 200] [--boot-repeats 30] [--quick]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import fme


def _features(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(rng.uniform(-2, 2, size=(n, 3)), columns=["x1", "x2", "x3"])


def _rf_data(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, np.ndarray]:
    X = _features(rng, n)
    y = 2 * np.sin(X.x1) + X.x2**2 + X.x1 * X.x3 + rng.normal(size=n)
    return X, y.to_numpy()


def _hgb_data(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, np.ndarray]:
    X = _features(rng, n)
    eta = X.x1 + np.sin(2 * X.x2) + X.x1 * X.x3 / 2
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int).to_numpy()


def _settings() -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor

    return {
        "rf": (RandomForestRegressor(n_estimators=50, random_state=0), _rf_data, {}),
        "hgb": (HistGradientBoostingClassifier(max_iter=30, random_state=0), _hgb_data, {"target_class": 1}),
    }


def _ame(model, X, kw) -> float:
    return float(fme.ame(model, X, {"x1": 1}, inference="sample", **kw)["ame"].iloc[0])


def truth(learner, draw, kw, n_train: int, sets: int, population: int, seed: int) -> tuple[float, float]:
    """Mean and Monte Carlo standard error of the AME on a population sample over independent fits."""
    from sklearn.base import clone

    rng = np.random.default_rng([seed, 1])
    X_pop, _ = draw(rng, population)
    values = np.array([_ame(clone(learner).fit(*draw(rng, n_train)), X_pop, kw) for _ in range(sets)])
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(sets))


def coverage(
    learner,
    draw,
    kw,
    target: float,
    *,
    n: int,
    J: int,
    test_size: float,
    repeats: int,
    boot_repeats: int,
    resamples: int,
    seed: int,
) -> list[dict]:
    from sklearn.base import clone

    hits: dict[str, list] = {"learner": [], "fixed model": [], "bootstrap": []}
    for r in range(repeats):
        rng = np.random.default_rng([seed, 2, r])
        X, y = draw(rng, n)
        lt = fme.learner_ame(learner, X, y, {"x1": 1}, repeats=J, test_size=test_size, random_state=r, n_jobs=1, **kw)
        model = clone(learner).fit(X, y)
        ft = fme.ame(model, X, {"x1": 1}, inference="sample", **kw)
        rows = [("learner", lt), ("fixed model", ft)]
        if r < boot_repeats:
            bt = fme.ame(
                model,
                X,
                {"x1": 1},
                bootstrap={
                    "X": X,
                    "y": y,
                    "n_resamples": resamples,
                    "ci": "normal",
                    "random_state": r,
                    "progress": False,
                },
                **kw,
            )
            rows.append(("bootstrap", bt))
        for name, t in rows:
            lo, hi = float(t["conf_low"].iloc[0]), float(t["conf_high"].iloc[0])
            hits[name].append((lo <= target <= hi, hi - lo, float(t["ame"].iloc[0]), float(t["std_error"].iloc[0])))
    out = []
    for name, h in hits.items():
        if h:
            cover, width, est, se = (np.array(c, dtype=float) for c in zip(*h))
            # sd_ratio: the estimates' spread over the data sets against the mean reported standard error
            # (about 1 when the standard error is right, for a target the estimate is unbiased for)
            out.append(
                {
                    "interval": name,
                    "repetitions": len(h),
                    "coverage": cover.mean(),
                    "coverage_se": np.sqrt(cover.mean() * (1 - cover.mean()) / len(h)),
                    "mean_width": width.mean(),
                    "bias": est.mean() - target,
                    "sd_ratio": est.std(ddof=1) / se.mean() if len(h) > 1 else float("nan"),
                }
            )
    return out


def _markdown(table: pd.DataFrame) -> str:
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in table.itertuples(index=False)]
    lines = [list(table.columns), ["---"] * table.shape[1], *cells]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=200, help="data sets per setting (coverage repetitions)")
    p.add_argument("--boot-repeats", type=int, default=30, help="of those, data sets with a bootstrap interval")
    p.add_argument("--resamples", type=int, default=50, help="bootstrap refits per interval")
    p.add_argument("--truth-sets", type=int, default=200)
    p.add_argument("--population", type=int, default=20_000)
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--splits", type=int, default=10, help="learner_ame's repeats J")
    p.add_argument("--test-size", type=float, default=0.5)
    p.add_argument("--settings", default="rf,hgb")
    p.add_argument("--quick", action="store_true", help="20 repetitions, 5 with bootstrap, 50 truth sets")
    a = p.parse_args()
    if a.quick:
        a.repeats, a.boot_repeats, a.truth_sets, a.population = 20, 5, 50, 5_000
    n_train = a.n - int(np.ceil(a.test_size * a.n))
    start = time.perf_counter()
    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed, name in enumerate(a.settings.split(",")):
            learner, draw, kw = _settings()[name]
            t0 = time.perf_counter()
            target, mc_se = truth(learner, draw, kw, n_train, a.truth_sets, a.population, seed)
            t_truth = time.perf_counter() - t0
            for row in coverage(
                learner,
                draw,
                kw,
                target,
                n=a.n,
                J=a.splits,
                test_size=a.test_size,
                repeats=a.repeats,
                boot_repeats=a.boot_repeats,
                resamples=a.resamples,
                seed=seed,
            ):
                rows.append({"setting": name, "truth": target, "truth_mc_se": mc_se, **row})
            print(
                f"{name}: truth {target:.4f} (MC se {mc_se:.4f}, {t_truth:.0f} s); "
                f"total {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    table = pd.DataFrame(rows)
    print(
        f"n {a.n}, n_train {n_train}, J {a.splits}, truth over {a.truth_sets} training sets on a population "
        f"sample of {a.population}; bootstrap B {a.resamples} (normal interval)"
    )
    print(_markdown(table))
    print(f"wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
