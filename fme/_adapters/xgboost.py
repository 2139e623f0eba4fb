"""XGBoost: raw ``xgboost.Booster`` objects and the scikit-learn wrappers (``XGBRegressor``, ...).

* predictions: the wrappers as scikit-learn estimators; a Booster predicts on a ``DMatrix`` (with
  ``enable_categorical`` when it has categorical features), a multi-class one needs
  ``target_class=<output column index>``;
* bootstrap: the wrappers by clone + fit (a raw Booster cannot be refitted);
* exact NLM (paper §5.4): split thresholds from ``trees_to_dataframe()`` (the midpoint route; XGBoost
  compares in float32, so breakpoints are exact up to the float32 rounding of x + t h);
* training levels: the categories the Booster stores (``get_categories``, XGBoost >= 3.1).

``xgboost`` is imported only when a Booster predicts (it is an optional dependency).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._sktrees import per_feature
from .base import Prediction, Unsupported, pick_output, register_adapter
from .sklearn import BoosterAdapter

__all__ = ["XGBoostAdapter"]


def _booster(model: Any) -> Any:
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    return booster if type(booster).__name__ == "Booster" else None


def _xgboost_splits(booster) -> tuple[list[Any], np.ndarray]:
    try:
        df = booster.trees_to_dataframe()
    except Exception as exc:  # gblinear has no trees
        raise Unsupported(f"XGBoost booster without trees ({exc})") from exc
    split = df["Feature"] != "Leaf"
    split_val = df.loc[split, "Split"].to_numpy(dtype=float)  # NaN for categorical splits
    return list(df.loc[split, "Feature"]), split_val


@register_adapter
class XGBoostAdapter(BoosterAdapter):
    """XGBoost Boosters and scikit-learn wrappers (recognised by module name)."""

    name = "xgboost"
    module_prefix = "xgboost"

    def _make_prediction(self) -> Prediction:
        if not self.is_booster:
            return super()._make_prediction()
        import xgboost as xgb

        model, target_class = self.model, self.target_class
        names = model.feature_names
        cats = any(t == "c" for t in (model.feature_types or []))

        def predict_xgb(X: pd.DataFrame) -> np.ndarray:
            out = model.predict(xgb.DMatrix(X, enable_categorical=cats or None))
            return pick_output(out, target_class, "xgboost.Booster")

        return Prediction(predict_xgb, None if names is None else list(names), None, "xgboost.Booster")

    def split_thresholds(self, features: Sequence[str], columns: Sequence[str]) -> dict[str, np.ndarray]:
        booster = _booster(self.model)
        if booster is None:
            raise Unsupported(self.type_name)
        if getattr(self.model, "booster", None) == "gblinear":
            raise Unsupported("XGBoost gblinear")
        feats, thr = _xgboost_splits(booster)
        per = per_feature(feats, thr, list(columns), booster.feature_names)
        return {f: per.get(f, np.empty(0)) for f in features}

    def training_levels(self) -> dict[str, list]:
        booster = _booster(self.model)
        if booster is None or not any(t == "c" for t in (booster.feature_types or [])):
            return {}
        try:
            pairs = booster.get_categories(export_to_arrow=True).to_arrow()
        except Exception:  # older XGBoost (no stored categories) or a Booster fitted without names
            return {}
        return {str(name): list(arr.to_pylist()) for name, arr in pairs if arr is not None}
