"""Comparisons on other scales than the difference: marginaleffects' ``avg_comparisons(comparison=...)``.

The paper's fME is a difference, f(x + h) - f(x) (§3.2). Risk ratios, log odds ratios and lifts compare
the same two predictions on other scales; per row (then averaged), or as a function of the two averages
(the ``...avg`` forms):

==============  ===============================  =====================================
comparison      per row                          of the averages (``...avg``)
==============  ===============================  =====================================
difference      f1 - f0                          mean f1 - mean f0 (the AME)
ratio           f1 / f0                          mean f1 / mean f0
lnratio         log(f1 / f0)                     log(mean f1 / mean f0)
lnor            log(odds(f1) / odds(f0))         log(odds(mean f1) / odds(mean f0))
lift            (f1 - f0) / f0                   (mean f1 - mean f0) / mean f0
==============  ===============================  =====================================

with f0 = f(x), f1 = f(x + h) on the rows :func:`fme.fme` evaluates (its exclusions and extrapolation
policy), odds(p) = p / (1 - p). Uncertainty by the delta method, from the Jacobians of f0 and f1 in the
model's parameters (``vcov=``, ``df=`` as in :func:`fme.ame`), by the bootstrap (the comparison of each
refit's f0 and f1 on the same rows), or (per-row forms) the spread over the rows with the model held fixed.
Pandas or Dask data (:mod:`fme._core.averages`, :mod:`fme._dask.vocab`). The NLM and the cAMEs stay defined
on the difference scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ._core.averages import RowQuantity, average_in_memory
from ._core.local import points_local
from ._core.plan import FMEOptions
from ._dask.vocab import comparisons_dask, dask_groups
from ._utils.validation import check_conf_level, is_dask_collection
from .exceptions import FeatureError, ParameterError
from .inference._hypotheses import stack_estimates
from .inference._methods import resolve_method
from .inference._vcov import residual_df, with_vcov
from .inference.table import EstimatesTable
from .predictions import _by_codes, average_table, level_rows
from .predictors import make_predictor

__all__ = ["avg_comparisons", "comparisons_by_step", "COMPARISONS"]

_ROW = ("difference", "ratio", "lnratio", "lnor", "lift")
COMPARISONS = _ROW + tuple(f"{c}avg" for c in _ROW)


def _h(kind: str, f1: np.ndarray, f0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The comparison and its partial derivatives in f1 and f0."""
    with np.errstate(all="ignore"):
        if kind == "difference":
            return f1 - f0, np.ones_like(f1), -np.ones_like(f0)
        if kind == "ratio":
            return f1 / f0, 1 / f0, -f1 / f0 ** 2
        if kind == "lnratio":
            return np.log(f1 / f0), 1 / f1, -1 / f0
        if kind == "lnor":
            return (np.log(f1 / (1 - f1)) - np.log(f0 / (1 - f0)), 1 / (f1 * (1 - f1)), -1 / (f0 * (1 - f0)))
        return (f1 - f0) / f0, 1 / f0, -f1 / f0 ** 2  # lift


def avg_comparisons(model: Any, data: pd.DataFrame, steps: Mapping[str, Any], *, comparison: str = "difference",
                    by: str | Sequence[str] | None = None, inference: str = "auto", bootstrap: Any = None,
                    conf_level: float = 0.95, vcov: Any = None, df: Any = None, target_class: Any = None,
                    **fme_kwargs: Any) -> pd.DataFrame:
    """The average comparison of ``model``'s predictions after a step, on the scale ``comparison``.

    Parameters
    ----------
    model, data, steps, target_class, **fme_kwargs :
        As in :func:`fme.fme` (one step specification: its features move together, as in §5.2). ``data``
        may be a Dask DataFrame: the comparisons' sums ride on the kernel's pass over the chunks
        (:mod:`fme._dask.vocab`).
    comparison : str, default='difference'
        One of :data:`COMPARISONS` (module docstring).
    by : str or list of str, optional
        One row per group.
    inference : {'auto', 'delta', 'bootstrap', 'sample'}
        ``delta`` (the default where the model has a parameter covariance), ``bootstrap`` (each refit's
        comparison on the same rows; ``bootstrap={...}`` as in :func:`fme.ame`) or ``sample`` (per-row forms
        only).
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference._bootstrap`).
    vcov, df :
        As in :func:`fme.ame`.

    Returns
    -------
    EstimatesTable
        ``step``, the ``by`` columns, ``comparison``, ``estimate``, ``std_error``, ``statistic``,
        ``p_value``, ``conf_low``, ``conf_high``, ``inference``, ``covers``, ``n``; it keeps the rows'
        joint uncertainty for :func:`fme.hypotheses`.
    """
    if comparison not in COMPARISONS:
        raise ParameterError(f"comparison must be one of {COMPARISONS}, got {comparison!r}.")
    model, delta_label = with_vcov(model, vcov)
    t_df = residual_df(model, df)
    conf_level = check_conf_level(conf_level)
    method = resolve_method(inference, model, bootstrap)
    averaged = comparison.endswith("avg")
    kind = comparison[:-3] if averaged else comparison
    if averaged and method == "sample":
        raise ParameterError(f"comparison={comparison!r} is a function of two averages; its fixed-model spread is "
                             "not defined here: use inference='delta', 'bootstrap' or the per-row form.")
    quantity = RowQuantity(partial(_comparison_values, model=model, kind=kind, averaged=averaged,
                                   target_class=target_class),
                           partial(_finish_averages, kind=kind) if averaged else None)
    options = FMEOptions.from_kwargs({**fme_kwargs, "target_class": target_class, "inference": "sample"},
                                     "fme.avg_comparisons")
    if is_dask_collection(data):
        by_cols = [] if by is None else ([by] if isinstance(by, str) else list(by))
        missing = [c for c in by_cols if c not in data.columns]
        if missing:
            raise FeatureError(f"by column(s) {missing} are not columns of the data.")
        groups, keys = dask_groups(data, by_cols)
        est, counts, described = comparisons_dask(model, data, steps, options, quantity, method, groups, bootstrap)
    else:
        # the rows and points fme.fme evaluates, not predicted yet: each method predicts them once, its own way
        X0, X1, rows, described = points_local(model, data, steps, options)
        codes, keys, by_cols = _by_codes(rows, by)
        est = average_in_memory(quantity, (X0, X1, None, None), model, method, codes, len(keys), None, bootstrap)
        counts = np.bincount(codes, minlength=len(keys))
    out = average_table(est, keys[by_cols], counts, t_df, delta_label, conf_level)
    out.insert(0, "step", described)
    out.insert(1 + len(by_cols), "comparison", comparison)
    return out


def _comparison_values(piece: tuple, refit: Any, method: str, *, model: Any, kind: str, averaged: bool,
                       target_class: Any) -> tuple:
    """Per-row values of the comparison on the evaluated rows ``piece = (X0, X1, f(X0), f(X1))`` (the
    predictions None: not made yet): the per-row scale (one column), or f(x + h) and f(x) (two columns, their
    Jacobians as a list) for the ``...avg`` forms; under the fitted model (``refit`` None: with the level
    Jacobians for ``delta``) or a refitted one."""
    X0, X1, f0, f1 = piece
    j0 = j1 = V = None
    if refit is None and method == "delta":
        f0, j0, V = level_rows(model, X0, target_class)
        f1, j1, _ = level_rows(model, X1, target_class)
    elif refit is not None or f0 is None:
        # a refit, or the fitted model's points not predicted yet (the Dask kernel hands its predictions)
        m = model if refit is None else refit
        both = make_predictor(m, target_class)(pd.concat([X0, X1], ignore_index=True), "f(x), f(x + h)")
        f0, f1 = both[:len(X0)], both[len(X0):]
    if kind == "lnor" and (np.any((f0 <= 0) | (f0 >= 1)) or np.any((f1 <= 0) | (f1 >= 1))):
        raise ParameterError("comparison='lnor' needs predicted probabilities strictly between 0 and 1.")
    if averaged:
        return np.column_stack([f1, f0]), None if j0 is None else [j1, j0], V
    c, d1, d0 = _h(kind, f1, f0)
    jac = None if j0 is None else (d1[:, None] * j1 + d0[:, None] * j0)[:, None, :]
    return c[:, None], jac, V


def _finish_averages(means: np.ndarray, mean_jacobian: np.ndarray | None, *, kind: str) -> tuple:
    """The ``...avg`` forms: the scale applied to the groups' means of f(x + h) and f(x) (columns 0 and 1), its
    gradient by the chain rule through the mean Jacobians."""
    value, d1, d0 = _h(kind, means[:, 0], means[:, 1])
    if mean_jacobian is None:
        return value, None
    return value, d1[:, None] * mean_jacobian[:, 0, :] + d0[:, None] * mean_jacobian[:, 1, :]


def comparisons_by_step(model: Any, data: Any, steps: Mapping[str, Any], *, bootstrap: Any = None,
                        **kwargs: Any) -> pd.DataFrame:
    """:func:`avg_comparisons` of each step of ``steps`` on its own (as :func:`fme.ame` evaluates each entry),
    one :class:`~fme.EstimatesTable` keeping the rows' joint uncertainty (for :func:`fme.hypotheses`): the
    same parameter covariance, or under the bootstrap the same seeded refits for every step."""
    if bootstrap is not None and dict(bootstrap).get("random_state") is None:
        # one seed for every step: the same resamples, so the steps' draws are joint
        bootstrap = {**dict(bootstrap), "random_state": int(np.random.SeedSequence().entropy % (2 ** 63))}
    tables = [avg_comparisons(model, data, {f: v}, bootstrap=bootstrap, **kwargs) for f, v in steps.items()]
    out = pd.concat(tables, ignore_index=True)
    out = EstimatesTable.from_frame(out, stack_estimates([t.estimates for t in tables]),
                                    conf_level=tables[0].conf_level)
    return out
