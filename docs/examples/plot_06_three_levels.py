"""
The three levels of an effect
=============================

One step, ``lstat − 2``, asked three ways:

* **the model**: what does this fitted model predict? (``fme.ame``; the bootstrap refits the model on
  resamples of its training data, so the interval covers the model's estimation uncertainty);
* **the learner**: would the effect be there if the algorithm were trained again on new data?
  (``fme.learner_ame``: refits on seeded train/test splits);
* **the data**: how much does the outcome itself differ between x and x − 2? (``fme.dgp_ame``: a cross-fitted
  one-step estimator with positivity diagnostics).

Each table's ``covers`` (or ``inference``) column says which uncertainty its interval is about.
"""

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fme
from fme.datasets import load_boston

df = load_boston()
X, y = df.drop(columns="medv"), df["medv"]
step = {"lstat": -2}
model = make_pipeline(StandardScaler(), LinearRegression()).fit(X, y)

level_model = fme.ame(model, X, step, bootstrap={"X": X, "y": y, "n_resamples": 200, "random_state": 0})
level_learner = fme.learner_ame(make_pipeline(StandardScaler(), LinearRegression()), X, y, step, repeats=10,
                                random_state=0)
level_data = fme.dgp_ame(X, y, [step], model=model, random_state=0)

cols = ["ame", "conf_low", "conf_high", "inference"]
table = pd.concat({"model": level_model[cols], "learner": level_learner[cols], "data": level_data[cols]})
print(table.droplevel(1).round(3).to_string())
print(level_data[["model_ame", "ess_share", "positivity"]].round(3).to_string())

# %%
# The three intervals side by side.
fig, ax = plt.subplots(figsize=(5.5, 2.6))
t = table.droplevel(1)
ax.errorbar(t["ame"], range(len(t)), xerr=[t["ame"] - t["conf_low"], t["conf_high"] - t["ame"]], fmt="o",
            capsize=4)
ax.set_yticks(range(len(t)), t.index)
ax.set_xlabel("AME of lstat − 2 (in $1000), 95 % interval")
fig.tight_layout()
