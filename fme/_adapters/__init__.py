"""Model adapters: one module per backend, each a :class:`~fme._adapters.base.ModelAdapter` subclass
registered with :func:`~fme._adapters.base.register_adapter`; :func:`adapt` picks one per model.

Backends: :mod:`.statsmodels`, :mod:`.lightgbm`, :mod:`.xgboost` (recognised by module name, never
imported here), :mod:`.sklearn` (scikit-learn and estimators with its API) and :mod:`.generic` (objects
with ``predict``, callables, the delta-method protocol). A new backend is one more module here,
imported below so that its class registers.
"""

from __future__ import annotations

from typing import Any

from . import generic, lightgbm, sklearn, statsmodels, xgboost  # noqa: F401 - registers the adapters
from .base import (
    ModelAdapter,
    Prediction,
    Support,
    Unsupported,
    adapt,
    fingerprint,
    register_adapter,
    registered_adapters,
)
from .identity import (
    canonical,
    class_name,
    dispersion_scaled_copy,
    formula_categoricals,
    glm_dispersion,
    model_modules,
    scaled_dispersion,
)

__all__ = [
    "ModelAdapter",
    "Prediction",
    "Support",
    "Unsupported",
    "adapt",
    "register_adapter",
    "registered_adapters",
    "model_frame",
    "fingerprint",
    "model_modules",
    "glm_dispersion",
    "class_name",
    "formula_categoricals",
    "dispersion_scaled_copy",
    "scaled_dispersion",
    "canonical",
]


def model_frame(model: Any, data: Any, exposure: Any = None, offset: Any = None) -> Any:
    """``data`` as ``model`` reads it (:meth:`ModelAdapter.prepare`): ``C(x)`` columns of a statsmodels formula
    as categoricals, the ``exposure=``/``offset=`` keywords as columns; ``data`` itself when nothing changes
    (the caller's frame is never modified)."""
    return adapt(model).prepare(data, exposure=exposure, offset=offset)
