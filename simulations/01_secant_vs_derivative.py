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

# %% [markdown] id="502290ff"
# # Forward difference versus derivative (paper §4.1, Fig. 3)
#
# The derivative ME (dME) is the slope of the tangent; it is usually read as "the change in prediction for a
# unit step", i.e. the tangent evaluated at x + h. The forward ME (fME) is the exact change in prediction along
# the secant. For a non-linear prediction function the tangent reading is wrong by the *interpretation error*
# `fME - h * dME`. Here the prediction function is f(x) = x^4, evaluated at x = 0.5 with h = 1: the error is
# almost as large as the change in prediction itself, as in the paper's figure.

# %% id="44f75899" tags=["parameters"]
output_dir: str = "output/01"  # folder for figures and numbers
fast: bool = False  # CI mode (no effect here: the example is tiny)
x0: float = 0.5  # point of interest
h: float = 1.0  # step size of the fME
n_grid: int = 201  # grid points for the error curve

# %% id="5b7e5495"
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


# %% id="0dbb413e"
from fme.plotting import SecantTangentDisplay

NOTEBOOK = "01_secant_vs_derivative"


def f(d):
    """The prediction function, a callable on DataFrames (any model works the same way)."""
    return np.asarray(d["x"], dtype=float) ** 4


point = pd.DataFrame({"x": [x0]})
res = fme.fme(f, point, {"x": h}, nlm=True, nlm_method="simpson38")
d = fme.dme(f, point, "x")
fme_value = float(res.results["fme"].iloc[0])
dme_value = float(d["dme"].iloc[0])
tangent_reading = h * dme_value
error = fme_value - tangent_reading
print(
    f"fME = {fme_value:.4f}, dME = {dme_value:.4f}, tangent reading h*dME = {tangent_reading:.4f}, "
    f"interpretation error = {error:.4f} ({error / fme_value:.0%} of the fME), NLM = {res.results['nlm'].iloc[0]:.3f}"
)
assert abs(fme_value - ((x0 + h) ** 4 - x0**4)) < 1e-12  # the fME is the exact change in prediction
assert abs(dme_value - 4 * x0**3) < 1e-6  # the dME is the slope of the tangent
checks["fme_exact"] = True
checks["interpretation_error_share"] = error / fme_value

# %% id="8b77f244"
grid = pd.DataFrame({"x": np.linspace(-1.5, 2.0, 400)})
fig, ax = plt.subplots(figsize=(6, 4.5))
ax.plot(grid["x"], f(grid), color="#e6b800", lw=2.5, label="prediction function")
ax.plot(grid["x"], f(point)[0] + dme_value * (grid["x"] - x0), color="grey", label="tangent (dME)")
ax.plot(grid["x"], f(point)[0] + fme_value / h * (grid["x"] - x0), color="green", label="secant (fME)")
ax.vlines(
    x0 + h, f(point)[0] + tangent_reading, f(point)[0] + fme_value, color="red", lw=3, label="interpretation error"
)
ax.scatter([x0, x0 + h], [f(point)[0], f(point)[0] + fme_value], color="black", zorder=5)
ax.set_ylim(-1, 7)
ax.set_xlabel("x")
ax.set_ylabel("prediction")
ax.legend(frameon=False)
ax.set_title(f"fME vs dME at x = {x0}, h = {h}")
save(fig, "fig3_secant_vs_tangent")
# %% [markdown] id="f7575d24"
# The interpretation error over a range of points: it vanishes only where the function is (locally) linear,
# which the NLM of each fME indicates.

# %% id="a647bff7"
X = pd.DataFrame({"x": np.linspace(-1.5, 1.5, n_grid)})
res_grid = fme.fme(f, X, {"x": h}, nlm=True, nlm_method="simpson38")
dme_grid = fme.dme(f, X, "x")["dme"]
err = res_grid.results["fme"] - h * dme_grid
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
axes[0].plot(X["x"], res_grid.results["fme"], label="fME")
axes[0].plot(X["x"], h * dme_grid, label="h * dME")
axes[0].plot(X["x"], err, label="error = fME - h * dME", color="red")
axes[0].set_xlabel("x")
axes[0].legend(frameon=False)
axes[1].plot(X["x"], res_grid.results["nlm"], color="black")
axes[1].axhline(0, color="grey", lw=0.8)
axes[1].set_xlabel("x")
axes[1].set_ylabel("NLM")
save(fig, "fme_vs_dme_grid")
disp = SecantTangentDisplay.from_effects(res_grid, fme.dme(f, X, "x"))
print(f"mean |fME - h * dME| over the grid: {disp.mean_abs_error:.4f}")
checks["grid_mean_abs_interpretation_error"] = disp.mean_abs_error
save(disp.figure_, "secant_vs_tangent_scatter")


# %% id="19502fbd"
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
