"""fme's margins vocabulary against Python marginaleffects, same run (issue 24 benchmark).

A 10^5-row logit (statsmodels, three regressors and an interaction); in one process, alternately and
``--repeat`` times (best wall time of each): ``fme.avg_slopes(m, d, "x")`` vs ``marginaleffects.avg_slopes(m,
variables="x")``, and ``fme.avg_comparisons(m, d, {"x": 1}, comparison="lnoravg")`` vs
``marginaleffects.avg_comparisons(m, variables={"x": forward step}, comparison="lnor")`` (which marginaleffects
applies to the averages; its numeric contrasts are centred, so the forward step is passed as a function).
Needs marginaleffects importable next to fme, e.g. a throwaway venv with both::

    python3 -m venv /tmp/me-venv && /tmp/me-venv/bin/pip install marginaleffects "polars<2" statsmodels \
        scikit-learn pandas pyarrow jinja2 pyyaml packaging
    PYTHONPATH=. /tmp/me-venv/bin/python benchmarks/bench_margins_vocab.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import fme


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import marginaleffects as me

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"x": rng.normal(size=args.n), "w": rng.normal(size=args.n), "v": rng.uniform(size=args.n)})
    eta = -0.3 + 0.8 * d["x"] - 0.5 * d["w"] + 0.4 * d["x"] * d["w"] + d["v"]
    d["y"] = (rng.uniform(size=args.n) < 1 / (1 + np.exp(-eta))).astype(int)
    m = smf.logit("y ~ x * w + v", data=d).fit(disp=0)

    def forward(x):
        return np.column_stack([x.to_numpy(), x.to_numpy() + 1.0])

    cases = {
        "avg_slopes dydx": (lambda: fme.avg_slopes(m, d, "x"), lambda: me.avg_slopes(m, variables="x")),
        "avg_comparisons lnor": (
            lambda: fme.avg_comparisons(m, d, {"x": 1}, comparison="lnoravg"),
            # marginaleffects' numeric contrasts are centred: the forward step as a function
            lambda: me.avg_comparisons(m, variables={"x": forward}, comparison="lnor"),
        ),
    }
    print("| case | rows | fme best s | marginaleffects best s | ratio | fme estimate | marginaleffects estimate |")
    print("|---|---|---|---|---|---|---|")
    for name, (f_fme, f_me) in cases.items():
        t_fme, t_me = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            a = f_fme()
            t_fme.append(time.perf_counter() - t)
            t = time.perf_counter()
            b = f_me()
            t_me.append(time.perf_counter() - t)
        est_a = float(a["estimate"].iloc[0])
        est_b = float(b.to_pandas()["estimate"].iloc[0])
        print(
            f"| {name} | {args.n:,} | {min(t_fme):.3f} | {min(t_me):.3f} | {min(t_fme) / min(t_me):.2f} | "
            f"{est_a:.10g} | {est_b:.10g} |"
        )


if __name__ == "__main__":
    main()
