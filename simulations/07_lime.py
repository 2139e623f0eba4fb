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

# %% [markdown] id="43e05206"
# # Comparison to LIME (paper §6)
#
# LIME explains one prediction with a weighted sparse linear surrogate fitted to random perturbations; its
# explanation depends on the kernel width and sampling, and repeated runs with fixed parameters differ. The fME
# of the same observation is deterministic. Boston SVM, the observation of the paper's Table 1 (row 342:
# crim 0.02498, rm 6.54), step rm + 1.

# %% id="1a409fa5" tags=["parameters"]
output_dir: str = "output/07"  # folder for figures and numbers
fast: bool = False  # CI mode: fewer LIME repetitions and samples
row: int = 342  # observation to explain, row label 342 is the one in Table 1 of the paper
repetitions: int = 20  # LIME runs with different seeds
num_samples: int = 5000  # LIME perturbation samples per run

# %% id="8d7ca436"
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


# %% id="ac1a43ce"
from lime.lime_tabular import LimeTabularExplainer

NOTEBOOK = "07_lime"
if fast:
    repetitions, num_samples = min(repetitions, 5), min(num_samples, 1000)
model, X = paper.boston_svm()
Xn = X.copy()
Xn["chas"] = Xn["chas"].astype(int)
cols = list(X.columns)


def predict_array(a):
    d = pd.DataFrame(a, columns=cols)
    d["chas"] = pd.Categorical(d["chas"].round().astype(int), categories=[0, 1])
    return model.predict(d)


point = X.loc[[row]]
fmes = [
    float(fme.fme(model, point, {"rm": 1}, nlm=True, nlm_method="simpson38", reference_data=X).results["fme"].iloc[0])
    for _ in range(3)
]
assert len(set(fmes)) == 1  # deterministic
coefs = []
for rep in range(repetitions):
    explainer = LimeTabularExplainer(
        Xn.to_numpy(float),
        feature_names=cols,
        categorical_features=[cols.index("chas")],
        mode="regression",
        discretize_continuous=False,
        random_state=rep,
    )
    exp = explainer.explain_instance(
        Xn.loc[row].to_numpy(float), predict_array, num_features=len(cols), num_samples=num_samples
    )
    weights = dict(exp.as_list())
    coefs.append(weights.get("rm", np.nan) / Xn["rm"].std(ddof=0))  # LIME scales features by their SD
coefs = np.array(coefs)
print(f"fME(rm + 1) at row {row}: {fmes[0]:.4f} (identical in 3 runs)")
print(
    f"LIME slope for rm over {repetitions} seeds: mean {coefs.mean():.4f}, SD {coefs.std(ddof=1):.4f}, "
    f"range [{coefs.min():.4f}, {coefs.max():.4f}]"
)
checks["fme_rm_row"] = fmes[0]
checks["lime_rm_slope_mean"] = float(coefs.mean())
checks["lime_rm_slope_sd"] = float(coefs.std(ddof=1))
fig, ax = plt.subplots(figsize=(6, 4))
ax.hist(coefs, bins=15, color="tab:blue", alpha=0.7, label=f"LIME slope x 1 room ({repetitions} seeds)")
ax.axvline(fmes[0], color="red", lw=2, label="fME (rm + 1), deterministic")
ax.set_xlabel("change in predicted medv")
ax.legend(frameon=False, fontsize=8)
save(fig, "lime_vs_fme")


# %% id="ab92ea3d"
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
