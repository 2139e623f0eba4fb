"""The data-level AME: the effect of the paper's forward step on the outcome in the data, E[mu(X + h) - mu(X)]
with mu(x) = E[Y | X = x], by a cross-fitted one-step (debiased) estimator with positivity diagnostics.

A model's AME (:func:`fme.ame`, paper §3.2) describes the model; where the step leaves the region the model
learnt from, its fME can be far from the change of the outcome. :func:`dgp_ame` estimates the latter with its
own uncertainty, and says (:mod:`fme.levels._positivity`) whether the data can support the shifted rows at all.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.groups import check_by, frame_groups
from .._core.result_base import with_class
from .._core.shrink import shrink_steps
from .._utils.numfmt import count
from .._utils.validation import align_rows, check_conf_level, check_data
from ..effects import fme as fme_effects
from ..exceptions import DataError, FeatureError, ParameterError, PositivityWarning, StepError
from ..extrapolation import make_detector
from ..extrapolation.guards import detector_name
from ..inference import EstimatesTable
from ..steps import MIN_STEP_FRACTION, Step, apply_steps, parse_steps, same_level, stepped_rows
from ._crossfit import (
    CLIP,
    Design,
    by_fold,
    class_proba,
    default_classifier,
    default_outcome,
    fit_learner,
    fold_labels,
    predict_mu,
    ratio_weights,
)
from ._positivity import diagnose
from .table import LABEL_COLUMNS, TABLE_COLUMNS, level_table

__all__ = ["dgp_ame", "shift_weights", "ON_EXTRAPOLATION", "COVERS", "RESERVED"]

#: What to do with moved rows outside the data (paper §4.2's remedies).
ON_EXTRAPOLATION = ("warn", "shrink", "exclude")
#: The ``covers`` column of the table: what the interval is about.
COVERS = "the outcome in the data (population)"
#: The table's own columns after :data:`~fme.levels.table.TABLE_COLUMNS` (``model_ame`` with ``model=``).
EXTRA_COLUMNS = [
    "contrast",
    "plug_in",
    "correction",
    "ess",
    "ess_share",
    "max_weight",
    "p99_weight",
    "propensity_min",
    "propensity_max",
    "share_extrapolated",
    "positivity",
    "n",
    "model_ame",
    "note",
]
#: Names a ``by`` column cannot take: the table's columns.
RESERVED = [*TABLE_COLUMNS, *EXTRA_COLUMNS]


def dgp_ame(
    X: pd.DataFrame,
    y: Any,
    steps: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    outcome_learner: Any = None,
    ratio_learner: Any = None,
    folds: int | Sequence[int] = 5,
    conf_level: float = 0.95,
    random_state: int | None = 0,
    model: Any = None,
    target_class: Any = None,
    by: Hashable | Sequence[Hashable] | None = None,
    extrapolation: Any = "envelope",
    on_extrapolation: str = "warn",
    separate: bool = False,
    **options: Any,
) -> EstimatesTable:
    """Data-level AME: the average change of the outcome's regression function under the forward step,
    theta(h) = E[mu(X + h) - mu(X)] with mu(x) = E[Y | X = x], by a cross-fitted one-step estimator.

    The paper's forward step (§3.2, §5.2 for several features moved together) applied to the regression
    function instead of one fitted model (the "DGP level" of an effect). With mu-hat fitted on the other folds
    and r-hat(x) = p(x - h) / p(x), the density of the moved rows relative to the observed ones, the estimate is
    the mean over the rows of ``mu(X_i + h) - Y_i + r(X_i) (Y_i - mu(X_i))`` = plug-in mean of
    mu(X + h) - mu(X) plus the correction mean of (r(X) - 1)(Y - mu(X)); its standard error is the standard
    deviation of those influence terms / sqrt(n) (normal quantiles), the efficient influence function of the
    additive shift (Díaz & van der Laan 2012; Kennedy 2023). r is estimated by classification, the paper's
    extrapolation idea: a classifier c separates the observed rows (label 0) from the same rows moved by h
    (label 1), r = c / (1 - c), cross-fitted like mu (Chernozhukov et al. 2018).

    A categorical switch ``{feature: level}`` estimates the effect on the rows not already at the level,
    E[mu(a, W) - mu(A, W) | A != a], with r replaced by the odds (1 - pi(W)) / pi(W) of the fitted propensity
    pi(W) = P(A = a | W) on the rows at the level (augmented inverse propensity weighting), divided by the
    share of rows moved.

    **The effect on the rows kept** (``on_extrapolation='exclude'``, paper §4.2's remedy of leaving out the
    points moved outside the data). With K(x) = 1{x + h is not flagged by the detector}, a known function of x,
    the estimand is theta_K = E[K(X) (mu(X + h) - mu(X))] / P(K). Its efficient influence function is

        phi(X, Y) = [K(X) (mu(X + h) - Y) + w(X) (Y - mu(X)) - theta_K K(X)] / P(K),
        w(x) = K(x - h) p(x - h) / p(x),

    because E[K(X) mu(X + h)] = E[w(X) mu(X)] (substitute u = x + h), whose pathwise derivative in mu puts the
    residual Y - mu(X) of an observed row at u with the weight w(u): the density of the kept rows' moved points
    relative to the observed rows, zero where u - h is not a kept row (an observed row not kept still carries
    its residual if it stands in for a kept row's moved point), while E[K(X) mu(X)] contributes K(X) Y. The
    one-step estimate is sum_i [K_i (mu(X_i + h) - Y_i) + w(X_i) (Y_i - mu(X_i))] / sum_i K_i with cross-fitted
    mu and w, and its standard error the standard deviation of phi / sqrt(n). w is the classifier's odds
    c / (1 - c) of the kept rows moved (label 1) against every observed row (label 0): (n_1 / n_0) w(x) / P(K),
    with n_1 / n_0 estimating P(K). Where w is heavy (verdict "fails": an effective sample size under 5 % of the
    rows) a few rows at the edge of the data carry the whole correction and their residuals are those of mu
    learnt without them, so that the estimate can be biased by more than its standard error: it is withheld
    (NaN).
    Coverage of theta_K by simulation: ``benchmarks/bench_dgp_exclude_coverage.py`` (benchmarks/README.md).

    What it does not claim: theta is a property of the joint law of (X, Y), not of a model. It is the causal
    effect of the shift policy "every unit's features moved by h" (Haneuse & Rotnitzky 2013) only if there is
    no unmeasured confounding of X and Y, and only where the moved rows stay in the support of X
    (positivity, the ``positivity`` column); otherwise it is a description of how the outcome differs in the
    data between units at x and at x + h.

    Parameters
    ----------
    X : DataFrame
        The features (numeric and categorical columns), one row per unit of the population.
    y : array-like
        The outcome (n values). Two distinct values make it binary: mu is then P(Y = target_class | X). A pandas
        Series is matched to ``X``'s rows by index label (the same labels in any order; different labels are a
        :class:`~fme.exceptions.DataError`), an array by position.
    steps : dict or list of dicts
        A step specification of :func:`fme.fme`: ``{feature: h or rule}`` (several numeric features are one
        joint shift, one table row), or ``{feature: level}`` (a categorical switch, alone in its dict). A list
        of dicts gives one row each, with their joint covariance.
    outcome_learner : estimator, optional
        Learner of mu (cloned per fold). Default ``HistGradientBoostingRegressor(max_iter=100)``, or the
        classifier for a binary outcome (its ``predict_proba``).
    ratio_learner : classifier, optional
        Learner of the density ratio (moved against observed rows) and of the propensity of a switch.
        Default ``HistGradientBoostingClassifier(max_iter=100)``.
    folds : int or array of int, default=5
        Number of folds (rows assigned by ``numpy.random.default_rng(random_state).permutation(n) % folds``),
        or a fold label per row.
    conf_level : float, default=0.95
    random_state : int or None, default=0
        Seeds the folds and every learner whose ``random_state`` is unset.
    model : fitted model, optional
        Adds ``model_ame``: that model's own AME (:func:`fme.fme`'s mean fME) on the same rows, the model's
        statement beside the data's.
    target_class : optional
        The class whose probability is mu, for a binary outcome (default: the larger of the two values, the
        second of scikit-learn's ``classes_``); also passed to :func:`fme.fme` for ``model_ame``. The table of a
        binary outcome names it in a ``class`` column (after ``reference``).
    by : column label or list, optional
        One row per group of these (unmoved) columns of X; the learners are fitted on all rows. Labels of any
        hashable type, checked and sorted as every averaging verb does (:mod:`fme._core.groups`; a missing
        value is a group of its own, listed last); a name of the table's columns
        (:data:`~fme.levels.dgp.RESERVED`) is refused.
    extrapolation : str or detector, default='envelope'
        The detector (:data:`fme.DETECTORS` name or object) fitted on X that flags moved rows outside the data
        (``share_extrapolated``); None for none.
    on_extrapolation : {'warn', 'shrink', 'exclude'}, default='warn'
        Every policy: a :class:`~fme.exceptions.PositivityWarning` for rows whose verdict is "fails", whose
        interval is then withheld (NaN; :func:`fme.hypotheses` still reads their influence-term covariance, so
        test them knowing it). ``warn``: nothing more. ``shrink``: each flagged row's numeric step is shrunk
        into the support (the detector decides, as ``on_extrapolation='shrink'`` of :func:`fme.fme`; rows that
        would keep less than 1 % of h are left out); the shrunk rows pile up on the edge of the support, where
        the density ratio is unbounded, so that the verdict is often "weak" or "fails" (the data barely hold
        that edge). ``exclude``: flagged rows are left out and the estimand is restated (``note``) as the
        effect on the rows kept, theta_K below (every row's residual still enters the correction); where its
        verdict is "fails" no estimate is returned (``ame``, ``plug_in``, ``correction`` and the interval NaN,
        the reason in ``note``). Categorical switches are excluded under both.
    separate : bool, default=False
        One row per feature of each dict instead of one joint shift.
    **options
        Passed to :func:`fme.fme` for ``model_ame``.

    Returns
    -------
    EstimatesTable
        :func:`fme.ame`'s columns (feature, step, level, reference, the ``by`` columns, ame, std_error,
        statistic, p_value, conf_low, conf_high, inference, covers), then ``contrast``, ``plug_in``,
        ``correction``, ``ess`` (effective sample size of the weights, (sum w)^2 / sum w^2), ``ess_share``
        (over the rows that carry weight), ``max_weight`` and ``p99_weight`` (weights normalised to mean 1),
        ``propensity_min``/``propensity_max`` (switches), ``share_extrapolated`` (moved rows flagged at the
        nominal step), ``positivity`` ("ok", "weak", "fails"; thresholds in :mod:`fme.levels._positivity`),
        ``n`` (rows evaluated), ``model_ame`` (with ``model=``) and ``note``. :func:`fme.hypotheses` reads
        the rows' joint covariance (the covariance of the influence terms / n).

    References
    ----------
    Díaz, I. & van der Laan, M. J. (2012). Population intervention causal effects based on stochastic
    interventions. Biometrics 68(2), 541-549.
    Haneuse, S. & Rotnitzky, A. (2013). Estimation of the effect of interventions that modify the received
    treatment. Statistics in Medicine 32(30), 5260-5277.
    Kennedy, E. H. (2023). Semiparametric doubly robust targeted double machine learning: a review.
    arXiv:2203.06469.
    Chernozhukov, V. et al. (2018). Double/debiased machine learning for treatment and structural
    parameters. The Econometrics Journal 21(1), C1-C68.
    """
    X = check_data(X, "X")
    y = align_rows(X, y)
    n = len(X)
    conf_level = check_conf_level(conf_level)
    if on_extrapolation not in ON_EXTRAPOLATION:
        raise ParameterError(f"on_extrapolation must be one of {ON_EXTRAPOLATION}, got {on_extrapolation!r}.")
    if options and model is None:
        raise ParameterError(
            f"the options {sorted(options)} are passed to fme.fme for the model's AME; "
            "pass model= (a fitted model), or leave them out."
        )
    by_cols = check_by(X.columns, by, RESERVED)
    contrasts = _contrasts(X, steps, separate)
    _check_unmoved(by_cols, contrasts)
    Y, proba, explained = _outcome(y, n, outcome_learner, target_class)
    rng = np.random.default_rng(random_state)
    fold = fold_labels(folds, n, rng)
    k = int(fold.max()) + 1
    outcome_learner = outcome_learner if outcome_learner is not None else default_outcome(proba)
    ratio_learner = ratio_learner if ratio_learner is not None else default_classifier()
    design = Design(X)
    Ex = design.encode(X)
    mus = [
        fit_learner(outcome_learner, Ex[fold != j], (Y.astype(int) if proba else Y)[fold != j], rng) for j in range(k)
    ]
    mu_x = by_fold(lambda est, rows: predict_mu(est, Ex[rows], proba), mus, fold, np.ones(n, bool))
    detector = None
    if extrapolation is not None:
        detector = make_detector(extrapolation, random_state).fit(X)
    flag_x = None if detector is None else np.asarray(detector.flag(X), dtype=bool)
    groups = _groups(X, by_cols)

    labels, est, plug, corr, phis, diags, notes, ns, model_ames = [], [], [], [], [], [], [], [], []
    for steps_c in contrasts:
        c = _contrast(
            X, Y, steps_c, design, Ex, fold, mus, mu_x, proba, ratio_learner, rng, detector, flag_x, on_extrapolation
        )
        for key, G in groups:
            Dg = c["D"] & G
            nD = int(Dg.sum())
            if nD == 0:
                raise DataError(
                    f"no row of {_group_text(by_cols, key)} can be moved by {_describe(steps_c)} "
                    "(all already at the level, or out of support and excluded); drop the group or "
                    "the step."
                )
            theta = float(c["T"][G].sum() / nD)
            Df = c["D"].astype(float)
            phis.append(G * (c["T"] - theta * Df) / (nD / n))
            est.append(theta)
            plug.append(float(np.sum((c["mu_s"] - mu_x)[Dg]) / nD))
            corr.append(theta - plug[-1])
            carriers = c["at"] & G
            d = diagnose(c["r"], carriers, c["flag_final"], Dg, c["pi"])
            nominal = float("nan") if c["flag_nominal"] is None else float(np.mean(c["flag_nominal"][c["D0"] & G]))
            diags.append((d, nominal))
            notes.append(c["note"])
            ns.append(nD)
            labels.append(_label(steps_c, by_cols, key))
            if model is not None:
                model_ames.append(_model_ame(model, X, Dg, steps_c, c, detector, extrapolation, target_class, options))
    Phi = np.column_stack(phis)
    V = Phi.T @ Phi / n**2
    verdicts = [d.verdict for d, _ in diags]
    failed = [i for i, v in enumerate(verdicts) if v == "fails"]
    if failed:
        _warn(failed, labels, diags, detector, on_extrapolation)
    withheld = failed if on_extrapolation == "exclude" else []
    for i in withheld:
        # 'exclude' promises the effect on the rows kept; where their weights fail it cannot keep that promise,
        # so no number is printed that would read as if it did
        notes[i] = (
            f"{notes[i]}; positivity fails on the rows kept (effective sample size "
            f"{diags[i][0].ess_share:.1%} of the rows): no estimate"
        )
    extra: dict[str, Any] = {
        "contrast": [lab["contrast"] for lab in labels],
        "plug_in": plug,
        "correction": corr,
        "ess": [d.ess for d, _ in diags],
        "ess_share": [d.ess_share for d, _ in diags],
        "max_weight": [d.max_weight for d, _ in diags],
        "p99_weight": [d.p99_weight for d, _ in diags],
        "propensity_min": [d.propensity_min for d, _ in diags],
        "propensity_max": [d.propensity_max for d, _ in diags],
        "share_extrapolated": [s for _, s in diags],
        "positivity": verdicts,
        "n": ns,
    }
    if model is not None:
        extra["model_ame"] = model_ames
    extra["note"] = notes
    frame = pd.DataFrame(
        [{col: lab[col] for col in LABEL_COLUMNS + by_cols} for lab in labels], columns=LABEL_COLUMNS + by_cols
    )
    table = level_table(
        frame,
        np.array(est),
        V,
        df=None,
        conf_level=conf_level,
        inference=f"one-step (cross-fitted, {k} folds)",
        covers=COVERS,
        extra=extra,
    )
    # the covariance stays whole (a NaN in it would void every row's delta form); the printed interval of a row
    # whose positivity fails is withheld
    table.loc[failed, ["std_error", "statistic", "p_value", "conf_low", "conf_high"]] = np.nan
    table.loc[withheld, ["ame", "plug_in", "correction"]] = np.nan
    # a binary outcome's table names the class whose probability mu is, as fme.ame's tables of a classifier do
    return cast(EstimatesTable, with_class(table, explained))


# ----------------------------------------------------------------- one contrast
def _contrast(
    X: pd.DataFrame,
    Y: np.ndarray,
    steps_c: tuple[Step, ...],
    design: Design,
    Ex: np.ndarray,
    fold: np.ndarray,
    mus: list[Any],
    mu_x: np.ndarray,
    proba: bool,
    ratio_learner: Any,
    rng: np.random.Generator,
    detector: Any,
    flag_x: np.ndarray | None,
    policy: str,
) -> dict[str, Any]:
    """The influence summands T (n,), the evaluated rows D and the weights of one step specification."""
    n, k = len(X), len(mus)
    categorical = not steps_c[0].is_numeric
    D0 = stepped_rows(X, steps_c)
    Xs = apply_steps(X, steps_c)
    flag_nominal = None if detector is None else np.asarray(detector.flag(Xs), dtype=bool)
    D, note = D0.copy(), ""
    if flag_nominal is not None and policy != "warn" and (flag_nominal & D0).any():
        out = flag_nominal & D0
        if policy == "shrink" and not categorical:
            todo = out & ~cast(np.ndarray, flag_x)  # a detector: the rows are flagged
            h = shrink_steps(detector, list(X.columns), X, steps_c, todo)
            dropped = todo & np.any([h[s.feature] == 0 for s in steps_c], axis=0)
            D = D0 & ~dropped
            Xs = apply_steps(X, steps_c, h)
            note = (
                f"steps of {count(int(todo.sum() - dropped.sum()), 'row')} shrunk into the support; "
                f"{int(dropped.sum())} left out (step below {MIN_STEP_FRACTION:.0%} of h)"
            )
        else:
            D = D0 & ~out
            note = (
                f"effect on the {int(D.sum())} of {count(int(D0.sum()), 'row')} ({D.sum() / max(D0.sum(), 1):.1%}) "
                "whose moved point stays in the data; the others left out"
            )
    if not all(D[fold != j].any() for j in range(k)):
        raise DataError(
            f"no row of the data can be moved by {_describe(steps_c)} in some training folds (all "
            "already at the level, or out of support and excluded); use a smaller step or a level more "
            "rows lack."
        )
    flag_final = (
        None if detector is None else (flag_nominal if policy == "warn" else np.asarray(detector.flag(Xs), dtype=bool))
    )
    Es = design.encode(Xs)
    mu_s = by_fold(lambda est, rows: predict_mu(est, Es[rows], proba), mus, fold, D)
    r = np.zeros(n)
    pi = at = None
    if categorical:
        feature, level = steps_c[0].feature, steps_c[0].value
        at = X[feature].notna().to_numpy() & ~D0
        W = design.encode(X, drop=feature)
        pi = np.full(n, np.nan)
        for j in range(k):
            train = fold != j
            if at[train].all() or not at[train].any():
                raise DataError(
                    f"in the rows outside fold {j}, {'every' if at[train].all() else 'no'} row has "
                    f"{feature} = {level!r}: the propensity of the switch cannot be fitted. Use fewer "
                    "folds or a level more rows have."
                )
            clf = fit_learner(ratio_learner, W[train], at[train].astype(int), rng)
            pi[fold == j] = class_proba(clf, W[fold == j])
        pi = np.clip(pi, CLIP, 1.0)
        r[at] = (1.0 - pi[at]) / pi[at]
        if policy != "warn" and flag_nominal is not None:
            # the effect on the rows kept: a row at the level stands in for the moved rows with its W, which are
            # kept exactly when it is (its moved point is itself)
            r[at & flag_nominal] = 0.0
    else:
        r = ratio_weights(Ex, Es, fold, D, ratio_learner, rng)
        at = np.ones(n, dtype=bool)
    # the numerator of the influence function of the effect on the evaluated rows D (theta_K in dgp_ame's
    # docstring): the moved term only where a row is evaluated, the residual of every row that the weight r says
    # stands in for an evaluated row's moved point
    T = np.where(D, mu_s - Y, 0.0) + r * np.where(at, Y - mu_x, 0.0)
    return dict(
        T=T,
        D=D,
        D0=D0,
        r=r,
        pi=pi,
        at=at,
        mu_s=mu_s,
        note=note,
        flag_nominal=flag_nominal,
        flag_final=flag_final,
        Xs=Xs,
    )


def shift_weights(
    X: pd.DataFrame,
    steps: Mapping[str, Any],
    *,
    ratio_learner: Any = None,
    folds: int | Sequence[int] = 5,
    random_state: int | None = 0,
) -> np.ndarray:
    """The cross-fitted density-ratio weights r(X_i) = p(X_i - h) / p(X_i) of :func:`dgp_ame`'s correction for one
    numeric (joint) step, at the observed rows: the probability c that a classifier gives "moved" against
    "observed", as c / (1 - c) (parameters as in :func:`dgp_ame`; folds from ``random_state`` alike)."""
    X = check_data(X, "X")
    contrasts = _contrasts(X, steps if isinstance(steps, Mapping) else None, False)
    if len(contrasts) != 1 or not all(s.is_numeric for s in contrasts[0]):
        raise StepError(
            "shift_weights takes one dict of numeric steps, e.g. {'age': 1}; a categorical switch's "
            "weights are inverse propensities (see dgp_ame)."
        )
    rng = np.random.default_rng(random_state)
    fold = fold_labels(folds, len(X), rng)
    design = Design(X)
    return ratio_weights(
        design.encode(X),
        design.encode(apply_steps(X, contrasts[0])),
        fold,
        np.ones(len(X), dtype=bool),
        ratio_learner if ratio_learner is not None else default_classifier(),
        rng,
    )


def _model_ame(
    model: Any,
    X: pd.DataFrame,
    rows: np.ndarray,
    steps_c: tuple[Step, ...],
    c: dict[str, Any],
    detector: Any,
    extrapolation: Any,
    target_class: Any,
    options: dict[str, Any],
) -> float:
    """The model's own mean fME over ``rows`` under the same steps (shrunk the same way under 'shrink')."""
    kwargs = {"inference": "sample", "target_class": target_class, **options}
    spec = {s.feature: s.value for s in steps_c}
    if c["note"].startswith("steps of"):
        kwargs.update(extrapolation=detector, reference_data=X, on_extrapolation="shrink")
    return float(fme_effects(model, X.loc[rows], spec, **kwargs).ame)


# ----------------------------------------------------------------- inputs
def _contrasts(X: pd.DataFrame, steps: Any, separate: bool) -> list[tuple[Step, ...]]:
    specs = [steps] if isinstance(steps, Mapping) else steps
    if not isinstance(specs, Sequence) or isinstance(specs, str) or not specs:
        raise StepError(
            "`steps` must be a dict such as {'age': 1} (one joint shift) or a non-empty list of them "
            f"(one row each); got {type(steps).__name__}."
        )
    out = []
    for spec in specs:
        parsed = parse_steps(X, spec)
        groups = [(s,) for s in parsed] if separate else [parsed]
        for g in groups:
            if len(g) > 1 and any(not s.is_numeric for s in g):
                raise StepError(
                    f"the step {_describe(g)} mixes a categorical switch with other steps; a switch "
                    "must be alone in its dict (pass a list of dicts, or separate=True)."
                )
            out.append(g)
    for g in out:
        for s in g:
            if X[s.feature].isna().any():
                raise DataError(
                    f"feature {s.feature!r} has {int(X[s.feature].isna().sum())} missing values; the "
                    "data-level AME needs every moved row observed: drop or impute them first."
                )
    return out


def _check_unmoved(by_cols: list[Any], contrasts: list[tuple[Step, ...]]) -> None:
    """A ``by`` column (checked by :func:`~fme._core.groups.check_by`) must not be moved by a step."""
    for col in by_cols:
        if any(s.feature == col for g in contrasts for s in g):
            raise FeatureError(
                f"by={col!r} is a moved feature: its groups would change under the step. Group by an unmoved column."
            )


def _outcome(y: Any, n: int, learner: Any, target_class: Any) -> tuple[np.ndarray, bool, str | None]:
    """The outcome as floats, whether mu is a class probability and, if so, the class it is of (as written: the
    larger of the two values by default, scikit-learn's ``classes_[1]``)."""
    values = np.asarray(y.to_numpy() if isinstance(y, (pd.Series, pd.DataFrame)) else y)
    if values.ndim != 1 or values.size != n:
        raise DataError(f"y must hold one outcome per row of X ({n}), got shape {values.shape}.")
    if pd.isna(values).any():
        raise DataError(f"y has {int(pd.isna(values).sum())} missing values; drop those rows of X and y.")
    classes = sorted(pd.unique(values).tolist(), key=lambda v: (str(type(v)), v))
    binary = len(classes) == 2 and (learner is None or hasattr(learner, "predict_proba"))
    if binary:
        tc = classes[-1] if target_class is None else target_class
        if not any(same_level(tc, c) for c in classes):
            raise ParameterError(f"target_class={target_class!r} is not a value of y ({classes}).")
        return (values == tc).astype(float), True, str(tc.item() if isinstance(tc, np.generic) else tc)
    if target_class is not None:
        raise ParameterError(
            f"target_class={target_class!r} is for a binary outcome; y has {count(len(classes), 'value')}."
        )
    try:
        Y = values.astype(float)
    except (TypeError, ValueError):
        raise DataError("y must be numeric, or binary (two values) for a class probability.") from None
    if not np.isfinite(Y).all():
        raise DataError("y has infinite values; drop those rows.")
    return Y, False, None


def _groups(X: pd.DataFrame, by_cols: list[Any]) -> list[tuple[tuple[Any, ...], np.ndarray]]:
    """The ``by`` groups (sorted, a missing value a group of its own) as (key, row mask)."""
    if not by_cols:
        return [((), np.ones(len(X), dtype=bool))]
    codes, spec = frame_groups(X, by_cols)  # the group numbering of every verb
    return [(tuple(spec.keys.iloc[g]), codes == g) for g in range(spec.n_groups)]


def _label(steps_c: tuple[Step, ...], by_cols: list[Any], key: tuple[Any, ...]) -> dict[str, Any]:
    single = steps_c[0] if len(steps_c) == 1 else None
    # a feature's own label (of any hashable type), as fme.ame's table holds it; several joined as fme.fme's tidy()
    lab = {
        "feature": single.feature if single is not None else ", ".join(str(s.feature) for s in steps_c),
        "step": float(single.value) if single is not None and single.is_numeric else float("nan"),
        "level": None if single is None or single.is_numeric else single.value,
        "reference": None,
        "contrast": _describe(steps_c),
    }
    lab.update(zip(by_cols, key))
    return lab


def _describe(steps_c: tuple[Step, ...]) -> str:
    return ", ".join(s.describe() for s in steps_c)


def _group_text(by_cols: list[Any], key: tuple[Any, ...]) -> str:
    return "the data" if not by_cols else "the group " + ", ".join(f"{c}={v!r}" for c, v in zip(by_cols, key))


def _warn(failed: list[int], labels: list[dict[str, Any]], diags: list[Any], detector: Any, policy: str) -> None:
    if policy == "exclude":
        parts = [
            f"{labels[i]['contrast']}: effective sample size {diags[i][0].ess_share:.1%} of the rows" for i in failed
        ]
        warnings.warn(
            "positivity fails on the rows kept by on_extrapolation='exclude' for "
            + "; ".join(parts)
            + ": the few observed rows near the moved points carry the whole correction, so the effect on "
            "the rows kept is withheld (estimate and interval NaN). Use a smaller step.",
            PositivityWarning,
            stacklevel=3,
        )
        return
    name = detector_name(detector) if detector is not None else "no detector"
    parts = [
        f"{labels[i]['contrast']}: {diags[i][1]:.1%} of the moved rows are outside the data ({name}), "
        f"effective sample size {diags[i][0].ess_share:.1%} of the rows"
        for i in failed
    ]
    warnings.warn(
        "positivity fails for " + "; ".join(parts) + ". The data cannot support these shifted rows, so "
        "their interval is withheld (NaN): use a smaller step, on_extrapolation='shrink' (each row's "
        "step shrunk into the support) or 'exclude' (the effect on the rows that stay in the data).",
        PositivityWarning,
        stacklevel=3,
    )
