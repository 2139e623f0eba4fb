"""Coverage of cAME leaf intervals, honest and not (issue 25): a simulation with known truth.

Two data-generating settings with a fixed, known prediction function and x ~ U(0, 1)^3, so the true
mean fME in any box is known in closed form (a box's mean of x2 is its midpoint; P(x3 > 0.5 | box) is a
length ratio), exact rather than Monte Carlo:

* ``heterogeneous``: f = 2 x1 x2 + 4 x1 1(x3 > 0.5), step x1 + 0.5: fME = x2 + 2 * 1(x3 > 0.5);
  partitioning features x2, x3.
* ``homogeneous``: f = 2 x1 x2, step x1 + 0.5: fME = x2, partitioning features x1, x3, which do not
  change the mean fME: every region's true cAME is 0.5 (the family-wise error rate of the leaf tests).

Each repetition draws n rows, computes the fMEs, grows a CART tree of depth 2 (it always splits, as a
validator's report does), and checks each leaf's 95 % interval (the fixed-model t interval, §5.5) against
the region's true mean fME; under ``homogeneous`` it also runs the pairwise leaf tests with Holm's
adjustment. ``naive`` is the paper's procedure (tree and leaves on the same rows), ``honest`` grows on
half the rows and estimates on the other half.

    python benchmarks/bench_came_coverage.py [--reps 500] [--n 400]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import fme
from fme._trees.subspaces import subspace_bounds

SETTINGS = {
    "heterogeneous": (
        lambda d: 2 * d["x1"].to_numpy() * d["x2"].to_numpy() + 4 * d["x1"].to_numpy() * (d["x3"].to_numpy() > 0.5),
        ["x2", "x3"],
    ),
    "homogeneous": (lambda d: 2 * d["x1"].to_numpy() * d["x2"].to_numpy(), ["x1", "x3"]),
}


def true_came(setting: str, box: dict[str, tuple[float, float]]) -> float:
    """The mean fME over the box (x ~ U(0, 1)^3 restricted to it), in closed form."""
    lo2, hi2 = box.get("x2", (0.0, 1.0))
    value = (lo2 + hi2) / 2 if setting == "heterogeneous" else 0.5
    if setting == "heterogeneous":
        lo3, hi3 = box.get("x3", (0.0, 1.0))
        value += 2 * max(0.0, hi3 - max(lo3, 0.5)) / (hi3 - lo3)
    return value


def leaf_box(part: fme.PartitionResult, node: int) -> dict[str, tuple[float, float]]:
    """The population box of a leaf: the split bounds, clipped to the support [0, 1]."""
    return {
        f: (0.0 if lo is None else max(0.0, lo), 1.0 if hi is None else min(1.0, hi))
        for f, (lo, hi, _) in subspace_bounds(part.tree.nodes_, node, part.leaf_ids).items()
    }


def one_rep(setting: str, n: int, seed: int, honest: bool) -> tuple[int, int, bool]:
    """(leaf intervals covering the truth, leaves, any Holm-adjusted pairwise rejection at 5 %)."""
    f, features = SETTINGS[setting]
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(0, 1, (n, 3)), columns=["x1", "x2", "x3"])
    eff = fme.fme(f, X, {"x1": 0.5})
    part = fme.came(
        eff, features=features, method="cart", max_depth=2, min_samples_leaf=20, honest=honest, random_state=seed
    )
    covered = 0
    for _, leaf in part.leaves.iterrows():
        truth = true_came(setting, leaf_box(part, int(leaf["node"])))
        covered += int(leaf["came_ci_low"] <= truth <= leaf["came_ci_high"])
    reject = bool((part.test()["p_value_adj"] < 0.05).any()) if len(part.leaf_ids) > 1 else False
    return covered, len(part.leaf_ids), reject


def run(reps: int, n: int) -> pd.DataFrame:
    rows = []
    for setting in SETTINGS:
        for honest in (True, False):
            cov = leaves = rejections = 0
            for r in range(reps):
                c, k, rej = one_rep(setting, n, 1000 + r, honest)
                cov, leaves, rejections = cov + c, leaves + k, rejections + rej
            rows.append(
                {
                    "setting": setting,
                    "procedure": "honest" if honest else "naive",
                    "reps": reps,
                    "n": n,
                    "leaf intervals": leaves,
                    "coverage of 95% intervals": cov / leaves,
                    "FWER of Holm pairwise tests": rejections / reps if setting == "homogeneous" else np.nan,
                }
            )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--n", type=int, default=400)
    args = ap.parse_args()
    t0 = time.perf_counter()
    table = run(args.reps, args.n)
    print("| " + " | ".join(table.columns) + " |")
    print("|" + "---|" * len(table.columns))
    for _, r in table.iterrows():
        print("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in r) + " |")
    print(f"\n{time.perf_counter() - t0:.0f} s")
