"""Joint regions (``fme.came`` of several effects): does one tree find a split that two effects share, do the
third effect's explained-share intervals cover 0, and do the honest leaf intervals cover their truths?

Data-generating process, with a known prediction function (the "model") and known truths in closed form:
partitioning features z1..z4 ~ N(0, 1), step features xa, xb, xc ~ N(0, 1) and three features u1, u2, u3 ~ N(0, 1)
that are not partitioning features, all independent; s = 1(z1 > 0) and

    f(x) = xa (1 + 2 s + u1) + xb (-1 + 1.5 s + u2) + xc (0.5 + u3),

so that with steps of +1 the fMEs are fME_a = 1 + 2 s + u1 and fME_b = -1 + 1.5 s + u2 (they share the split
z1 = 0) and fME_c = 0.5 + u3 (no structure: the regions explain none of it). A region that restricts z1 to
(lo, hi] has the true cAMEs 1 + 2 q, -1 + 1.5 q and 0.5 with q = P(z1 > 0 | lo < z1 <= hi); the true explained
share of an effect with jump d is sum_l P(l) (d q_l - d p)^2 / (d^2 p (1 - p) + 1), p = 1/2.

Each repetition draws n rows, computes the three effects' fMEs (``fme.fme``, the fixed model) and grows one
honest CTREE on them (``fme.came([...])``, defaults: half the rows grow the tree, the other half estimate the
leaves). It records whether the root split is z1 within 0.25 of 0, whether each leaf's 95 % interval
(``came_ci_low``/``came_ci_high``) covers its true cAME, and whether each effect's explained-share interval
(``heterogeneity()``: the unified, Feldman-Cousins, interval) covers its true share (for the third effect: 0), at
95 % and at 90 %, and, as the baseline in the same run, whether the equal-tailed interval of the same F statistic
(the noncentral F inverted at alpha/2 and 1 - alpha/2, what ``heterogeneity()`` reported before) covers it; and
the time ``heterogeneity()`` takes on the three effects.

    python benchmarks/bench_joint_regions.py [--reps 200] [--n 2000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

import fme
from fme._trees.joint import _equal_tailed
from fme._trees.subspaces import subspace_bounds

JUMPS = (2.0, 1.5, 0.0)
BASE = (1.0, -1.0, 0.5)


def model(d: pd.DataFrame) -> np.ndarray:
    s = (d["z1"].to_numpy() > 0).astype(float)
    return (
        d["xa"].to_numpy() * (1 + 2 * s + d["u1"].to_numpy())
        + d["xb"].to_numpy() * (-1 + 1.5 * s + d["u2"].to_numpy())
        + d["xc"].to_numpy() * (0.5 + d["u3"].to_numpy())
    )


def draw(n: int, rng: np.random.Generator) -> pd.DataFrame:
    names = ["xa", "xb", "xc", "u1", "u2", "u3", "z1", "z2", "z3", "z4"]
    return pd.DataFrame(rng.normal(size=(n, len(names))), columns=names)


def share_above(part: fme.PartitionResult, node: int) -> tuple[float, float]:
    """(P(region), P(z1 > 0 | region)) of a leaf under the N(0, 1) features (only z1 matters for the truth;
    the other features are independent of the fMEs, so their bounds only scale P(region))."""
    prob, q = 1.0, 0.5  # unrestricted z1: P(z1 > 0) = 1/2
    for feat, (lo, hi, _) in subspace_bounds(part.tree.nodes_, node, part.leaf_ids).items():
        a = 0.0 if lo is None else stats.norm.cdf(lo)
        b = 1.0 if hi is None else stats.norm.cdf(hi)
        prob *= b - a
        if feat == "z1":
            q = max(0.0, b - max(a, 0.5)) / (b - a)
    return prob, q


def one_rep(n: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    X = draw(n, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed model's interval (a function has no covariance)
        effects = [fme.fme(model, X, {f: 1.0}) for f in ("xa", "xb", "xc")]
        part = fme.came(effects, features=["z1", "z2", "z3", "z4"], random_state=seed)
    nodes = part.tree.nodes_
    found = nodes.at[1, "split_feature"] == "z1" and abs(float(nodes.at[1, "split_value"])) < 0.25
    region = {int(node): share_above(part, int(node)) for node in part.leaf_ids}
    covered = total = 0
    for k, label in enumerate(part.effect_labels):
        rows = part.leaves[part.leaves["effect"] == label]
        for _, r in rows.iterrows():
            if r["n"] < 2:
                continue
            truth = BASE[k] + JUMPS[k] * region[int(r["node"])][1]
            covered += int(r["came_ci_low"] <= truth <= r["came_ci_high"])
            total += 1
    out = {"found": float(found), "leaf_covered": covered, "leaf_total": total, "n_leaves": len(part.leaf_ids)}
    probs = np.array([region[int(node)][0] for node in part.leaf_ids])
    probs = probs / probs.sum()
    qs = np.array([region[int(node)][1] for node in part.leaf_ids])
    for level in (0.95, 0.90):
        t0 = time.perf_counter()
        het = part.heterogeneity(conf_level=level)
        out[f"seconds_{level}"] = time.perf_counter() - t0
        for k in range(3):
            d = JUMPS[k]
            true_share = float(np.sum(probs * (d * qs - d * 0.5) ** 2) / (d * d * 0.25 + 1.0))
            r = het.iloc[k]
            out[f"share{k}_{level}"] = float(r["share_ci_low"] <= true_share <= r["share_ci_high"])
            et_lo, et_hi = _equal_tailed(r["statistic"], r["df1"], r["df2"], r["n"], 1.0 - level)
            out[f"et{k}_{level}"] = float(et_lo <= true_share <= et_hi)
            out[f"kind{k}_{level}"] = r["interval"]
    out["share_c"] = float(part.heterogeneity().iloc[2]["share_explained"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=20261128)
    args = ap.parse_args()
    seeds = [int(s) for s in np.random.SeedSequence(args.seed).generate_state(args.reps)]
    t0 = time.perf_counter()
    if args.jobs > 1:
        from joblib import Parallel, delayed

        rows = Parallel(n_jobs=args.jobs)(delayed(one_rep)(args.n, s) for s in seeds)
    else:
        rows = [one_rep(args.n, s) for s in seeds]
    elapsed = time.perf_counter() - t0
    res = pd.DataFrame(rows)

    def pct(x: float, m: int) -> str:
        se = np.sqrt(max(x * (1 - x), 1e-12) / m)
        return f"{100 * x:.1f} % (± {100 * 1.96 * se:.1f})"

    reps = len(res)
    leaf_total = int(res["leaf_total"].sum())
    print(f"joint regions: {reps} repetitions at n = {args.n}, {elapsed:.0f} s ({args.jobs} job(s))")
    print(f"  shared split found (root z1 within 0.25 of 0): {pct(res['found'].mean(), reps)}")
    print(f"  leaves per tree: median {res['n_leaves'].median():.0f}, max {res['n_leaves'].max():.0f}")
    leaf_cover = res["leaf_covered"].sum() / leaf_total
    print(f"  honest 95 % leaf intervals covering the true cAME: {pct(leaf_cover, leaf_total)} of {leaf_total}")
    for level in (0.95, 0.90):
        for k, name in enumerate(("a (shared split)", "b (shared split)", "c (no structure; truth 0)")):
            print(
                f"  {int(level * 100)} % explained-share interval covering the truth, effect {name}: "
                f"{pct(res[f'share{k}_{level}'].mean(), reps)}"
            )
        for k, name in enumerate(("a", "b", "c (truth 0)")):
            print(
                f"  {int(level * 100)} % equal-tailed interval (baseline) covering the truth, effect {name}: "
                f"{pct(res[f'et{k}_{level}'].mean(), reps)}"
            )
    kinds = pd.concat([res[c] for c in res.columns if c.startswith("kind")]).value_counts()
    print(f"  interval kinds reported: { {str(k): int(v) for k, v in kinds.items()} }")
    secs = res["seconds_0.95"]
    print(f"  heterogeneity() on the 3 effects: median {secs.median():.3f} s, max {secs.max():.3f} s")
    share_c = res["share_c"]
    print(f"  effect c's explained share: mean {share_c.mean():.2e}, 95th percentile {share_c.quantile(0.95):.2e}")


if __name__ == "__main__":
    main()
