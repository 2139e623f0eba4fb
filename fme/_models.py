"""Checks and adapters for users' model objects, used by :func:`fme.predictors.make_predictor`.

* :func:`check_model` refuses, with a message naming the object and the fix,
  a model *class*, an unfitted scikit-learn estimator and a statsmodels model
  that has not been fitted (its results object is what predicts).
* :func:`booster_predictor` adapts raw ``xgboost.Booster`` and
  ``lightgbm.Booster`` objects, which do not take a DataFrame as is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from .exceptions import DataError, ModelError, NotFittedError, ParameterError

__all__ = ["check_model", "booster_predictor"]


def _module(obj: Any) -> str:
    return type(obj).__module__ or ""


def check_model(model: Any) -> None:
    """Raise when ``model`` cannot predict as given (class, unfitted estimator, statsmodels model)."""
    if isinstance(model, type):
        raise ModelError(
            f"the model {model.__name__} is a class, not a fitted model; pass an instance fitted on the data, "
            f"e.g. {model.__name__}().fit(X, y)."
        )
    mod = _module(model)
    if mod.startswith("statsmodels") and hasattr(model, "fit") and hasattr(model, "endog") and not hasattr(
        model, "params"
    ):
        raise ModelError(
            f"the model is a statsmodels {type(model).__name__} that has not been fitted; call .fit() first "
            "and pass its results (e.g. res = smf.ols(formula, data).fit(); fme.fme(res, ...))."
        )
    try:
        from sklearn.base import BaseEstimator
        from sklearn.exceptions import NotFittedError as SkNotFitted
        from sklearn.utils.validation import check_is_fitted
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return
    if isinstance(model, BaseEstimator):
        try:
            check_is_fitted(model)
        except SkNotFitted as exc:
            raise NotFittedError(
                f"the {type(model).__name__} passed as the model is not fitted; call .fit(X, y) on it first."
            ) from exc
        except TypeError:
            return  # not an estimator check_is_fitted understands (e.g. a meta-object without fit)


def _target_column(n_out: int, target_class: Any, name: str) -> int | None:
    if target_class is None:
        return None
    if isinstance(target_class, (int, np.integer)) and not isinstance(target_class, bool) and 0 <= target_class < n_out:
        return int(target_class)
    raise ParameterError(
        f"target_class={target_class!r} for a raw {name}: give the output column index 0..{n_out - 1} "
        "(a Booster has no class labels)."
    )


def booster_predictor(model: Any, target_class: Any) -> tuple[Callable, list[str] | None, str] | None:
    """``(func, feature_names, description)`` for a raw xgboost/lightgbm Booster, else None."""
    mod, name = _module(model), type(model).__name__
    if mod.startswith("xgboost") and name == "Booster":
        import xgboost as xgb

        names = model.feature_names
        cats = any(t == "c" for t in (model.feature_types or []))

        def predict_xgb(X: pd.DataFrame) -> np.ndarray:
            out = model.predict(xgb.DMatrix(X, enable_categorical=cats or None))
            return _pick(out, target_class, "xgboost.Booster")

        return predict_xgb, (None if names is None else list(names)), "xgboost.Booster"
    if mod.startswith("lightgbm") and name == "Booster":
        names = model.feature_name()

        def predict_lgb(X: pd.DataFrame) -> np.ndarray:
            return _pick(model.predict(X), target_class, "lightgbm.Booster")

        return predict_lgb, list(names), "lightgbm.Booster"
    return None


def _pick(out: Any, target_class: Any, name: str) -> np.ndarray:
    out = np.asarray(out)
    if out.ndim == 2 and out.shape[1] > 1:
        col = _target_column(out.shape[1], target_class, name)
        if col is None:
            raise ParameterError(
                f"the {name} returns {out.shape[1]} outputs per row (a multi-class objective); pass "
                "target_class=<output column index>."
            )
        return out[:, col]
    if target_class is not None:
        _target_column(1, target_class, name)
    return out


def _names_in(code: str, columns: Any) -> list:
    """Data columns a patsy factor's code refers to (``age`` in ``np.log(age)``, ``x y`` in ``Q('x y')``)."""
    import ast

    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.append(node.id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q" and node.args
              and isinstance(node.args[0], ast.Constant)):
            found.append(node.args[0].value)
    cols = set(columns)
    return [c for c in dict.fromkeys(found) if c in cols]


def _formulaic_factors(spec: Any, columns: Any) -> list[tuple[list, list | None]]:
    """(data columns, categorical levels or None) per factor of a formulaic ``ModelSpec``."""
    data_vars = set(getattr(spec, "variables_by_source", {}).get("data", ()))
    cols = set(columns)
    out = []
    for factor, variables in spec.factor_variables.items():
        code = str(getattr(factor, "expr", factor))
        names = _names_in(code, columns) or sorted(v for v in variables if v in data_vars and v in cols)
        kind, state = spec.encoder_state.get(code, (None, {}))
        categorical = getattr(kind, "value", kind) == "categorical"
        out.append((names, list(state.get("categories", ())) if categorical else None))
    return out


def _patsy_factors(spec: Any, columns: Any) -> list[tuple[list, list | None]]:
    """(data columns, categorical levels or None) per factor of a patsy ``DesignInfo``."""
    return [(_names_in(getattr(factor, "code", ""), columns),
             list(info.categories) if info.type == "categorical" else None)
            for factor, info in spec.factor_infos.items()]


def _rhs_position(formula: Any, name: Any) -> int:
    """Where ``name`` first occurs on the formula's right-hand side (engines order terms differently)."""
    rhs = str(formula).split("~", 1)[-1]
    hit = re.search(r"(?<![\w.])" + re.escape(str(name)) + r"(?!\w)", rhs)
    return hit.start() if hit else len(rhs)


def formula_info(model: Any) -> tuple[list, dict[Any, list]] | None:
    """For statsmodels results fitted with a formula (patsy or formulaic engine): the right-hand-side
    data columns, in the order they appear in the formula, and, for numeric columns used as categorical
    factors (``C(x)``), their levels; else None.

    statsmodels >= 0.15 fits formulas with patsy or formulaic
    (``statsmodels.formula.options.formula_engine``, or ``SM_FORMULA_ENGINE``); the design information is
    ``model.data.model_spec``: a patsy ``DesignInfo`` (``factor_infos``) or a formulaic ``ModelSpec``
    (``factor_variables`` and ``encoder_state``).
    """
    data = getattr(getattr(model, "model", None), "data", None)
    spec = getattr(data, "model_spec", None) or getattr(data, "design_info", None)
    frame = getattr(data, "frame", None)
    if not isinstance(frame, pd.DataFrame) or spec is None:
        return None
    if getattr(spec, "factor_infos", None) is not None:
        factors = _patsy_factors(spec, frame.columns)
    elif getattr(spec, "factor_variables", None) is not None and getattr(spec, "encoder_state", None) is not None:
        factors = _formulaic_factors(spec, frame.columns)
    else:
        return None
    rhs: list = []
    levels: dict[Any, list] = {}
    for names, cats in factors:
        rhs.extend(n for n in names if n not in rhs)
        if cats is not None and len(names) == 1 and pd.api.types.is_numeric_dtype(frame[names[0]].dtype) \
                and not pd.api.types.is_bool_dtype(frame[names[0]].dtype):
            levels[names[0]] = cats
    formula = getattr(model.model, "formula", None)
    if formula is not None:
        rhs.sort(key=lambda n: _rhs_position(formula, n))
    return rhs, levels


def model_frame(model: Any, data: pd.DataFrame) -> pd.DataFrame:
    """``data`` with the numeric columns a statsmodels formula treats as categorical (``C(x)``) turned
    into pandas categoricals of the formula's levels, so fMEs step them to levels; ``data`` itself is
    returned (not copied) when there is nothing to convert. The caller's frame is never modified."""
    info = formula_info(model) if _module(model).startswith("statsmodels") else None
    if not info or not info[1]:
        return data
    todo = {c: lv for c, lv in info[1].items() if c in data.columns
            and not isinstance(data[c].dtype, pd.CategoricalDtype)}
    if not todo:
        return data
    out = data.copy(deep=False)
    for c, lv in todo.items():
        unknown = (data[c].notna() & ~data[c].isin(lv)).to_numpy(dtype=bool)
        if unknown.any():
            shown = list(dict.fromkeys(data[c][unknown].tolist()))[:5]
            raise DataError(
                f"column {c!r} is categorical in the model's formula (C({c})) with levels {lv[:10]}, but the data "
                f"holds other values such as {shown} in {int(unknown.sum())} row(s); the model cannot predict them. "
                f"Drop those rows or map them to one of the formula's levels."
            )
        out[c] = pd.Categorical(data[c], categories=lv)
    return out
