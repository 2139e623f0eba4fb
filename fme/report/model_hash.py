"""What identifies a fitted model, hashed the same way for identical fits.

Two identical statsmodels fits pickle to different bytes, so a hash of the pickle changed every build and
the build cache rebuilt unchanged inputs. The report asks the model's adapter instead
(:func:`fme.models.fingerprint`, answered by the model's adapter): each backend
serialises what identifies its fits (a statsmodels result its class, family, formula, design, parameters
and covariance; a LightGBM or XGBoost booster its model text; a scikit-learn estimator its class,
parameters and fitted state), and arrays and frames travelling with the model (training data) by their
dtype, shape and values. The report knows no backend itself.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..models import fingerprint

__all__ = ["model_fingerprint", "model_sha256"]


def model_fingerprint(obj: Any) -> bytes:
    """The canonical serialisation of a fitted model (and what travels with it, e.g. training data)."""
    return fingerprint(obj)


def model_sha256(obj: Any) -> str:
    """sha256 (hex) of :func:`model_fingerprint`."""
    return hashlib.sha256(model_fingerprint(obj)).hexdigest()
