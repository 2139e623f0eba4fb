"""Exception classes of :mod:`fme`.

Every error raised on bad input is an instance of :class:`FMEError` and of the
matching built-in class (``ValueError`` or ``TypeError``), so callers can catch
either. Messages name the culprit (feature, argument, value) and say what to do.
"""

from __future__ import annotations

__all__ = [
    "FMEError",
    "DataError",
    "FeatureError",
    "StepError",
    "ModelError",
    "PredictionError",
    "ExtrapolationError",
    "ParameterError",
    "NotFittedError",
    "NameClashError",
    "FMEWarning",
    "FixedModelWarning",
    "BootstrapWarning",
    "PositivityWarning",
    "LearnerError",
    "LearnerWarning",
]


class FMEError(Exception):
    """Base class of every exception raised by :mod:`fme`."""


class DataError(FMEError, ValueError):
    """The data is empty, of the wrong kind, or lacks required columns."""


class FeatureError(FMEError, ValueError):
    """A feature name is unknown or cannot be used as requested."""


class StepError(FMEError, ValueError):
    """A step is zero, not finite, or does not fit the feature's type."""


class ModelError(FMEError, TypeError):
    """The model cannot be used: no ``predict``/``predict_proba``, not callable."""


class PredictionError(FMEError, ValueError):
    """The model's predictions have the wrong length or shape, or are not finite."""


class ExtrapolationError(FMEError, ValueError):
    """Every row was excluded as an extrapolation point, or a detector is unusable."""


class ParameterError(FMEError, ValueError):
    """An argument is outside its allowed range or set of values."""


class NotFittedError(FMEError, ValueError):
    """An estimator or detector was used before ``fit``."""


class NameClashError(FeatureError):
    """A user column passed in ``by=`` or ``at=`` has the name of one of fme's output columns.

    The table would hold two columns of that name (or fme's would overwrite the user's values); the
    message names the column and how to pass it under another name.
    """


class FMEWarning(UserWarning):
    """Base class of every warning issued by :mod:`fme`."""


class FixedModelWarning(FMEWarning):
    """Only the fixed-model ("sample") interval was available, and the caller did not ask for it.

    ``inference='auto'`` falls back to ``sample`` for a model without a parameter covariance (a
    scikit-learn estimator, a plain function): the standard error, p-value and interval then describe
    the spread of the fMEs over the rows with the model held fixed, not the model's uncertainty. Pass
    ``bootstrap={...}`` for the model's uncertainty by refits, or ``inference='sample'`` to ask for the
    fixed-model interval (no warning).
    """


class BootstrapWarning(FMEWarning, RuntimeWarning):
    """Bootstrap refits failed or did not converge (and were left out), or a percentile interval rests on
    too few refits for its level; the message gives the counts and what to change."""


class PositivityWarning(FMEWarning, RuntimeWarning):
    """The moved rows of a data-level AME (:func:`fme.dgp_ame`) leave the support of the data (positivity
    fails): the message names the step and the share of moved rows out of support, and the remedies."""


class LearnerError(FMEError, RuntimeError):
    """The learner-level AME (:func:`fme.learner_ame`) has fewer than two successful splits to average."""


class LearnerWarning(FMEWarning, RuntimeWarning):
    """Some splits of :func:`fme.learner_ame` failed (fit or AME) and were left out; the message gives
    the count and the first error."""
