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

# %% [markdown] id="c73f30b3"
# # Trees and extrapolation (paper §4.2 Fig. 2 and §4.3 Fig. 4)
#
# **Trees.** A regression tree is piecewise constant: the dME is 0 almost everywhere, while an fME with a large
# enough step traverses a jump (a split) and is non-zero. **Extrapolation.** A random forest is trained on
# x ~ U(-5, 5), y = x^2 + N(0, 1); fMEs with h = 1 leave the training space for x > 4. Following the paper,
# points outside [-5, 5] are extrapolation points (EPs): the envelope detector gets the support [-5, 5] as
# reference data, so the EPs are exactly the points with x > 4. (With the sample itself as reference the
# envelope is [min x, max x] and the EPs are x > max(x) - 1, slightly below 4.)

# %% id="2822b0f5" tags=["parameters"]
output_dir: str = "output/02"  # folder for figures and numbers
fast: bool = False  # CI mode: fewer trees in the forest
n: int = 1500  # sample size
seed: int = 123  # numpy seed (R's set.seed(123) is not reproduced)
h: float = 1.0  # step size
x_tree: float = -2.5  # point of the tree example (paper: -2.5)
tree_max_depth: int = 3  # depth of the regression tree
n_trees: int = 300  # trees in the random forest

# %% id="0813245f"
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


# %% id="e0beaacc"
from sklearn.ensemble import RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

NOTEBOOK = "02_trees_and_extrapolation"
if fast:
    n_trees = min(n_trees, 50)
rng = np.random.default_rng(seed)
data = pd.DataFrame({"x": rng.uniform(-5, 5, n)})
y = data["x"] ** 2 + rng.normal(0, 1, n)
support = pd.DataFrame({"x": [-5.0, 5.0]})  # the training space [-5, 5]

# %% [markdown] id="4a3153b9"
# ## Decision tree: dME 0 on plateaus, fME traverses the jump

# %% id="9dbe7f39"
tree = DecisionTreeRegressor(max_depth=tree_max_depth, random_state=0).fit(data[["x"]], y)
point = pd.DataFrame({"x": [x_tree]})
tree_fme = float(fme.fme(tree, point, {"x": h}).results["fme"].iloc[0])
tree_dme = float(fme.dme(tree, point, "x")["dme"].iloc[0])
thresholds = np.sort(tree.tree_.threshold[tree.tree_.feature == 0])
crosses = bool(((thresholds >= x_tree) & (thresholds < x_tree + h)).any())
print(f"tree at x = {x_tree}: dME = {tree_dme}, fME(h = {h}) = {tree_fme:.3f}; split in [x, x + h): {crosses}")
assert tree_dme == 0.0
assert (tree_fme != 0.0) == crosses  # exact: a piecewise-constant function changes only across a split
all_dme = fme.dme(tree, data, "x")["dme"]
all_fme = fme.fme(tree, data, {"x": h}, extrapolation="envelope", reference_data=support)
checks["tree_share_dme_zero"] = float((all_dme == 0).mean())
checks["tree_share_fme_nonzero"] = float((all_fme.results["fme"] != 0).mean())
print(
    f"share of dMEs equal to 0: {checks['tree_share_dme_zero']:.3f}; "
    f"share of fMEs (h = {h}) not 0: {checks['tree_share_fme_nonzero']:.3f}"
)

grid = pd.DataFrame({"x": np.linspace(-5, 5, 1000)})
fig, ax = plt.subplots(figsize=(6, 4.5))
ax.scatter(data["x"], y, s=4, alpha=0.3, color="tab:blue", label="training data")
ax.step(grid["x"], tree.predict(grid), where="post", color="black", label="tree prediction")
f0 = tree.predict(point)[0]
ax.scatter([x_tree], [f0], color="green", zorder=5, s=50, label=f"x = {x_tree} (dME = 0)")
ax.scatter([x_tree + h], [f0 + tree_fme], color="red", zorder=5, s=50, label=f"x + h = {x_tree + h}")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.legend(frameon=False)
save(fig, "fig4_tree_dme_vs_fme")
# %% [markdown] id="e57309b7"
# ## Random forest: fMEs in the extrapolation area

# %% id="1f1a59d4"
forest = RandomForestRegressor(n_estimators=n_trees, random_state=seed, n_jobs=1).fit(data[["x"]], y)
res = fme.fme(forest, data, {"x": h}, extrapolation="envelope", reference_data=support, on_extrapolation="keep")
ep = res.results["extrapolation"].to_numpy()
x = data.loc[res.results.index, "x"].to_numpy()
exact = bool(np.array_equal(ep, x > 5 - h))
numbers["sim_forest_ep_rule"] = f"x > {5 - h:g}" if exact else f"EPs differ from x > {5 - h:g}"
assert exact, "EPs are not exactly x > 4"
print(f"{int(ep.sum())} of {len(ep)} points are EPs, exactly those with x > {5 - h:g}")
sample_env = fme.fme(forest, data, {"x": h}, extrapolation="envelope")
checks["forest_n_ep_support"] = int(ep.sum())
checks["forest_n_ep_sample_envelope"] = int(sample_env.n_excluded)
checks["forest_sd_fme_inside"] = float(res.results.loc[~ep, "fme"].std())
checks["forest_sd_fme_ep"] = float(res.results.loc[ep, "fme"].std())

grid = pd.DataFrame({"x": np.linspace(-6, 6, 1200)})
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
axes[0].scatter(data["x"], y, s=4, alpha=0.3, label="training data")
axes[0].plot(grid["x"], forest.predict(grid), color="black", label="random forest")
axes[0].axvspan(-6, -5, color="grey", alpha=0.15)
axes[0].axvspan(5, 6, color="grey", alpha=0.15, label="outside the training space")
axes[0].set_xlabel("x")
axes[0].set_ylabel("y")
axes[0].legend(frameon=False, fontsize=8)
axes[1].scatter(x[~ep], res.results["fme"][~ep], s=5, color="black", label="fME")
axes[1].scatter(x[ep], res.results["fme"][ep], s=8, color="red", label="fME of an EP (x + h > 5)")
axes[1].set_xlabel("x")
axes[1].set_ylabel(f"fME (h = {h:g})")
axes[1].legend(frameon=False, fontsize=8)
save(fig, "fig2_forest_extrapolation")


# %% id="ab44a510"
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
