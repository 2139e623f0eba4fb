"""fme: forward marginal effects, non-linearity measures and conditional AMEs.

Implements Scholbeck et al., "Marginal Effects for Non-Linear Prediction
Functions" (the paper in the project's shared folder): fMEs for numeric,
categorical and multivariate steps (§5.1-5.2), the NLM (§5.4), cAMEs on
CTREE subspaces (§5.5) and extrapolation checks (§3.2, Appendix).
"""

from ._utils import legacy as _legacy
from .came import PartitionResult, came, partition_stability
from .ctree import CTree
from .effects import FMEResult, fme
from .hypotheses import hypotheses
from .interactions import interaction
from .predictions import avg_predictions, predictions
from .slopes import avg_slopes
from .comparisons import avg_comparisons
from .inference import EstimatesTable
from .exceptions import (
    BootstrapWarning,
    DataError,
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
from .extrapolation import (
    DETECTORS,
    CERTDetector,
    ConvexHullDetector,
    EnvelopeDetector,
    ExtrapolationDetector,
    IsolationForestDetector,
    LOFDetector,
    MCECDetector,
)
from .linearity import max_linear_step
from .margins import ame, dme, mem, mer
from .levels import learner_ame
from .steps import step_size

__version__ = "0.1.0"

_legacy.install()  # results pickled before the house moved (fme._partition, ...) still load

__all__ = [
    "fme", "FMEResult", "hypotheses", "interaction", "avg_slopes", "avg_comparisons", "predictions", "avg_predictions", "ame", "mem", "mer", "dme", "step_size", "came", "PartitionResult", "partition_stability", "CTree",
    "EstimatesTable", "max_linear_step", "DETECTORS", "ExtrapolationDetector", "EnvelopeDetector", "ConvexHullDetector",
    "MCECDetector", "CERTDetector", "IsolationForestDetector", "LOFDetector",
    "FMEError", "DataError", "FeatureError", "StepError", "ModelError", "PredictionError",
    "ExtrapolationError", "ParameterError", "NotFittedError", "NameClashError",
    "FMEWarning", "FixedModelWarning", "BootstrapWarning",
    "learner_ame", "LearnerError", "LearnerWarning",
]
