"""Aggregations of forward marginal effects (paper §3.2): the average marginal effect (AME), the effects at
representative values (MER) and at the means (MEM), the typical values MEM evaluates at, and the derivative ME
(dME, paper §4.1, "Forward Difference versus Derivative") to compare against.

These are front doors: they validate once, resolve the steps, the ``by`` columns (:mod:`fme._core.groups`), the
inference method and an :class:`~fme._core.plan.FMEOptions` record, and hand them to the in-memory engine
(:mod:`fme._local.ame`, :mod:`fme._local.margins`) or the Dask one (:mod:`fme._dask.ame`,
:mod:`fme._dask.margins`). Other comparison scales than the difference compose :func:`fme.avg_comparisons`.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._adapters.predictor import make_predictor
from .._core.groups import check_by
from .._core.plan import AMEOptions, FMEOptions, Plan, front_plan
from .._core.result_base import with_class
from .._dask import ame as dask_ame
from .._dask import margins as dask_margins
from .._local import ame as local_ame
from .._local import arrays as local_arrays
from .._local import margins as local_margins
from .._local.margins import AT_FIX
from .._utils.validation import (
    BY_MISSING,
    check_conf_level,
    check_data,
    check_name_clash,
    check_single_output,
    check_weights,
    is_categorical,
    is_dask_collection,
    is_numeric,
)
from ..exceptions import DataError, FeatureError, ParameterError, StepError
from ..inference import EstimatesTable
from ..inference.estimates import INFERENCE_COLUMNS
from ..inference.methods import resolve_method
from ..inference.unconditional import is_unconditional, resolve_unconditional
from ..inference.vcov import residual_df, with_vcov
from ..inference.wald import NAMED
from ..steps import check_classic_keys, classic_contrast, levels, parse_steps, same_level
from .comparisons import comparisons_by_step, joint_bootstrap, stacked

# dme (the derivative ME, paper §2.2, §3.1) lives with the other derivatives;
# fme.margins.marginal.dme is its public path
from .slopes import dme
from .testing import hypotheses

__all__ = ["ame", "mem", "mer", "dme", "typical_values", "AME_COLUMNS", "MER_COLUMNS"]

DESCRIPTIVE = ["sd", "q25", "q75", "n", "n_excluded"]
#: The columns of an :func:`ame` table (the ``by`` columns, or ``hypothesis``, after ``reference``).
AME_COLUMNS = ["feature", "step", "level", "reference", "ame", *INFERENCE_COLUMNS, *DESCRIPTIVE]
#: The columns mer()/mem() put beside the ``at`` columns (with ``step_<feature>`` under 'shrink').
MER_COLUMNS = [
    "step",
    "fme",
    *INFERENCE_COLUMNS,
    *DESCRIPTIVE,
    "nlm",
    "nlm_status",
    "extrapolation",
    "extrapolation_point",
    "note",
]


def ame(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any] | None = None,
    *,
    inference: str = "auto",
    by: str | Sequence[str] | None = None,
    hypothesis: str | None = None,
    bootstrap: Mapping[str, Any] | None = None,
    conf_level: float = 0.95,
    features: Sequence[str] | None = None,
    categorical: str = "observation",
    equivalence: Sequence[float] | None = None,
    multcomp: str | None = None,
    vcov: Any = None,
    df: Any = None,
    comparison: str = "difference",
    by_missing: str = "group",
    wts: Any = None,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """Average marginal effects, one row per feature (and per category, per ``by`` group).

    The AME is the mean fME over the evaluated rows (paper §3.2). Each entry
    of ``steps`` is evaluated as its own *univariate* fME (use :func:`fme.fme`
    and :meth:`FMEResult.tidy` for a multivariate step). ``steps=None`` uses
    every feature in ``features`` (default: the model's inputs if it knows
    them, else every column of ``data``): numeric features get the unit step
    ``h = 1``, categorical features one row per level.

    Parameters
    ----------
    model, data :
        As in :func:`fme.fme` (``data`` also an array with ``feature_names=``: :mod:`fme._local.arrays`).
    steps : dict, optional
        ``{feature: h or rule}`` for numeric, ``{feature: level}`` or
        ``{feature: None}`` (every level) for categorical features.
    inference : {'auto', 'delta', 'bootstrap', 'sample'}, default='auto'
        What ``std_error``/``conf_low``/``conf_high``/``p_value`` describe
        (:mod:`fme.inference`): ``delta`` and ``bootstrap`` the uncertainty of
        the AME due to the fitted model (parameter covariance; refits);
        ``sample`` the spread of the fMEs over the rows with the model held
        fixed (t-based, the paper's cAME CI of §5.5). ``auto``: bootstrap when
        ``bootstrap`` is given, else delta where the model supports it
        (statsmodels results), else sample. The ``inference`` column says
        which was used.
    by : column label or list of them, optional
        One row per group of ``data`` (the group's own evaluated rows), the
        group's value(s) in column(s) named like ``by`` (a label of any hashable
        type; the groups sorted, a missing value a group of its own, listed last:
        the same rules for every averaging verb). A ``by`` column named
        like one of the table's own columns (``n``, ``feature``, ...) raises
        :class:`~fme.exceptions.NameClashError` (pass it under another name).
    hypothesis : None, str or ndarray
        ``'pairwise'`` with ``by``: the differences between groups, "(b) - (a)" for every
        pair (later minus earlier group), per feature, with their uncertainty
        under the same method (a ``hypothesis`` column names them). Any other
        hypothesis of :func:`fme.hypotheses` (``'revpairwise'``, ``'reference'``,
        ``'sequential'``, ..., an equation over the rows such as ``'b1 - b2 = 0'``
        or ``'b2 / b1 = 1'``, a matrix of contrast weights) is applied to the
        table's rows as printed and returns the :func:`fme.hypotheses` table.
    equivalence : [low, high], optional
        Two one-sided tests of every row (or hypothesis) against the band
        (``p_value_noninf``, ``p_value_nonsup``, ``p_value_equiv``; see
        :func:`fme.hypotheses`).
    multcomp : {'holm', 'bonferroni', 'fdr_bh'}, optional
        Adjusted p-values over the rows (or hypotheses): ``p_value_adj``.
    vcov : {'HC0', 'HC1', 'HC2', 'HC3', 'unconditional'}, {'cluster': column} or array, optional
        The delta method's parameter covariance (:mod:`fme.inference.vcov`): heteroskedasticity-robust,
        cluster-robust by a column of the model's training data, or a k x k matrix; the ``inference``
        column names it (``delta (HC3)``). ``'unconditional'`` (or ``{'unconditional': 'HC0' or 'HC1',
        'cluster': column}``) adds the sampling of the rows to the parameters' (the interval then covers the
        population's average effect, not only these rows'; :mod:`fme.inference.unconditional`): statsmodels
        models averaged over their own estimation sample, row for row (pandas or Dask data; on Dask not with
        ``categorical='classic'``); ``inference`` says ``delta (unconditional)``.
    df : float or 'residual', optional
        Delta method: t quantiles with these degrees of freedom (``'residual'``: the model's
        ``df_resid``, as marginaleffects does for OLS) instead of normal ones.
    comparison : str, default='difference'
        The paper's fME compares on the difference scale; ``'ratio'``, ``'lnratio'``, ``'lnor'``,
        ``'lift'`` and their ``...avg`` forms return :func:`fme.avg_comparisons` of each step (pandas
        or Dask data, delta, bootstrap or sample; the NLM and cAMEs stay on the difference scale).
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference.bootstrap`); all
        rows of the table share the same refits.
    conf_level : float, default=0.95
    features : sequence of str, optional
        Features for ``steps=None``.
    categorical : {'observation', 'classic'}, default='observation'
        ``observation``: the observation-wise categorical ME (§5.1), rows
        already at the level are left out. ``classic``: every row is set to
        the reference level, then to the level (Eq. categorical_me). A step
        means "switch to this level" in both: ``{feature: "b"}`` is b against
        the reference (the first level) under ``classic``; the reference is
        named by its own key, ``{feature: {"reference": "b"}}`` (every other
        level against b) or ``{feature: {"reference": "c", "level": "b"}}``
        (b - c); ``{feature: None}``: every level against the first. The
        ``level`` and ``reference`` columns state each row's contrast. On Dask
        data both work; classic evaluates all levels of a feature in one pass
        (:mod:`fme._dask.classic`).
    wts : str or array, optional
        Weights of the rows (a column of ``data``; for pandas data also one number per row; survey or frequency
        weights): each AME (and ``by`` group, hypothesis) is the weighted mean of the rows' fMEs, with delta
        (weighted mean of the Jacobian rows), bootstrap (each refit's weighted mean) or fixed-model inference
        (the weighted mean's standard error with the weights held fixed). ``sd``, ``q25``, ``q75`` stay
        the unweighted spread of the fMEs. Every ``comparison`` scale takes them (:func:`fme.avg_comparisons`).
    by_missing : {'group', 'raise'}, default='group'
        Rows whose ``by`` value is missing: ``group`` gives them a group of
        their own (the missing value as its label, listed last); ``raise``
        refuses them with a :class:`~fme.exceptions.DataError` naming the
        column and the count. They are never dropped silently.
    **fme_kwargs
        Passed to :func:`fme.fme` (``extrapolation``, ``reference_data``, ...).

    Returns
    -------
    EstimatesTable
        A DataFrame keeping the rows' joint uncertainty (:func:`fme.hypotheses`). Columns feature,
        step (NaN for categorical), level (None for numeric),
        reference (classic only), the ``by`` column(s) (or ``hypothesis``),
        ame, std_error, statistic, p_value, conf_low, conf_high, inference,
        and the descriptive sd, q25, q75 (of the fMEs), n, n_excluded.
        ``statistic`` is z (delta, bootstrap) or t with n - 1 df (sample).
        With bootstrap, ``.bootstrap`` counts the refits: ``n_resamples``, ``n_failed`` (left
        out: errors, and fits that did not converge unless ``keep_nonconverged``), ``n_nonconverged`` and
        the distinct ``errors`` of the failed ones (also warned about). For a model with an exposure or
        offset, ``.scale`` says which was used (see ``exposure`` in :func:`fme.fme`).
        With ``target_class='all'`` (a classifier, a multinomial model): the table of every class in turn, a
        ``class`` column after ``reference``, one joint covariance over all rows (``hypotheses`` can compare
        classes).
    """
    if fme_kwargs.get("nlm"):
        raise ParameterError(
            "nlm=True: fme.ame does not compute the NLM (it would be computed and dropped). Ask fme.fme(model, data, "
            "{feature: step}, nlm=True) for the rows' NLMs and .anlm for their average (paper §5.4)."
        )
    if comparison != "difference":
        if not isinstance(steps, Mapping) or not steps:
            raise StepError("comparison scales need steps={feature: step or level, ...}.")
        table = comparisons_by_step(
            model,
            data,
            steps,
            comparison=comparison,
            by=by,
            inference=inference,
            bootstrap=bootstrap,
            conf_level=conf_level,
            vcov=vcov,
            df=df,
            wts=wts,
            **fme_kwargs,
        )
        # hypotheses on the table's rows as printed (by-groups too), with their joint uncertainty
        return (
            table
            if hypothesis is None and equivalence is None and multcomp is None
            else hypotheses(table, hypothesis, equivalence=equivalence, multcomp=multcomp)
        )
    # Validated once: the rows (pandas) or the Dask frame's _meta, the options into the plan every row derives from
    model, delta_label = with_vcov(model, vcov, averages=True)
    t_df = residual_df(model, df)
    target_class = fme_kwargs.get("target_class")
    if isinstance(target_class, str) and target_class == "all":
        if is_unconditional(vcov):
            raise ParameterError(f"vcov={vcov!r} works on one output; pass one class (target_class=<label>).")
        return _every_class(
            model,
            data,
            steps,
            inference=inference,
            by=by,
            hypothesis=hypothesis,
            bootstrap=bootstrap,
            conf_level=check_conf_level(conf_level),
            features=features,
            categorical=categorical,
            equivalence=equivalence,
            multcomp=multcomp,
            df=t_df,
            by_missing=by_missing,
            wts=wts,
            **fme_kwargs,
        )
    check_single_output(target_class, "ame")
    if categorical not in ("observation", "classic"):
        raise ParameterError(f"categorical must be 'observation' or 'classic', got {categorical!r}.")
    # the margins vocabulary beyond by-group pairs: computed on the table's rows (fme.hypotheses)
    # 'pairwise' is fme's by-group comparison (per feature; it needs by=); fme.hypotheses(table, 'pairwise')
    # compares the rows of any table
    by_pairs = hypothesis is None or (isinstance(hypothesis, str) and hypothesis == "pairwise")
    if isinstance(hypothesis, str) and not by_pairs and hypothesis not in NAMED and "=" not in hypothesis:
        raise ParameterError(
            f"hypothesis must be None, 'pairwise' (by-groups), one of {NAMED} (the table's rows), "
            f"an equation such as 'b1 - b2 = 0' or a matrix of contrast weights; got {hypothesis!r}."
        )
    if not by_pairs or equivalence is not None or multcomp is not None:
        table = ame(
            model,
            data,
            steps,
            inference=inference,
            by=by,
            hypothesis=hypothesis if by_pairs else None,
            bootstrap=bootstrap,
            conf_level=conf_level,
            features=features,
            categorical=categorical,
            df=t_df,
            wts=wts,
            by_missing=by_missing,
            vcov=vcov if is_unconditional(vcov) else None,
            **fme_kwargs,
        )
        return hypotheses(table, None if by_pairs else hypothesis, equivalence=equivalence, multcomp=multcomp)
    method = resolve_method(inference, model, bootstrap)
    options = FMEOptions.from_kwargs(
        {**fme_kwargs, "inference": method, "bootstrap": bootstrap, "conf_level": conf_level}, "fme.ame"
    )
    planned = front_plan(model, data, options, "fme.ame")
    if planned.on_arrays:
        local_arrays.refuse_table_options(by=by, wts=wts, hypothesis=hypothesis, vcov=vcov)
    frame = planned.frame
    # the by columns sit beside fme's in one table: a shared name would make it ambiguous
    by_cols = check_by(frame.columns, by, AME_COLUMNS if hypothesis is None else ())
    if by_missing not in BY_MISSING:
        raise ParameterError(f"by_missing must be one of {BY_MISSING}, got {by_missing!r}.")
    if hypothesis == "pairwise" and not by_cols:
        raise ParameterError("hypothesis='pairwise' compares by-groups; pass by=<column>.")
    steps = _resolve_steps(planned.plan, frame, steps, features)
    _check_categorical_steps(frame, steps, categorical, planned.on_dask)
    table = AMEOptions(
        method=method,
        by_cols=tuple(by_cols),
        by_missing=by_missing,
        hypothesis=hypothesis,
        bootstrap=bootstrap,
        conf_level=planned.plan.conf_level,
        categorical=categorical,
        columns=tuple(AME_COLUMNS),
        t_df=t_df,
        delta_label=delta_label,
        wts=check_weights(wts, frame, planned.on_dask),
        unconditional=resolve_unconditional(model, vcov, frame, planned.on_dask, method),
    )
    if planned.on_arrays:
        return local_arrays.ame(planned.plan, planned.data, planned.reference, steps, table)
    engine = dask_ame if planned.on_dask else local_ame
    return with_class(
        engine.ame(planned.plan, planned.data, planned.reference, steps, table), planned.plan.predictor.explained_class
    )


def _every_class(
    model: Any,
    data: Any,
    steps: Any,
    *,
    hypothesis: Any,
    equivalence: Any,
    multcomp: Any,
    bootstrap: Any,
    conf_level: float,
    **kwargs: Any,
) -> EstimatesTable:
    """:func:`ame` with ``target_class='all'``: the table of each output (class) in turn, a ``class`` column after
    ``reference``, one table keeping the rows' joint uncertainty (the same parameter covariance; under the
    bootstrap the same seeded refits for every class), then the tests asked for on all its rows."""
    kwargs.pop("target_class")
    names = make_predictor(model, "all").output_names
    if names is None:
        raise ParameterError(
            "target_class='all' needs a model with several outputs (a classifier's classes); "
            "this model has one: leave target_class out."
        )
    bootstrap = joint_bootstrap(bootstrap)  # the same resamples for every class: their draws are joint
    pairs = hypothesis is None or (isinstance(hypothesis, str) and hypothesis == "pairwise")
    tables = []
    for name in names:
        t = ame(
            model,
            data,
            steps,
            hypothesis=hypothesis if pairs else None,
            bootstrap=bootstrap,
            conf_level=conf_level,
            target_class=name,
            **kwargs,
        )
        tables.append(with_class(t, str(name)))
    out = stacked(tables, conf_level=conf_level, bootstrap=tables[0].bootstrap, scale=tables[0].scale)
    if pairs and equivalence is None and multcomp is None:
        return out
    return hypotheses(out, None if pairs else hypothesis, equivalence=equivalence, multcomp=multcomp)


def _resolve_steps(plan: Plan, frame: pd.DataFrame, steps: Any, features: Any) -> dict:
    """``steps`` checked against the model's frame; ``steps=None``: every feature of ``features`` (default: the
    model's inputs if it knows them, else every column), the unit step for numeric ones, every level for
    categorical ones."""
    if steps is None:
        if features is None:
            names = plan.predictor.feature_names
            features = names if names is not None else list(frame.columns)
        for f in features:
            if f not in frame.columns:
                raise FeatureError(f"unknown feature {f!r}: not a column of the data.")
        steps = {f: (None if is_categorical(frame[f]) else 1.0) for f in features}
    elif not isinstance(steps, Mapping) or len(steps) == 0:
        raise StepError("`steps` must be a non-empty dict such as {'age': 1, 'sex': None}, or None for all features.")
    for feature in steps:
        if feature not in frame.columns:
            raise FeatureError(f"unknown feature {feature!r}: not a column of the data.")
    return dict(steps)


def _check_categorical_steps(frame: pd.DataFrame, steps: Mapping[str, Any], categorical: str, on_dask: bool) -> None:
    """A categorical step means "switch to this level" under both ``categorical`` modes; the reference of
    ``'classic'`` is named by its own key (:func:`fme.steps.classic_contrast`), checked here against the levels
    (pandas data; on Dask data the engine checks them once it knows the levels)."""
    for feature, value in steps.items():
        if not is_categorical(frame[feature]):
            continue
        if categorical == "observation" and isinstance(value, Mapping):
            raise StepError(
                f"{{{feature!r}: {dict(value)!r}}} names a reference level: that is "
                "categorical='classic' (every row set to the reference, then to the level); the "
                f"observation-wise ME takes {{{feature!r}: <level>}} (the other rows switch to it)."
            )
        if categorical == "classic" and not on_dask:
            classic_contrast(feature, value, levels(frame[feature]))
        elif categorical == "classic" and isinstance(value, Mapping):
            check_classic_keys(feature, value)


def typical_values(data: pd.DataFrame) -> pd.DataFrame:
    """One row of typical values: the mean of numeric columns, the mode of the others.

    Column dtypes are kept (categoricals stay categorical).
    """
    data = check_data(data)
    out = {}
    for c in data.columns:
        col = data[c]
        if is_numeric(col):
            finite = col.to_numpy(dtype=float, na_value=np.nan)
            finite = finite[np.isfinite(finite)]
            if finite.size == 0:
                raise DataError(f"column {c!r} has no finite value; cannot take its mean.")
            out[c] = pd.Series([float(finite.mean())])
        else:
            counts = col.value_counts(sort=False)
            if counts.empty:
                raise DataError(f"column {c!r} has no non-missing value; cannot take its mode.")
            # nullable dtypes compare to <NA> on missing values: those rows are not the mode
            first = np.flatnonzero((col == counts.idxmax()).to_numpy(dtype=bool, na_value=False))[0]
            out[c] = col.iloc[[int(first)]].reset_index(drop=True)
    return pd.DataFrame(out)


def _check_at_values(data: pd.DataFrame, feature: str, values: Sequence[Any]) -> None:
    """Representative values must be levels of a categorical feature / real numbers for a numeric one."""
    if is_categorical(data[feature]):
        known = levels(data[feature])
        bad = [v for v in values if not any(same_level(v, lv) for lv in known)]
        if bad:
            raise ParameterError(
                f"`at` gives {bad} for the categorical feature {feature!r}; use its levels {known[:20]}."
            )
        return
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(float(v))]
    if bad:
        raise ParameterError(f"`at` gives {bad} for the numeric feature {feature!r}; use finite numbers.")


def mer(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any],
    at: Mapping[str, Any] | None = None,
    *,
    inference: str = "auto",
    bootstrap: Mapping[str, Any] | None = None,
    conf_level: float = 0.95,
    hypothesis: Any = None,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """Forward marginal effects at representative values (MER, paper §3.2).

    Starts from :func:`typical_values` of ``data`` and overrides the features
    in ``at``; lists of values form a grid (every combination). Step rules
    (``"sd"``) are computed on ``data``. An ``at`` feature named like one of
    the table's own columns (``fme``, ``n``, ``note``, ...) raises
    :class:`~fme.exceptions.NameClashError`.

    Parameters
    ----------
    inference, bootstrap, conf_level :
        Uncertainty of each grid point's fME, as in :func:`fme.ame`. With
        ``sample`` (the fallback of ``auto`` for models without parameters) a
        single point has no interval: NaN.
    hypothesis : str, list of str or array, optional
        Tests on the grid points' fMEs, named ``b1``, ``b2``, ... in the table's order, as in
        :func:`fme.hypotheses` (e.g. ``"pairwise"``, ``"b2 - b1 = 0"``): the table of the tests instead
        (delta or bootstrap: jointly, with the covariance of the points' fMEs). Every grid point must be
        evaluated.

    Returns
    -------
    EstimatesTable
        One row per grid point: ``step`` (the step evaluated, e.g. ``x1 + 0.5``), the point: the ``at``
        columns, then the model's other inputs at their typical values, then ``fme``, std_error,
        statistic, p_value, conf_low, conf_high, inference, the descriptive
        sd (NaN), q25 = q75 = fme, n (1, or 0 if not evaluated), n_excluded,
        (and ``nlm``), NaN where a point was not evaluated (already at a
        categorical level, or an extrapolation point) with the reason in
        ``note``. For ``target_class='all'``: ``fme_<class>`` columns only.

    ``data`` (or ``reference_data``) may be a ``dask.dataframe.DataFrame``:
    the typical values, levels, step rules and the detector's reference come
    from reductions (:mod:`fme._dask.margins`; ``sample_size`` as in
    :func:`fme.fme`), then the grid is evaluated in memory.
    """
    base = None
    if is_dask_collection(data) or is_dask_collection(fme_kwargs.get("reference_data")):
        data, steps, base, fme_kwargs = dask_margins.local_view(model, data, steps, at, fme_kwargs)
    table = _mer(
        model, data, steps, at, base, inference=inference, bootstrap=bootstrap, conf_level=conf_level, **fme_kwargs
    )
    if hypothesis is None:
        return table
    if not isinstance(table, EstimatesTable):
        raise ParameterError("hypothesis= works on one output; pass one target_class, not 'all'.")
    if table.estimates is None:
        skipped = table.loc[table["n"] == 0, "note"].tolist()
        raise ParameterError(
            f"hypothesis= needs the fME of every grid point; {len(skipped)} of {len(table)} were "
            f"not evaluated ({skipped[0]!r}). Choose `at` values the step can be evaluated at."
        )
    return hypotheses(table, hypothesis, conf_level=conf_level)


def _mer(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any],
    at: Mapping[str, Any] | None,
    base: pd.DataFrame | None,
    *,
    inference: str,
    bootstrap: Any,
    conf_level: float,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """:func:`mer` with the typical values ``base`` given (Dask data: from reductions) or taken from ``data``:
    the grid resolved here, evaluated by the engine (:func:`fme._local.margins.mer`)."""
    model = with_vcov(model, fme_kwargs.pop("vcov", None))[0]
    data = model_frame(model, check_data(data))
    conf_level = check_conf_level(conf_level)
    at = {} if at is None else dict(at)
    for f in at:
        if f not in data.columns:
            raise FeatureError(f"unknown feature {f!r} in `at`: not a column of the data.")
    base = typical_values(data) if base is None else base
    keys = list(at)
    values = [v if isinstance(v, (list, tuple, np.ndarray, pd.Index)) else [v] for v in at.values()]
    grid = list(itertools.product(*values)) if keys else [()]
    frame = base.loc[np.zeros(len(grid), dtype=int)].reset_index(drop=True)
    for f, vals in zip(keys, values):
        _check_at_values(data, f, vals)
    for j, f in enumerate(keys):
        col = [g[j] for g in grid]
        if isinstance(data[f].dtype, pd.CategoricalDtype):
            frame[f] = pd.Categorical(col, dtype=data[f].dtype)
        else:
            frame[f] = pd.Series(col, dtype=data[f].dtype if not is_numeric(data[f]) else float)
    parsed = parse_steps(data, steps)
    check_name_clash(keys, MER_COLUMNS + [f"step_{s.feature}" for s in parsed], "at", AT_FIX)
    numeric_steps = {s.feature: s.value for s in parsed}
    fme_kwargs.setdefault("reference_data", data)
    multi = isinstance(fme_kwargs.get("target_class"), str) and fme_kwargs.get("target_class") == "all"
    method = resolve_method(inference, model, bootstrap, multi)
    options = FMEOptions.from_kwargs(
        {**fme_kwargs, "inference": method, "bootstrap": bootstrap, "conf_level": conf_level}, "fme.mer"
    )
    planned = front_plan(model, frame, options)
    table = local_margins.mer(planned.plan, planned.data, planned.reference, keys, numeric_steps, multi)
    # the point each row evaluates, whole: the at columns, then the model's other inputs at their typical values
    # (an input named like one of the table's own columns is left to the at columns' rule: pass it in `at`)
    inputs = planned.plan.predictor.feature_names or list(frame.columns)
    taken = set(table.columns) | {"step", "class"}
    others = [c for c in inputs if c not in keys and c in frame.columns and c not in taken]
    for j, c in enumerate(others):
        table.insert(len(keys) + j, c, planned.data[c].to_numpy())
    # the step as evaluated (a rule such as "sd" by its value: on Dask data the rule is resolved before the grid)
    table.insert(0, "step", ", ".join(s.describe() for s in parse_steps(data, numeric_steps)))
    return with_class(table, planned.plan.predictor.explained_class)


def mem(model: Any, data: pd.DataFrame, steps: Mapping[str, Any], **fme_kwargs: Any) -> pd.DataFrame:
    """Forward marginal effect at the means (MEM, paper §3.2).

    Numeric features at their means, categorical ones at their modes. For a
    categorical step the stepped feature is evaluated at each other level
    (Williams' categorical MEM), since the mode may already be the target.
    Keywords (``inference``, ``bootstrap``, ``conf_level``, ...) and the
    columns are those of :func:`mer`.
    """
    base = None
    if is_dask_collection(data) or is_dask_collection(fme_kwargs.get("reference_data")):
        data, steps, base, fme_kwargs = dask_margins.local_view(model, data, steps, None, fme_kwargs)
    data = model_frame(model, check_data(data))
    parsed = parse_steps(data, steps)
    at = {s.feature: [lv for lv in levels(data[s.feature]) if lv != s.value] for s in parsed if not s.is_numeric}
    kw = {k: fme_kwargs.pop(k) for k in ("inference", "bootstrap", "conf_level") if k in fme_kwargs}
    return _mer(
        model, data, steps, at, base, **{"inference": "auto", "bootstrap": None, "conf_level": 0.95, **kw}, **fme_kwargs
    )
