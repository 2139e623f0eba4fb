"""
A tree ensemble's exact NLM
===========================

Along x + t·h a tree ensemble's prediction is piecewise constant, so its NLM has a closed form over the
segments between the split points that the path crosses (``nlm_method="exact"``, chosen by ``"auto"`` for
tree models). A quadrature rule with a fixed number of nodes misses jumps between its nodes; the figure
compares the two per row.
"""

import matplotlib.pyplot as plt
from sklearn.ensemble import HistGradientBoostingRegressor

import fme
from fme.datasets import load_boston
from fme.plotting import NLMDisplay

df = load_boston()
X, y = df.drop(columns="medv"), df["medv"]
hgb = HistGradientBoostingRegressor(max_iter=100, random_state=0).fit(X, y)

exact = fme.fme(hgb, X, {"rm": 1}, nlm=True, inference="sample")  # auto: exact for a tree ensemble
gl16 = fme.fme(hgb, X, {"rm": 1}, nlm=True, nlm_method="gauss-legendre", inference="sample")
print(exact.nlm_method, round(exact.anlm, 4), "|", gl16.nlm_method, round(gl16.anlm, 4))

# %%
# Per row: the 16-node rule against the exact NLM.
fig, ax = plt.subplots(figsize=(5, 4.5))
ax.scatter(exact.results["nlm"], gl16.results["nlm"], s=10, alpha=0.6)
lo = min(exact.results["nlm"].min(), gl16.results["nlm"].min())
ax.plot([lo, 1], [lo, 1], color="grey", lw=1)
ax.set_xlabel("exact NLM")
ax.set_ylabel("16-node Gauss–Legendre NLM")

# %%
# The exact NLMs against the feature.
NLMDisplay.from_effects(exact, units={"rm": "rooms"})
