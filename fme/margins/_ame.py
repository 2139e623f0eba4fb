"""Average marginal effects (paper §3.2): the front door :func:`ame`, which validates once, and its in-memory
engine (one fME per step and level, averaged per ``by`` group with the chosen inference); Dask data go to
:func:`fme._dask.ame.ame_dask`, other comparison scales to :func:`fme.comparisons.comparisons_by_step`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._core.plan import FMEOptions
from .._core.results import stepped_frames
from .._dask.ame import ame_dask
from .._utils.stats import describe
from .._utils.validation import (BY_MISSING, check_by_missing, check_conf_level, check_data, check_name_clash,
                                 check_single_output, is_categorical, is_dask_collection)
from ..comparisons import comparisons_by_step
from ..effects import fme
from ..exceptions import DataError, FeatureError, ParameterError, StepError
from ..hypotheses import hypotheses, stack_estimates
from ..inference._estimates import (COVERS, INFERENCE_COLUMNS, Estimates, RowInference, pair_label, pairwise_matrix,
                                    undefined_where)
from ..inference._hypotheses import NAMED
from ..inference._methods import compute_averages, resolve_method
from ..inference._vcov import residual_df, with_vcov
from ..inference.table import EstimatesTable
from ..predictors import make_predictor
from ..steps import Step, _levels, _set_level, check_training_levels, parse_steps

__all__ = ["ame"]

_DESCRIPTIVE = ["sd", "q25", "q75", "n", "n_excluded"]
_AME_COLUMNS = ["feature", "step", "level", "reference", "ame", *INFERENCE_COLUMNS, *_DESCRIPTIVE]


@dataclass
class _Spec:
    """One AME row (before grouping): its fMEs, evaluated positions in ``data`` and the point sets."""

    feature: str
    step: float
    level: Any
    reference: Any
    values: np.ndarray
    positions: np.ndarray
    pair: tuple[pd.DataFrame, pd.DataFrame] | None
    f0: np.ndarray | None = None
    inf: RowInference | None = None
    est: Estimates | None = None


def _check_by(data: pd.DataFrame, by: Any) -> list[str]:
    if by is None:
        return []
    # a column label of any type (integer labels too), or a list/tuple of them
    cols = list(by) if isinstance(by, (list, tuple, np.ndarray, pd.Index)) else [by]
    try:
        missing = [c for c in cols if c not in data.columns]
    except TypeError:  # an unhashable entry
        missing = None
    if not cols or missing is None or any(isinstance(c, (list, tuple, dict, set)) for c in cols):
        raise ParameterError(f"by must be a column name or a list of column names, got {by!r}.")
    if missing:
        raise FeatureError(f"by column(s) {missing} are not columns of the data; use some of {list(data.columns)[:20]}.")
    return cols


def _groups(data: pd.DataFrame, by_cols: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Group code of every row of ``data`` and the group keys, sorted (a missing value is a key of its own,
    sorted last; :func:`check_by_missing` refused it first if asked to)."""
    if not by_cols:
        return np.zeros(len(data), dtype=np.int64), pd.DataFrame(index=[0])
    gb = data[by_cols].groupby(by_cols, sort=True, observed=True, dropna=False)
    codes = gb.ngroup().to_numpy(dtype=np.int64)
    keys = gb.size().index.to_frame(index=False)
    return codes, keys


def _spec_rows(spec: _Spec, est: Estimates, codes_all: np.ndarray, keys: pd.DataFrame, by_cols: list[str],
               hypothesis: str | None, conf_level: float, weighted: bool = False) -> list[dict[str, Any]]:
    m = len(keys)
    codes = codes_all[spec.positions]
    head = {"feature": spec.feature, "step": spec.step, "level": spec.level, "reference": spec.reference}
    size_all = np.bincount(codes_all[codes_all >= 0], minlength=m)
    size_used = np.bincount(codes[codes >= 0], minlength=m)
    if hypothesis == "pairwise":
        L, pairs = pairwise_matrix(m)
        empty_pair = np.array([size_used[i] == 0 or size_used[j] == 0 for i, j in pairs], dtype=bool)
        table = undefined_where(est.contrast(L).table(conf_level), empty_pair)
        labels = [pair_label(keys, i, j) for i, j in pairs]
        rows = []
        for r, (i, j) in enumerate(pairs):
            diff = np.nan if empty_pair[r] else float(L[r] @ est.estimate)
            rows.append({**head, "hypothesis": labels[r], "ame": diff, **table.iloc[r].to_dict(),
                         "sd": np.nan, "q25": np.nan, "q75": np.nan, "n": int(size_used[i] + size_used[j]),
                         "n_excluded": int(size_all[i] + size_all[j] - size_used[i] - size_used[j])})
        return rows
    table = undefined_where(est.table(conf_level), size_used == 0)
    rows = []
    for g in range(m):
        d = describe(spec.values[codes == g], conf_level)
        group = {c: keys[c].iloc[g] for c in by_cols}
        n_ex = int(size_all[g] - size_used[g]) if by_cols else len(codes_all) - spec.positions.size
        ame = d["mean"] if not weighted or d["n"] == 0 else float(est.estimate[g])
        rows.append({**head, **group, "ame": ame, **table.iloc[g].to_dict(), "sd": d["sd"], "q25": d["q25"],
                     "q75": d["q75"], "n": int(d["n"]), "n_excluded": n_ex})
    return rows


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
        As in :func:`fme.fme`.
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
    by : str or list of str, optional
        One row per group of ``data`` (the group's own evaluated rows), the
        group's value(s) in column(s) named like ``by``. A ``by`` column named
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
    vcov : {'HC0', 'HC1', 'HC2', 'HC3'}, {'cluster': column} or array, optional
        The delta method's parameter covariance (:mod:`fme.inference._vcov`): heteroskedasticity-robust,
        cluster-robust by a column of the model's training data, or a k x k matrix; the ``inference``
        column names it (``delta (HC3)``).
    df : float or 'residual', optional
        Delta method: t quantiles with these degrees of freedom (``'residual'``: the model's
        ``df_resid``, as marginaleffects does for OLS) instead of normal ones.
    comparison : str, default='difference'
        The paper's fME compares on the difference scale; ``'ratio'``, ``'lnratio'``, ``'lnor'``,
        ``'lift'`` and their ``...avg`` forms return :func:`fme.avg_comparisons` of each step (pandas
        or Dask data, delta, bootstrap or sample; the NLM and cAMEs stay on the difference scale).
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference._bootstrap`); all
        rows of the table share the same refits.
    conf_level : float, default=0.95
    features : sequence of str, optional
        Features for ``steps=None``.
    categorical : {'observation', 'classic'}, default='observation'
        ``observation``: the observation-wise categorical ME (§5.1), rows
        already at the level are left out. ``classic``: every row is set to
        the reference level (the first level, or the value given in
        ``steps``), then to each other level (Eq. categorical_me). On Dask
        data both work; classic evaluates all levels of a feature in one pass
        (:mod:`fme._dask.classic`).
    wts : str or array, optional
        Weights of the rows (a column of ``data``; for pandas data also one number per row; survey or frequency
        weights): each AME (and ``by`` group, hypothesis) is the weighted mean of the rows' fMEs, with delta
        (weighted mean of the Jacobian rows), bootstrap (each refit's weighted mean) or fixed-model inference
        (the weighted mean's standard error with the weights held fixed). ``sd``, ``q25``, ``q75`` stay
        the unweighted spread of the fMEs.
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
    """
    if wts is not None and comparison != "difference":
        raise ParameterError("wts= works with comparison='difference'; weight the rows of fme.avg_comparisons "
                             "by passing them repeated (frequency weights), or use the difference scale.")
    if comparison != "difference":
        if not isinstance(steps, Mapping) or not steps:
            raise StepError("comparison scales need steps={feature: step or level, ...}.")
        table = comparisons_by_step(model, data, steps, comparison=comparison, by=by, inference=inference,
                                    bootstrap=bootstrap, conf_level=conf_level, vcov=vcov, df=df, **fme_kwargs)
        # hypotheses on the table's rows as printed (by-groups too), with their joint uncertainty
        return table if hypothesis is None and equivalence is None and multcomp is None else hypotheses(
            table, hypothesis, equivalence=equivalence, multcomp=multcomp)
    # Validated once, on the rows (pandas) or on the Dask frame's _meta; the engine trusts what it is handed.
    model, delta_label = with_vcov(model, vcov)
    t_df = residual_df(model, df)
    on_dask = is_dask_collection(data)
    # the offset columns are added once here; fme() then finds them in the frame
    exposure, offset = fme_kwargs.pop("exposure", None), fme_kwargs.pop("offset", None)
    frame = model_frame(model, data._meta if on_dask else check_data(data), exposure=exposure, offset=offset)
    conf_level = check_conf_level(conf_level)
    target_class = fme_kwargs.get("target_class")
    check_single_output(target_class, "ame")
    if categorical not in ("observation", "classic"):
        raise ParameterError(f"categorical must be 'observation' or 'classic', got {categorical!r}.")
    # the margins vocabulary beyond by-group pairs: computed on the table's rows (fme.hypotheses)
    # 'pairwise' is fme's by-group comparison (per feature; it needs by=); fme.hypotheses(table, 'pairwise')
    # compares the rows of any table
    by_pairs = hypothesis is None or (isinstance(hypothesis, str) and hypothesis == "pairwise")
    if isinstance(hypothesis, str) and not by_pairs and hypothesis not in NAMED and "=" not in hypothesis:
        raise ParameterError(f"hypothesis must be None, 'pairwise' (by-groups), one of {NAMED} (the table's rows), "
                             f"an equation such as 'b1 - b2 = 0' or a matrix of contrast weights; got {hypothesis!r}.")
    if not by_pairs or equivalence is not None or multcomp is not None:
        table = ame(model, data, steps, inference=inference, by=by, hypothesis=hypothesis if by_pairs else None,
                    bootstrap=bootstrap, conf_level=conf_level, features=features, categorical=categorical,
                    df=t_df, wts=wts, **fme_kwargs)
        return hypotheses(table, None if by_pairs else hypothesis, equivalence=equivalence, multcomp=multcomp)
    by_cols = _check_by(frame, by)
    if hypothesis is None:
        # the by columns sit beside fme's in one table: a shared name would make it ambiguous
        check_name_clash(by_cols, _AME_COLUMNS, "by", "Pass it under another name, e.g. "
                         "data.assign({name}_group=data[{name!r}]) with by='{name}_group'.")
    if by_missing not in BY_MISSING:
        raise ParameterError(f"by_missing must be one of {BY_MISSING}, got {by_missing!r}.")
    if hypothesis == "pairwise" and not by_cols:
        raise ParameterError("hypothesis='pairwise' compares by-groups; pass by=<column>.")
    method = resolve_method(inference, model, bootstrap)
    if steps is None:
        if features is None:
            names = make_predictor(model, target_class).feature_names
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
    if on_dask:
        if wts is not None and (not isinstance(wts, str) or wts not in frame.columns):
            raise FeatureError(f"on Dask data wts= names a column of the data (an array cannot follow the chunks); "
                               f"got {wts!r}: add the weights as a column and pass its name.")
        options = FMEOptions.from_kwargs({**fme_kwargs, "exposure": exposure, "offset": offset}, "fme.ame")
        return ame_dask(model, data, steps, method=method, by_cols=by_cols, by_missing=by_missing, hypothesis=hypothesis,
                        bootstrap=bootstrap, conf_level=conf_level, categorical=categorical, columns=_AME_COLUMNS,
                        options=options, t_df=t_df, delta_label=delta_label, wts=wts)
    data = frame
    if by_cols and by_missing == "raise":
        check_by_missing({c: int(data[c].isna().sum()) for c in by_cols}, len(data))
    specs: list[_Spec] = []
    for feature, value in steps.items():
        if is_categorical(data[feature]):
            specs.extend(_categorical_specs(model, data, feature, value, categorical, fme_kwargs, method))
        else:
            res = fme(model, data, {feature: value}, inference=_direct(method), **fme_kwargs)
            specs.append(_Spec(feature, res.steps[0].value, None, None, res.results["fme"].to_numpy(dtype=float),
                               res.positions, *_pair(res, model, method, target_class)))
    codes_all, keys = _groups(data, by_cols)
    w_all = _check_weights(wts, data)
    live = [s for s in specs if s.pair is not None]
    # The groups are known here: bootstrap refits are averaged per group as they arrive (no n x B draws).
    ests = compute_averages(method, model, [s.pair for s in live], [s.values for s in live],
                            [(codes_all[s.positions], len(keys)) + (() if w_all is None else (w_all[s.positions],))
                             for s in live], [s.f0 for s in live],
                            bootstrap, target_class) if live else []
    for spec, est in zip(live, ests):
        spec.est = est
    rows = []
    for spec in specs:
        if spec.est is None:
            # A level no row could move to keeps its row, with NaN figures and the method asked for.
            inf = spec.inf if spec.inf is not None else RowInference("sample", spec.values)
            spec.est = inf.average(codes_all[spec.positions], len(keys),
                                   None if w_all is None else w_all[spec.positions])
        if t_df is not None and spec.est.method == "delta":
            spec.est = replace(spec.est, df=np.full(spec.est.estimate.size, t_df))
        new = _spec_rows(spec, spec.est, codes_all, keys, by_cols, hypothesis, conf_level, w_all is not None)
        for row in new:
            row["inference"], row["covers"] = (delta_label if method == "delta" else method), COVERS[method]
        rows.extend(new)
    middle = ["hypothesis"] if hypothesis == "pairwise" else by_cols
    out = pd.DataFrame(rows, columns=_AME_COLUMNS[:4] + middle + _AME_COLUMNS[4:])
    # the joint uncertainty of the rows as printed, for fme.hypotheses (and hypothesis=/equivalence= here)
    pair_matrix = pairwise_matrix(len(keys))[0] if hypothesis == "pairwise" else None
    out = EstimatesTable.from_frame(out, stack_estimates([s.est if pair_matrix is None else s.est.contrast(pair_matrix)
                                                          for s in specs]), conf_level=conf_level)
    if ests and method == "bootstrap":
        # failed refits are counted with the table, not only warned about
        e = ests[0]
        out.bootstrap = {"n_resamples": int(e.draws.shape[1] + e.n_failed), "n_failed": int(e.n_failed),
                         "n_nonconverged": int(e.n_nonconverged), "errors": list(e.errors)}
    adapter = make_predictor(model, target_class).adapter
    scale = None if adapter is None else adapter.scale_note(data.columns)
    if scale is not None:
        out.scale = scale
    return out


def _check_weights(wts: Any, data: pd.DataFrame) -> np.ndarray | None:
    """The rows' weights as floats (a column name or one value per row); None without weights."""
    if wts is None:
        return None
    if isinstance(wts, str):
        if wts not in data.columns:
            raise FeatureError(f"wts={wts!r} is not a column of the data.")
        w = data[wts].to_numpy(dtype=float)
    else:
        w = np.asarray(wts, dtype=float).reshape(-1)
        if w.size != len(data):
            raise ParameterError(f"wts has {w.size} values for {len(data)} rows; pass one weight per row.")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise ParameterError("wts must be finite, non-negative and not all zero.")
    return w


def _direct(method: str) -> str:
    """The method fme() computes itself: all but bootstrap (whose refits ame() shares across rows)."""
    return "sample" if method == "bootstrap" else method


def _pair(res, model, method: str, target_class: Any) -> tuple:
    """(point sets, f(x), ready ingredients) of a spec: the point sets only where ame() still has to compute."""
    if method == "bootstrap":
        return stepped_frames(res, model, target_class), res.predictions["f_x"].to_numpy(), None
    return None, None, res.inference_rows


def _categorical_specs(model, data, feature, value, categorical, fme_kwargs, method) -> list[_Spec]:
    levels = _levels(data[feature])
    target_class = fme_kwargs.get("target_class")
    if categorical == "observation":
        targets = levels if value is None else [parse_steps(data, {feature: value})[0].value]
        specs = []
        for level in targets:
            try:
                res = fme(model, data, {feature: level}, inference=_direct(method), **fme_kwargs)
            except DataError:
                # Every row is already at this level: nothing to evaluate.
                specs.append(_Spec(feature, np.nan, level, None, np.empty(0), np.empty(0, dtype=np.int64), None))
                continue
            specs.append(_Spec(feature, np.nan, level, None, res.results["fme"].to_numpy(dtype=float), res.positions,
                               *_pair(res, model, method, target_class)))
        return specs
    reference = levels[0] if value is None else parse_steps(data, {feature: value})[0].value
    predictor = make_predictor(model, target_class)
    if predictor.adapter is not None:
        check_training_levels([Step(feature, "categorical", lv) for lv in levels], predictor.adapter.training_levels())
    X0 = predictor.select(data)

    def at_level(level: Any) -> pd.DataFrame:
        # a fresh frame per predict call: a model that modifies its input cannot leak into the next
        out = X0.copy(deep=False)
        out[feature] = _set_level(data[feature], level, len(data))
        return out

    X_ref = None if method == "sample" else at_level(reference)
    base = predictor(at_level(reference), stage=f"{feature} = {reference!r}")
    specs = []
    for level in levels:
        if level == reference:
            continue
        pred = predictor(at_level(level), stage=f"{feature} = {level!r}")
        pair = None if method == "sample" else (X_ref, at_level(level))
        specs.append(_Spec(feature, np.nan, level, reference, pred - base, np.arange(len(data)), pair, base))
    return specs
