"""Hypothesis and equivalence tests on estimates fme computed (marginaleffects' vocabulary).

``fme.hypotheses(result, hypothesis=..., equivalence=..., multcomp=...)`` takes any result that keeps the
joint uncertainty of its estimates: the table of :func:`fme.ame` (an :class:`~fme.EstimatesTable`: the rows
in the order printed), an :class:`~fme.FMEResult` (its AME) or a :class:`~fme.PartitionResult` (its leaf
cAMEs). The joint covariance is ``G V G'`` under the delta method, the covariance of the shared refits'
draws under the bootstrap, and diagonal for ``sample`` estimates (disjoint rows: groups, leaves; between
rows of different steps over the same rows the fixed-model covariance is not kept and taken as 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._core.result_base import with_class
from .._utils.numfmt import count
from .._utils.validation import check_conf_level
from ..exceptions import ParameterError
from ..inference import EstimatesTable, JointEstimates

# stack_estimates lives with the other tests' types (the Dask engine stacks its rows too); re-exported here
from ..inference.wald import (
    MULTCOMP,
    NAMED,
    adjust_pvalues,
    equivalence_columns,
    invalidate,
    jacobian,
    named_matrix,
    parse_equation,
    row_notes,
    stack_estimates,
    transform,
)

__all__ = ["hypotheses", "stack_estimates"]


def _estimates_of(result: Any) -> JointEstimates:
    """(joint estimates, row labels, rows whose estimate is undefined, default confidence level)."""
    if isinstance(result, EstimatesTable):
        return result.joint_estimates()
    if isinstance(result, pd.DataFrame):
        raise ParameterError(
            "this DataFrame keeps no joint covariance of its rows: pass the table fme.ame (or avg_predictions, "
            "avg_slopes, avg_comparisons, interaction, hypotheses) returned, an fme.EstimatesTable, which keeps "
            "it through copies, row and column selection, sorting and pickling (not through pd.DataFrame(table)); "
            "or an FMEResult or a PartitionResult."
        )
    if callable(getattr(result, "joint_estimates", None)):  # FMEResult (its AME), PartitionResult (its leaves)
        return JointEstimates(*result.joint_estimates())
    raise ParameterError(
        f"hypotheses takes the table of fme.ame (an fme.EstimatesTable), an FMEResult or a "
        f"PartitionResult, got {type(result).__name__}."
    )


def hypotheses(
    result: Any,
    hypothesis: Any = None,
    *,
    equivalence: Any = None,
    multcomp: str | None = None,
    conf_level: float | None = None,
) -> pd.DataFrame:
    """Tests on the estimates of ``result``: contrasts, equations, equivalence (TOST), multiple comparisons.

    Parameters
    ----------
    result : EstimatesTable, FMEResult or PartitionResult
        The table of :func:`fme.ame` (or ``avg_*``, :func:`fme.interaction`, ``hypotheses``; rows may be
        selected or reordered first). Rows are numbered from 1 in the order printed (``b1``, ``b2``, ...);
        a partition's rows are its leaves in node order.
    hypothesis : None, str, list of str or ndarray
        None: the rows themselves. ``"pairwise"`` (b_j - b_i, i < j: later minus earlier, fme's "(b) - (a)"),
        ``"revpairwise"``, ``"reference"`` (b_j - b1), ``"revreference"``, ``"sequential"``
        (b_{j+1} - b_j), ``"revsequential"``; an equation over the rows such as ``"b1 - b2 = 0"`` or
        ``"b2 / b1 = 1"`` (estimate: left minus right side; non-linear ones by the delta method, or per
        refit under the bootstrap), or a list of such equations (one row each, with their joint uncertainty);
        or a matrix of contrast weights with one column per hypothesis.
    equivalence : [low, high], optional
        Adds the two one-sided tests: ``statistic_noninf``/``p_value_noninf`` (H0: theta <= low),
        ``statistic_nonsup``/``p_value_nonsup`` (H0: theta >= high), ``p_value_equiv`` (the larger).
    multcomp : {'holm', 'bonferroni', 'fdr_bh'}, optional
        Adjusts the p-values of the family (``p_value_adj``, and ``multcomp`` naming the method; with
        ``equivalence``, ``p_value_equiv_adj`` too).
    conf_level : float, optional
        Default: the result's.

    Returns
    -------
    EstimatesTable
        ``hypothesis``, ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``,
        ``conf_high``, ``inference``, ``covers``, ``note``, then the adjusted and equivalence columns asked
        for. ``note`` says in words why a row's test is not a test (``""`` where it is), and its
        ``statistic`` and p-values are then NaN: a standard error at rounding level (below
        :data:`~fme.inference.validity.ROUNDING_TOL` times the magnitude of the estimates it combines), or,
        under the delta method, a hypothesis that fixes every parameter direction its estimates depend on
        while it allows a set of values (an equality of estimates that all depend on one parameter
        direction); see :mod:`fme.inference.validity`.
    """
    est, labels, undefined, default_level = _estimates_of(result)
    level = default_level if conf_level is None else check_conf_level(conf_level)
    if multcomp is not None and multcomp not in MULTCOMP:
        raise ParameterError(f"multcomp must be one of {MULTCOMP} or None, got {multcomp!r}.")
    m = est.estimate.size
    weights = values = None  # non-linear equations: their gradients on the rows and their values
    if hypothesis is None:
        L, names = np.eye(m), labels
        out_est = est
    elif isinstance(hypothesis, str) and hypothesis in NAMED:
        if m < 2:
            raise ParameterError(f"hypothesis={hypothesis!r} compares rows; the result has only {m}.")
        L, pairs = named_matrix(m, hypothesis)
        names = [f"{labels[a]} - {labels[b]}" for a, b in pairs]
        out_est = est.contrast(L)
    elif isinstance(hypothesis, str) or (
        isinstance(hypothesis, (list, tuple)) and hypothesis and all(isinstance(h, str) for h in hypothesis)
    ):
        # one equation, or several tested jointly (marginaleffects takes a list of them too)
        parsed = [parse_equation(h, m) for h in ([hypothesis] if isinstance(hypothesis, str) else hypothesis)]
        gs = [g for g, _ in parsed]

        def stacked(b: np.ndarray) -> np.ndarray:
            return np.concatenate([np.atleast_1d(g(b)) for g in gs])

        out_est = transform(est, stacked)
        names = [name for _, name in parsed]
        L = np.ones((len(names), m))  # which rows an equation involves: all of them (conservative for undefined rows)
        # an equation's test is the test of its linearisation: the gradient's weights on the rows
        weights, values = jacobian(stacked, np.asarray(est.estimate, dtype=float)), out_est.estimate
    else:
        M = np.asarray(hypothesis, dtype=float)
        if M.ndim == 1:
            M = M[:, None]
        if M.ndim != 2 or M.shape[0] != m:
            raise ParameterError(
                f"a hypothesis matrix needs {count(m, 'row')} (one per estimate) and one column per "
                f"hypothesis, got shape {M.shape}."
            )
        L, names = M.T, [f"H{k + 1}" for k in range(M.shape[1])]
        out_est = est.contrast(L)
    # a test that is not one (a hypothesis not identified, a standard error at rounding level) says why
    table = invalidate(out_est.table(level), row_notes(est, L if weights is None else weights, values))
    # a hypothesis that involves an undefined row (an empty group) is undefined itself
    bad = (np.abs(L) > 0) @ undefined.astype(float) > 0
    value = np.where(bad, np.nan, out_est.estimate)
    table.loc[bad, ["std_error", "statistic", "p_value", "conf_low", "conf_high"]] = np.nan
    out = pd.concat([pd.DataFrame({"hypothesis": names, "estimate": value}), table], axis=1)
    if isinstance(result, pd.DataFrame):
        # the rows' own labels of what their uncertainty is and covers ('delta (HC3)', a learner- or data-level
        # table's), when the tested rows share them: the tests rest on the same estimates
        for col in ("inference", "covers"):
            shared = result[col].dropna().unique() if col in result.columns else []
            if len(shared) == 1:
                out[col] = shared[0]
    # the class the tested effects are of (a classifier's), when they share one: never implicit
    if isinstance(result, pd.DataFrame):
        shared = result["class"].dropna().unique() if "class" in result.columns else []
        out = with_class(out, shared[0] if len(shared) == 1 else None)
    else:
        out = with_class(out, getattr(result, "explained_class", None))
    if equivalence is not None:
        df = out_est.df if out_est.df is not None and np.isfinite(out_est.df).all() else None
        out = equivalence_columns(out, out["estimate"].to_numpy(dtype=float), equivalence, df)
    if multcomp is not None:
        out["p_value_adj"] = adjust_pvalues(out["p_value"].to_numpy(), multcomp)
        if equivalence is not None:
            out["p_value_equiv_adj"] = adjust_pvalues(out["p_value_equiv"].to_numpy(), multcomp)
        out["multcomp"] = multcomp
    # the hypotheses keep their joint uncertainty: they can be tested in turn
    return EstimatesTable.from_frame(
        out,
        out_est,
        conf_level=level,
        bootstrap=getattr(result, "bootstrap", None),
        scale=getattr(result, "scale", None) if isinstance(result, EstimatesTable) else None,
    )
