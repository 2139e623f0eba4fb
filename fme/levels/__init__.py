"""Three levels of an effect: the fitted model's AME (:func:`fme.ame`), the learning algorithm's AME over
training sets (learner level) and the effect of the step on the outcome in the data (data level).

Every estimate here is a table with :func:`fme.ame`'s columns (:mod:`fme.levels.table`), so that
:func:`fme.hypotheses` tests differences, ratios and equivalence bands on it and a report prints the
three levels side by side.
"""

from .dgp import dgp_ame, shift_weights
from .learner import LearnerSplits, LearnerTable, learner_ame

__all__ = ["dgp_ame", "shift_weights", "learner_ame", "LearnerTable", "LearnerSplits"]
