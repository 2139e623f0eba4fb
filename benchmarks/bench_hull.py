"""Benchmark of the convex-hull extrapolation detector (fme.extrapolation.ConvexHullDetector).

10 000 query points against 10 000 reference rows, d = 3 and d = 8. Reference:
standard normal. Queries: half standard normal, half N(0, 1.3^2) (so a good
share lies just outside the hull, the hard case). Baseline: the naive method,
one ``linprog(method="highs")`` feasibility LP per point on the full
reference (lambda >= 0, sum lambda = 1, X^T lambda = p); it is timed on a
subset of ``N_BASELINE`` points and extrapolated linearly to all points
(reported as such). The baseline's answers on that subset are compared with
the detector's. For d = 8 the points decided by each stage of the detector
(``n_stage_``) are printed too.

Run: ``.venv/bin/python benchmarks/bench_hull.py``
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy.optimize import linprog

from fme.extrapolation import ConvexHullDetector

N_REF = 10_000
N_QUERY = 10_000
N_BASELINE = 200


def naive_inside(Z: np.ndarray, p: np.ndarray) -> bool:
    """One LP on the full reference (standardised like the detector)."""
    n, d = Z.shape
    A_eq = np.vstack([Z.T, np.ones(n)])
    res = linprog(np.zeros(n), A_eq=A_eq, b_eq=np.r_[p, 1.0], bounds=(0, None), method="highs")
    return res.status == 0


def main() -> None:
    for d in (3, 8):
        rng = np.random.default_rng(d)
        cols = [f"x{j}" for j in range(d)]
        ref = pd.DataFrame(rng.standard_normal((N_REF, d)), columns=cols)
        q = np.vstack([rng.standard_normal((N_QUERY // 2, d)), 1.3 * rng.standard_normal((N_QUERY - N_QUERY // 2, d))])
        query = pd.DataFrame(q, columns=cols)
        t0 = time.perf_counter()
        det = ConvexHullDetector(random_state=0).fit(ref)
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        flags = det.flag(query)
        t_flag = time.perf_counter() - t0
        # Naive baseline on a subset, in the same standardised coordinates.
        Z = det.encoding_.z_reference
        zq = det.encoding_.standardise(query)
        sub = rng.choice(N_QUERY, N_BASELINE, replace=False)
        t0 = time.perf_counter()
        naive = np.array([not naive_inside(Z, zq[i]) for i in sub])
        t_sub = time.perf_counter() - t0
        t_naive = t_sub * N_QUERY / N_BASELINE
        agree = int((naive == flags[sub]).sum())
        print(
            f"d={d}: mode={det.mode_}  fit {t_fit:.2f} s  flag {N_QUERY} points {t_flag:.2f} s "
            f"(LPs solved: {det.n_lp_}; flagged {flags.mean():.1%})\n"
            f"      naive: {t_sub:.1f} s for {N_BASELINE} points -> ~{t_naive:.0f} s for {N_QUERY} (extrapolated)\n"
            f"      speed-up ~{t_naive / (t_fit + t_flag):.0f}x (fit + flag); agreement with naive on the subset: "
            f"{agree}/{N_BASELINE}"
        )
        if det.mode_ == "lp":
            print(f"      points decided per stage: {dict(det.n_stage_)}")


if __name__ == "__main__":
    main()
