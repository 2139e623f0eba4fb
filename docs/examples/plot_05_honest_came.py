"""
Honest cAMEs
============

A tree picks the splits that separate the fMEs most, so leaf intervals computed on the rows that chose the
tree are too narrow. ``fme.came`` is honest by default: it grows the tree on a seeded half of the rows and
computes every leaf figure from the other half.
"""

from sklearn.ensemble import RandomForestRegressor

import fme
from fme.datasets import load_boston

df = load_boston()
X = df.drop(columns="medv")
model = RandomForestRegressor(n_estimators=100, random_state=0).fit(X, df["medv"])
eff = fme.fme(model, X, {"rm": 1})

honest = fme.came(eff, features=["lstat", "rm"], method="cart", max_depth=2, random_state=0)
naive = fme.came(eff, features=["lstat", "rm"], method="cart", max_depth=2, honest=False)
print(honest.summary())
cols = ["node", "n", "came", "conf_low", "conf_high", "rule"]
print(honest.leaves[cols].round(3).to_string())
print(naive.leaves[cols].round(3).to_string())

# %%
# Leaf differences, Holm-adjusted, on the estimation half:
print(honest.test())

# %%
# The tree of the honest partition: counts, cAMEs and fME panels over the estimation rows.
honest.plot()
