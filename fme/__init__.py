"""fme: forward marginal effects, non-linearity measures and conditional AMEs.

Implements Scholbeck et al., "Marginal Effects for Non-Linear Prediction
Functions" (the paper in the project's shared folder): fMEs for numeric,
categorical and multivariate steps (§5.1-5.2), the NLM (§5.4), cAMEs on
CTREE subspaces (§5.5) and extrapolation checks (§4.2, Appendix A.2).
"""

import importlib as _importlib

from .exceptions import (
    BootstrapWarning,
    DataError,
    ExtrapolationError,
    FeatureError,
    FixedModelWarning,
    FMEError,
    FMEWarning,
    LearnerError,
    LearnerWarning,
    ModelError,
    NameClashError,
    NotFittedError,
    ParameterError,
    PositivityWarning,
    PredictionError,
    StepError,
)

__version__ = "0.1.0"
#: The distribution's name on the package index (``pip install forward-marginal-effects``); it imports as fme.
__distribution__ = "forward-marginal-effects"

#: Where each public name lives. They are imported on first use (PEP 562), so that ``import fme`` and the
#: command line's ``--help`` or a config error do not load pandas, scikit-learn, SciPy and numba first.
_PUBLIC: dict[str, str] = {
    "fme": "effects",
    "FMEResult": "effects",
    "hypotheses": "margins.testing",
    "interaction": "margins.interactions",
    "avg_slopes": "margins.slopes",
    "avg_comparisons": "margins.comparisons",
    "comparisons": "margins.comparisons",
    "slopes": "margins.slopes",
    "predictions": "margins.predicted",
    "avg_predictions": "margins.predicted",
    "ame": "margins.marginal",
    "mem": "margins.marginal",
    "mer": "margins.marginal",
    "dme": "margins.marginal",
    "step_size": "steps",
    "came": "conditional",
    "PartitionResult": "conditional",
    "JointPartitionResult": "conditional",
    "partition_stability": "conditional",
    "CTree": "_trees.ctree",
    "EstimatesTable": "inference",
    "max_linear_step": "linearity",
    "dgp_ame": "levels",
    "learner_ame": "levels",
    "release_memory": "_utils.memory",
    **{
        name: "extrapolation"
        for name in (
            "DETECTORS",
            "ExtrapolationDetector",
            "EnvelopeDetector",
            "ConvexHullDetector",
            "MCECDetector",
            "CERTDetector",
            "IsolationForestDetector",
            "LOFDetector",
        )
    },
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


__all__ = [
    "fme",
    "FMEResult",
    "hypotheses",
    "interaction",
    "avg_slopes",
    "avg_comparisons",
    "slopes",
    "comparisons",
    "predictions",
    "avg_predictions",
    "ame",
    "mem",
    "mer",
    "dme",
    "step_size",
    "came",
    "PartitionResult",
    "JointPartitionResult",
    "partition_stability",
    "CTree",
    "EstimatesTable",
    "max_linear_step",
    "DETECTORS",
    "ExtrapolationDetector",
    "EnvelopeDetector",
    "ConvexHullDetector",
    "MCECDetector",
    "CERTDetector",
    "IsolationForestDetector",
    "LOFDetector",
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
    "dgp_ame",
    "PositivityWarning",
    "learner_ame",
    "LearnerError",
    "LearnerWarning",
    "release_memory",
]
