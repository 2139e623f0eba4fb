"""fME + NLM cost against the model's own ``predict`` on exactly the rows it needs.

For each n and model, one run times

* ``fme.fme(model, X, {"x0": 1}, nlm=True, nlm_method="gauss-legendre")`` (16 nodes), and
* the baseline: ``model.predict`` on pre-built frames holding exactly the
  rows the NLM needs: x, x + h and x + t_k h for every interior node t_k,
  in the same batches as fme uses (so memory is comparable).

The ratio fme / baseline is fme's overhead (frame building, bookkeeping,
quadrature); absolute times on shared machines are noisy, ratios less so.

Two floors put the ratio in proportion, timed in the same run:

* ``write floor``: baseline + writing the stacked x + t_k h rows once into an
  already paged-in buffer (``np.copyto``), the least any engine that hands a
  black-box ``predict`` its rows must add;
* ``+ quadrature``: the write floor + ``nlm_from_path`` on the predictions.

``floor / baseline`` is the best ratio such an engine can reach on this machine.
Usage: ``python benchmarks/bench_fme.py [--sizes 10000 100000 1000000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fme
from fme._core.kernel import _default_batch
from fme.nlm import nlm_from_path, quadrature_rule
from fme.steps import apply_steps, parse_steps, stack_path

P = 10


def make_data(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, P)), columns=[f"x{j}" for j in range(P)])


def target(X: pd.DataFrame) -> np.ndarray:
    return np.sin(X["x0"]) * X["x1"] + X["x2"] ** 2 + 0.5 * X["x3"]


def fit_models() -> dict:
    X = make_data(20_000, seed=1)
    y = target(X).to_numpy()
    return {
        "HistGradientBoostingRegressor": HistGradientBoostingRegressor(max_iter=100, random_state=0).fit(X, y),
        "StandardScaler+LinearRegression": make_pipeline(StandardScaler(), LinearRegression()).fit(X, y),
    }


def baseline_frames(X: pd.DataFrame):
    steps = parse_steps(X, {"x0": 1.0})
    rule = quadrature_rule()
    size = _default_batch(len(X), X.shape[1], rule)
    t_int = rule.nodes[rule.interior]
    frames = []
    for start in range(0, len(X), size):
        xb = X.iloc[start : start + size]
        frames += [xb, apply_steps(xb, steps), stack_path(xb, steps, t_int)]
    return frames


def write_floor(frames) -> Callable[[], list]:
    """A function writing every stacked row into warm buffers shaped like the stacked frames."""
    stacked = [f.to_numpy() for f in frames[2::3]]
    buffers = [np.empty_like(a) for a in stacked]
    for b, a in zip(buffers, stacked):
        np.copyto(b, a)  # page the buffers in before timing
    return lambda: [np.copyto(b, a) for b, a in zip(buffers, stacked)]


def quadrature(preds: list[np.ndarray]) -> Callable[[], list]:
    """A function computing the NLMs from the baseline's predictions (f(x), f(x + h), nodes per batch)."""
    rule = quadrature_rule()
    k = rule.n_evaluations
    parts = [(f0, f1, st.reshape(k, len(f0))) for f0, f1, st in zip(preds[0::3], preds[1::3], preds[2::3])]
    return lambda: [nlm_from_path(a, b, c, rule) for a, b, c in parts]


def best_of(fn, repeat: int) -> tuple[float, float, Any]:
    """Best wall time, best CPU time (process_time) over ``repeat`` runs, and the last result.

    CPU time is less disturbed by other jobs on a shared machine than wall time.
    """
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    models = fit_models()
    print(
        "| model | n | rows predicted | fme(nlm=True) wall s | predict wall s | ratio (wall) | ratio (CPU) "
        "| write floor | + quadrature |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        X = make_data(n)
        frames = baseline_frames(X)
        rows = sum(len(f) for f in frames)
        write = write_floor(frames)
        w_write, _, _ = best_of(write, args.repeat)
        for name, model in models.items():
            w_base, c_base, preds = best_of(lambda frames=frames: [model.predict(f) for f in frames], args.repeat)
            w_fme, c_fme, _ = best_of(
                lambda: fme.fme(model, X, {"x0": 1.0}, nlm=True, nlm_method="gauss-legendre"), args.repeat
            )
            w_quad, _, _ = best_of(quadrature(preds), args.repeat)
            print(
                f"| {name} | {n:,} | {rows:,} | {w_fme:.3f} | {w_base:.3f} | {w_fme / w_base:.2f} | "
                f"{c_fme / c_base:.2f} | {(w_base + w_write) / w_base:.2f} | "
                f"{(w_base + w_write + w_quad) / w_base:.2f} |",
                flush=True,
            )
        del frames, write


if __name__ == "__main__":
    main()
