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

# %% [markdown] id="c9a5ce6f"
# # Boston housing (paper §5.5 and §8, Figs. 10-12, Table 3)
#
# The paper's SVM (`fme.paper.boston_svm`: kernlab's eps-SVR and preprocessing rebuilt with scikit-learn),
# fMEs and NLMs (Simpson 3/8) for rm + 1, crim - 5, (crim - 5, nox - 0.1) and (crim - 5, nox - 0.1,
# ptratio - 1), rows outside the per-feature envelope of the data left out; cAME trees (CTREE, test statistic,
# mincriterion 0.99) for rm + 1 (minbucket 100) and crim - 5 (minbucket 30) with 95% CIs; Table 3 from
# `PartitionResult.describe`. Writes the reproduced numbers to `numbers_06_boston.json`.

# %% id="d5d1c2e0" tags=["parameters"]
output_dir: str = "output/06"  # folder for figures and numbers
fast: bool = False  # CI mode (no effect: the data has 506 rows)
svm_tol: float = 1e-3  # libsvm stopping tolerance of the SVM, kernlab default 1e-3, 1e-5 or less converges
minbucket_rm: int = 100  # CTREE minimum leaf size for rm + 1
minbucket_crim: int = 30  # CTREE minimum leaf size for crim - 5
mincriterion: float = 0.99  # CTREE: 1 - significance level of the test statistic

# %% id="c7b78f9b"
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


# %% id="471fcd09"
from fme.plotting import PartitionDisplay, plot_fme_nlm

NOTEBOOK = "06_boston"
model, X = paper.boston_svm(tol=svm_tol)
kw = dict(nlm=True, nlm_method="simpson38", extrapolation="envelope", reference_data=X)
tree_kw = dict(testtype="teststatistic", mincriterion=mincriterion)
effects = {
    "rm+1": fme.fme(model, X, {"rm": 1}, **kw),
    "crim-5": fme.fme(model, X, {"crim": -5}, **kw),
    "crim-5,nox-0.1": fme.fme(model, X, {"crim": -5, "nox": -0.1}, **kw),
    "crim-5,nox-0.1,ptratio-1": fme.fme(model, X, {"crim": -5, "nox": -0.1, "ptratio": -1}, **kw),
}
for name, e in effects.items():
    print(e.summary(), end="\n\n")

# %% [markdown] id="32579211"
# ## rm + 1: cAME tree (Fig. "ame_tree_split") and Table 3

# %% id="36aaf2d5"
e_rm = effects["rm+1"]
# honest=False: the paper's procedure (tree and leaf figures from the same rows); fme's default is honest
part_rm = fme.came(e_rm, honest=False, minbucket=minbucket_rm, **tree_kw)
print(part_rm.summary())
numbers["boston_rm_n"] = e_rm.n
numbers["boston_rm_ame"] = e_rm.ame
numbers["boston_rm_cov"] = e_rm.sd / abs(e_rm.ame)
numbers["boston_rm_n_leaves"] = len(part_rm.leaves)
left = part_rm.leaves.iloc[0]
numbers["boston_rm_left_n"] = int(left["n"])
numbers["boston_rm_left_came"] = left["came"]
numbers["boston_rm_left_cov"] = left["cov_fme"]
numbers["boston_rm_left_canlm"] = left["canlm"]
numbers["boston_rm_left_cov_nlm"] = left["cov_nlm"]
checks["boston_rm_left_rule"] = left["rule"]
save(PartitionDisplay.from_partition(part_rm, units={"rm": "rooms"}).figure_, "fig_ame_tree_split_rm")
# %% [markdown] id="9ea00a0e"
# Table 3 lists, for each feature, the subspace's range: the split bounds where a split restricts the feature,
# else the *global range* of all 506 rows (the paper's Table 2), including the rows left out as extrapolation.
# `describe()` returns exactly that.

# %% id="e9f1ff74"
desc = part_rm.describe(int(left["node"]))
table3 = desc[["kind", "restricted", "low", "high", "range"]].copy()
print(table3)
for feat, r in table3.iterrows():
    if r["kind"] == "numeric":
        numbers[f"boston_rm_left_{feat}_low"] = r["low"]
        numbers[f"boston_rm_left_{feat}_high"] = r["high"]
    else:
        numbers[f"boston_rm_left_{feat}"] = r["range"]
header = pd.Series(
    {
        "n": int(left["n"]),
        "cAME": round(left["came"], 2),
        "CoV(fME)": round(left["cov_fme"], 2),
        "cANLM": round(left["canlm"], 2),
        "CoV(NLM)": round(left["cov_nlm"], 2),
    }
)
print(header.to_string())

# %% [markdown] id="14037631"
# ## crim - 5, two- and three-way steps (Figs. 10-11)

# %% id="6ac09966"
units = {"crim": "per capita", "nox": "pp10m", "ptratio": "pupils per teacher"}
for name, fig_name in (
    ("crim-5", "fig10a_boston_crim"),
    ("crim-5,nox-0.1", "fig10b_boston_crim_nox"),
    ("crim-5,nox-0.1,ptratio-1", "fig10c_boston_crim_nox_ptratio"),
):
    save(plot_fme_nlm(effects[name], prediction_unit="1000 USD"), fig_name)
for name, e in effects.items():
    checks[f"{name}_n"] = e.n
    checks[f"{name}_ame"] = e.ame
    checks[f"{name}_anlm"] = e.anlm

# %% [markdown] id="65a116cf"
# ## crim - 5: cAME tree with confidence intervals (Fig. 12)

# %% id="a2b7f5da"
e_crim = effects["crim-5"]
part_crim = fme.came(e_crim, honest=False, minbucket=minbucket_crim, **tree_kw)
print(part_crim.summary())
root_cov = part_crim.root["cov_fme"]
numbers["boston_crim_n"] = e_crim.n
numbers["boston_crim_cov"] = e_crim.sd / abs(e_crim.ame)
numbers["boston_crim_n_lower_cov"] = int((part_crim.leaves["cov_fme"] < root_cov).sum())
numbers["boston_crim_n_higher_cov"] = int((part_crim.leaves["cov_fme"] > root_cov).sum())
right = part_crim.leaves.iloc[-1]
right_desc = part_crim.describe(int(right["node"]))
numbers["boston_crim_right_split"] = (
    right_desc.loc["crim", "low"] if right_desc.loc["crim", "low_open"] else float("nan")
)
for k, c in (
    ("came", "came"),
    ("came_low", "came_ci_low"),
    ("came_high", "came_ci_high"),
    ("canlm", "canlm"),
    ("canlm_low", "canlm_ci_low"),
    ("canlm_high", "canlm_ci_high"),
):
    numbers[f"boston_crim_right_{k}"] = right[c]
checks["boston_crim_right_rule"] = right["rule"]
checks["boston_crim_cov_unrounded"] = numbers["boston_crim_cov"]

fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, (agg, lo, hi, label) in zip(
    axes, (("came", "came_ci_low", "came_ci_high", "cAME"), ("canlm", "canlm_ci_low", "canlm_ci_high", "cANLM"))
):
    lv = part_crim.leaves
    ax.errorbar(np.arange(len(lv)), lv[agg], yerr=[lv[agg] - lv[lo], lv[hi] - lv[agg]], fmt="o", capsize=4)
    ax.set_xticks(np.arange(len(lv)), [f"{r}\nn = {k}" for r, k in zip(lv["rule"], lv["n"])], fontsize=7)
    ax.set_ylabel(f"{label} (95% CI)")
fig.suptitle("crim - 5: cAMEs and cANLMs on the CTREE subspaces")
fig.tight_layout()
save(fig, "fig12_boston_crim_came_ci")
save(PartitionDisplay.from_partition(part_crim).figure_, "fig12_boston_crim_came_tree")
# %% [markdown] id="66228168"
# ## Sensitivity of the boundary number to the SVM solver
#
# The global CoV of crim - 5 is printed as 0.32; the value here sits at the rounding boundary 0.315. libsvm stops
# when the KKT violation falls below `tol`; kernlab's and scikit-learn's libsvm builds stop at different points
# for the same tolerance, so the documented tol = 1e-3 does not pin the fourth decimal. Below: the same numbers for
# tighter tolerances (converging to the unique SVR optimum) and without shrinking.

# %% id="23f7c970"
medv = fme.datasets.load_boston()["medv"].to_numpy()
rows = []
for tol in (1e-3, 1e-4, 1e-5, 1e-8):
    for shrinking in (True, False):
        m = paper.KernlabSVR(**{**paper.BOSTON_SVM_PARAMS, "tol": tol, "shrinking": shrinking}).fit(X, medv)
        er = fme.fme(m, X, {"rm": 1}, extrapolation="envelope")
        ec = fme.fme(m, X, {"crim": -5}, extrapolation="envelope")
        rows.append(
            {
                "tol": tol,
                "shrinking": shrinking,
                "rm+1 AME": er.ame,
                "rm+1 CoV": er.sd / abs(er.ame),
                "crim-5 CoV": ec.sd / abs(ec.ame),
            }
        )
sens = pd.DataFrame(rows)
print(sens.to_string(float_format=lambda v: f"{v:.6g}"))
checks["sensitivity"] = sens.to_dict(orient="records")


# %% id="6f217ae3"
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
