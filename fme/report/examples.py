"""Example models for bundled report configs.

``boston_svm`` follows the paper's Boston recipe (§8): numeric features
standardised (mean, SD with ddof=1), ``chas`` as two 0/1 indicator columns,
the target standardised, an RBF ``SVR`` with the tuned hyperparameters. The
returned model takes the raw feature columns and predicts ``medv`` in its own
unit (1000 USD), so effects are read on the target's scale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["StandardisedSVR", "boston_svm"]

SVR_PARAMS = {"C": 8.98360831197351, "gamma": 0.00917994580231607, "epsilon": 0.1}


class StandardisedSVR:
    """SVR on standardised numeric features and indicator-coded categoricals.

    ``predict`` takes raw feature columns and returns predictions on the
    original target scale.
    """

    def __init__(self, categorical: dict[str, list] | None = None, **svr_params) -> None:
        self.categorical = dict(categorical or {})
        self.svr_params = svr_params

    def _design(self, X: pd.DataFrame) -> np.ndarray:
        num = (X[self.numeric_].to_numpy(dtype=float) - self.mean_) / self.scale_
        parts = [num]
        for col, levels in self.categorical.items():
            values = X[col].to_numpy()
            parts.append(np.column_stack([(values == lv).astype(float) for lv in levels]))
        return np.hstack(parts)

    def fit(self, X: pd.DataFrame, y: pd.Series) -> "StandardisedSVR":
        from sklearn.svm import SVR

        self.feature_names_in_ = np.asarray(list(X.columns), dtype=object)
        self.numeric_ = [c for c in X.columns if c not in self.categorical]
        num = X[self.numeric_].to_numpy(dtype=float)
        self.mean_ = num.mean(axis=0)
        self.scale_ = num.std(axis=0, ddof=1)
        yv = np.asarray(y, dtype=float)
        self.y_mean_, self.y_scale_ = float(yv.mean()), float(yv.std(ddof=1))
        self.svr_ = SVR(**self.svr_params).fit(self._design(X), (yv - self.y_mean_) / self.y_scale_)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.svr_.predict(self._design(X)) * self.y_scale_ + self.y_mean_


def boston_svm(data: pd.DataFrame | None = None) -> tuple[StandardisedSVR, pd.DataFrame]:
    """The paper's Boston SVM fitted on ``data`` (default: the bundled data).

    Returns ``(model, X)``: the fitted model and its training features.
    """
    from ..datasets import load_boston

    frame = load_boston() if data is None else data
    X, y = frame.drop(columns="medv"), frame["medv"]
    model = StandardisedSVR(categorical={"chas": [0, 1]}, **SVR_PARAMS).fit(X, y)
    return model, X
