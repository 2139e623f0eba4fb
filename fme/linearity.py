"""The largest approximately linear step: the NLM procedure reversed (paper §5.4, last paragraph).

"Instead of conditioning on pre-specified feature changes, we may also reverse
the procedure and optimize the NLM by adjusting the step sizes" (e.g. the
largest steps in age and weight whose fME on the disease risk has NLM >= 0.9).
:func:`max_linear_step` does this along a fixed direction: it searches the
scale s of the step h = s * v for every observation at once.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._adapters.predictor import Predictor, make_predictor
from ._core.kernel import evaluate_steps
from ._core.plan import check_batch_size
from ._nlm.evaluate import nlm_values, resolve_method
from ._utils.validation import check_data
from .exceptions import ParameterError, StepError
from .steps import parse_steps

__all__ = ["max_linear_step", "LINEAR_STEP_STATUS"]

#: Values of the ``status`` column of :func:`max_linear_step`.
LINEAR_STEP_STATUS = ("ok", "max_scale reached", "nonlinear at smallest scale")


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a finite positive number, got {value!r}.")
    return float(value)


def _direction(features: Any, direction: Any) -> dict[str, Any]:
    feats = [features] if isinstance(features, str) else list(features)
    if not feats:
        raise StepError("`features` is empty; name at least one numeric feature to step.")
    if len(set(feats)) != len(feats):
        raise StepError(f"`features` has duplicates: {feats}.")
    if isinstance(direction, Mapping):
        if set(direction) != set(feats):
            raise StepError(
                f"`direction` must give one component for each of the features {feats}, got keys {list(direction)}."
            )
        return {f: direction[f] for f in feats}
    if isinstance(direction, (numbers.Real, str)):
        direction = [direction]
    if not isinstance(direction, Sequence) or len(direction) != len(feats):
        raise StepError(
            f"`direction` must be a dict feature -> component or a sequence of {len(feats)} components, "
            f"got {direction!r}."
        )
    return dict(zip(feats, direction))


def max_linear_step(
    model: Any,
    x: pd.DataFrame,
    features: str | Sequence[str],
    direction: Mapping[str, Any] | Sequence[Any] | float,
    nlm_threshold: float = 0.9,
    *,
    min_scale: float = 1e-3,
    max_scale: float = 1e3,
    growth: float = 2.0,
    tol: float = 1e-9,
    nlm_method: str = "auto",
    nlm_points: int | None = None,
    nlm_intervals: int | None = None,
    reference_data: pd.DataFrame | None = None,
    target_class: Any = None,
    batch_size: int | None = None,
) -> pd.DataFrame:
    """Largest multiple of a step direction whose fME is approximately linear.

    For every row x of ``x`` and the direction v (one component per feature),
    find the largest scale s in [``min_scale``, ``max_scale``] with
    NLM(x, s v) >= ``nlm_threshold``, by a bracketing search run for all rows
    at once on the batched NLM (no loop over rows, no prediction per row):

    1. s = ``min_scale``: rows whose NLM is already below the threshold get
       status ``"nonlinear at smallest scale"`` (scale NaN).
    2. Growth: s is multiplied by ``growth`` (capped at ``max_scale``) while
       the NLM stays >= threshold; rows still linear at ``max_scale`` get
       status ``"max_scale reached"`` and scale ``max_scale``.
    3. Bisection on [last s with NLM >= threshold, first s with NLM <
       threshold] until the bracket is narrower than ``tol`` relative to its
       upper end; the lower end is returned (status ``"ok"``).

    The NLM is in general *not* monotone in the step (a prediction function
    can bend and straighten again), so the answer is the first crossing of
    the threshold found by this bracketing: the largest s such that the NLM
    is >= threshold at s and at every scale the growth phase tried below s
    (``min_scale * growth**k``), with a crossing within a factor ``growth``
    above s. Larger linear scales beyond that crossing, and dips below the
    threshold between two tried scales, are not seen. For a function whose
    NLM decreases with the step (e.g. a quadratic on one side of its
    extremum) it is the exact answer.

    A path on which the prediction is constant has an undefined NLM (0/0);
    it is treated as linear (the secant reproduces f exactly).

    Parameters
    ----------
    model : estimator, Pipeline, object with ``predict`` or callable
        See :func:`fme._adapters.predictor.make_predictor`.
    x : DataFrame
        One observation (a 1-row DataFrame) or many; all rows are searched.
    features : str or sequence of str
        The numeric features stepped together (multivariate step, §5.2).
    direction : dict feature -> component, sequence, or number
        The direction v; a component may be a rule such as ``"sd"`` (computed
        on ``reference_data``). The step is h = s * v.
    nlm_threshold : float, default=0.9
        "Approximately linear" means NLM >= this (the paper's example: 0.9).
        Must be < 1 (NLM <= 1 always).
    min_scale, max_scale : float, default=1e-3 and 1e3
        Search range for s.
    growth : float, default=2
        Factor of the geometric growth phase (> 1).
    tol : float, default=1e-9
        Relative width of the final bracket.
    nlm_method, nlm_points, nlm_intervals
        How the NLM is computed, as in :func:`fme.fme`: the default ``"auto"``
        is exact for the tree models of :mod:`fme._nlm.exact` (no quadrature
        error, so the bracketing sees the model's true NLM) and error-controlled
        Gauss-Kronrod otherwise; ``"gauss-legendre"`` (``nlm_points``) or
        ``"simpson38"`` (``nlm_intervals``) fix a rule. Paths are never
        classed ``flat`` here (``nlm_flat_tol=0``): the search starts from
        deliberately small steps, whose variation is small by design.
    reference_data : DataFrame, optional
        Data for rule components (default: ``x``).
    target_class : label, optional
        For classifiers: the class whose probability is explained.
    batch_size : int, optional
        Rows per batch of the NLM evaluation.

    Returns
    -------
    DataFrame
        Indexed like ``x``: ``scale``, one ``step_<feature>`` column (the
        step s * v_j), ``nlm`` (at the returned step; at ``min_scale`` for
        ``"nonlinear at smallest scale"``, NaN where undefined), ``status``
        (one of :data:`LINEAR_STEP_STATUS`).

    Raises
    ------
    DataError, FeatureError, StepError, ParameterError, ModelError, PredictionError

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"x": [1.0, 2.0]})
    >>> out = max_linear_step(lambda d: d["x"] ** 2, X, "x", {"x": 1.0})
    >>> out["scale"].round(4).tolist()   # analytic: 2.0341 * x
    [2.0341, 4.0682]
    """
    x = check_data(x, "x")
    predictor = make_predictor(model, target_class)
    if (
        isinstance(nlm_threshold, bool)
        or not isinstance(nlm_threshold, numbers.Real)
        or not (np.isfinite(nlm_threshold) and nlm_threshold < 1.0)
    ):
        raise ParameterError(f"nlm_threshold must be a finite number < 1 (e.g. 0.9), got {nlm_threshold!r}.")
    lo_s, hi_s = _positive(min_scale, "min_scale"), _positive(max_scale, "max_scale")
    if lo_s >= hi_s:
        raise ParameterError(f"min_scale ({lo_s}) must be smaller than max_scale ({hi_s}).")
    growth = _positive(growth, "growth")
    if growth <= 1:
        raise ParameterError(f"growth must be > 1, got {growth}.")
    tol = _positive(tol, "tol")
    batch_size = check_batch_size(batch_size)
    steps = parse_steps(x, _direction(features, direction), rule_data=reference_data)
    categorical = [s.feature for s in steps if not s.is_numeric]
    if categorical:
        raise StepError(f"the NLM is defined along a numeric path only; feature(s) {categorical} are categorical.")
    X = predictor.select(x)
    settings = resolve_method(
        None if isinstance(model, Predictor) else model,
        nlm_method,
        nlm_points,
        nlm_intervals,
        steps,
        list(X.columns),
        None,
        None,
        0.0,
        target_class=target_class,
    )
    rule = settings.rule
    for s in steps:
        vals = x[s.feature].to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(vals)
        if bad.any():
            raise StepError(
                f"feature {s.feature!r} has {int(bad.sum())} missing or infinite value(s) (first at index label "
                f"{x.index[np.flatnonzero(bad)[0]]!r}); max_linear_step needs finite values: drop those rows, "
                f"e.g. x.dropna(subset=[{s.feature!r}])."
            )
    v = {s.feature: float(s.value) for s in steps}
    n = len(X)

    def nlm_at(rows: np.ndarray, scale: np.ndarray) -> np.ndarray:
        h = {f: comp * scale for f, comp in v.items()}
        if rule is not None:  # a fixed rule, as before
            out = evaluate_steps(predictor, X.iloc[rows], steps, rule, batch_size, h).nlm
        else:  # exact (trees) or adaptive Gauss-Kronrod
            Xr = X.iloc[rows]
            got = evaluate_steps(predictor, Xr, steps, None, batch_size, h)
            out, _ = nlm_values(settings, predictor, Xr, steps, h, got.f0, got.f1, batch_size)
        out = np.asarray(out, dtype=float)
        if out.ndim != 1:
            raise ParameterError("max_linear_step needs a single output; pass target_class for classifiers.")
        return out

    def linear(val: np.ndarray) -> np.ndarray:
        # Constant path: NLM undefined (0/0) but the secant is exact, so count it as linear.
        return np.isnan(val) | (val >= nlm_threshold)

    good = np.full(n, lo_s)  # largest scale known to satisfy NLM >= threshold
    bad = np.full(n, np.nan)  # smallest scale known to violate it (above `good`)
    status = np.full(n, "ok", dtype=object)
    nlm_good = nlm_at(np.arange(n), good)
    fail0 = ~linear(nlm_good)
    status[fail0] = "nonlinear at smallest scale"
    # Growth phase, all unresolved rows per pass.
    grow = np.flatnonzero(~fail0)
    while grow.size:
        trial = np.minimum(good[grow] * growth, hi_s)
        val = nlm_at(grow, trial)
        ok = linear(val)
        good[grow[ok]], nlm_good[grow[ok]] = trial[ok], val[ok]
        bad[grow[~ok]] = trial[~ok]
        capped = ok & (trial >= hi_s)
        status[grow[capped]] = "max_scale reached"
        grow = grow[ok & ~capped]
    # Bisection on the brackets [good, bad].
    todo = np.flatnonzero(~np.isnan(bad))
    while todo.size:
        todo = todo[(bad[todo] - good[todo]) > tol * bad[todo]]
        if not todo.size:
            break
        mid = 0.5 * (good[todo] + bad[todo])
        val = nlm_at(todo, mid)
        ok = linear(val)
        good[todo[ok]], nlm_good[todo[ok]] = mid[ok], val[ok]
        bad[todo[~ok]] = mid[~ok]
    scale = np.where(fail0, np.nan, good)
    out = {"scale": scale}
    for f, comp in v.items():
        out[f"step_{f}"] = scale * comp
    out["nlm"] = nlm_good
    out["status"] = status.astype(str)
    return pd.DataFrame(out, index=x.index)
