"""Forward marginal effects and their non-linearity measure (paper §3.2, §5.1, §5.2, §5.4).

``fme(model, data, steps)`` evaluates, for every observation x,

    fME = f(x_S + h_S, x_-S) - f(x)                      (Eq. multivariate_fME)

with numeric steps ``h`` and/or categorical target levels (Eq.
new_categorical_me), optionally the NLM along gamma(t) = x + t h, after
leaving out (or shrinking) steps that leave the data (extrapolation).

Cost: two batched ``predict`` calls per batch for the fMEs, plus one for all
interior quadrature nodes of the NLM; never a call per row.

Structure (scikit-learn inspection style): :func:`fme` validates its
arguments and resolves them into a plan (:func:`resolve_plan`), then
:func:`_evaluate_frame` fits the detector and runs the batch kernel
(:func:`fme._core.kernel.evaluate_batch`: exclusion bookkeeping by
:mod:`fme._core.exclusions`, then the predictions), then
:func:`fme._core.exclusions.check_evaluated` refuses a step that leaves no row and
:func:`_result` assembles the :class:`FMEResult`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ._utils.stats import describe
from ._utils.validation import check_conf_level, check_data
from ._core.exclusions import check_evaluated
from ._utils.guards import call_detector
from ._core.kernel import Batch, Plan, _check_batch_size, _detector_columns, evaluate_batch
from ._models import model_frame
from ._core.shrink import MIN_STEP_FRACTION
from .exceptions import FeatureError, ParameterError, StepError
from .extrapolation import make_detector
from .inference._estimates import RowInference, sample_inference
from .inference._methods import resolve_method as resolve_inference
from ._nlm.evaluate import NLMSummaryMixin, resolve_method
from .predictors import Predictor, make_predictor
from .steps import Step, apply_steps, parse_steps


def is_dask_collection(obj: Any) -> bool:
    """True for a Dask DataFrame (checked by module name: dask stays an optional dependency)."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr") and hasattr(obj, "npartitions")


__all__ = ["FMEResult", "fme", "ON_EXTRAPOLATION"]

ON_EXTRAPOLATION = ("exclude", "keep", "shrink")


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
    sample_size: int | None = None,
    progress: bool | None = None,
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
        ``fme._core.shrink.MIN_STEP_FRACTION`` = 1 % of h; ``summary()`` shows the
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
        :mod:`fme.inference._delta`), ``bootstrap`` (refits, needs ``bootstrap``),
        ``sample`` (spread over the rows with the model fixed, paper §5.5).
        ``auto``: bootstrap if ``bootstrap`` is given, else delta where
        supported, else sample.
    bootstrap : dict, optional
        Training data and options of the refits, see :mod:`fme.inference._bootstrap`.
    conf_level : float, default=0.95
        Default level of ``conf_int()`` and ``tidy()``.
    sample_size : int, optional
        Dask data only: the detectors other than the envelope are fitted on a
        seeded sample (``random_state``) of at most this many reference rows
        (default 10**6; all rows when there are no more). The envelope always
        uses all rows (min/max reductions).
    progress : bool, optional
        Progress bars for long work (more than one batch of fMEs or of the
        NLM's rows; Dask passes): default on a terminal only, unless
        ``FME_PROGRESS=0``.

    ``data`` may be a ``dask.dataframe.DataFrame`` (``pip install 'fme[dask]'``):
    the result is then a :class:`fme._dask.effects.DaskFMEResult` whose summaries equal
    those of the pandas result on the same rows (to ~1e-15 relative; quartiles
    and medians exactly) and whose ``results`` is a lazy Dask DataFrame (for
    several outputs, ``target_class='all'``, a
    :class:`fme._dask.outputs.DaskMultiFMEResult` with figures per class); see
    :mod:`fme._dask.effects`.

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
    if is_dask_collection(data) or is_dask_collection(reference_data):
        from ._dask.effects import fme_dask

        return fme_dask(model, data, steps, nlm=nlm, nlm_method=nlm_method, nlm_points=nlm_points,
                        nlm_intervals=nlm_intervals, nlm_tol=nlm_tol, nlm_max_level=nlm_max_level,
                        nlm_flat_tol=nlm_flat_tol, nlm_linear_threshold=nlm_linear_threshold,
                        extrapolation=extrapolation, reference_data=reference_data,
                        on_extrapolation=on_extrapolation, target_class=target_class, batch_size=batch_size,
                        random_state=random_state, inference=inference, bootstrap=bootstrap,
                        conf_level=conf_level, sample_size=sample_size, progress=progress)
    # Everything is validated here, once (resolve_plan is shared with the Dask path); the workers trust the plan.
    check_data(data)
    data = model_frame(model, data)  # C(x) of a statsmodels formula: x is categorical
    if reference_data is not None:
        reference_data = model_frame(model, check_data(reference_data, "reference_data"))
    reference = data if reference_data is None else reference_data
    plan, conf_level = resolve_plan(
        model, data, steps, reference, nlm=nlm, nlm_method=nlm_method, nlm_points=nlm_points,
        nlm_intervals=nlm_intervals, nlm_tol=nlm_tol, nlm_max_level=nlm_max_level, nlm_flat_tol=nlm_flat_tol,
        nlm_linear_threshold=nlm_linear_threshold, extrapolation=extrapolation, on_extrapolation=on_extrapolation,
        target_class=target_class, batch_size=batch_size, inference=inference, bootstrap=bootstrap,
        conf_level=conf_level, random_state=random_state)
    if sample_size is not None:
        raise ParameterError("sample_size applies to Dask data only (the sample the detectors are fitted on); "
                             "a pandas frame is used whole.")
    batch = _evaluate_frame(replace(plan, progress=progress), data, reference)
    check_evaluated(plan, batch.code, lambda: reference)
    return _result(plan, batch, data, float(nlm_linear_threshold), conf_level)


def resolve_plan(model: Any, data: pd.DataFrame, steps: Mapping[str, Any], reference: pd.DataFrame, *,
                 nlm: bool, nlm_method: str, nlm_points: Any, nlm_intervals: Any, nlm_tol: Any, nlm_max_level: Any,
                 nlm_flat_tol: Any, nlm_linear_threshold: Any, extrapolation: Any, on_extrapolation: Any,
                 target_class: Any, batch_size: Any, inference: str, bootstrap: Any, conf_level: Any,
                 random_state: Any = None) -> tuple[Plan, float]:
    """Validate :func:`fme`'s arguments against ``data`` (any rows with the real columns and dtypes) and
    ``reference`` (rules, detector columns); the :class:`~fme._core.kernel.Plan` with an unfitted detector."""
    conf_level = check_conf_level(conf_level)
    predictor = make_predictor(model, target_class)
    method = resolve_inference(inference, model, bootstrap, predictor.output_names is not None)
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
    detector = cols = None
    if extrapolation is not None:
        detector = make_detector(extrapolation, random_state)
        cols = _detector_columns(predictor, data, reference)
    plan = Plan(model=model, predictor=predictor, steps=parsed, settings=settings, batch_size=batch_size,
                method=method, target_class=target_class, bootstrap=bootstrap, detector=detector,
                detector_cols=cols, policy=policy)
    return plan, conf_level


def _evaluate_frame(plan: Plan, data: pd.DataFrame, reference: pd.DataFrame) -> Batch:
    """Fit ``plan``'s detector on ``reference`` and evaluate every row of ``data`` at once (the kernel
    batches the predictions inside): exclusions, fMEs, NLMs and inference ingredients."""
    if plan.detector is not None:
        call_detector(plan.detector, "fit", reference[plan.detector_cols], "fit(reference_data)")
    return evaluate_batch(plan, data)


def _result(plan: Plan, batch: Batch, data: pd.DataFrame, threshold: float, conf_level: float) -> FMEResult:
    """The :class:`FMEResult` of an evaluated ``batch`` with at least one evaluated row."""
    settings, names, predictor = plan.settings, plan.names, plan.predictor
    detector_name = None
    if plan.detector is not None:
        detector_name = getattr(plan.detector, "name", type(plan.detector).__name__)
    return FMEResult(
        results=batch.results,
        steps=plan.steps,
        excluded=batch.excluded,
        data=data,
        predictions=batch.predictions,
        model_description=predictor.description,
        output_names=None if names is None else tuple(names),
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=threshold,
        detector=detector_name,
        on_extrapolation=plan.policy,
        model_features=None if predictor.feature_names is None else tuple(predictor.feature_names),
        inference_rows=batch.rows,
        conf_level=conf_level,
        positions=batch.cand,
    )


def stepped_frames(result: FMEResult, model: Any, target_class: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluation points and the stepped points (the model's columns) of ``result``'s evaluated rows."""
    X = make_predictor(model, target_class).select(result.data).iloc[result.positions]
    h = None
    if any(f"step_{s.feature}" in result.results.columns for s in result.steps):
        h = {s.feature: result.results[f"step_{s.feature}"].to_numpy(dtype=float) for s in result.steps}
    return X, apply_steps(X, result.steps, h)
