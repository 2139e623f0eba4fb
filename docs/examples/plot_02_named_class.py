"""
A classifier and a named class
==============================

For a classifier, the fME is the change of the predicted probability of one class: ``target_class=`` names it
by its label. Here a random forest predicts whether a Boston tract is ``"expensive"`` (median value above the
data's median) or ``"cheap"``, and the step lowers the share of lower-status population by 5 points.
"""

import numpy as np
from sklearn.ensemble import RandomForestClassifier

import fme
from fme.datasets import load_boston
from fme.plotting import ExtrapolationDisplay, FMEDisplay, PlotStyle

df = load_boston()
X = df.drop(columns="medv")
y = np.where(df["medv"] > df["medv"].median(), "expensive", "cheap")
clf = RandomForestClassifier(n_estimators=100, min_samples_leaf=5, random_state=0).fit(X, y)

eff = fme.fme(clf, X, {"lstat": -5}, target_class="expensive", extrapolation="envelope",
              inference="sample")
print(eff.summary())

# %%
# Each point is one tract: how much its probability of "expensive" rises when lstat falls by 5.
FMEDisplay.from_effects(eff, units={"lstat": "%"}, prediction_unit="P(expensive)")

# %%
# Where the step leaves the data: the tracts evaluated and those left out as extrapolation points.
ExtrapolationDisplay.from_effects(eff, units={"lstat": "%"})

# %%
# Every display takes ``style=``, a :class:`~fme.plotting.PlotStyle` (the report passes its own this way):
# colours by role, hollow points, a solid zero line, and here at most 200 points (a seeded sample, which the
# legend counts) over a rug of every observed lstat value.
house = PlotStyle(colors={"points": "#0072B2", "average": "#B35300"}, hollow_points=True, zero_linestyle="-",
                  max_points=200)
FMEDisplay.from_effects(eff, units={"lstat": "%"}, prediction_unit="P(expensive)", rug=True, style=house)

# %%
# ``target_class="all"`` gives every class at once (their fMEs sum to zero for each row).
print(fme.ame(clf, X, {"lstat": -5}, target_class="all", inference="sample")[["class", "ame", "sd", "n"]])
