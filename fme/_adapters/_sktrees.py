"""scikit-learn trees for the exact NLM (paper §5.4): split thresholds (also through a Pipeline's
pass-through and monotone per-feature steps) for the midpoint route of :mod:`fme._nlm.exact`, and the
fitted trees as a :class:`~fme._adapters.forest.Forest` for the traversal of :mod:`fme._nlm.tree_paths`.

Models read: ``DecisionTree*``, ``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*``,
``GradientBoosting*`` (constant init) and ``HistGradientBoosting*`` (traversal: without categorical
features). Comparisons replicate the model's: ``tree_`` compares the float32-cast input with a float64
threshold (:func:`~fme._adapters.forest.float32_boundary`); HistGradientBoosting compares float64 values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .base import Unsupported, adapt, class_index
from .forest import Forest, float32_boundary, stack_trees

__all__ = ["sklearn_splits", "pipeline_thresholds", "read_sklearn_forest", "per_feature", "output_index"]

_PER_FEATURE_SCALERS = (
    "StandardScaler",
    "MinMaxScaler",
    "MaxAbsScaler",
    "RobustScaler",
    "PowerTransformer",
    "QuantileTransformer",
)


# ----------------------------------------------------------------- split thresholds
def _sklearn_tree(tree) -> tuple[np.ndarray, np.ndarray]:
    # the tree compares float32(v) <= threshold: the path crosses at the float64 boundary of that set
    t = tree.tree_
    split = t.feature >= 0
    return t.feature[split].astype(np.int64), float32_boundary(t.threshold[split])


def _concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def sklearn_splits(model) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import BaseDecisionTree

    if isinstance(model, BaseDecisionTree):
        return _sklearn_tree(model)
    if isinstance(model, (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)):
        return _concat([_sklearn_tree(t) for t in model.estimators_])
    if isinstance(model, (GradientBoostingClassifier, GradientBoostingRegressor)):
        init = getattr(model, "init_", None)
        if not (init == "zero" or type(init).__name__ == "DummyClassifier" or type(init).__name__ == "DummyRegressor"):
            raise Unsupported(f"{type(model).__name__} has a non-constant init estimator {type(init).__name__}")
        return _concat([_sklearn_tree(t) for t in np.ravel(model.estimators_)])
    if isinstance(model, (HistGradientBoostingClassifier, HistGradientBoostingRegressor)):
        nodes = np.concatenate([p.nodes for it in model._predictors for p in it])
        split = nodes["is_leaf"] == 0
        cat = split & (nodes["is_categorical"] == 1)
        feats = nodes["feature_idx"][split & ~cat].astype(np.int64)
        cat_feats = np.unique(nodes["feature_idx"][cat]).astype(np.int64)
        pre = getattr(model, "_preprocessor", None)
        if pre is not None:  # categorical columns are encoded and moved first: map back to input positions
            perm = np.zeros(model.n_features_in_, dtype=np.int64)
            for name, _, cols in pre.transformers_:
                idx = np.arange(model.n_features_in_)[cols]
                perm[pre.output_indices_[name]] = idx
            feats, cat_feats = perm[feats], perm[cat_feats]
        if getattr(model, "is_categorical_", None) is not None:  # input order
            cat_feats = np.union1d(cat_feats, np.flatnonzero(model.is_categorical_))
        # categorical splits: mark with NaN thresholds (rejected if a stepped feature has one)
        return (
            np.concatenate([feats, cat_feats]),
            np.concatenate([nodes["num_threshold"][split & ~cat], np.full(cat_feats.size, np.nan)]),
        )
    raise Unsupported(type(model).__name__)


def per_feature(feats, thr, columns: list[str], own_names: list[str] | None) -> dict[str, np.ndarray]:
    """Map split features to column names; thresholds per column (NaN marks a categorical split)."""
    out: dict[str, list[np.ndarray]] = {}
    feats = list(feats)
    if feats and isinstance(feats[0], str):
        by_name = own_names is not None and set(own_names) <= set(columns)
        if by_name:
            keys = feats
        else:  # model fitted on arrays: names are positional (Column_3, f3)
            pos = {n: i for i, n in enumerate(own_names or [])}
            keys = [columns[pos[f]] if f in pos else columns[int(str(f).lstrip("fColumn_"))] for f in feats]
    else:
        keys = [columns[int(i)] for i in feats]
    keys_arr = np.asarray(keys, dtype=object)
    for name in set(keys):
        out[name] = thr[keys_arr == name]
    return {k: v for k, v in out.items()}


def _feature_map(transformer, feature: str, columns: list[str]):
    """(output position, inverse map of output-space values to input values) for one stepped feature."""
    identity = type(transformer).__name__ == "FunctionTransformer" and transformer.func is None
    if transformer is None or identity or (isinstance(transformer, str) and transformer == "passthrough"):
        return columns.index(feature), (lambda v: v)
    name = type(transformer).__name__
    if name in _PER_FEATURE_SCALERS:
        j = columns.index(feature)

        def inverse(v, tr=transformer, j=j, m=len(columns)):
            arr = np.zeros((v.size, m))
            arr[:, j] = v
            return tr.inverse_transform(arr)[:, j]

        return j, inverse
    if name == "ColumnTransformer":
        found = []
        names_in = list(transformer.feature_names_in_) if hasattr(transformer, "feature_names_in_") else columns
        for tname, tr, cols in transformer.transformers_:
            if isinstance(tr, str) and tr == "drop":
                continue
            sel = (
                np.arange(len(names_in))[cols]
                if not isinstance(cols, (list, tuple)) or (cols and not isinstance(cols[0], str))
                else [names_in.index(c) for c in cols]
            )
            sel_names = [names_in[i] for i in np.atleast_1d(sel)]
            if feature in sel_names:
                found.append((tname, tr, sel_names))
        if not found:
            return None, None
        if len(found) > 1:
            raise Unsupported(f"ColumnTransformer uses {feature!r} in several transformers")
        tname, tr, sel_names = found[0]
        inner = _feature_map(tr, feature, sel_names)
        if inner[0] is None:
            return None, None
        return transformer.output_indices_[tname].start + inner[0], inner[1]
    raise Unsupported(f"pipeline step {name} (not a pass-through or monotone per-feature transform of {feature!r})")


def pipeline_thresholds(pipe, features: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    steps = [s for _, s in pipe.steps]
    final = steps[-1]
    maps = {}
    for f in features:
        pos, inverses, cols = f, [], list(columns)
        for tr in steps[:-1]:
            j, inv = _feature_map(tr, pos if isinstance(pos, str) else cols[pos], cols)
            if j is None:
                maps[f] = None
                break
            inverses.append(inv)
            out_cols = [str(c) for c in tr.get_feature_names_out()] if hasattr(tr, "get_feature_names_out") else cols
            cols, pos = out_cols, j
        else:
            maps[f] = (cols[pos] if not isinstance(pos, str) else pos, cols, inverses)
    out = {}
    for f, m in maps.items():
        if m is None:
            out[f] = np.empty(0)
            continue
        name, cols, inverses = m
        inner = adapt(final).split_thresholds([name], cols)[name]
        if np.isnan(inner).any():
            raise Unsupported(f"{type(final).__name__} has categorical splits on the stepped feature {name!r}")
        inner = np.unique(inner)
        for inv in reversed(inverses):
            inner = np.asarray(inv(inner), dtype=float) if inner.size else inner
        out[f] = inner
    return out


# ----------------------------------------------------------------- fitted trees
def _sk_tree(est, scale: float = 1.0, col: int | None = None) -> dict | None:
    t = est.tree_
    if t.n_outputs != 1:
        return None
    leaf = t.children_left < 0
    value = t.value[:, 0, :] * scale if scale != 1.0 else t.value[:, 0, :].copy()
    return dict(
        feature=np.where(leaf, 0, t.feature).astype(np.int64),
        threshold=t.threshold.astype(np.float64),
        missing_left=np.asarray(t.missing_go_to_left, dtype=bool),
        is_leaf=leaf,
        left=t.children_left.astype(np.int64),
        right=t.children_right.astype(np.int64),
        value=value,
        col=col,
    )


def output_index(model, target_class: Any) -> int | None | str:
    """Column of the model's predict_proba the predictor reports, None for all ('all'), 0 for regressors."""
    classes = getattr(model, "classes_", None)
    if classes is None or not hasattr(model, "predict_proba"):
        return 0
    if isinstance(target_class, str) and target_class == "all":
        return None
    if target_class is None:
        return 1 if len(classes) == 2 else "unknown"
    return class_index(np.asarray(classes), target_class)


def _read_sklearn(model) -> tuple[list[dict], int, np.ndarray, Callable, bool] | None:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import BaseDecisionTree

    def ident(raw):
        return raw

    if isinstance(model, BaseDecisionTree):
        tr = _sk_tree(model)
        if tr is None:
            return None
        return [tr], tr["value"].shape[1], np.zeros(tr["value"].shape[1]), ident, True
    if isinstance(model, (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)):
        trees = [_sk_tree(e) for e in model.estimators_]
        if any(t is None for t in trees):
            return None
        n_est = len(model.estimators_)

        def mean(raw, n_est=n_est):  # the forest's own order: sum of the trees, then /= n
            return raw / n_est

        k = trees[0]["value"].shape[1]
        return trees, k, np.zeros(k), mean, True
    if isinstance(model, (GradientBoostingClassifier, GradientBoostingRegressor)):
        est = np.asarray(model.estimators_, dtype=object)
        k = est.shape[1]
        lr = float(model.learning_rate)
        trees = [_sk_tree(est[i, j], col=j) for i in range(est.shape[0]) for j in range(k)]
        for t in trees:  # the stage's own product learning_rate * leaf value
            t["value"] = lr * t["value"]
        zero = np.zeros((1, model.n_features_in_), dtype=np.float32)
        baseline = np.asarray(model._raw_predict_init(zero), dtype=np.float64).reshape(-1)
        if isinstance(model, GradientBoostingClassifier):

            def link(raw, model=model):
                return model._loss.predict_proba(raw.ravel() if raw.shape[1] == 1 else raw)
        else:
            link = ident
        return trees, k, baseline, link, True
    if isinstance(model, (HistGradientBoostingClassifier, HistGradientBoostingRegressor)):
        if getattr(model, "_preprocessor", None) is not None or (
            getattr(model, "is_categorical_", None) is not None and np.any(model.is_categorical_)
        ):
            return None  # categorical splits route through bitsets: midpoint route
        trees = []
        for it in model._predictors:
            for j, p in enumerate(it):
                nd = p.nodes
                leaf = nd["is_leaf"].astype(bool)
                trees.append(
                    dict(
                        feature=np.where(leaf, 0, nd["feature_idx"]).astype(np.int64),
                        threshold=nd["num_threshold"].astype(np.float64),
                        missing_left=nd["missing_go_to_left"].astype(bool),
                        is_leaf=leaf,
                        left=nd["left"].astype(np.int64),
                        right=nd["right"].astype(np.int64),
                        value=nd["value"].astype(np.float64)[:, None],
                        col=j,
                    )
                )
        k = int(model.n_trees_per_iteration_)
        baseline = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
        if isinstance(model, HistGradientBoostingClassifier):

            def link(raw, model=model):
                return model._loss.predict_proba(raw)
        else:

            def link(raw, model=model):
                return model._loss.link.inverse(raw.ravel())[:, None]

        return trees, k, baseline, link, False
    return None


def read_sklearn_forest(model: Any, target_class: Any = None) -> Forest | None:
    """The trees of a scikit-learn tree model as a :class:`Forest`, or None when they are not read here."""
    if getattr(model, "n_outputs_", 1) != 1:
        return None
    out = output_index(model, target_class)
    if isinstance(out, str):
        return None
    got = _read_sklearn(model)
    if got is None:
        return None
    trees, k, baseline, link, f32 = got
    st = stack_trees(trees, k)
    thr = st["threshold"]
    boundary = float32_boundary(thr) if f32 else thr
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
        baseline=baseline,
        link=link,
        float32=f32,
        output=out,
        name=type(model).__name__,
        n_features=int(model.n_features_in_),
    )
