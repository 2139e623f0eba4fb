"""Formula information of statsmodels results (patsy or formulaic engine): the right-hand-side data
columns, the levels of categorical factors (``C(x)``) and the ranges of B-spline columns (``bs(x)``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DataError

__all__ = [
    "formula_info",
    "factor_levels",
    "spline_bounds",
    "check_spline_bounds",
    "spline_terms",
    "spline_error",
    "spline_checked",
]


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


def _plain(code: str, columns: Any) -> bool:
    """Whether a factor is one data column as it is (``x``, ``C(x)``, ``C(x, Treatment('b'))``, ``Q('x y')``):
    only then are its categories the column's levels. A categorical factor of a transformed column
    (``I(x > 0)``, ``C(np.round(x))``) leaves the column itself numeric."""
    import ast

    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "C" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Name):
        return node.id in set(columns)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Q"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in set(columns)
    )


def _formulaic_factors(spec: Any, columns: Any) -> list[tuple[list, list | None]]:
    """(data columns, categorical levels or None) per factor of a formulaic ``ModelSpec``."""
    data_vars = set(getattr(spec, "variables_by_source", {}).get("data", ()))
    cols = set(columns)
    out = []
    for factor, variables in spec.factor_variables.items():
        code = str(getattr(factor, "expr", factor))
        names = _names_in(code, columns) or sorted(v for v in variables if v in data_vars and v in cols)
        kind, state = spec.encoder_state.get(code, (None, {}))
        categorical = getattr(kind, "value", kind) == "categorical" and _plain(code, columns)
        out.append((names, list(state.get("categories", ())) if categorical else None))
    return out


def _patsy_factors(spec: Any, columns: Any) -> list[tuple[list, list | None]]:
    """(data columns, categorical levels or None) per factor of a patsy ``DesignInfo``."""
    return [
        (
            _names_in(getattr(factor, "code", ""), columns),
            list(info.categories)
            if info.type == "categorical" and _plain(getattr(factor, "code", ""), columns)
            else None,
        )
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


def _spline_column(code: str, columns: Any) -> str | None:
    """The data column of a factor that is one B-spline of a bare column (``bs(x, df=5)``, ``Q('x y')`` inside),
    else None; a spline of a transformed column (``bs(np.log(x))``) or with formulaic's ``extrapolation=``
    other than ``'raise'`` has no bound on the column itself."""
    import ast

    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or not call.args:
        return None
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
    if name not in ("bs", "basis_spline"):
        return None
    for kw in call.keywords:
        if kw.arg == "extrapolation" and not (isinstance(kw.value, ast.Constant) and kw.value.value == "raise"):
            return None
    arg = call.args[0]
    found = _names_in(ast.unparse(arg), columns)
    bare = isinstance(arg, ast.Name) or (isinstance(arg, ast.Call) and getattr(arg.func, "id", None) == "Q")
    return str(found[0]) if bare and len(found) == 1 else None


def _patsy_spline_bounds(spec: Any, columns: Any) -> list[tuple[str | None, float, float, str]]:
    out = []
    for factor, info in spec.factor_infos.items():
        code = getattr(factor, "code", "")
        col = _spline_column(code, columns)
        state = getattr(info, "state", None) or {}
        splines = [t for t in dict(state.get("transforms", {})).values() if type(t).__name__ == "BS"]
        if len(splines) != 1 or getattr(splines[0], "_all_knots", None) is None:
            continue
        knots = np.asarray(splines[0]._all_knots, dtype=float)
        out.append((col, float(knots.min()), float(knots.max()), code))
    return out


def _formulaic_spline_bounds(spec: Any, columns: Any) -> list[tuple[str | None, float, float, str]]:
    out = []
    states = getattr(spec, "transform_state", None) or {}
    for factor in spec.factor_variables:
        code = str(getattr(factor, "expr", factor))
        col = _spline_column(code, columns)
        state = states.get(code)
        if not isinstance(state, dict) or not {"lower_bound", "upper_bound"} <= set(state):
            continue
        out.append((col, float(state["lower_bound"]), float(state["upper_bound"]), code))
    return out


def spline_terms(model: Any) -> list[tuple[str | None, float, float, str]]:
    """(column or None, lower, upper, term) of every B-spline term of a statsmodels formula (``bs(...)``, patsy
    or formulaic engine): its boundary knots (by default the training range of its argument), and the data
    column when the argument is a bare column (None for a transformed one, ``bs(np.log(x))``)."""
    data = getattr(getattr(model, "model", None), "data", None)
    spec = getattr(data, "model_spec", None) or getattr(data, "design_info", None)
    frame = getattr(data, "frame", None)
    if not isinstance(frame, pd.DataFrame) or spec is None:
        return []
    if getattr(spec, "factor_infos", None) is not None:
        return _patsy_spline_bounds(spec, frame.columns)
    if getattr(spec, "factor_variables", None) is not None:
        return _formulaic_spline_bounds(spec, frame.columns)
    return []


def spline_bounds(model: Any) -> dict[str, tuple[float, float, str]]:
    """column -> (lower, upper, term) of every data column that enters a statsmodels formula through a B-spline
    of the bare column (``bs(x, ...)``, patsy or formulaic engine): the spline's boundary knots (by default the
    training range of ``x``). Both engines refuse to evaluate the spline outside them (patsy always, formulaic
    with its default ``extrapolation='raise'``). A column with several splines gets
    the narrowest range."""
    out: dict[str, tuple[float, float, str]] = {}
    for col, lo, hi, code in spline_terms(model):
        if col is None:
            continue
        if col in out:
            lo, hi = max(lo, out[col][0]), min(hi, out[col][1])
            code = f"{out[col][2]}, {code}"
        out[col] = (lo, hi, code)
    return out


#: What patsy's and formulaic's B-splines say when a value leaves the boundary knots.
_SPLINE_MESSAGES = ("outside the outermost knots", "extend beyond upper and/or lower bounds")


def spline_error(exc: BaseException, model: Any) -> DataError | None:
    """The :class:`~fme.DataError` for a formula engine's refusal to evaluate a B-spline outside its boundary
    knots (None for any other error). fme checks a step on a bare column itself (:func:`check_spline_bounds`);
    a spline of a transformed column (``bs(np.log(x))``) is only found by the engine, whose message names no
    term, knots or fix: this one names them."""
    text = f"{exc} {exc.__cause__ or ''}"
    if not any(m in text for m in _SPLINE_MESSAGES):
        return None
    terms = [(lo, hi, code) for col, lo, hi, code in spline_terms(model) if col is None] or [
        (lo, hi, code) for _, lo, hi, code in spline_terms(model)
    ]
    named = "; ".join(f"{code}: boundary knots [{lo:.6g}, {hi:.6g}]" for lo, hi, code in terms) or "a bs() term"
    return DataError(
        f"a B-spline term of the model's formula cannot be evaluated at some of the points asked for: a value of "
        f"its argument leaves the spline's boundary knots (the argument's training range). The spline term(s): "
        f"{named}. Use a step that keeps each spline's argument within its knots (a smaller step, or only the "
        f"rows far enough from the edge), or refit with the range widened (bs(..., lower_bound=..., "
        f"upper_bound=...))."
    )


def spline_checked(model: Any, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` (``model``'s predict, its design matrix) with a B-spline outside its knots
    reported by :func:`spline_error`."""
    try:
        return call(*args, **kwargs)
    except Exception as exc:
        err = spline_error(exc, model)
        if err is None:
            raise
        raise err from exc


def check_spline_bounds(
    bounds: dict[str, tuple[float, float, str]], frame: pd.DataFrame, base: pd.DataFrame | None = None
) -> None:
    """:class:`~fme.DataError` naming the column, the step (``frame`` minus ``base``, the points before the
    step) and the knots' range when a column of ``frame`` leaves the range ``bounds`` gives it
    (:func:`spline_bounds`)."""
    for col, (lo, hi, term) in bounds.items():
        if col not in frame.columns:
            continue
        x = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        out = (x < lo) | (x > hi)
        if not out.any():
            continue
        bad = x[out]
        fix = f"or refit with the range widened ({term.split('(')[0]}({col}, ..., lower_bound=..., upper_bound=...))"
        where = f"the boundary knots [{lo:.6g}, {hi:.6g}] of the spline term {term} (the training range of {col!r})"
        was = None
        if base is not None and col in base.columns and len(base) == len(frame):
            x0 = pd.to_numeric(base[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)[out]
            was = x0 if bool(np.all((x0 >= lo) & (x0 <= hi))) else None
        if was is not None:
            step = bad - was
            same = bool(np.allclose(step, step[0], rtol=1e-12, atol=0.0))
            said = f"by {step[0]:+.6g}" if same else f"by {step.min():+.6g} to {step.max():+.6g}"
            keep = ""
            if same and step[0] > 0:
                keep = f" (or only the rows with {col} <= {hi - step[0]:.10g})"
            elif same:
                keep = f" (or only the rows with {col} >= {lo - step[0]:.10g})"
            raise DataError(
                f"the step of {col!r} {said} moves {bad.size} of {x.size} row(s) to {col} = "
                f"{bad.min():.6g} .. {bad.max():.6g}, outside {where}: a B-spline of a formula cannot be "
                f"evaluated there. Use a step that keeps {col} + step within [{lo:.6g}, {hi:.6g}]{keep}, {fix}."
            )
        raise DataError(
            f"column {col!r} has {bad.size} of {x.size} value(s) ({bad.min():.6g} .. {bad.max():.6g}) outside "
            f"{where}: a B-spline of a formula cannot be evaluated there. Evaluate rows within the range, {fix}."
        )
