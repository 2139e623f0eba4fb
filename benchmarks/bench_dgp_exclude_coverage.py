"""Coverage of ``fme.dgp_ame(on_extrapolation="exclude")`` for the effect on the rows kept, whose truth is known in
closed form.

Design (n rows per repetition): x1 ~ N(0, 1), x2 = rho x1 + sqrt(1 - rho^2) N(0, 1) with rho = 0.5,
mu(x) = x1 + 0.5 x1^2 + 0.5 x1 x2 + x2, y = mu(x) + N(0, 1); the step moves x1 by h. The envelope detector flags
a moved point with x1 + h > max(x1), so the rows kept are those with x1 <= c, c = max(x1) - h (a known function
of X). The effect on them is

    theta_K = E[mu(X1 + h, X2) - mu(X) | X1 <= c] = h + h^2 / 2 + h (1 + rho / 2) E[X1 | X1 <= c],
    E[X1 | X1 <= c] = -phi(c) / Phi(c),

computed for each repetition's c. The density ratio of the correction is p(x1 - h, x2) 1{x1 - h <= c} / p(x), at
most exp(h (x1 - rho x2) / (1 - rho^2) - h^2 / (2 (1 - rho^2))); its mean square grows as exp(h^2 / (1 - rho^2)),
so the step sets how heavy the weights are:

* ``ok``: h = 0.5 (true effective sample size about 72 % of the rows: the positivity verdict is "ok");
* ``weak``: h = 1.2 (about 15 %: the verdict is "weak", an effective sample size under 20 %);
* ``fails`` (one check): h = 3.0, where the kept rows' weights are heavier still (verdict "fails"): the estimate
  and its interval must be NaN with the reason in ``note``.

Each repetition runs ``fme.dgp_ame`` with its defaults (HistGradientBoosting learners, 5 folds, the envelope
detector) and ``on_extrapolation="exclude"``; the repetitions of the two settings are interleaved so that a run
stopped early has as many of each. Results stream to ``--out`` (one CSV line per repetition).

    OMP_NUM_THREADS=1 python benchmarks/bench_dgp_exclude_coverage.py [--repeats 200] [--n 1000]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # noqa: E402 -- one core, set before scikit-learn loads OpenMP

import argparse
import csv
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

import fme

RHO = 0.5
STEPS = {"ok": 0.5, "weak": 1.2}
FAILS = 3.0


def draw(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    x1 = rng.normal(size=n)
    x2 = RHO * x1 + np.sqrt(1 - RHO**2) * rng.normal(size=n)
    mu = x1 + 0.5 * x1**2 + 0.5 * x1 * x2 + x2
    return pd.DataFrame({"x1": x1, "x2": x2}), mu + rng.normal(size=n)


def kept_truth(h: float, c: float) -> float:
    """theta_K for the rows with x1 <= c (closed form above)."""
    m = -stats.norm.pdf(c) / stats.norm.cdf(c)
    return h + h**2 / 2 + h * (1 + RHO / 2) * m


def one(setting: str, n: int, rep: int) -> dict:
    h = STEPS[setting]
    rng = np.random.default_rng(10_000 * (setting == "weak") + rep)
    X, y = draw(n, rng)
    theta = kept_truth(h, float(X["x1"].max()) - h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fme.PositivityWarning)
        r = fme.dgp_ame(X, y, {"x1": h}, random_state=rep, on_extrapolation="exclude").iloc[0]
    return dict(
        setting=setting,
        rep=rep,
        theta=theta,
        est=r["ame"],
        se=r["std_error"],
        low=r["conf_low"],
        high=r["conf_high"],
        plug=r["plug_in"],
        positivity=r["positivity"],
        ess_share=r["ess_share"],
        n_kept=r["n"],
    )


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    for setting, g in rows.groupby("setting", sort=False):
        est = g.dropna(subset=["est"])
        cover = float(np.mean((est["low"] <= est["theta"]) & (est["theta"] <= est["high"])))
        bias = float((est["est"] - est["theta"]).mean())
        out.append(
            dict(
                setting=setting,
                h=STEPS[setting],
                repetitions=len(g),
                estimated=len(est),
                coverage=cover,
                coverage_mc=1.96 * np.sqrt(cover * (1 - cover) / max(len(est), 1)),
                bias=bias,
                mean_se=float(est["se"].mean()),
                sd_est=float(est["est"].std()),
                bias_over_se=bias / float(est["se"].mean()),
                plug_in_bias=float((est["plug"] - est["theta"]).mean()),
                positivity=", ".join(f"{k} {v}" for k, v in g["positivity"].value_counts().items()),
                median_ess_share=float(g["ess_share"].median()),
            )
        )
    return pd.DataFrame(out)


def fails_check(n: int) -> None:
    X, y = draw(n, np.random.default_rng(7))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fme.dgp_ame(X, y, {"x1": FAILS}, on_extrapolation="exclude").iloc[0]
    msgs = [str(w.message) for w in caught if issubclass(w.category, fme.PositivityWarning)]
    print(
        f"fails check (h = {FAILS}, n = {n}): positivity {r['positivity']}, ame {r['ame']}, interval "
        f"[{r['conf_low']}, {r['conf_high']}], ess_share {r['ess_share']:.3f}, note {r['note']!r}"
    )
    for msg in msgs:
        print(f"  PositivityWarning: {msg}")
    assert r["positivity"] == "fails" and np.isnan(r["ame"]) and np.isnan(r["conf_low"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--out", default="bench_dgp_exclude_coverage.csv")
    args = ap.parse_args()
    start = time.time()
    fails_check(args.n)
    fields = ["setting", "rep", "theta", "est", "se", "low", "high", "plug", "positivity", "ess_share", "n_kept"]
    with open(args.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fields)
        writer.writeheader()
        for rep in range(args.repeats):
            for setting in STEPS:
                writer.writerow(one(setting, args.n, rep))
            fh.flush()
    rows = pd.read_csv(args.out)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(summarise(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"\nwall time {time.time() - start:.0f} s (n = {args.n}, {args.repeats} repetitions per setting)")


if __name__ == "__main__":
    main()
