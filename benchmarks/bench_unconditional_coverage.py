"""Coverage of the population AME by the delta interval, conditional (default) against ``vcov='unconditional'``.

Each repetition draws a fresh sample from a known data-generating process, fits a correctly specified
statsmodels model and asks ``fme.ame`` for the AME of the unit step in ``x`` twice: with the default delta
interval, which holds the sample's covariates fixed, and with ``vcov="unconditional"``, which adds the sampling
of the rows (``fme.inference.unconditional``). The target is the POPULATION AME, known in closed form (OLS) or
by Gauss-Hermite quadrature (logit). Two settings:

* ``ols``: y = 1 + x + 0.5 x^2 + e, x ~ N(0, 1), e ~ N(0, 0.5^2); fME(x) = 1 + 0.5 (2 x + 1), population AME 1.5;
* ``logit``: P(y = 1) = expit(-0.5 + x + 0.5 z), x ~ N(0, 1), z ~ Bernoulli(0.5); the population AME of the unit
  step E[expit(eta + 1) - expit(eta)] by 120-node quadrature.

Run: ``python benchmarks/bench_unconditional_coverage.py [--reps 500] [--n 300] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import special

import fme


def _ols_sample(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.normal(size=n)
    return pd.DataFrame({"x": x, "y": 1.0 + x + 0.5 * x**2 + 0.5 * rng.normal(size=n)})


def _logit_sample(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x, z = rng.normal(size=n), rng.integers(0, 2, n).astype(float)
    y = (rng.random(n) < special.expit(-0.5 + x + 0.5 * z)).astype(float)
    return pd.DataFrame({"x": x, "z": z, "y": y})


def _logit_population_ame() -> float:
    # E over x ~ N(0, 1) and z ~ Bernoulli(0.5) of expit(eta + 1) - expit(eta), eta = -0.5 + x + 0.5 z
    t, w = np.polynomial.hermite_e.hermegauss(120)
    w = w / w.sum()
    total = 0.0
    for z in (0.0, 1.0):
        eta = -0.5 + t + 0.5 * z
        total += 0.5 * float(w @ (special.expit(eta + 1.0) - special.expit(eta)))
    return total


SETTINGS = {
    "ols": (_ols_sample, "y ~ x + I(x**2)", smf.ols, 1.5),
    "logit": (_logit_sample, "y ~ x + z", smf.logit, _logit_population_ame()),
}


def run(setting: str, reps: int, n: int, seed: int) -> dict:
    draw, formula, fit, target = SETTINGS[setting]
    rng = np.random.default_rng([seed, list(SETTINGS).index(setting)])
    est, se_c, se_u, cov_c, cov_u = [], [], [], 0, 0
    for _ in range(reps):
        d = draw(rng, n)
        model = fit(formula, data=d).fit(disp=0) if setting == "logit" else fit(formula, data=d).fit()
        cond = fme.ame(model, d, {"x": 1})
        unc = fme.ame(model, d, {"x": 1}, vcov="unconditional")
        est.append(float(cond["ame"].iloc[0]))
        se_c.append(float(cond["std_error"].iloc[0]))
        se_u.append(float(unc["std_error"].iloc[0]))
        cov_c += int(cond["conf_low"].iloc[0] <= target <= cond["conf_high"].iloc[0])
        cov_u += int(unc["conf_low"].iloc[0] <= target <= unc["conf_high"].iloc[0])
    return {
        "setting": setting,
        "n": n,
        "reps": reps,
        "target": target,
        "sd_ame": float(np.std(est, ddof=1)),
        "mean_se_conditional": float(np.mean(se_c)),
        "mean_se_unconditional": float(np.mean(se_u)),
        "coverage_conditional": cov_c / reps,
        "coverage_unconditional": cov_u / reps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    rows = [run(s, args.reps, args.n, args.seed) for s in SETTINGS]
    mc = np.sqrt(0.95 * 0.05 / args.reps)
    print(
        "| setting | n | reps | population AME | SD of AME over reps | mean SE conditional | mean SE unconditional "
        "| coverage conditional | coverage unconditional |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['setting']} | {r['n']} | {r['reps']} | {r['target']:.4f} | {r['sd_ame']:.4f} | "
            f"{r['mean_se_conditional']:.4f} | {r['mean_se_unconditional']:.4f} | "
            f"{100 * r['coverage_conditional']:.1f} % | {100 * r['coverage_unconditional']:.1f} % |"
        )
    print(
        f"\nnominal 95 %; Monte Carlo SE of a coverage at 95 %: {100 * mc:.1f} points; "
        f"{time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
