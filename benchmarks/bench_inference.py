"""Cost of model-uncertainty inference (fme.inference).

1. Delta method: ``fme.ame(logit, data, {"x0": 1})`` (analytic Jacobian) on a 10^5-row statsmodels
   logit against marginaleffects' ``avg_comparisons`` of the same forward contrast, timed in the same run.
   Runs only when marginaleffects is importable (e.g. a throwaway venv with fme installed by
   ``pip install -e . --no-deps``); the suite and fme never need it. Goal: fme / marginaleffects <= 0.5.
2. Bootstrap: 200 refits of a HistGradientBoostingRegressor on 10^4 rows, fMEs of x0 + 1 on the same
   10^4 rows, ``fme.ame(..., bootstrap={..., "n_jobs": 2})`` against a hand-written sequential loop
   (resample, clone, fit, predict x and x + h). Goal: fme / loop <= 0.6.

3. Bootstrap memory: traced peak memory (tracemalloc) of 200 refits of a linear pipeline with fMEs on
   10^5 rows: ``fme.ame`` (by 4 groups; per-group averages only), ``fme.fme`` with the per-row draws in
   RAM and ``fme.fme`` with ``memory_limit=0`` (draws in a temporary memory map), against the 8 n B bytes
   of the n x B draws.

Usage: ``python benchmarks/bench_inference.py [--n-delta 100000] [--n-boot 10000] [--resamples 200]
[--skip-delta] [--skip-bootstrap] [--memory]`` (``--memory`` runs part 3 only).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import fme


def _timed(fn, repeat: int = 1):
    """Result, best wall time and CPU time of that run over ``repeat`` runs."""
    best = (np.inf, np.inf)
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, (time.perf_counter() - t0, time.process_time() - c0))
    return out, *best


def bench_delta(n: int) -> None:
    try:
        from marginaleffects import avg_comparisons
    except ImportError:
        print("delta: marginaleffects not importable; skipped")
        return
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(0)
    d = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(5)})
    eta = 0.5 * d["x0"] - 0.3 * d["x1"] + 0.2 * d["x0"] * d["x2"] + 0.1 * d["x3"] ** 2
    d["y"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    m = smf.logit("y ~ x0 + x1 + x2 + x3 + x4 + x0:x2 + I(x3**2)", d).fit(disp=0)

    def forward(x):
        return np.column_stack([x.to_numpy(), x.to_numpy() + 1.0])

    ours, t_f, c_f = _timed(lambda: fme.ame(m, d, {"x0": 1}), 3)
    ref, t_m, c_m = _timed(lambda: avg_comparisons(m, variables={"x0": forward}), 3)
    ref = ref.to_pandas().iloc[0]
    print(
        f"delta, logit n={n}: fme {t_f:.3f} s (cpu {c_f:.3f}), marginaleffects {t_m:.3f} s (cpu {c_m:.3f}), "
        f"ratio {t_f / t_m:.2f} (cpu {c_f / c_m:.2f}); best of 3"
    )
    print(
        f"  ame {ours['ame'].iloc[0]:.10g} vs {ref['estimate']:.10g}; "
        f"se {ours['std_error'].iloc[0]:.6g} vs {ref['std_error']:.6g}"
    )


def bench_bootstrap(n: int, B: int, n_jobs: int) -> None:
    from sklearn.base import clone
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(1)
    X = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(5)})
    y = X["x0"] ** 2 + X["x1"] + rng.normal(size=n)
    model = HistGradientBoostingRegressor(max_iter=50, random_state=0).fit(X, y)

    def loop():
        ames = np.empty(B)
        X1 = X.assign(x0=X["x0"] + 1.0)
        for b in range(B):
            idx = np.random.default_rng(b).integers(0, n, n)
            fit = clone(model).fit(X.iloc[idx], y.iloc[idx])
            ames[b] = np.mean(fit.predict(X1) - fit.predict(X))
        return ames

    spec = {"X": X, "y": y, "n_resamples": B, "random_state": 0, "n_jobs": n_jobs, "progress": False}
    ours, t_f, c_f = _timed(lambda: fme.ame(model, X, {"x0": 1}, bootstrap=spec))
    ames, t_l, c_l = _timed(loop)
    print(f"bootstrap, HGB n={n}, B={B}: fme n_jobs={n_jobs} {t_f:.2f} s, hand loop {t_l:.2f} s, ratio {t_f / t_l:.2f}")
    print(f"  se fme {ours['std_error'].iloc[0]:.4g}, loop {ames.std(ddof=1):.4g}")


def bench_memory(n: int, B: int) -> None:
    import tracemalloc

    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(2)
    X = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(5)})
    y = X["x0"] + 0.5 * X["x1"] + rng.normal(size=n)
    train = X.iloc[:10_000]
    model = LinearRegression().fit(train, y.iloc[:10_000])
    data = X.assign(g=rng.integers(0, 4, n))
    spec = {"X": train, "y": y.iloc[:10_000], "n_resamples": B, "random_state": 0, "progress": False}
    draws_mb = 8 * n * B / 2**20
    for name, call in [
        ("ame by 4 groups", lambda: fme.ame(model, data, {"x0": 1}, by="g", bootstrap=spec)),
        ("fme, draws in RAM", lambda: fme.fme(model, data, {"x0": 1}, bootstrap=spec)),
        ("fme, memory_limit=0", lambda: fme.fme(model, data, {"x0": 1}, bootstrap={**spec, "memory_limit": 0})),
    ]:
        tracemalloc.start()
        t0 = time.perf_counter()
        call()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(
            f"memory, n={n}, B={B}: {name}: peak {peak:.1f} MiB ({peak / draws_mb:.2f} x the {draws_mb:.0f} MiB "
            f"of n x B draws), {time.perf_counter() - t0:.1f} s"
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n-delta", type=int, default=100_000)
    p.add_argument("--n-boot", type=int, default=10_000)
    p.add_argument("--resamples", type=int, default=200)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--skip-delta", action="store_true")
    p.add_argument("--skip-bootstrap", action="store_true")
    p.add_argument("--memory", action="store_true")
    a = p.parse_args()
    if a.memory:
        bench_memory(100_000, a.resamples)
        return
    if not a.skip_delta:
        bench_delta(a.n_delta)
    if not a.skip_bootstrap:
        bench_bootstrap(a.n_boot, a.resamples, a.n_jobs)


if __name__ == "__main__":
    main()
