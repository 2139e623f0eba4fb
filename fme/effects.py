"""Forward marginal effects and their non-linearity measure (paper §3.2, §5.1, §5.2, §5.4).

``fme(model, data, steps)`` evaluates, for every observation x,

    fME = f(x_S + h_S, x_-S) - f(x)                      (Eq. multivariate_fME)

with numeric steps ``h`` and/or categorical target levels (Eq.
new_categorical_me), optionally the NLM along gamma(t) = x + t h, after
leaving out (or shrinking) steps that leave the data (extrapolation).

Cost: two batched ``predict`` calls per batch for the fMEs, plus one for all
interior quadrature nodes of the NLM; never a call per row.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._stats import describe
from ._validation import check_conf_level, check_data
from ._guards import call_detector, check_flags
from ._models import model_frame
from ._shrink import MIN_STEP_FRACTION, shrink_steps
from .exceptions import DataError, ExtrapolationError, FeatureError, ParameterError, StepError
from .extrapolation import make_detector
from ._delta import evaluate_with_jacobian
from .inference import RowInference, compute_rows, sample_inference
from .inference import resolve_method as resolve_inference
from ._nlm_eval import NLMSummaryMixin, classify, resolve_method
from ._nlm_eval import nlm_values as _nlm_values
from .nlm import QuadratureRule, nlm_from_path
from .predictors import Predictor, make_predictor
from .steps import Step, apply_steps, parse_steps, stack_path

__all__ = ["FMEResult", "fme", "ON_EXTRAPOLATION"]

ON_EXTRAPOLATION = ("exclude", "keep", "shrink")
#: Cells (rows x columns) of one stacked NLM frame; bounds memory to a few hundred MB.
_CELL_BUDGET = 50_000_000
_MIN_BATCH = 100_000


@dataclass(frozen=True, eq=False)
class FMEResult(NLMSummaryMixin):
    """Forward marginal effects of one step specification.

    Attributes
    ----------
    results : DataFrame
        Indexed like ``data`` (only the rows evaluated). Columns ``fme`` and,
        with NLMs, ``nlm`` and ``nlm_status`` (``fme_<class>``/``nlm_<class>``/
        ``nlm_status_<class>`` for ``target_class='all'``). ``nlm_status``:
        ``ok``; ``constant`` (f constant along the path, NLM 0/0, NaN);
        ``flat`` (variation negligible, see ``nlm_flat_tol``; NLM NaN);
        ``inaccurate`` (Gauss-Kronrod error estimate above ``nlm_tol``
        after the subdivision budget; the NLM is kept); with ``on_extrapolation='keep'`` a boolean
        ``extrapolation``; with ``'shrink'`` one ``step_<feature>`` column per
        numeric step holding each row's effective step.
    steps : tuple of Step
        The steps, with rules resolved to numbers.
    excluded : DataFrame
        Rows not evaluated, indexed like ``data``: ``reason_type`` (one of
        ``missing``, ``at_level``, ``extrapolation``), ``point`` (``x``,
        ``x+h`` or ``x and x+h`` for extrapolation) and a readable ``reason``.
    data : DataFrame
        The caller's data (never modified).
    model_features : tuple of str or None
        The model's input columns when it reports them (``feature_names_in_``).
    predictions : DataFrame
        ``f_x`` and ``f_x_step`` for the evaluated rows (auditing).
    nlm_method : str or None
        The NLM method actually used (``exact``, ``gauss-kronrod``,
        ``gauss-legendre``, ``simpson38``); ``auto`` is resolved.
    nlm_linear_threshold : float
        The NLM level counted as "approximately linear" by :attr:`share_linear`.
    inference_rows : RowInference or None
        Per-row ingredients of the AME's uncertainty (see :mod:`fme.inference`):
        delta-method Jacobian rows, bootstrap draws, or only the fMEs
        (``sample``); None for ``target_class='all'``.
    conf_level : float
        Default confidence level of :meth:`conf_int` and :meth:`tidy`.
    positions : ndarray
        Positions (0-based) in ``data`` of the evaluated rows.
    """

    results: pd.DataFrame
    steps: tuple[Step, ...]
    excluded: pd.DataFrame
    data: pd.DataFrame = field(repr=False)
    predictions: pd.DataFrame = field(repr=False)
    model_description: str = "model"
    output_names: tuple[str, ...] | None = None
    nlm_method: str | None = None
    nlm_nodes: int | None = None
    detector: str | None = None
    on_extrapolation: str | None = None
    model_features: tuple[str, ...] | None = None
    nlm_tol: float | None = None
    nlm_linear_threshold: float = 0.9
    inference_rows: RowInference | None = field(default=None, repr=False)
    conf_level: float = 0.95
    positions: np.ndarray | None = field(default=None, repr=False)

    # ----------------------------------------------------------------- columns
    @property
    def fme_columns(self) -> list[str]:
        return ["fme"] if self.output_names is None else [f"fme_{c}" for c in self.output_names]

    @property
    def nlm_columns(self) -> list[str]:
        cols = ["nlm"] if self.output_names is None else [f"nlm_{c}" for c in self.output_names]
        return [c for c in cols if c in self.results.columns]

    @property
    def has_nlm(self) -> bool:
        return bool(self.nlm_columns)

    # ----------------------------------------------------------------- figures
    def _reduce(self, cols: list[str], fn) -> Any:
        vals = {c: fn(self.results[c].to_numpy(dtype=float)) for c in cols}
        if self.output_names is None:
            return next(iter(vals.values())) if vals else float("nan")
        return pd.Series({c.split("_", 1)[1]: v for c, v in vals.items()}, dtype=float)

    @property
    def ame(self) -> Any:
        """Average fME (float; a Series per class for ``target_class='all'``)."""
        return self._reduce(self.fme_columns, lambda v: float(np.mean(v)))

    @property
    def sd(self) -> Any:
        """Sample SD (n - 1) of the fMEs."""
        return self._reduce(self.fme_columns, lambda v: float(np.std(v, ddof=1)) if v.size > 1 else float("nan"))

    @property
    def anlm(self) -> Any:
        """Average NLM, ignoring undefined (NaN) values; NaN without NLMs."""
        return self._reduce_nlm(lambda v: float(np.nanmean(v)))

    @property
    def n(self) -> int:
        """Number of rows evaluated."""
        return len(self.results)

    @property
    def n_excluded(self) -> int:
        return len(self.excluded)

    @property
    def n_nlm_undefined(self) -> int:
        """Rows whose NLM is undefined (prediction constant or flat along the path)."""
        if not self.has_nlm:
            return 0
        return int(self.results[self.nlm_columns].isna().any(axis=1).sum())

    @property
    def extrapolated(self) -> pd.DataFrame:
        """Rows left out as extrapolation points, with the point and reason."""
        return self.excluded[self.excluded["reason_type"] == "extrapolation"]

    # ----------------------------------------------------------------- inference
    def _inference_table(self, conf_level: float | None = None) -> pd.DataFrame:
        level = self.conf_level if conf_level is None else check_conf_level(conf_level)
        if self.inference_rows is not None:
            return self.inference_rows.average().table(level)
        parts = [sample_inference(self.results[c].to_numpy(dtype=float)).average().table(level)
                 for c in self.fme_columns]
        return pd.concat(parts, ignore_index=True)

    def _one_or_series(self, col: str) -> Any:
        values = self._inference_table()[col].to_numpy(dtype=float)
        if self.output_names is None:
            return float(values[0])
        return pd.Series(values, index=list(self.output_names), dtype=float)

    @property
    def inference(self) -> str:
        """The uncertainty method of the AME: 'delta', 'bootstrap' or 'sample' (paper §5.5's fixed-model CI)."""
        return "sample" if self.inference_rows is None else self.inference_rows.method

    @property
    def std_error(self) -> Any:
        """Standard error of the AME under :attr:`inference`."""
        return self._one_or_series("std_error")

    @property
    def p_value(self) -> Any:
        """Two-sided p-value of AME = 0 (z for delta/bootstrap, t for sample)."""
        return self._one_or_series("p_value")

    def conf_int(self, conf_level: float | None = None) -> Any:
        """(low, high) CI of the AME (a DataFrame with one row per class for ``target_class='all'``)."""
        t = self._inference_table(conf_level)
        if self.output_names is None:
            return float(t["conf_low"].iloc[0]), float(t["conf_high"].iloc[0])
        return t[["conf_low", "conf_high"]].set_axis(list(self.output_names))

    def tidy(self, conf_level: float | None = None) -> pd.DataFrame:
        """The AME as a table: step, (class), ame, std_error, statistic, p_value, conf_low, conf_high,
        inference, sd, q25, q75, n, n_excluded (one row; one per class for ``target_class='all'``)."""
        t = self._inference_table(conf_level)
        rows = []
        for j, c in enumerate(self.fme_columns):
            d = describe(self.results[c].to_numpy(dtype=float))
            row = {"step": self.describe_steps()}
            if self.output_names is not None:
                row["class"] = self.output_names[j]
            row.update({"ame": d["mean"], **t.iloc[j].to_dict(), "sd": d["sd"], "q25": d["q25"],
                        "q75": d["q75"], "n": int(d["n"]), "n_excluded": self.n_excluded})
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def feature_values(self) -> pd.DataFrame:
        """The evaluated rows of ``data`` (a copy), aligned with ``results``."""
        return self.data.loc[self.results.index].copy()

    @property
    def step_dict(self) -> dict[str, Any]:
        return {s.feature: s.value for s in self.steps}

    def describe_steps(self) -> str:
        return ", ".join(s.describe() for s in self.steps)

    def to_frame(self) -> pd.DataFrame:
        """A copy of :attr:`results`."""
        return self.results.copy()

    def summary(self) -> str:
        """Readable summary: steps, rows evaluated/excluded, AME, ANLM, SD, quartiles."""
        lines = [f"Forward marginal effects of {self.model_description}", f"  step: {self.describe_steps()}"]
        for st in self.steps:
            if f"step_{st.feature}" in self.results.columns:  # on_extrapolation='shrink'
                share = self.results[f"step_{st.feature}"].to_numpy(dtype=float) / st.value
                q = np.quantile(share, [0.0, 0.25, 0.5, 0.75, 1.0]) if share.size else np.full(5, np.nan)
                lines.append(
                    f"  effective step of {st.feature} (share of h): min {q[0]:.3g}  q25 {q[1]:.3g}  median {q[2]:.3g}"
                    f"  q75 {q[3]:.3g}  max {q[4]:.3g}; shrunk rows {int((share < 1).sum())} "
                    f"(below {MIN_STEP_FRACTION:g} h: excluded)")
        n_total = self.n + self.n_excluded
        lines.append(f"  rows evaluated: {self.n} of {n_total}")
        counts = self.excluded["reason_type"].value_counts()
        labels = {"missing": "missing or infinite value in a stepped feature", "at_level": "already at the target level",
                  "extrapolation": "extrapolation"}
        for key, label in labels.items():
            if counts.get(key, 0):
                lines.append(f"  excluded ({label}): {counts[key]}")
        if self.detector is None:
            lines.append("  extrapolation: not checked (pass extrapolation='envelope' and reference_data)")
        else:
            lines.append(f"  extrapolation: {self.detector}, policy {self.on_extrapolation}")
        for col in self.fme_columns:
            d = describe(self.results[col].to_numpy())
            lines.append(
                f"  {col}: AME {d['mean']:.6g}  SD {d['sd']:.6g}  q25 {d['q25']:.6g}  "
                f"median {float(np.median(self.results[col])):.6g}  q75 {d['q75']:.6g}"
            )
        method = self.nlm_method if self.nlm_nodes is None else f"{self.nlm_method}, {self.nlm_nodes} nodes"
        if self.nlm_method == "gauss-kronrod":
            method += f", tol {self.nlm_tol:g}"
        t = self.nlm_linear_threshold
        for col in self.nlm_columns:
            v = self.results[col].to_numpy()
            d = describe(v)
            share = float(np.mean(v[~np.isnan(v)] >= t)) if np.isfinite(v).any() else float("nan")
            med = float(np.nanmedian(v)) if np.isfinite(v).any() else float("nan")
            st = self.results[col.replace("nlm", "nlm_status", 1)]
            lines.append(
                f"  {col}: ANLM {d['mean']:.6g}  median {med:.6g}  share >= {t:g} {share:.3g}  SD {d['sd']:.6g}  "
                f"q25 {d['q25']:.6g}  q75 {d['q75']:.6g}  undefined {int(np.isnan(v).sum())} "
                f"(constant {int((st == 'constant').sum())}, flat {int((st == 'flat').sum())})  "
                f"inaccurate {int((st == 'inaccurate').sum())}  (method: {method})"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        ame = self.ame
        ame_txt = f"{ame:.6g}" if isinstance(ame, float) else ame.round(6).to_dict()
        return f"FMEResult(step={self.describe_steps()!r}, n={self.n}, excluded={self.n_excluded}, ame={ame_txt})"


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
    return max(_MIN_BATCH, _CELL_BUDGET // per_row)


def _evaluate(
    predictor: Predictor,
    X: pd.DataFrame,
    steps: tuple[Step, ...],
    rule: QuadratureRule | None,
    batch_size: int | None,
    h: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """f(x), f(x + h) and (with ``rule``) the NLM for all rows of ``X``, batched."""
    n = len(X)
    size = batch_size or _default_batch(n, X.shape[1], rule)
    f0_parts, f1_parts, nlm_parts, sd_parts = [], [], [], []
    label = ", ".join(s.describe() for s in steps) + (" (per-row shrunk)" if h is not None else "")
    t_int = None if rule is None else rule.nodes[rule.interior]
    # One buffer for every batch's stacked NLM frame (only used when all columns are float).
    buffer = np.empty(X.shape[1] * t_int.size * min(size, n)) if rule is not None and n > size else None
    for start in range(0, n, size):
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


def _check_flags(flags: Any, n: int, detector: Any) -> np.ndarray:
    return check_flags(flags, n, detector)


def _explain(detector: Any, points: pd.DataFrame, flags: np.ndarray) -> np.ndarray:
    """Reason per point, asked of the detector for the flagged points only (strings are costly)."""
    out = np.full(len(points), "", dtype=object)
    idx = np.flatnonzero(flags)
    if idx.size == 0:
        return out
    if hasattr(detector, "explain"):
        out[idx] = np.asarray(detector.explain(points.iloc[idx], np.ones(idx.size, dtype=bool)), dtype=object)
    else:
        out[idx] = f"flagged by {type(detector).__name__}"
    return out


def _all_excluded_message(steps: tuple[Step, ...], reference: pd.DataFrame, n: int) -> str:
    ranges = []
    for s in steps:
        if s.is_numeric and s.feature in reference.columns:
            col = reference[s.feature]
            ranges.append(f"{s.feature} in [{col.min():.6g}, {col.max():.6g}]")
    where = f" (reference range: {', '.join(ranges)})" if ranges else ""
    return (
        f"all {n} rows are extrapolation points for the step {', '.join(s.describe() for s in steps)}{where}; "
        "use a smaller step, on_extrapolation='shrink', or check reference_data."
    )


_REASON_TYPES = np.array(["", "missing", "at_level", "extrapolation"], dtype=object)


def _excluded_frame(code: np.ndarray, notes: list[tuple[np.ndarray, Any, Any]], index: pd.Index) -> pd.DataFrame:
    """The ``excluded`` table from per-row codes and (positions, point, reason) notes."""
    ex = np.flatnonzero(code)
    slot = np.full(code.size, -1)
    slot[ex] = np.arange(ex.size)
    point = np.full(ex.size, "", dtype=object)
    reason = np.full(ex.size, "", dtype=object)
    for pos, pts, why in notes:
        point[slot[pos]] = pts
        reason[slot[pos]] = why
    return pd.DataFrame(
        {"reason_type": _REASON_TYPES[code[ex]].astype(str), "point": point.astype(str), "reason": reason.astype(str)},
        index=index[ex],
    )


# ----------------------------------------------------------------- public API
def fme(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any],
    *,
    nlm: bool = False,
    nlm_method: str = "auto",
    nlm_points: int | None = None,
    nlm_intervals: int | None = None,
    nlm_tol: float | None = None,
    nlm_max_level: int | None = None,
    nlm_flat_tol: float | None = None,
    nlm_linear_threshold: float = 0.9,
    extrapolation: Any = None,
    reference_data: pd.DataFrame | None = None,
    on_extrapolation: str | None = None,
    target_class: Any = None,
    batch_size: int | None = None,
    random_state: Any = None,
    inference: str = "auto",
    bootstrap: Mapping[str, Any] | None = None,
    conf_level: float = 0.95,
) -> FMEResult:
    """Forward marginal effects (and NLMs) of ``model`` for every row of ``data``.

    Parameters
    ----------
    model : estimator, Pipeline, statsmodels results, object with ``predict`` or callable
        Any prediction function; see :func:`fme.predictors.make_predictor`.
    data : DataFrame
        Observations at which to evaluate (paper: the evaluation points D).
    steps : dict
        ``{feature: h}`` for numeric features (a number or a rule such as
        ``"sd"``, ``"-0.5*iqr"``; see :func:`fme.step_size`) and
        ``{feature: level}`` for categorical ones. Several entries form the
        multivariate fME (§5.2); a categorical entry is the observation-wise
        categorical ME (§5.1): rows already at the level are not evaluated.
    nlm : bool, default=False
        Also compute the non-linearity measure (§5.4). Needs numeric steps only.
    nlm_method : {'auto', 'exact', 'gauss-kronrod', 'gauss-legendre', 'simpson38'}, default='auto'
        ``exact``: closed-form integrals over the piecewise-constant path of
        a tree model (scikit-learn trees/forests/boosting, LightGBM, XGBoost,
        Pipelines ending in one; :mod:`fme.nlm_exact`); a ``ParameterError``
        for other models. ``gauss-kronrod``: 21-node Gauss-Kronrod with a
        per-row error estimate and adaptive subdivision (``nlm_tol``).
        ``gauss-legendre``: fixed Gauss-Legendre nodes (default 16).
        ``simpson38``: the composite Simpson 3/8 rule of the paper's code
        and R's fmeffects. ``auto``: exact where supported, else
        gauss-kronrod (gauss-legendre if ``nlm_points``, simpson38 if
        ``nlm_intervals`` is given). The method used is ``result.nlm_method``.
    nlm_points, nlm_intervals : int, optional
        Gauss-Legendre nodes / Simpson 3/8 sub-intervals.
    nlm_tol : float, optional
        Gauss-Kronrod only: bound on |NLM_K21 - NLM_G10| per row (default
        1e-6). Rows above it are recomputed on 2, 4, ... sub-intervals.
    nlm_max_level : int, optional
        Gauss-Kronrod only: at most 2**nlm_max_level sub-intervals (default
        5, i.e. at most 21 * 32 = 672 predictions per row); rows still above
        ``nlm_tol`` get ``nlm_status='inaccurate'``.
    nlm_flat_tol : float, optional
        A path is ``flat`` (NLM set to NaN) when the SD of f along it is at
        most ``nlm_flat_tol`` (default 1e-6) times the SD of all predictions
        f(x), f(x + h) of the evaluated rows; ``constant`` paths (NLM 0/0)
        are counted apart.
    nlm_linear_threshold : float, default=0.9
        NLM level counted by ``result.share_linear``.
    extrapolation : str or detector, optional
        ``"envelope"`` or any registered detector name, or an object with
        ``fit(reference)`` and ``flag(points)``. Both x and x + h are checked.
    reference_data : DataFrame, optional
        Data the detector is fitted on and step rules are computed from: pass
        the training data. Default: ``data``.
    on_extrapolation : {'exclude', 'keep', 'shrink'}, optional
        What to do with extrapolation points (default ``'exclude'`` when a
        detector is set): leave them out, keep and flag them, or shrink each
        row's numeric steps until x + h is inside (rows whose x is outside are
        excluded, and so are rows whose step would shrink below
        ``fme._shrink.MIN_STEP_FRACTION`` = 1 % of h; ``summary()`` shows the
        distribution of the effective steps).
    target_class : label or 'all', optional
        For classifiers: the class whose probability is explained.
    batch_size : int, optional
        Rows per batch; by default all rows (fMEs) or as many as keep one
        stacked NLM frame under ~50 million cells (at least 100 000).
    random_state : int or Generator, optional
        Passed to randomised detectors.
    inference : {'auto', 'delta', 'bootstrap', 'sample'}, default='auto'
        Uncertainty of the AME (:attr:`FMEResult.std_error`, ``conf_int()``,
        ``tidy()``), see :mod:`fme.inference`: ``delta`` (parameter
        covariance; statsmodels results or the protocol of
        :mod:`fme._delta`), ``bootstrap`` (refits, needs ``bootstrap``),
        ``sample`` (spread over the rows with the model fixed, paper §5.5).
        ``auto``: bootstrap if ``bootstrap`` is given, else delta where
        supported, else sample.
    bootstrap : dict, optional
        Training data and options of the refits, see :mod:`fme._bootstrap`.
    conf_level : float, default=0.95
        Default level of ``conf_int()`` and ``tidy()``.

    Returns
    -------
    FMEResult

    Raises
    ------
    DataError, FeatureError, StepError, ModelError, PredictionError, ExtrapolationError, ParameterError

    Examples
    --------
    >>> import pandas as pd, fme
    >>> X = pd.DataFrame({"x": [-2.0, 0.0, 1.0]})
    >>> res = fme.fme(lambda d: d["x"] ** 2, X, {"x": 1}, nlm=True)
    >>> res.results["fme"].tolist()
    [-3.0, 1.0, 3.0]
    """
    check_data(data)
    conf_level = check_conf_level(conf_level)
    predictor = make_predictor(model, target_class)
    data = model_frame(model, data)  # C(x) of a statsmodels formula: x is categorical
    method = resolve_inference(inference, model, bootstrap, predictor.output_names is not None)
    if reference_data is not None:
        reference_data = model_frame(model, check_data(reference_data, "reference_data"))
    reference = data if reference_data is None else reference_data
    parsed = parse_steps(data, steps, rule_data=reference)
    if predictor.feature_names is not None:
        unused = [s.feature for s in parsed if s.feature not in predictor.feature_names]
        if unused:
            raise FeatureError(
                f"feature(s) {unused} are not inputs of the model (it was fitted on {predictor.feature_names}); "
                "their fME would be 0 by construction."
            )
    settings = None
    if nlm:
        categorical = [s.feature for s in parsed if not s.is_numeric]
        if categorical:
            raise StepError(
                f"the NLM is defined along a numeric path only; feature(s) {categorical} have categorical steps. "
                "Use nlm=False for categorical or mixed steps."
            )
        columns = list(predictor.select(data.iloc[:0]).columns)
        settings = resolve_method(None if isinstance(model, Predictor) else model, nlm_method, nlm_points,
                                  nlm_intervals, parsed, columns, nlm_tol, nlm_max_level, nlm_flat_tol,
                                  target_class=target_class)
    elif any(v is not None for v in (nlm_points, nlm_intervals, nlm_tol, nlm_max_level, nlm_flat_tol)):
        raise ParameterError("nlm_points/nlm_intervals/nlm_tol/nlm_max_level/nlm_flat_tol were given but "
                             "nlm=False; pass nlm=True.")
    if isinstance(nlm_linear_threshold, bool) or not isinstance(nlm_linear_threshold, numbers.Real) \
            or not np.isfinite(nlm_linear_threshold) or nlm_linear_threshold > 1:
        raise ParameterError(f"nlm_linear_threshold must be a finite number <= 1, got {nlm_linear_threshold!r}.")
    rule = None if settings is None else settings.rule
    batch_size = _check_batch_size(batch_size)
    if on_extrapolation is not None and on_extrapolation not in ON_EXTRAPOLATION:
        raise ParameterError(f"on_extrapolation must be one of {ON_EXTRAPOLATION}, got {on_extrapolation!r}.")
    if on_extrapolation is not None and extrapolation is None:
        raise ParameterError("on_extrapolation was given without a detector; pass extrapolation='envelope' (or another).")
    policy = None if extrapolation is None else (on_extrapolation or "exclude")
    if policy == "shrink" and any(not s.is_numeric for s in parsed):
        raise StepError(
            "on_extrapolation='shrink' is not defined for categorical steps (a level cannot be shrunk); "
            "use 'exclude' or 'keep'."
        )

    X_all = predictor.select(data)
    n_all = len(data)
    index = data.index
    # Exclusion bookkeeping: an int code per row, strings only for the rows left out
    # (object arrays over all rows cost more than a cheap model's predict).
    code = np.zeros(n_all, dtype=np.int8)
    notes: list[tuple[np.ndarray, Any, Any]] = []
    for s in parsed:
        col = data[s.feature]
        miss = col.isna().to_numpy() & (code == 0)
        code[miss] = 1
        notes.append((np.flatnonzero(miss), "", f"missing value in {s.feature}"))
        if s.is_numeric:
            # +-inf: no finite step from there; left out and counted like a missing value
            inf = np.isinf(col.to_numpy(dtype=float, na_value=np.nan)) & (code == 0)
            code[inf] = 1
            notes.append((np.flatnonzero(inf), "", f"infinite value in {s.feature}"))
        if not s.is_numeric:
            # nullable dtypes ("string", "boolean") compare to <NA> on missing values
            at = (col == s.value).to_numpy(dtype=bool, na_value=False) & (code == 0)
            code[at] = 2
            notes.append((np.flatnonzero(at), "", f"{s.feature} already at level {s.value!r}"))
    cand = np.flatnonzero(code == 0)
    if cand.size == 0:
        raise DataError(
            f"no row can be evaluated for the step {', '.join(s.describe() for s in parsed)}: every row has a "
            "missing or infinite value in a stepped feature or is already at the target level."
        )
    X = X_all.iloc[cand]
    h = None
    extra_cols: dict[str, np.ndarray] = {}
    detector_name = None
    if extrapolation is not None:
        detector = make_detector(extrapolation, random_state)
        detector_name = getattr(detector, "name", type(detector).__name__)
        cols = _detector_columns(predictor, data, reference)
        call_detector(detector, "fit", reference[cols], "fit(reference_data)")
        flag_x = _check_flags(call_detector(detector, "flag", X[cols], "x"), len(X), detector)
        moved = apply_steps(X, parsed)[cols]
        flag_xh = _check_flags(call_detector(detector, "flag", moved, "x + h"), len(X), detector)
        if policy == "shrink":
            h = shrink_steps(detector, cols, X, parsed, flag_xh & ~flag_x)
            flag_xh = flag_xh & ~flag_x & (np.abs(np.column_stack(list(h.values()))).max(axis=1) == 0)
        ep = flag_x | flag_xh
        pts = np.where(flag_x & flag_xh, "x and x+h", np.where(flag_x, "x", np.where(flag_xh, "x+h", "")))
        why = _explain(detector, X[cols], flag_x)
        why_h = _explain(detector, moved, flag_xh)
        why = np.where(flag_x & flag_xh, why + " | x+h: " + why_h, np.where(flag_xh, why_h, why))
        if policy == "shrink":
            why = np.where(flag_xh & ~flag_x, f"no step of at least {MIN_STEP_FRACTION:g} h stays inside", why)
        if policy == "keep":
            extra_cols["extrapolation"] = ep
            extra_cols["extrapolation_point"] = pts
        else:
            code[cand[ep]] = 3
            notes.append((cand[ep], pts[ep], why[ep]))
            keep = ~ep
            if not keep.any():
                raise ExtrapolationError(_all_excluded_message(parsed, reference, len(X)))
            cand, X = cand[keep], X.iloc[keep]
            if h is not None:
                h = {k: v[keep] for k, v in h.items()}
    fast = None
    if method == "delta" and settings is None and predictor.output_names is None:
        # statsmodels GLM-type models: predictions and Jacobian from one design matrix per point set
        fast = evaluate_with_jacobian(model, X, apply_steps(X, parsed, h))
    status = None
    if fast is not None:
        f0, f1, rows = fast
        nlm_values = None
    else:
        f0, f1, nlm_values, nlm_sd = _evaluate(predictor, X, parsed, rule, batch_size, h)
        rows = None
        if settings is not None and rule is not None:
            nlm_values, status = classify(nlm_values, nlm_sd, f0, f1, settings.flat_tol)
        elif settings is not None:
            nlm_values, status = _nlm_values(settings, predictor, X, parsed, h, f0, f1, batch_size)
    out_index = index[cand]
    names = predictor.output_names
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
    results = pd.DataFrame(res, index=out_index)
    if names is None:
        predictions = pd.DataFrame({"f_x": f0, "f_x_step": f1}, index=out_index)
    else:
        predictions = pd.DataFrame(
            {**{f"f_x_{c}": f0[:, j] for j, c in enumerate(names)},
             **{f"f_x_step_{c}": f1[:, j] for j, c in enumerate(names)}}, index=out_index)
    excluded = _excluded_frame(code, notes, index)
    if names is None and rows is None:
        # 'sample' needs only the fMEs: the stepped frame is built for delta and bootstrap alone
        rows = sample_inference(res["fme"]) if method == "sample" else compute_rows(
            method, model, [(X, apply_steps(X, parsed, h))], [res["fme"]], [f0], bootstrap, target_class)[0]
    return FMEResult(
        results=results,
        steps=parsed,
        excluded=excluded,
        data=data,
        predictions=predictions,
        model_description=predictor.description,
        output_names=None if names is None else tuple(names),
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=float(nlm_linear_threshold),
        detector=detector_name,
        on_extrapolation=policy,
        model_features=None if predictor.feature_names is None else tuple(predictor.feature_names),
        inference_rows=rows,
        conf_level=conf_level,
        positions=cand,
    )


def stepped_frames(result: FMEResult, model: Any, target_class: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluation points and the stepped points (the model's columns) of ``result``'s evaluated rows."""
    X = make_predictor(model, target_class).select(result.data).iloc[result.positions]
    h = None
    if any(f"step_{s.feature}" in result.results.columns for s in result.steps):
        h = {s.feature: result.results[f"step_{s.feature}"].to_numpy(dtype=float) for s in result.steps}
    return X, apply_steps(X, result.steps, h)
