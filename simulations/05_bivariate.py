# ---
# jupyter:
#   jupytext:
#     comment_magics: false
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   language_info:
#     name: python
# ---

# %% [markdown] id="bd49cab1"
# # Bivariate data (paper §7.3-7.4, Figs. 8 and 9)
#
# Two DGPs on x1, x2 ~ U(-5, 5) (no model): additive f = g(x1) + x2 and multiplicative f = g(x1) * x2, where g
# is the univariate DGP. Steps h1 = 2 (univariate change) and (h1, h2) = (2, 3) (bivariate change); fMEs and NLMs
# are mapped over (x1, x2), negative NLMs in red. cAME trees on (x1, x2) with the controls of §7.
#
# Exact checks: with h1 = 2 the additive DGP's fMEs equal the univariate ones (additive recovery, Appendix B),
# independent of x2; the multiplicative DGP's fMEs are the univariate ones times x2.

# %% id="51419ef8" tags=["parameters"]
output_dir: str = "output/05"  # folder for figures and numbers
fast: bool = False  # CI mode, smaller sample of 500
n: int = 1500  # sample size
seed: int = 123  # numpy seed (R's set.seed(123) is not reproduced)
h1: float = 2.0  # step in x1
h2: float = 3.0  # step in x2 (bivariate change)
minbucket: int = 30  # CTREE minimum leaf size
mincriterion: float = 0.99  # CTREE: 1 - significance level of the test statistic

# %% id="8cede694"
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import fme
import fme.paper as paper

out = Path(output_dir)
out.mkdir(parents=True, exist_ok=True)
numbers: dict = {}  # reproduced numbers, keyed as fme.paper.PAPER_NUMBERS
checks: dict = {}  # further verified statements (not printed in the paper)


def save(fig, name):
    """Save a figure as PNG and SVG into output_dir: no date, fixed SVG ids (same inputs, same bytes)."""
    with plt.rc_context({"svg.hashsalt": "fme-paper"}):
        for ext, meta in (("png", {"Software": None}), ("svg", {"Date": None})):
            fig.savefig(out / f"{name}.{ext}", dpi=150, bbox_inches="tight", metadata=meta)
    return fig


# %% id="ea10a6c7"

NOTEBOOK = "05_bivariate"
if fast:
    n = min(n, 500)
data = paper.simulate_bivariate(n, seed)
X = data[["x1", "x2"]]
dgps = {
    "additive": lambda d: paper.bivariate_additive(d["x1"], d["x2"]),
    "multiplicative": lambda d: paper.bivariate_multiplicative(d["x1"], d["x2"]),
}
steps = {"h1": {"x1": h1}, "h1_h2": {"x1": h1, "x2": h2}}
results, parts = {}, {}
for name, f in dgps.items():
    for sname, s in steps.items():
        r = fme.fme(f, X, s, nlm=True, nlm_method="simpson38")
        results[name, sname] = r
        # honest=False: the paper's procedure (tree and leaf figures from the same rows); fme's default is honest
        parts[name, sname] = fme.came(
            r,
            honest=False,
            features=["x1", "x2"],
            minbucket=minbucket,
            testtype="teststatistic",
            mincriterion=mincriterion,
        )
        print(parts[name, sname].summary().splitlines()[0], f"[{name}]:", len(parts[name, sname].leaves), "leaves")

# %% id="70586743"
x1, x2 = X["x1"].to_numpy(), X["x2"].to_numpy()
uni = paper.univariate_dgp(x1 + h1) - paper.univariate_dgp(x1)
assert np.allclose(results["additive", "h1"].results["fme"], uni, rtol=0, atol=1e-9)  # additive recovery
assert np.allclose(results["multiplicative", "h1"].results["fme"], uni * x2, rtol=0, atol=1e-9)


def split_features(part):
    nodes = part.tree.nodes_
    return sorted(set(nodes["split_feature"].dropna()))


for key, part in parts.items():
    checks[f"{key[0]}_{key[1]}_split_features"] = ", ".join(split_features(part))
    checks[f"{key[0]}_{key[1]}_n_leaves"] = len(part.leaves)
    checks[f"{key[0]}_{key[1]}_share_nlm_above_0.9"] = float((results[key].results["nlm"] > 0.9).mean())
print(json.dumps(checks, indent=1))
# The paper: the additive tree (h1 = 2) does not split on x2, the multiplicative one does.
checks["additive_h1_tree_ignores_x2"] = "x2" not in split_features(parts["additive", "h1"])
checks["multiplicative_h1_tree_uses_x2"] = "x2" in split_features(parts["multiplicative", "h1"])


# %% id="b368d76b"
def nlm_colors(values):
    """NLM in [0, 1] on a grey-blue scale, negative NLMs red (as in the paper's figures)."""
    v = np.asarray(values, dtype=float)
    cmap = plt.get_cmap("viridis")
    rgba = cmap(np.clip(v, 0, 1))
    rgba[v < 0] = (0.85, 0.1, 0.1, 1.0)
    return rgba


for sname, fig_name, title in (("h1", "fig8", f"h1 = {h1:g}"), ("h1_h2", "fig9", f"h1 = {h1:g}, h2 = {h2:g}")):
    fig, axes = plt.subplots(2, 2, figsize=(11, 9.5))
    for row, name in enumerate(dgps):
        r = results[name, sname].results
        sc = axes[row, 0].scatter(x1, x2, c=r["fme"], s=6, cmap="coolwarm")
        fig.colorbar(sc, ax=axes[row, 0], label="fME")
        axes[row, 1].scatter(x1, x2, c=nlm_colors(r["nlm"]), s=6)
        sm = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(0, 1))
        fig.colorbar(sm, ax=axes[row, 1], label="NLM (negative: red)")
        for ax in axes[row]:
            ax.set_xlabel("x1")
            ax.set_ylabel("x2")
            ax.set_title(f"{name} DGP")
            ax.annotate(
                "",
                xy=(-4.8 + steps[sname].get("x1", 0) / 2, -4.8 + steps[sname].get("x2", 0) / 2),
                xytext=(-4.8, -4.8),
                arrowprops=dict(arrowstyle="->", lw=1.5),
            )
    fig.suptitle(f"fMEs (left) and NLMs (right), {title}")
    save(fig, f"{fig_name}_bivariate_{sname}")

# %% id="715b2dbf"
fig, axes = plt.subplots(2, 2, figsize=(11, 8))
for ax, (key, part) in zip(axes.ravel(), parts.items()):
    lv = part.leaves
    ax.errorbar(
        np.arange(len(lv)),
        lv["came"],
        yerr=[lv["came"] - lv["came_ci_low"], lv["came_ci_high"] - lv["came"]],
        fmt="o",
        ms=3,
    )
    ax.set_title(f"{key[0]}, {key[1]}: {len(lv)} cAMEs (95% CI)")
    ax.set_xlabel("leaf (left to right)")
    ax.set_ylabel("cAME")
fig.tight_layout()
save(fig, "bivariate_came_leaves")


# %% id="3e0d751a"
def _plain(v):
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


record = {
    "notebook": NOTEBOOK,
    "parameters": {"fast": fast},
    "numbers": {k: _plain(v) for k, v in numbers.items()},
    "checks": {k: _plain(v) for k, v in checks.items()},
}
(out / f"numbers_{NOTEBOOK}.json").write_text(json.dumps(record, indent=2))
print(json.dumps(record, indent=2))
