"""
A wrapped black-box model
=========================

Any function of a DataFrame is a model for ``fme``: here a "scoring service" that only answers predictions
(a hand-written rule with a threshold and an interaction) is wrapped as a plain function. Without a fitted
model there is no parameter covariance and nothing to refit, so the interval describes the spread of the fMEs
with the model held fixed (``inference="sample"``), and the NLM is computed from the function's own
predictions along each step (Gauss–Kronrod with an error bound per row).
"""

import numpy as np
import pandas as pd

import fme
from fme.plotting import EffectsDisplay


def score_service(frame: pd.DataFrame) -> np.ndarray:
    """A black box: the caller sees predictions only."""
    base = 0.6 * frame["income"] - 0.02 * frame["debt"] ** 2
    return np.where(frame["income"] > 50, base + 5, base) + 0.01 * frame["income"] * frame["age"]


rng = np.random.default_rng(0)
data = pd.DataFrame({"income": rng.uniform(20, 90, 500), "debt": rng.uniform(0, 30, 500),
                     "age": rng.uniform(20, 70, 500)})

eff = fme.fme(score_service, data, {"income": 5}, nlm=True, inference="sample")
print(eff.summary())
print(eff.results.groupby(eff.results["nlm_status"]).size())

# %%
# Rows whose step crosses the threshold at income 50 have low NLMs: the jump is not linear.
EffectsDisplay.from_effects(eff, units={"income": "k$"})

# %%
# Where does the effect differ? A cAME tree on the fMEs finds the threshold.
part = fme.came(eff, method="cart", max_depth=2, random_state=0)
print(part.leaves[["node", "n", "came", "canlm", "rule"]].round(3).to_string())
