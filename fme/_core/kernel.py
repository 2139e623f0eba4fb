"""The batch kernel of :func:`fme.fme`: a batch of rows in, its fMEs, NLMs and mergeable summaries out.

:func:`fme.fme` validates its arguments once and resolves them into a
:class:`Plan` (parsed steps, NLM method, fitted detector, inference method);
:func:`evaluate_batch` then evaluates any batch of rows under that plan
(paper §3.2 fME, §5.1 categorical ME, §5.2 multivariate fME, §5.4 NLM) in
three steps: exclusion bookkeeping (:mod:`fme._core.exclusions`), predictions
(:func:`_evaluate_rows`) and the result frames; and
:func:`summarise` turns a batch into a :class:`Summary` of sums that merge
exactly (counts, Chan's pairwise mean and sum of squares, NLM counts, the
delta method's Jacobian sums). The pandas path runs the kernel on the whole
frame (it batches predictions inside); the Dask path (:mod:`fme._dask.effects`) maps
it over partitions and tree-reduces the summaries.

The one quantity that is not local to a batch is the scale of the flat-path
test (the SD of all predictions, :func:`fme._nlm.evaluate.classify`): a plan may
carry it (``Plan.spread``: on Dask merged by the pass itself, :mod:`fme._dask.nlm`, or for
several outputs by a first pass); otherwise the
batch's own predictions give it, as for a pandas frame evaluated at once.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..inference._delta import evaluate_with_jacobian
from .exclusions import _excluded_frame, _extrapolation_exclusions, _value_exclusions
from .._nlm.evaluate import NLMSettings, classify
from .._nlm.evaluate import nlm_values as _nlm_values
from .._utils.progress import progress_bar
from ..exceptions import ExtrapolationError, ParameterError
from ..inference._estimates import RowInference, sample_inference
from ..inference._methods import compute_rows
from ..nlm import QuadratureRule, nlm_from_path
from ..predictors import Predictor
from ..steps import STACK_CELL_BUDGET, Step, apply_steps, stack_path

__all__ = ["Plan", "Batch", "Moments", "Summary", "evaluate_batch", "summarise", "results_meta"]

#: Rows of a batch however wide the stacked frame (bounds the per-batch overhead).
_MIN_BATCH = 10_000
#: Values of ``nlm_status`` counted in a :class:`Summary`, in order.
_STATUS = ("ok", "constant", "flat", "inaccurate")


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything :func:`fme.fme` resolved up front; the same for every batch.

    ``detector`` is already fitted on the reference data; ``spread`` (one
    value per output) fixes the scale of the flat-path test, None to take it
    from the batch.
    """

    model: Any
    predictor: Predictor
    steps: tuple[Step, ...]
    settings: NLMSettings | None
    batch_size: int | None
    method: str
    target_class: Any = None
    bootstrap: Any = None
    detector: Any = None
    detector_cols: list[str] | None = None
    policy: str | None = None
    spread: np.ndarray | None = None
    progress: bool | None = None

    @property
    def rule(self) -> QuadratureRule | None:
        return None if self.settings is None else self.settings.rule

    @property
    def names(self) -> list | None:
        return self.predictor.output_names


@dataclass(eq=False)
class Batch:
    """One evaluated batch: ``results``/``predictions`` of its evaluated rows and its exclusions."""

    results: pd.DataFrame
    predictions: pd.DataFrame
    code: np.ndarray
    notes: list
    index: pd.Index
    cand: np.ndarray
    f0: np.ndarray
    f1: np.ndarray
    rows: RowInference | None
    n_candidates: int
    #: The SD of f along each evaluated row's path (the flat-path test's numerator; None without NLMs).
    nlm_sd: np.ndarray | None = None

    @property
    def excluded(self) -> pd.DataFrame:
        return _excluded_frame(self.code, self.notes, self.index)


# ----------------------------------------------------------------- helpers
def _check_batch_size(batch_size: Any) -> int | None:
    if batch_size is None:
        return None
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ParameterError(f"batch_size must be a positive integer or None, got {batch_size!r}.")
    return int(batch_size)


def _default_batch(n: int, n_cols: int, rule: QuadratureRule | None) -> int:
    if rule is None:
        return max(n, 1)
    per_row = max(1, n_cols) * max(1, rule.n_evaluations)
    return max(_MIN_BATCH, STACK_CELL_BUDGET // per_row)


def _evaluate(
    predictor: Predictor,
    X: pd.DataFrame,
    steps: tuple[Step, ...],
    rule: QuadratureRule | None,
    batch_size: int | None,
    h: Mapping[str, np.ndarray] | None = None,
    progress: bool | None = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """f(x), f(x + h) and (with ``rule``) the NLM for all rows of ``X``, batched."""
    n = len(X)
    size = batch_size or _default_batch(n, X.shape[1], rule)
    f0_parts, f1_parts, nlm_parts, sd_parts = [], [], [], []
    label = ", ".join(s.describe() for s in steps) + (" (per-row shrunk)" if h is not None else "")
    t_int = None if rule is None else rule.nodes[rule.interior]
    # One buffer for every batch's stacked NLM frame (only used when all columns are float).
    buffer = np.empty(X.shape[1] * t_int.size * min(size, n)) if rule is not None and n > size else None
    starts = range(0, n, size)
    for start in progress_bar(starts, total=len(starts), desc=f"fME {label}", progress=progress):
        sl = slice(start, min(start + size, n))
        xb = X.iloc[sl]
        hb = None if h is None else {k: v[sl] for k, v in h.items()}
        rows = (start, sl.stop, n)
        # Every frame is built before any predict call, so a model that modifies its input
        # in place cannot leak into x + h or the path nodes (each frame goes to predict once).
        moved = apply_steps(xb, steps, hb)
        path = stack_path(xb, steps, t_int, hb, buffer) if rule is not None and t_int.size else None
        f0 = predictor(xb, stage="f(x)", rows=rows)
        f1 = predictor(moved, stage=f"f(x + h) for the step {label}", rows=rows)
        del moved
        f0_parts.append(f0)
        f1_parts.append(f1)
        if rule is not None:
            if t_int.size:
                stacked = predictor(path, stage=f"the NLM nodes x + t h for the step {label}", rows=rows)
                del path
                f_int = stacked.reshape((t_int.size, len(xb)) + stacked.shape[1:])
            else:
                f_int = np.empty((0,) + f0.shape)
            v, sd = nlm_from_path(f0, f1, f_int, rule, return_sd=True)
            nlm_parts.append(v)
            sd_parts.append(sd)
    f0 = np.concatenate(f0_parts)
    f1 = np.concatenate(f1_parts)
    if rule is None:
        return f0, f1, None, None
    return f0, f1, np.concatenate(nlm_parts), np.concatenate(sd_parts)


def _detector_columns(predictor: Predictor, data: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    cols = predictor.feature_names if predictor.feature_names is not None else [c for c in data.columns]
    missing = [c for c in cols if c not in reference.columns]
    if missing:
        raise ExtrapolationError(
            f"reference_data lacks the model feature(s) {missing}; pass the training data with all of {cols}."
        )
    return list(cols)


# ----------------------------------------------------------------- the kernel
def evaluate_batch(plan: Plan, data: pd.DataFrame, with_rows: bool = True) -> Batch:
    """fMEs (and NLMs, exclusions, inference ingredients) of every row of ``data`` under ``plan``.

    Exclusion bookkeeping first (:mod:`fme._core.exclusions`: missing, already at
    the level, extrapolation), then the predictions of the rows left, then the
    frames. Never raises for a batch without evaluable rows (a Dask partition
    may have none); the caller decides whether the whole data had any.
    """
    X_all = plan.predictor.select(data)
    code, notes = _value_exclusions(data, plan.steps)
    cand = np.flatnonzero(code == 0)
    n_candidates = int(cand.size)
    cand, X, h, extra_cols = _extrapolation_exclusions(plan, X_all.iloc[cand], cand, code, notes)
    f0, f1, nlm_values, status, nlm_sd, rows = _evaluate_rows(plan, X, h)
    out_index = data.index[cand]
    res = _result_columns(plan.names, f0, f1, nlm_values, status, h, extra_cols)
    results = pd.DataFrame(res, index=out_index)
    predictions = _predictions_frame(plan.names, f0, f1, out_index)
    if with_rows and plan.names is None and rows is None and cand.size:
        # 'sample' needs only the fMEs: the stepped frame is built for delta and bootstrap alone
        rows = sample_inference(res["fme"]) if plan.method == "sample" else compute_rows(
            plan.method, plan.model, [(X, apply_steps(X, plan.steps, h))], [res["fme"]], [f0], plan.bootstrap,
            plan.target_class)[0]
    return Batch(results=results, predictions=predictions, code=code, notes=notes, index=data.index, cand=cand,
                 f0=f0, f1=f1, rows=rows, n_candidates=n_candidates,
                 nlm_sd=nlm_sd if plan.settings is not None else None)


def _evaluate_rows(
    plan: Plan, X: pd.DataFrame, h: Mapping[str, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None, RowInference | None]:
    """f(x), f(x + h), the NLMs with their status and path SDs (if the plan asks for NLMs) and, from
    the delta method's design-matrix route only, the inference rows, for the rows ``X`` to evaluate."""
    predictor, parsed, rule, settings, names = plan.predictor, plan.steps, plan.rule, plan.settings, plan.names
    shape0 = (0,) if names is None else (0, len(names))
    fast = None
    status = nlm_values = nlm_sd = None
    rows = None
    if len(X) == 0:
        f0 = f1 = np.empty(shape0)
        if settings is not None:
            nlm_values, status, nlm_sd = np.empty(shape0), np.empty(shape0, dtype=object), np.empty(shape0)
        return f0, f1, nlm_values, status, nlm_sd, rows
    if plan.method == "delta" and settings is None and names is None:
        # statsmodels GLM-type models: predictions and Jacobian from one design matrix per point set
        fast = evaluate_with_jacobian(plan.model, X, apply_steps(X, parsed, h))
    if fast is not None:
        f0, f1, rows = fast
    else:
        f0, f1, nlm_values, nlm_sd = _evaluate(predictor, X, parsed, rule, plan.batch_size, h, plan.progress)
        if settings is not None and rule is not None:
            nlm_values, status = classify(nlm_values, nlm_sd, f0, f1, settings.flat_tol, spread=plan.spread)
        elif settings is not None:
            nlm_values, status, nlm_sd = _nlm_values(settings, predictor, X, parsed, h, f0, f1,
                                                     plan.batch_size, spread=plan.spread, return_sd=True,
                                                     progress=plan.progress)
    return f0, f1, nlm_values, status, nlm_sd, rows


def _result_columns(names: list | None, f0: np.ndarray, f1: np.ndarray, nlm_values: np.ndarray | None,
                    status: np.ndarray | None, h: Mapping[str, np.ndarray] | None,
                    extra_cols: dict[str, np.ndarray]) -> dict[str, Any]:
    """The columns of ``results``: fME, NLM and status per output, effective steps, extrapolation flags."""
    res: dict[str, Any] = {}
    if names is None:
        res["fme"] = f1 - f0
        if nlm_values is not None:
            res["nlm"] = nlm_values
            res["nlm_status"] = status
    else:
        for j, c in enumerate(names):
            res[f"fme_{c}"] = f1[:, j] - f0[:, j]
        if nlm_values is not None:
            for j, c in enumerate(names):
                res[f"nlm_{c}"] = nlm_values[:, j]
            for j, c in enumerate(names):
                res[f"nlm_status_{c}"] = status[:, j]
    if h is not None:
        for feat, values in h.items():
            res[f"step_{feat}"] = values
    res.update(extra_cols)
    return res


def _predictions_frame(names: list | None, f0: np.ndarray, f1: np.ndarray, index: pd.Index) -> pd.DataFrame:
    if names is None:
        return pd.DataFrame({"f_x": f0, "f_x_step": f1}, index=index)
    return pd.DataFrame(
        {**{f"f_x_{c}": f0[:, j] for j, c in enumerate(names)},
         **{f"f_x_step_{c}": f1[:, j] for j, c in enumerate(names)}}, index=index)


# ----------------------------------------------------------------- mergeable summaries
@dataclass(frozen=True)
class Moments:
    """Count, mean and sum of squared deviations of columns of values (NaN ignored).

    Two sets merge exactly in the sense of Chan, Golub & LeVeque (1979): the
    merged mean and M2 equal those of the pooled values up to rounding, so an
    AME and SD from partitions agree with the in-memory ones to ~1e-15
    relative (unless the mean is nearly cancelled).
    """

    n: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> "Moments":
        v = np.asarray(values, dtype=float)
        v = v[:, None] if v.ndim == 1 else v
        ok = ~np.isnan(v)
        n = ok.sum(axis=0).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, np.where(ok, v, 0.0).sum(axis=0) / np.maximum(n, 1), 0.0)
            # two-pass within a batch: the deviations from the batch's own mean
            m2 = np.where(ok, (v - mean) ** 2, 0.0).sum(axis=0)
        return cls(n, mean, m2)

    def merge(self, other: "Moments") -> "Moments":
        n = self.n + other.n
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = other.mean - self.mean
            w = np.where(n > 0, other.n / np.maximum(n, 1), 0.0)
            mean = self.mean + delta * w
            m2 = self.m2 + other.m2 + delta ** 2 * self.n * w
        return Moments(n, mean, m2)

    def sd(self, ddof: int = 1) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > ddof, np.sqrt(self.m2 / (self.n - ddof)), np.nan)


@dataclass(frozen=True)
class Summary:
    """Mergeable summaries of evaluated batches (one entry per output column).

    Attributes
    ----------
    codes : ndarray (4,)
        Rows evaluated, missing/infinite, already at the level, extrapolation.
    fme, nlm, spread : Moments
        Of the fMEs, of the defined NLMs, of the predictions f(x) and f(x + h)
        (the scale of the flat-path test).
    n_linear : ndarray
        Defined NLMs >= the threshold.
    status : ndarray (4, m)
        Counts of ``ok``, ``constant``, ``flat``, ``inaccurate``.
    jacobian : ndarray (k,) or None
        Delta method: the sum of the rows' Jacobians d fME_i / d theta
        (the AME's gradient is this over n); ``vcov`` the parameter covariance.
    n_kept_extrapolation : int
        With ``on_extrapolation='keep'``: evaluated rows flagged as extrapolation.
    groups : object with ``merge``, optional
        Per-group sums of ``by`` groups (:class:`fme._dask.groups.GroupSums`).
    rows_any : ndarray (4,) or None
        Several outputs with NLMs: rows with ``constant``, ``flat``,
        ``inaccurate`` status in any output, and rows with an undefined
        (NaN) NLM in any output (the counts of :class:`fme.FMEResult`).
    """

    codes: np.ndarray
    fme: Moments
    nlm: Moments | None = None
    spread: Moments | None = None
    n_linear: np.ndarray | None = None
    status: np.ndarray | None = None
    jacobian: np.ndarray | None = None
    vcov: np.ndarray | None = field(default=None, repr=False)
    info: dict = field(default_factory=dict, repr=False)
    n_kept_extrapolation: int = 0
    groups: Any = field(default=None, repr=False)
    rows_any: np.ndarray | None = None

    def merge(self, other: "Summary") -> "Summary":
        def add(a, b):
            return b if a is None else a if b is None else a + b

        def mrg(a, b):
            return b if a is None else a if b is None else a.merge(b)

        return replace(self, codes=self.codes + other.codes, fme=self.fme.merge(other.fme),
                       nlm=mrg(self.nlm, other.nlm), spread=mrg(self.spread, other.spread),
                       n_linear=add(self.n_linear, other.n_linear), status=add(self.status, other.status),
                       jacobian=add(self.jacobian, other.jacobian),
                       vcov=self.vcov if self.vcov is not None else other.vcov, info={**other.info, **self.info},
                       n_kept_extrapolation=self.n_kept_extrapolation + other.n_kept_extrapolation,
                       groups=mrg(self.groups, other.groups), rows_any=add(self.rows_any, other.rows_any))


def summarise(batch: Batch, plan: Plan, threshold: float = 0.9) -> Summary:
    """The mergeable :class:`Summary` of one evaluated batch."""
    names = plan.names
    res = batch.results
    fcols = ["fme"] if names is None else [f"fme_{c}" for c in names]
    fm = Moments.of(res[fcols].to_numpy(dtype=float))
    codes = np.bincount(batch.code, minlength=4).astype(np.int64)
    spread = Moments.of(np.concatenate([batch.f0, batch.f1]))
    nlm = n_linear = status = rows_any = None
    if plan.settings is not None:
        ncols = ["nlm"] if names is None else [f"nlm_{c}" for c in names]
        scols = ["nlm_status"] if names is None else [f"nlm_status_{c}" for c in names]
        v = res[ncols].to_numpy(dtype=float)
        nlm = Moments.of(v)
        with np.errstate(invalid="ignore"):
            n_linear = (v >= threshold).sum(axis=0).astype(np.int64)
        st = res[scols].to_numpy()
        status = np.array([(st == s).sum(axis=0) for s in _STATUS], dtype=np.int64)
        if names is not None:
            rows_any = np.array([(st == s).any(axis=1).sum() for s in _STATUS[1:]]
                                + [np.isnan(v).any(axis=1).sum()], dtype=np.int64)
    jac = vcov = None
    info: dict = {}
    rows = batch.rows
    if rows is not None and rows.method == "delta":
        jac, vcov, info = rows.jacobian.sum(axis=0), rows.vcov, dict(rows.info)
    kept = int(res["extrapolation"].sum()) if "extrapolation" in res.columns else 0
    return Summary(codes=codes, fme=fm, nlm=nlm, spread=spread, n_linear=n_linear, status=status, jacobian=jac,
                   vcov=vcov, info=info, n_kept_extrapolation=kept, rows_any=rows_any)


def results_meta(plan: Plan, index: pd.Index) -> pd.DataFrame:
    """The empty ``results`` frame of ``plan`` (the columns and dtypes every batch gives)."""
    empty = pd.DataFrame(index=index[:0])
    names = plan.names
    cols: dict[str, Any] = {}
    outs = [""] if names is None else [f"_{c}" for c in names]
    for o in outs:
        cols[f"fme{o}"] = np.empty(0)
    if plan.settings is not None:
        for o in outs:
            cols[f"nlm{o}"] = np.empty(0)
        for o in outs:
            cols[f"nlm_status{o}"] = np.empty(0, dtype=object)
    if plan.detector is not None and plan.policy == "shrink":
        for s in plan.steps:
            cols[f"step_{s.feature}"] = np.empty(0)
    if plan.detector is not None and plan.policy == "keep":
        cols["extrapolation"] = np.empty(0, dtype=bool)
        cols["extrapolation_point"] = np.empty(0, dtype=object)
    return pd.DataFrame(cols, index=empty.index)
