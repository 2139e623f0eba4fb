"""LightGBM: raw ``lightgbm.Booster`` objects and the scikit-learn wrappers (``LGBMRegressor``, ...).

* predictions: the wrappers as scikit-learn estimators; a Booster predicts on the DataFrame, a
  multi-class one needs ``target_class=<output column index>`` (a Booster has no labels);
* bootstrap: the wrappers by clone + fit (a raw Booster cannot be refitted);
* exact NLM (paper §5.4): split thresholds and the trees from ``dump_model()`` (double precision,
  ``<=`` splits, missing types None/Zero/NaN; numerical splits and constant leaves only);
* training levels: the pandas categorical columns' levels the Booster stores (``pandas_categorical``).

``lightgbm`` itself is never imported: the model's objects are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._sktrees import output_index, per_feature
from .base import Prediction, Unsupported, pick_output, register_adapter
from .forest import Forest, stack_trees
from .identity import Walk, class_path, estimator_text, pickle_text, sha256_hex
from .sklearn import BoosterAdapter

__all__ = ["LightGBMAdapter"]

_LGB_IDENTITY = ("regression", "regression_l1", "huber", "fair", "quantile", "mape")


def _booster(model: Any) -> Any:
    booster = model.booster_ if hasattr(model, "booster_") else model
    return booster if type(booster).__name__ == "Booster" else None


def _lightgbm_splits(booster) -> tuple[list[Any], np.ndarray]:
    dump = booster.dump_model()
    names = list(dump.get("feature_names", []))
    feats, thr = [], []
    for info in dump["tree_info"]:
        stack = [info["tree_structure"]]
        while stack:  # loop over nodes of the fitted model, not over rows
            node = stack.pop()
            if "split_feature" not in node:
                if "leaf_coeff" in node:
                    raise Unsupported("LightGBM with linear_tree=True (leaves are linear, not constant)")
                continue
            feats.append(names[node["split_feature"]] if names else node["split_feature"])
            thr.append(float(node["threshold"]) if node.get("decision_type", "<=") != "==" else np.nan)
            stack.extend((node["left_child"], node["right_child"]))
    return feats, np.asarray(thr, dtype=float)


def read_lightgbm_forest(model, target_class: Any) -> Forest | None:
    """LightGBM (scikit-learn wrapper or Booster) from ``dump_model()``: double precision, ``<=`` splits,
    missing types None (NaN compares as 0), Zero and NaN; numerical splits and constant leaves only."""
    booster = model.booster_ if hasattr(model, "booster_") else model
    if type(booster).__name__ != "Booster":
        return None
    dump = booster.dump_model()
    obj = str(dump.get("objective", "")).split()
    name = obj[0] if obj else ""
    params = dict(o.split(":", 1) for o in obj[1:] if ":" in o)
    k = int(dump["num_tree_per_iteration"])
    if "sqrt" in obj:
        return None
    if hasattr(model, "booster_") and hasattr(model, "classes_"):  # LGBMClassifier: predict_proba columns
        out = output_index(model, target_class)
        if isinstance(out, str):
            return None
    elif k > 1:  # Booster: the predictor picks an output column by index
        if not isinstance(target_class, (int, np.integer)) or isinstance(target_class, bool):
            return None
        out = int(target_class)
    else:
        out = 0
    trees = []
    for i, info in enumerate(dump["tree_info"]):
        nodes: list[dict] = []
        stack = [info["tree_structure"]]
        while stack:  # nodes of the fitted model in pre-order (ids assigned when first seen)
            node = stack.pop()
            nodes.append(node)
            if "split_feature" in node:
                if node.get("decision_type", "<=") != "<=":
                    return None  # categorical split
                stack.extend((node["right_child"], node["left_child"]))
            elif "leaf_coeff" in node:
                return None  # linear_tree
        ids = {id(nd): j for j, nd in enumerate(nodes)}
        leaf = np.array(["split_feature" not in nd for nd in nodes])
        get = lambda key, default, nodes=nodes: [nd.get(key, default) for nd in nodes]
        mtype = np.array(get("missing_type", "None"))
        thr = np.array(get("threshold", np.inf), dtype=float)
        dleft = np.array(get("default_left", True), dtype=bool)
        trees.append(
            dict(
                feature=np.array(get("split_feature", 0), dtype=np.int64),
                threshold=thr,
                # missing type None: NaN is compared as 0.0
                missing_left=np.where(mtype == "None", 0.0 <= thr, dleft),
                is_leaf=leaf,
                zero=(mtype == "Zero") & ~leaf,
                left=np.array([ids[id(nd["left_child"])] if "left_child" in nd else 0 for nd in nodes], dtype=np.int64),
                right=np.array(
                    [ids[id(nd["right_child"])] if "right_child" in nd else 0 for nd in nodes], dtype=np.int64
                ),
                value=np.array(get("leaf_value", 0.0), dtype=float)[:, None],
                col=i % k,
            )
        )
    n_iter = len(trees) // k
    sigma = float(params.get("sigmoid", 1.0))
    average = bool(dump.get("average_output", False))
    wrapper_proba = hasattr(model, "booster_") and hasattr(model, "classes_")

    def link(raw):
        if average:
            raw = raw / n_iter
        if name in _LGB_IDENTITY:
            return raw
        if name in ("poisson", "gamma", "tweedie"):
            return np.exp(raw)
        if name in ("binary", "cross_entropy", "xentropy"):
            p = 1.0 / (1.0 + np.exp(-sigma * raw))
            return np.column_stack([1.0 - p[:, 0], p[:, 0]]) if wrapper_proba else p
        if name == "multiclass":
            e = np.exp(raw - raw.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        if name == "multiclassova":
            return 1.0 / (1.0 + np.exp(-sigma * raw))
        raise AssertionError(name)

    if name not in _LGB_IDENTITY + (
        "poisson",
        "gamma",
        "tweedie",
        "binary",
        "cross_entropy",
        "xentropy",
        "multiclass",
        "multiclassova",
    ):
        return None
    st = stack_trees(trees, k)
    zero = np.concatenate([t["zero"] for t in trees])
    return Forest(
        feature=st["feature"],
        threshold=st["threshold"],
        boundary=st["threshold"],
        left=st["left"],
        right=st["right"],
        missing_left=st["missing_left"],
        is_leaf=st["is_leaf"],
        value=st["value"],
        roots=st["roots"],
        baseline=np.zeros(k),
        link=link,
        float32=False,
        output=out,
        name=type(model).__name__,
        n_features=int(booster.num_feature()),
        zero_missing=zero if zero.any() else None,
    )


@register_adapter
class LightGBMAdapter(BoosterAdapter):
    """LightGBM Boosters and scikit-learn wrappers (recognised by module name)."""

    name = "lightgbm"
    module_prefix = "lightgbm"

    @classmethod
    def canonical_text(cls, obj: Any, walk: Walk) -> str:
        """A Booster by its model text (``model_to_string``); a scikit-learn wrapper by its class, parameters,
        fitted attributes and its Booster's text."""
        if callable(getattr(obj, "model_to_string", None)):
            return f"{class_path(obj)}({sha256_hex(obj.model_to_string().encode('utf-8'))})"
        if callable(getattr(obj, "get_params", None)):
            booster = getattr(obj, "_Booster", None)
            return estimator_text(obj, walk, None if booster is None else walk(booster))
        return pickle_text(obj)

    def _make_prediction(self) -> Prediction:
        if not self.is_booster:
            return super()._make_prediction()
        model, target_class = self.model, self.target_class

        def predict_lgb(X: pd.DataFrame) -> np.ndarray:
            return pick_output(model.predict(X), target_class, "lightgbm.Booster")

        return Prediction(predict_lgb, list(model.feature_name()), None, "lightgbm.Booster")

    def split_thresholds(self, features: Sequence[str], columns: Sequence[str]) -> dict[str, np.ndarray]:
        booster = _booster(self.model)
        if booster is None:
            raise Unsupported(self.type_name)
        feats, thr = _lightgbm_splits(booster)
        per = per_feature(feats, thr, list(columns), booster.feature_name())
        return {f: per.get(f, np.empty(0)) for f in features}

    def forest(self) -> Forest | None:
        return read_lightgbm_forest(self.model, self.target_class)

    def training_levels(self) -> dict[str, list]:
        booster = _booster(self.model)
        cats = getattr(booster, "pandas_categorical", None)
        idx = (getattr(booster, "params", None) or {}).get("categorical_column")
        if not cats or idx is None:
            return {}
        idx = list(np.atleast_1d(idx))
        names = booster.feature_name()
        if len(idx) != len(cats):
            return {}
        return {str(names[int(i)]): list(lv) for i, lv in zip(idx, cats)}
