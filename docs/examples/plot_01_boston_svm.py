"""
Boston housing SVM, as in the paper
===================================

The paper's applied example (§8): an RBF support vector regression on the Boston housing data, the fME of one
more room (``rm + 1``) with its NLM, rows whose step leaves the data excluded (the multivariate envelope), and
conditional AMEs on CTREE subspaces. ``fme.paper.boston_svm`` fits the paper's SVM (kernlab's ``ksvm``
preprocessing, the same libsvm problem).
"""

import fme
from fme.paper import boston_svm
from fme.plotting import EffectsDisplay, PartitionDisplay

model, X = boston_svm()
eff = fme.fme(model, X, {"rm": 1}, nlm=True, extrapolation="envelope", inference="sample")
print(eff.summary())

# %%
# fMEs (left) and NLMs (right) against the stepped feature: the arrow is the step.
EffectsDisplay.from_effects(eff, units={"rm": "rooms"}, prediction_unit="$1000")

# %%
# Conditional AMEs: a conditional inference tree on the fMEs (the paper's settings; ``honest=False`` is the
# paper's procedure, where the tree and the leaf figures use the same rows).
part = fme.came(eff, minbucket=100, testtype="teststatistic", mincriterion=0.99, honest=False)
print(part.leaves[["node", "n", "came", "sd_fme", "cov_fme", "canlm", "rule"]].round(3).to_string())
PartitionDisplay.from_partition(part, units={"rm": "rooms"})
