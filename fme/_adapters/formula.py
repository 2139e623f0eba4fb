"""Formula information of statsmodels results (patsy or formulaic engine): the right-hand-side data
columns and the levels of categorical factors (``C(x)``)."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

__all__ = ["formula_info", "factor_levels"]


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
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "Q"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
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
    return [
        (_names_in(getattr(factor, "code", ""), columns), list(info.categories) if info.type == "categorical" else None)
        for factor, info in spec.factor_infos.items()
    ]


def _rhs_position(formula: Any, name: Any) -> int:
    """Where ``name`` first occurs on the formula's right-hand side (engines order terms differently)."""
    rhs = str(formula).split("~", 1)[-1]
    hit = re.search(r"(?<![\w.])" + re.escape(str(name)) + r"(?!\w)", rhs)
    return hit.start() if hit else len(rhs)


def _factors(model: Any) -> tuple[list[tuple[list, list | None]], pd.DataFrame] | None:
    data = getattr(getattr(model, "model", None), "data", None)
    spec = getattr(data, "model_spec", None) or getattr(data, "design_info", None)
    frame = getattr(data, "frame", None)
    if not isinstance(frame, pd.DataFrame) or spec is None:
        return None
    if getattr(spec, "factor_infos", None) is not None:
        return _patsy_factors(spec, frame.columns), frame
    if getattr(spec, "factor_variables", None) is not None and getattr(spec, "encoder_state", None) is not None:
        return _formulaic_factors(spec, frame.columns), frame
    return None


def formula_info(model: Any) -> tuple[list, dict[Any, list]] | None:
    """For statsmodels results fitted with a formula (patsy or formulaic engine): the right-hand-side
    data columns, in the order they appear in the formula, and, for numeric columns used as categorical
    factors (``C(x)``), their levels; else None.

    statsmodels >= 0.15 fits formulas with patsy or formulaic
    (``statsmodels.formula.options.formula_engine``, or ``SM_FORMULA_ENGINE``); the design information is
    ``model.data.model_spec``: a patsy ``DesignInfo`` (``factor_infos``) or a formulaic ``ModelSpec``
    (``factor_variables`` and ``encoder_state``).
    """
    got = _factors(model)
    if got is None:
        return None
    factors, frame = got
    rhs: list = []
    levels: dict[Any, list] = {}
    for names, cats in factors:
        rhs.extend(n for n in names if n not in rhs)
        if (
            cats is not None
            and len(names) == 1
            and pd.api.types.is_numeric_dtype(frame[names[0]].dtype)
            and not pd.api.types.is_bool_dtype(frame[names[0]].dtype)
        ):
            levels[names[0]] = cats
    formula = getattr(model.model, "formula", None)
    if formula is not None:
        rhs.sort(key=lambda n: _rhs_position(formula, n))
    return rhs, levels


def factor_levels(model: Any) -> dict[Any, list]:
    """column -> levels of every categorical factor of one data column (``C(x)``, string or categorical
    columns), as the formula recorded them when the model was fitted; {} without formula information."""
    got = _factors(model)
    if got is None:
        return {}
    out: dict[Any, list] = {}
    for names, cats in got[0]:
        if cats is not None and len(names) == 1:
            out.setdefault(names[0], list(cats))
    return out
