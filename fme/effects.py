"""Forward marginal effects and their non-linearity measure (paper §3.2, §5.1, §5.2, §5.4).

``fme(model, data, steps)`` evaluates, for every observation x,

    fME = f(x_S + h_S, x_-S) - f(x)                      (Eq. multivariate_fME)

with numeric steps ``h`` and/or categorical target levels (Eq.
new_categorical_me), optionally the NLM along gamma(t) = x + t h, after
leaving out (or shrinking) steps that leave the data (extrapolation).

Cost: two batched ``predict`` calls per batch for the fMEs, plus one for all
interior quadrature nodes of the NLM; never a call per row.

Structure (scikit-learn inspection style): :func:`fme` gathers its keyword
arguments into one :class:`~fme._core.plan.FMEOptions` record, validates the
data and the options once into a plan (:func:`fme._core.plan.front_plan`,
:func:`fme._core.plan.resolve_plan`) and hands the plan to an engine, the
in-memory one (:func:`fme._local.effects.fme`) or the Dask one
(:func:`fme._dask.effects.fme`). The engine derives the steps' plan
(:meth:`~fme._core.plan.Plan.with_steps`), runs the batch kernel
(:func:`fme._core.kernel.evaluate_batch`: exclusion bookkeeping by
:mod:`fme._core.exclusions`, then the predictions), refuses a step that leaves
no row (:func:`fme._core.exclusions.check_evaluated`) and assembles the result
(:class:`FMEResult`, whose class lives in :mod:`fme._core.results`).

Beside it, for pandas or Dask data alike: :func:`feature_sd`, the SD the step rule ``"sd"`` reads, and
:data:`DASK_SAMPLE_SIZE`, the default ``sample_size`` of Dask data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._core.plan import ON_EXTRAPOLATION, FMEOptions, front_plan, resolve_plan  # noqa: F401 - public path of the plan
from ._core.results import FMEResult, stepped_frames  # noqa: F401 - FMEResult's public path
from ._core.summary import Moments
from ._dask import effects as dask_effects
from ._dask.common import FIT_SAMPLE_SIZE
from ._dask.steps import lazy_moments
from ._local import arrays as local_arrays
from ._local import effects as local_effects
from ._utils.validation import check_data, is_categorical, is_dask_collection
from .exceptions import FeatureError
from .inference.vcov import with_vcov

__all__ = ["FMEResult", "fme", "ON_EXTRAPOLATION", "DASK_SAMPLE_SIZE", "feature_sd"]

#: Dask data: the default ``sample_size`` of :func:`fme` (at most this many reference rows, seeded, fit the
#: detectors other than the envelope: :attr:`fme._dask.result.DaskFMEResult.detector_frame`) and of
#: :func:`fme.came` (at most this many evaluated rows grow its tree; every row then counts in the subspaces).
DASK_SAMPLE_SIZE: int = FIT_SAMPLE_SIZE


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
    nlm_budget: float | None = None,
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
    exposure: Any = None,
    offset: Any = None,
    vcov: Any = None,
    feature_names: Any = None,
) -> FMEResult:
    """Forward marginal effects (and NLMs) of ``model`` for every row of ``data``.

    Parameters
    ----------
    model : estimator, Pipeline, statsmodels results, object with ``predict`` or callable
        Any prediction function; see :func:`fme._adapters.predictor.make_predictor`.
    data : DataFrame or array
        Observations at which to evaluate (paper: the evaluation points D). Also an array of the Python array
        API standard (NumPy, CuPy, a PyTorch tensor, ...) with ``feature_names``: a model that is a plain
        function of an array is then called with arrays of the data's library on its device, where the
        stepped points and the NLM's paths are built; only the predictions come to the host
        (:mod:`fme._local.arrays`; numeric steps, no detector, ``inference='sample'``). Any other model reads
        the array converted once to a DataFrame on the host.
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
        Pipelines ending in one; :mod:`fme._nlm.exact`); a ``ParameterError``
        for other models. ``gauss-kronrod``: 21-node Gauss-Kronrod with a
        per-row error estimate, refined within ``nlm_budget`` by adaptive
        bisection or, where the predictions tie between neighbouring nodes
        (a wrapped tree model), by locating the jumps and integrating the
        constant pieces in closed form (columns ``nlm_error``, ``nlm_route``;
        :mod:`fme._nlm.budget`).
        ``gauss-legendre``: fixed Gauss-Legendre nodes (default 16).
        ``simpson38``: the composite Simpson 3/8 rule of the paper's code
        and R's fmeffects. ``auto``: exact where supported, else
        gauss-kronrod (gauss-legendre if ``nlm_points``, simpson38 if
        ``nlm_intervals`` is given). The method used is ``result.nlm_method``.
    nlm_points, nlm_intervals : int, optional
        Gauss-Legendre nodes / Simpson 3/8 sub-intervals.
    nlm_tol : float, optional
        Gauss-Kronrod only: the error per row to reach (default 1e-6): the
        estimate max(|NLM_K21 - NLM_G10|, sum over sub-intervals) on the
        quadrature route, a bound on the jump route. Rows still above it
        after the budget get ``nlm_status='inaccurate'`` (their NLM is kept
        and counted in the ANLM; the estimate is in ``nlm_error``).
    nlm_max_level : int, optional
        Gauss-Kronrod only: at most 2**nlm_max_level sub-intervals per row
        on the quadrature route (default 5).
    nlm_budget : float, optional
        Gauss-Kronrod only: predictions per evaluated row on average for the
        whole call, f(x) and f(x + h) included (default 34: the 23 of the
        Gauss-Kronrod pair plus 11 per row of refinement, spent on the rows
        and sub-intervals with the largest errors). At least 23. A larger
        budget buys accuracy.
    nlm_flat_tol : float, optional
        The NLM is undefined (NaN) when the path varies only at the level of
        the floating-point rounding of its own values: ``constant`` up to
        64 eps (|f(x)| + max |f - f(x)|), ``flat`` up to 256 eps times that
        (:data:`fme.nlm.FLAT_ULPS`), whatever the other rows. With
        ``nlm_flat_tol`` > 0 (default 0: off) a path is also ``flat`` when
        the SD of f along it is at most ``nlm_flat_tol`` times the SD of all
        predictions f(x), f(x + h) of the evaluated rows.
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
        ``fme.steps.MIN_STEP_FRACTION`` = 1 % of h; ``summary()`` shows the
        distribution of the effective steps).
    target_class : label or 'all', optional
        For classifiers: the class whose probability is explained.
    batch_size : int, optional
        Rows per batch; by default all rows (fMEs) or as many as keep one
        stacked NLM frame under ~50 million cells (at least 100 000).
    random_state : int or Generator, optional
        Passed to randomised detectors (None: their seed 0, so that the same call flags the same rows; a
        Generator for draws of its own).
    inference : {'auto', 'delta', 'bootstrap', 'sample'}, default='auto'
        Uncertainty of the AME (:attr:`FMEResult.std_error`, ``conf_int()``,
        ``tidy()``), see :mod:`fme.inference`: ``delta`` (parameter
        covariance; statsmodels results or the protocol of
        :mod:`fme.inference.delta`), ``bootstrap`` (refits, needs ``bootstrap``),
        ``sample`` (spread over the rows with the model fixed, paper §5.5).
        ``auto``: bootstrap if ``bootstrap`` is given, else delta where
        supported, else sample.
    bootstrap : dict, optional
        Training data and options of the refits, see :mod:`fme.inference.bootstrap`.
    conf_level : float, default=0.95
        Default level of ``conf_int()`` and ``tidy()``.
    sample_size : int, optional
        Dask data only: the detectors other than the envelope are fitted on a
        seeded sample (``random_state``) of at most this many reference rows
        (default 10**6; all rows when there are no more). The envelope always
        uses all rows (min/max reductions).
    vcov : {'HC0', 'HC1', 'HC2', 'HC3'}, {'cluster': column} or array, optional
        The delta method's parameter covariance (see :func:`fme.ame`); the caller's model is not modified.
    feature_names : sequence of column labels, optional
        The model's inputs in the model's order, for a model fitted on an array (no ``feature_names_in_``:
        it reads columns by position); such a model without them raises :class:`~fme.exceptions.DataError`,
        since a frame's columns in another order would silently be other features. A model that names its
        inputs needs none. Required with an array as ``data``: the names of its columns, in order. A list, tuple,
        pandas Index or 1-D array (such as an estimator's ``feature_names_in_``) of distinct labels.
    progress : bool, optional
        Progress bars for long work (more than one batch of fMEs or of the
        NLM's rows; Dask passes): default on a terminal only, unless
        ``FME_PROGRESS=0``.
    exposure, offset : str, number or array-like, optional
        For statsmodels count models fitted with ``exposure=`` or ``offset=``: each row's exposure
        (offset), as a column name of ``data``, one number for all rows (``exposure=1``: the rate per
        unit of exposure) or an array with one value per row. By default the model's own exposure is
        used, as Stata's ``margins`` does, when a column of ``data`` holds it (found by value among the
        training data's columns); a model whose exposure no column provides raises
        :class:`~fme.DataError` naming it. ``result.scale`` and ``summary()`` say which scale was used.
        The delta method differentiates the same predictions.

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
    model = with_vcov(model, vcov)[0]
    options = FMEOptions(
        nlm=nlm,
        nlm_method=nlm_method,
        nlm_points=nlm_points,
        nlm_intervals=nlm_intervals,
        nlm_tol=nlm_tol,
        nlm_max_level=nlm_max_level,
        nlm_budget=nlm_budget,
        nlm_flat_tol=nlm_flat_tol,
        nlm_linear_threshold=nlm_linear_threshold,
        extrapolation=extrapolation,
        reference_data=reference_data,
        on_extrapolation=on_extrapolation,
        target_class=target_class,
        batch_size=batch_size,
        random_state=random_state,
        inference=inference,
        bootstrap=bootstrap,
        conf_level=conf_level,
        sample_size=sample_size,
        progress=progress,
        exposure=exposure,
        offset=offset,
        feature_names=feature_names,
    )
    # Validated once here (the data, the options into a plan); the engines trust the plan, neither calls back here.
    planned = front_plan(model, data, options, "fme.fme")
    if planned.on_arrays:
        return local_arrays.fme(planned.plan, planned.data, planned.reference, steps)
    engine = dask_effects if planned.on_dask else local_effects
    return engine.fme(planned.plan, planned.data, planned.reference, steps)


def feature_sd(data: Any, columns: list[str]) -> pd.DataFrame:
    """The number and the SD of the finite values of each column, as the step rule ``"sd"`` reads them.

    Parameters
    ----------
    data : DataFrame or dask.dataframe.DataFrame
    columns : list of str
        Numeric columns of ``data``.

    Returns
    -------
    DataFrame
        Indexed by column: ``n`` (the finite values; missing and infinite ones are left out) and ``sd``
        (divisor n - 1, as :func:`fme.steps.step_size`; NaN below two values). On Dask data both come from
        per-partition moments merged exactly (Chan et al.), in one pass and without gathering a column: equal
        to the in-memory figures to ~1e-15 relative, where a sum-of-squares variance loses digits at a large
        mean.

    Raises
    ------
    FeatureError
        For a column ``data`` lacks or a categorical (text) one.
    """
    on_dask = is_dask_collection(data)
    frame = data if on_dask else check_data(data)
    cols = list(columns)
    meta = frame._meta if on_dask else frame
    missing = [c for c in cols if c not in meta.columns]
    if missing:
        raise FeatureError(f"data lack the column(s) {missing}; pass columns of data.")
    text = [c for c in cols if is_categorical(meta[c])]
    if text:
        raise FeatureError(f"column(s) {text} are categorical; an SD needs numeric columns.")
    if not cols:
        return pd.DataFrame({"n": pd.Series(dtype=int), "sd": pd.Series(dtype=float)})
    if on_dask:
        moments = lazy_moments(frame, cols).compute()
    else:
        values = frame[cols].to_numpy(dtype=float, na_value=np.nan)
        moments = Moments.of(np.where(np.isfinite(values), values, np.nan))
    return pd.DataFrame({"n": moments.n.astype(int), "sd": moments.sd(ddof=1)}, index=pd.Index(cols))
