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
model's parameters (``vcov=``, ``df=`` as in :func:`fme.ame`), or (per-row forms) the spread over the rows
with the model held fixed. The NLM and the cAMEs stay defined on the difference scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._core.results import stepped_frames
from ._utils.validation import check_conf_level, is_dask_collection
from .effects import fme
from .exceptions import ParameterError
from .inference._estimates import INFERENCE_COLUMNS, Estimates, sample_inference
from .inference._methods import resolve_method
from .inference._vcov import residual_df, with_vcov
from .predictions import _by_codes, delta_table, level_rows

__all__ = ["avg_comparisons", "COMPARISONS"]

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
                    by: str | Sequence[str] | None = None, inference: str = "auto", conf_level: float = 0.95,
                    vcov: Any = None, df: Any = None, target_class: Any = None, **fme_kwargs: Any) -> pd.DataFrame:
    """The average comparison of ``model``'s predictions after a step, on the scale ``comparison``.

    Parameters
    ----------
    model, data, steps, target_class, **fme_kwargs :
        As in :func:`fme.fme` (one step specification: its features move together, as in §5.2).
    comparison : str, default='difference'
        One of :data:`COMPARISONS` (module docstring).
    by : str or list of str, optional
        One row per group.
    inference : {'auto', 'delta', 'sample'}
        ``delta`` (the default where the model has a parameter covariance) or ``sample`` (per-row forms only).
    vcov, df :
        As in :func:`fme.ame`.

    Returns
    -------
    DataFrame
        ``step``, the ``by`` columns, ``comparison``, ``estimate``, ``std_error``, ``statistic``,
        ``p_value``, ``conf_low``, ``conf_high``, ``inference``, ``n``.
    """
    if comparison not in COMPARISONS:
        raise ParameterError(f"comparison must be one of {COMPARISONS}, got {comparison!r}.")
    if is_dask_collection(data):
        raise ParameterError("avg_comparisons takes a pandas frame; fme.ame gives differences on Dask data.")
    model, delta_label = with_vcov(model, vcov)
    t_df = residual_df(model, df)
    conf_level = check_conf_level(conf_level)
    method = resolve_method(inference, model, None)
    if method == "bootstrap":
        raise ParameterError("avg_comparisons has no bootstrap intervals yet; use inference='delta' or 'sample'.")
    averaged = comparison.endswith("avg")
    kind = comparison[:-3] if averaged else comparison
    if averaged and method == "sample":
        raise ParameterError(f"comparison={comparison!r} is a function of two averages; its fixed-model spread is "
                             "not defined here: use inference='delta' or the per-row form.")
    res = fme(model, data, steps, inference="sample", target_class=target_class, **fme_kwargs)
    X0, X1 = stepped_frames(res, model, target_class)
    rows = res.data.iloc[res.positions]
    codes, keys, by_cols = _by_codes(rows, by)
    m = len(keys)
    if method == "delta":
        f0, j0, V = level_rows(model, X0, target_class)
        f1, j1, _ = level_rows(model, X1, target_class)
    else:
        f0 = res.predictions["f_x"].to_numpy(dtype=float)
        f1 = res.predictions["f_x_step"].to_numpy(dtype=float)
    if kind == "lnor" and (np.any((f0 <= 0) | (f0 >= 1)) or np.any((f1 <= 0) | (f1 >= 1))):
        raise ParameterError("comparison='lnor' needs predicted probabilities strictly between 0 and 1.")
    counts = np.bincount(codes, minlength=m)
    W = np.zeros((m, len(codes)))
    W[codes, np.arange(len(codes))] = 1.0 / counts[codes]
    if averaged:
        value, d1, d0 = _h(kind, W @ f1, W @ f0)
        grad = d1[:, None] * (W @ j1) + d0[:, None] * (W @ j0)
        est = Estimates("delta", value, grad=grad, vcov=V)
    else:
        c, d1, d0 = _h(kind, f1, f0)
        if method == "delta":
            jac = d1[:, None] * j1 + d0[:, None] * j0
            est = Estimates("delta", W @ c, grad=W @ jac, vcov=V)
        else:
            est = sample_inference(c).average(codes, m)
    est, table = delta_table(est, t_df, delta_label, conf_level)
    out = pd.concat([pd.DataFrame({"step": [res.describe_steps()] * m}), keys.reset_index(drop=True)[by_cols],
                     pd.DataFrame({"comparison": [comparison] * m, "estimate": est.estimate}),
                     table[INFERENCE_COLUMNS], pd.DataFrame({"n": counts})], axis=1)
    return out
