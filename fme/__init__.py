"""fme: forward marginal effects, non-linearity measures and conditional AMEs.

Implements Scholbeck et al., "Marginal Effects for Non-Linear Prediction
Functions" (the paper in the project's shared folder): fMEs for numeric,
categorical and multivariate steps (§5.1-5.2), the NLM (§5.4), cAMEs on
CTREE subspaces (§5.5) and extrapolation checks (§3.2, Appendix).
"""

import importlib as _importlib
import sys as _sys
import types as _types

from ._utils import legacy as _legacy
from .exceptions import (
    BootstrapWarning,
    DataError,
    PositivityWarning,
    ExtrapolationError,
    FeatureError,
    FixedModelWarning,
    LearnerError,
    LearnerWarning,
    FMEError,
    FMEWarning,
    ModelError,
    NameClashError,
    NotFittedError,
    ParameterError,
    PredictionError,
    StepError,
)

__version__ = "0.1.0"
#: The distribution's name on the package index (``pip install forward-marginal-effects``); it imports as fme.
__distribution__ = "forward-marginal-effects"

#: Where each public name lives. They are imported on first use (PEP 562), so that ``import fme`` and the
#: command line's ``--help`` or a config error do not load pandas, scikit-learn, SciPy and numba first.
_PUBLIC: dict[str, str] = {
    "fme": "effects", "FMEResult": "effects", "hypotheses": "hypotheses", "interaction": "interactions",
    "avg_slopes": "slopes", "avg_comparisons": "comparisons", "predictions": "predictions",
    "avg_predictions": "predictions", "ame": "margins", "mem": "margins", "mer": "margins", "dme": "margins",
    "step_size": "steps", "came": "came", "PartitionResult": "came", "partition_stability": "came",
    "CTree": "ctree", "EstimatesTable": "inference", "max_linear_step": "linearity", "dgp_ame": "levels",
    "learner_ame": "levels",
    **{name: "extrapolation" for name in ("DETECTORS", "ExtrapolationDetector", "EnvelopeDetector",
                                          "ConvexHullDetector", "MCECDetector", "CERTDetector",
                                          "IsolationForestDetector", "LOFDetector")},
}


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'fme' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


class _Package(_types.ModuleType):
    """The package module: importing the submodules ``fme.came``, ``fme.hypotheses`` or ``fme.predictions``
    must not replace the functions of the same names (the import system binds a loaded submodule to its
    parent's attribute; eager imports used to rebind the function right after)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _PUBLIC and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
_legacy.install()  # results pickled before the house moved (fme._partition, ...) still load

__all__ = [
    "fme", "FMEResult", "hypotheses", "interaction", "avg_slopes", "avg_comparisons", "predictions", "avg_predictions", "ame", "mem", "mer", "dme", "step_size", "came", "PartitionResult", "partition_stability", "CTree",
    "EstimatesTable", "max_linear_step", "DETECTORS", "ExtrapolationDetector", "EnvelopeDetector", "ConvexHullDetector",
    "MCECDetector", "CERTDetector", "IsolationForestDetector", "LOFDetector",
    "FMEError", "DataError", "FeatureError", "StepError", "ModelError", "PredictionError",
    "ExtrapolationError", "ParameterError", "NotFittedError", "NameClashError",
    "FMEWarning", "FixedModelWarning", "BootstrapWarning",
    "dgp_ame", "PositivityWarning", "learner_ame", "LearnerError", "LearnerWarning",
]
