"""
A count model with exposure
===========================

A Poisson GLM of claim counts with each policy's years at risk as exposure. ``fme`` predicts every row at its
own exposure, as Stata's ``margins`` does (statsmodels' own ``predict(newdata)`` would drop it), and
``exposure=1`` asks for the effect on the rate per year instead. The delta method differentiates the same
predictions.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf

import fme

rng = np.random.default_rng(0)
n = 800
d = pd.DataFrame({"age": rng.uniform(18, 80, n), "urban": rng.choice(["no", "yes"], n),
                  "years": rng.uniform(0.2, 3, n)})
rate = np.exp(-2.0 + 0.015 * (60 - d["age"]) + 0.4 * (d["urban"] == "yes"))
d["claims"] = rng.poisson(rate * d["years"])
glm = smf.glm("claims ~ age + urban", data=d, family=sm.families.Poisson(), exposure=d["years"]).fit()

# %%
# Claims over each policy's own exposure, then per policy-year:
print(fme.ame(glm, d, {"age": 10, "urban": "yes"}, exposure="years")
      [["feature", "step", "level", "ame", "std_error", "conf_low", "conf_high"]])
print(fme.ame(glm, d, {"age": 10}, exposure=1)[["feature", "step", "ame", "std_error", "conf_low", "conf_high"]])

# %%
# The model's scale is recorded with the result.
eff = fme.fme(glm, d, {"age": 10}, exposure="years")
print(eff.scale)

# %%
# The fitted rate per policy-year against age, for urban and rural policies: the AME of ``age + 10`` per
# policy-year is the average of these curves' 10-year differences over the policies' own ages.
grid = pd.DataFrame({"age": np.linspace(18, 80, 63)})
fig, ax = plt.subplots(figsize=(5.5, 3.6))
for level in ("no", "yes"):
    rows = grid.assign(urban=level, years=1.0)
    ax.plot(rows["age"], glm.predict(rows, exposure=rows["years"]), label=f"urban = {level}")
ax.set_xlabel("age")
ax.set_ylabel("expected claims per policy-year")
ax.legend()
fig.tight_layout()
