"""XGBoost: raw ``xgboost.Booster`` objects and the scikit-learn wrappers (``XGBRegressor``, ...).

* predictions: the wrappers as scikit-learn estimators; a Booster predicts on a ``DMatrix`` (with
  ``enable_categorical`` when it has categorical features), a multi-class one needs
  ``target_class=<output column index>``;
* bootstrap: the wrappers by clone + fit (a raw Booster cannot be refitted);
* exact NLM (paper §5.4): the trees from the JSON model (``save_raw("json")``) for the traversal of
  :mod:`fme._nlm.tree_paths` (:func:`read_xgboost_forest`: ``gbtree`` with numerical splits and one output,
  i.e. regressors and binary classifiers, the objectives of ``_OBJECTIVES``); split thresholds from the
  same JSON model, as the float64 boundaries where ``float32(x) < s`` changes, for the midpoint route of
  :mod:`fme._nlm.exact`, which serves the rest (categorical splits, multi-class, multi-output, ``dart``;
  ``gblinear`` has no exact NLM). Both give the NLM of XGBoost's own predictions along the path;
* training levels: the categories the Booster stores (``get_categories``, XGBoost >= 3.1).

``xgboost`` is imported only when a Booster predicts (it is an optional dependency).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._sktrees import output_index, per_feature
from .base import Prediction, Unsupported, pick_output, register_adapter
from .forest import Forest, float32_boundary, stack_trees
from .identity import Walk, class_path, estimator_text, pickle_text, sha256_hex
from .sklearn import BoosterAdapter

__all__ = ["XGBoostAdapter", "read_xgboost_forest"]

#: objective -> (link, base_score transform): the objective's ``PredTransform`` and its ``ProbToMargin``,
#: by which XGBoost turns the stored ``base_score`` into the margin every prediction starts from
_OBJECTIVES = {
    "reg:squarederror": ("identity", "identity"),
    "reg:squaredlogerror": ("identity", "identity"),
    "reg:pseudohubererror": ("identity", "identity"),
    "reg:absoluteerror": ("identity", "identity"),
    "reg:logistic": ("sigmoid", "logit"),
    "binary:logistic": ("sigmoid", "logit"),
    "count:poisson": ("exp", "log"),
    "reg:gamma": ("exp", "log"),
    "reg:tweedie": ("exp", "log"),
}


def _booster(model: Any) -> Any:
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    return booster if type(booster).__name__ == "Booster" else None


def _xgboost_splits(booster) -> tuple[list[Any], np.ndarray]:
    """Split features and thresholds of every tree (NaN for a categorical split), from the JSON model: the
    float32 split conditions exactly (a text dump prints them rounded) and one parse where
    ``trees_to_dataframe`` formats and re-reads a dump (a tenth of the exact NLM's time on a 100-tree model)."""
    import json

    gb = json.loads(bytes(booster.save_raw("json")))["learner"]["gradient_booster"]
    if gb.get("name") == "dart":
        gb = gb["gbtree"]
    if gb.get("name") != "gbtree":  # gblinear has no trees
        raise Unsupported(f"XGBoost booster without trees ({gb.get('name')})")
    names = booster.feature_names
    feats: list[np.ndarray] = []
    thr: list[np.ndarray] = []
    for t in gb["model"]["trees"]:  # loop over the fitted trees, not over rows
        inner = np.asarray(t["left_children"], dtype=np.int64) >= 0
        cond = np.asarray(t["split_conditions"], dtype=np.float32).astype(np.float64)[inner]
        cond[np.asarray(t["split_type"], dtype=np.int64)[inner] != 0] = np.nan
        feats.append(np.asarray(t["split_indices"], dtype=np.int64)[inner])
        thr.append(cond)
    idx = np.concatenate(feats) if feats else np.empty(0, dtype=np.int64)
    labels = [names[i] for i in idx] if names else [f"f{i}" for i in idx]
    return labels, np.concatenate(thr) if thr else np.empty(0)


def _base_margin(base_score: np.float32, how: str) -> float:
    """XGBoost's ``ProbToMargin`` of the stored ``base_score``, in float32 as XGBoost computes it
    (``-logf(1.0f / b - 1.0f)`` for logistic objectives, ``logf(b)`` for the log-link ones)."""
    one = np.float32(1.0)
    if how == "logit":
        # the logarithm rounded once to float32 (what a correctly rounded logf returns)
        return float(-np.float32(np.log(np.float64(one / base_score - one))))
    if how == "log":
        return float(np.float32(np.log(np.float64(base_score))))
    return float(base_score)


def read_xgboost_forest(model: Any, target_class: Any = None) -> Forest | None:
    """The trees of an XGBoost model as a :class:`Forest` for the exact NLM's traversal (paper §5.4), or None.

    Read from the JSON model (``save_raw("json")``): per node ``split_indices``, ``split_conditions`` (at
    leaves: the leaf value), ``left_children``/``right_children`` and ``default_left``. XGBoost's predict
    (``GetNextNode``) sends a missing value (NaN) to the default child and otherwise goes left iff
    ``float32(x) < split_condition``, both in float32: so ``threshold`` is the split condition with a
    strict comparison on float32-cast values, and a stepped feature crosses at the float64 boundary of
    ``{v : float32(v) < s}``, i.e. of ``float32(v) <= s'`` with s' the float32 below s
    (:func:`~fme._adapters.forest.float32_boundary`). The raw score starts at ``base_score`` turned into
    a margin by the objective (:func:`_base_margin`) and the objective's link gives the predictions;
    a wrapper fitted with early stopping predicts with the trees up to ``best_iteration`` and so does the
    forest. The forest is ``sum32``: a segment's margin is the float32 sum of its leaves in tree order from the
    float32 base margin, as XGBoost's ``predict`` sums them, and its prediction XGBoost's own link of that
    margin (:func:`_own_link`): the NLM is that of the model's own predictions along the path (a float64 sum of
    the leaves with a float64 link differs from ``predict`` by float32 rounding, which moved NLMs by up to
    1e-4 relative).

    None (the midpoint route of :mod:`fme._nlm.exact` then applies) for: ``dart`` and ``gblinear``
    boosters, multi-class and multi-output models, categorical splits, vector leaves, a ``missing``
    other than NaN, objectives outside ``_OBJECTIVES``, and a classifier without a chosen class column.
    """
    import json

    booster = _booster(model)
    if booster is None or (hasattr(model, "get_booster") and not _nan_missing(getattr(model, "missing", np.nan))):
        return None
    learner = json.loads(bytes(booster.save_raw("json")))["learner"]
    gb = learner["gradient_booster"]
    mp = learner["learner_model_param"]
    name = learner["objective"]["name"]
    if (
        gb.get("name") != "gbtree"
        or name not in _OBJECTIVES
        or int(mp.get("num_class", 0)) > 1
        or int(mp.get("num_target", 1)) != 1
    ):
        return None
    base = np.asarray(
        json.loads(mp["base_score"]) if mp["base_score"].startswith("[") else [mp["base_score"]], dtype=np.float32
    )
    if base.size != 1:
        return None
    if hasattr(model, "get_booster") and hasattr(model, "classes_"):  # XGBClassifier: predict_proba columns
        out = output_index(model, target_class)
        if isinstance(out, str) or len(model.classes_) != 2:
            return None
    else:
        out = 0
    tm = gb["model"]
    trees_json = tm["trees"]
    if hasattr(model, "get_booster"):  # the wrapper's predict uses the trees up to best_iteration
        try:
            best = int(model.best_iteration)
        except (AttributeError, TypeError, ValueError):
            best = None
        if best is not None:
            trees_json = trees_json[: int(tm["iteration_indptr"][best + 1])]
    trees = []
    for t in trees_json:  # loop over the fitted trees, not over rows
        if int(t["tree_param"].get("size_leaf_vector", "1")) > 1 or any(int(v) != 0 for v in t["split_type"]):
            return None  # vector leaves, categorical splits
        left = np.asarray(t["left_children"], dtype=np.int64)
        leaf = left < 0
        cond = np.asarray(t["split_conditions"], dtype=np.float32).astype(np.float64)
        trees.append(
            dict(
                feature=np.asarray(t["split_indices"], dtype=np.int64),
                threshold=np.where(leaf, np.inf, cond),
                missing_left=np.asarray(t["default_left"], dtype=bool),
                is_leaf=leaf,
                left=left,
                right=np.asarray(t["right_children"], dtype=np.int64),
                value=np.where(leaf, cond, 0.0)[:, None],
                col=0,
            )
        )
    if not trees:
        return None
    link_name, base_how = _OBJECTIVES[name]
    proba = hasattr(model, "classes_") and hasattr(model, "get_booster")  # predict_proba: [1 - p, p]
    link = _own_link(booster, link_name, proba)

    st = stack_trees(trees, 1)
    thr = st["threshold"]
    # float32(v) < s iff float32(v) <= the float32 just below s
    split = np.flatnonzero(~st["is_leaf"])
    boundary = np.full(thr.size, np.inf)
    boundary[split] = float32_boundary(np.nextafter(thr[split].astype(np.float32), np.float32(-np.inf)))
    return Forest(
        feature=st["feature"],
        threshold=thr,
        boundary=boundary,
        left=st["left"],
        right=st["right"],
        missing_left=st["missing_left"],
        is_leaf=st["is_leaf"],
        value=st["value"],
        roots=st["roots"],
        baseline=np.array([_base_margin(base[0], base_how)]),
        link=link,
        float32=True,
        strict=True,
        output=out,
        name=type(model).__name__,
        n_features=int(booster.num_features()),
        sum32=True,
    )


def _own_link(booster, link_name: str, proba: bool):
    """The objective's ``PredTransform`` of float32 margins (m, 1) as XGBoost computes it, bit for bit: XGBoost
    itself, on a sparse matrix without values whose base margins are the margins, with no trees
    (``inplace_predict`` with ``iteration_range=(1, 1)``, an empty range; 0.1-0.3 s per 5 million margins).
    Its float32 ``expf`` is not always the correctly rounded exponential (2 of 8347 sigmoids of a
    classifier's segments were one float32 ulp apart, each within 0.002 ulp of a rounding tie), so no NumPy
    formula reproduces it everywhere. A wrapper's ``predict_proba`` adds ``1 - p`` in float32."""

    def link(raw: np.ndarray) -> np.ndarray:
        m = np.asarray(raw, dtype=np.float64)[:, 0].astype(np.float32)
        if link_name == "identity":
            return m.astype(np.float64)[:, None]
        from scipy import sparse

        empty = sparse.csr_matrix((m.size, booster.num_features()), dtype=np.float32)
        # the traversal's threads call this at once: "calling only inplace_predict in multiple threads is safe
        # and lock free" (XGBoost's docstring)
        p = np.asarray(booster.inplace_predict(empty, iteration_range=(1, 1), base_margin=m), dtype=np.float32).reshape(
            -1
        )
        out = np.column_stack([np.float32(1.0) - p, p]) if proba else p[:, None]
        return out.astype(np.float64)

    return link


def _nan_missing(missing: Any) -> bool:
    try:
        return bool(np.isnan(missing))
    except TypeError:
        return False


@register_adapter
class XGBoostAdapter(BoosterAdapter):
    """XGBoost Boosters and scikit-learn wrappers (recognised by module name)."""

    name = "xgboost"
    module_prefix = "xgboost"

    @classmethod
    def canonical_text(cls, obj: Any, walk: Walk) -> str:
        """A Booster by its raw JSON model (``save_raw``); a scikit-learn wrapper by its class, parameters,
        fitted attributes and its Booster's text (None when it is not fitted)."""
        if callable(getattr(obj, "save_raw", None)):
            return f"{class_path(obj)}({sha256_hex(bytes(obj.save_raw('json')))})"
        if callable(getattr(obj, "get_params", None)):
            booster = None
            if callable(getattr(obj, "get_booster", None)):
                try:
                    booster = walk(obj.get_booster())
                except Exception:  # noqa: BLE001 - not fitted
                    booster = None
            return estimator_text(obj, walk, booster)
        return pickle_text(obj)

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
        # XGBoost goes left iff float32(x) < s: the path crosses at the float64 boundary of that set, not at s
        num = np.isfinite(thr)
        thr = thr.copy()
        thr[num] = float32_boundary(np.nextafter(thr[num].astype(np.float32), np.float32(-np.inf)))
        per = per_feature(feats, thr, list(columns), booster.feature_names)
        return {f: per.get(f, np.empty(0)) for f in features}

    def forest(self) -> Forest | None:
        return read_xgboost_forest(self.model, self.target_class)

    def training_levels(self) -> dict[str, list]:
        booster = _booster(self.model)
        if booster is None or not any(t == "c" for t in (booster.feature_types or [])):
            return {}
        try:
            pairs = booster.get_categories(export_to_arrow=True).to_arrow()
        except Exception:  # older XGBoost (no stored categories) or a Booster fitted without names
            return {}
        return {str(name): list(arr.to_pylist()) for name, arr in pairs if arr is not None}
