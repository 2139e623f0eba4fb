"""
Hypotheses and equivalence
==========================

``fme.hypotheses`` tests the estimates of a table with their joint uncertainty: linear and non-linear
equations (delta method), all pairwise differences with a multiplicity adjustment, and equivalence (TOST):
is an effect within a band that the domain calls negligible?
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import fme

rng = np.random.default_rng(0)
d = pd.DataFrame({"x1": rng.normal(size=300), "x2": rng.normal(size=300), "g": rng.choice(["a", "b", "c"], 300)})
d["y"] = (0.8 + 0.4 * (d["g"] == "c")) * d["x1"] + 0.5 * d["x2"] + rng.normal(size=300)
ols = smf.ols("y ~ x1 * g + x2", data=d).fit()

table = fme.ame(ols, d, {"x1": 1, "x2": 1})
print(table[["feature", "ame", "std_error", "conf_low", "conf_high"]])
print(fme.hypotheses(table, "b1 - b2 = 0")[["hypothesis", "estimate", "std_error", "p_value"]])  # differ?
print(fme.hypotheses(table, "b2 / b1 = 1")[["hypothesis", "estimate", "std_error", "p_value"]])  # a ratio

# %%
# Equivalence: is the effect of x2 within ±1 (negligible for this purpose)? ``p_value_equiv`` small: yes.
tost = fme.ame(ols, d, {"x2": 1}, equivalence=[-1, 1])
print(tost[["estimate", "p_value_noninf", "p_value_nonsup", "p_value_equiv"]])

# %%
# All pairs of the groups' AMEs, Holm-adjusted:
by_group = fme.ame(ols, d, {"x1": 1}, by="g")
print(fme.hypotheses(by_group, "pairwise", multcomp="holm")[["hypothesis", "estimate", "p_value", "p_value_adj"]])

# %%
# The groups' AMEs with their 95 % intervals: group c's effect of x1 is larger, as simulated.
fig, ax = plt.subplots(figsize=(5, 2.8))
ax.errorbar(by_group["ame"], range(len(by_group)), fmt="o", capsize=4,
            xerr=[by_group["ame"] - by_group["conf_low"], by_group["conf_high"] - by_group["ame"]])
ax.set_yticks(range(len(by_group)), [f"g = {g}" for g in by_group["g"]])
ax.set_xlabel("AME of x1 + 1 (delta-method 95 % interval)")
fig.tight_layout()
