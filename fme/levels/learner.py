"""Learner-level AMEs: what the learning algorithm, not one fitted model, says about a step.

The learner is refitted on ``repeats`` seeded random splits of the data; each split's fitted model gives
the AME of the steps on its test rows (:func:`fme.ame`, the paper's AME of §3.2). The mean over the
splits estimates the AME of the learner trained on ``n_train`` rows, in expectation over training sets
(Molnar et al. 2023, "learner-level" estimand). The splits' estimates are correlated (their training
sets overlap), so their plain variance over J understates the uncertainty; Nadeau and Bengio's (2003)
corrected resampled variance multiplies the splits' sample covariance by ``1/J + n_test/n_train``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Hashable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters import adapt
from .._core.groups import check_by, frame_groups, group_means
from .._core.result_base import with_class
from .._utils.numfmt import count
from .._utils.validation import align_rows, check_conf_level
from ..effects import fme as _fme_verb
from ..exceptions import DataError, LearnerError, LearnerWarning, ModelError, ParameterError
from ..inference import EstimatesTable
from ..margins.marginal import AME_COLUMNS
from ..margins.marginal import ame as _ame_verb
from .table import LABEL_COLUMNS, TABLE_COLUMNS, level_table

__all__ = ["learner_ame", "learner_splits", "LearnerSplits", "LearnerTable", "COVERS", "RESERVED"]

#: The ``covers`` column of a learner-level table.
COVERS = "training sets (learner)"
#: The learner table's own columns after :data:`~fme.levels.table.TABLE_COLUMNS`.
EXTRA_COLUMNS = ["contrast", "ame_full", "estimand", "repeats", "n_splits", "n_failed", "n_train", "n_test"]
#: Names a ``by`` column cannot take: the table's columns and those of the :func:`fme.ame` tables of the splits.
RESERVED = list(dict.fromkeys([*TABLE_COLUMNS, *EXTRA_COLUMNS, *AME_COLUMNS]))

# fme.ame's arguments that would replace the table's inference or shape: the learner table has its own
# (apply fme.hypotheses to it for hypotheses, equivalence bands and adjusted p-values)
_REFUSED = ("inference", "bootstrap", "vcov", "df", "hypothesis", "equivalence", "multcomp")
# the keyword arguments of fme.ame that fme.fme also takes (the ANLM rows of nlm=True)
_FME_KEYS = ("target_class", "extrapolation", "reference_data", "on_extrapolation")


@dataclass(frozen=True, eq=False)
class LearnerSplits:
    """The record of the splits behind a learner-level table (:attr:`LearnerTable.learner`).

    Attributes
    ----------
    split_estimates : ndarray
        J x m: each successful split's estimate of every row of the table as :func:`learner_ame` returned it
        (in that order, whatever rows a selection keeps); NaN where a split has no value for a row.
    errors : list of str
        The failed splits' errors (``"TypeName: message"``), in split order.
    n_nonconverged : int
        Successful splits whose fit warned that it did not converge (kept in the estimate).
    n_train, n_test : int
        Rows each split trains on and evaluates on.
    """

    split_estimates: np.ndarray
    errors: list[str]
    n_nonconverged: int
    n_train: int
    n_test: int


class LearnerTable(EstimatesTable):
    """:func:`learner_ame`'s table: an :class:`~fme.EstimatesTable` (printed, indexed and tested with
    :func:`fme.hypotheses` alike) with the splits' record as a typed attribute.

    Attributes
    ----------
    learner : LearnerSplits or None
        The splits' estimates, errors and non-converged fits. It rides along where the table's joint
        covariance does (copy, column and row selection, sorting, ``reset_index``, pickling, ``pd.concat`` of
        pieces of the table); a frame computed anew (``merge`` with another frame, ``pd.concat`` of different
        tables, ``pd.DataFrame(t)``) has none (None).
    """

    _metadata = [*EstimatesTable._metadata, "learner"]
    learner: LearnerSplits | None = None

    @property
    def _constructor(self) -> type[LearnerTable]:
        return LearnerTable


def learner_splits(
    n: int, repeats: int, test_size: float | int, random_state: int | None = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``repeats`` (train, test) splits of ``n`` rows :func:`learner_ame` uses: positions, each sorted.

    Split ``j`` permutes the rows with the generator seeded by the ``j``-th child of
    ``numpy.random.SeedSequence(random_state)``; its first ``n_test`` positions are the test rows
    (``n_test = ceil(test_size * n)`` for a fraction, else ``test_size``). The splits depend on
    ``random_state``, ``n``, ``repeats`` and ``test_size`` only (not on ``n_jobs``).
    """
    n_test = _n_test(n, test_size)
    out = []
    for child in np.random.SeedSequence(random_state).spawn(repeats):
        perm = np.random.default_rng(child).permutation(n)
        out.append((np.sort(perm[n_test:]), np.sort(perm[:n_test])))
    return out


def learner_ame(
    learner: Any,
    X: pd.DataFrame,
    y: Any,
    steps: Mapping[str, Any] | None = None,
    *,
    repeats: int = 15,
    test_size: float | int = 0.5,
    by: Hashable | Sequence[Hashable] | None = None,
    conf_level: float = 0.95,
    random_state: int | None = 0,
    n_jobs: int | None = None,
    nlm: bool = False,
    **ame_kwargs: Any,
) -> LearnerTable:
    """Learner-level average marginal effects: the AME of the learning algorithm over training sets.

    For each of ``repeats`` seeded random splits of ``(X, y)`` into ``n_train`` and ``n_test`` rows
    (:func:`learner_splits`), the learner is fitted on the training rows and the AME of ``steps``
    (paper §3.2) is computed on the test rows with :func:`fme.ame`. The estimate is the mean over the
    J successful splits,

        AME_L = (1/J) sum_j AME_j,   Var = (1/J + n_test/n_train) S,

    with ``S`` the sample covariance (ddof 1) of the splits' estimate vectors (Nadeau and Bengio's
    corrected resampled variance); intervals and p-values use t quantiles with J - 1 degrees of freedom.

    **Estimand.** The AME of the learner trained on ``n_train`` rows, in expectation over training sets
    drawn from the population the data come from, evaluated on that population (Molnar et al. 2023's
    learner-level effect). It answers "if we retrained the algorithm on new data of this size, what
    would the effect of the step be?", not "what does this fitted model do?" (:func:`fme.ame`).

    **The correction is a heuristic, not exact.** It takes the correlation of two splits' estimates to
    be n_test/n (Nadeau and Bengio 2003, §4, argue it leans conservative then). For an AME the training
    set drives most of a split's spread, and the correlation can be larger: in simulations (random
    forest regression, gradient-boosting classifier, n = 500, J = 10; ``benchmarks/bench_learner.py``)
    a test fraction of 0.2 gave standard errors 1.4-1.8 times too small (95 % intervals covering 83-89
    %), the default 0.5 slightly conservative ones (covering 98 %). Prefer ``test_size`` near 0.5, and
    check the interval with such a simulation for an unusual learner.

    Parameters
    ----------
    learner : scikit-learn estimator or Pipeline, statsmodels formula result, or callable
        Unfitted; cloned for every split (``sklearn.base.clone``, so its own ``random_state`` is kept:
        leave it ``None`` and the fits, hence the table, change from run to run). A fitted statsmodels
        result of the formula API is refitted by its formula (same model class and family) on each split's
        rows, the outcome column named ``y.name`` (a Series) or the formula's left-hand side (results with
        weights, offset or exposure cannot be refitted). A callable ``(X_train, y_train) -> fitted model`` is
        called instead (any model :func:`fme.ame` takes).
    X : pandas.DataFrame
        All rows (features, and the ``by`` columns). Never modified.
    y : array-like
        The outcome, one value per row of ``X``: a pandas Series is matched to ``X``'s rows by index label (the
        same labels in any order; different labels are a :class:`~fme.exceptions.DataError`), an array by
        position.
    steps : dict or list of dicts, optional
        A dict as in :func:`fme.ame`: numeric steps, rules and categorical levels, each feature its own
        row. A list of dicts: each dict is one fME of :func:`fme.fme` (multivariate when it names several
        features, e.g. ``[{"a": 1, "b": 0.5}]``), one row each, with a ``contrast`` column naming it.
    repeats : int, default=15
        Number of random splits J (at least 2; 10-20 is the usual range).
    test_size : float or int, default=0.5
        Fraction (0 < test_size < 1, ``ceil(test_size * n)`` rows) or number of test rows. The estimand
        is the learner trained on ``n_train = n - n_test`` rows; with a small test fraction the
        correction is too small (see above).
    by : column label or list of them, optional
        One row per group (the group's test rows in every split), as in :func:`fme.ame`: labels of any
        hashable type, checked and sorted as every averaging verb does (:mod:`fme._core.groups`; a missing
        value is a group of its own, listed last). A name of the table's columns
        (:data:`~fme.levels.learner.RESERVED`) is refused.
    conf_level : float, default=0.95
    random_state : int or None, default=0
        Seed of the splits (``numpy.random.SeedSequence``); the same splits for every ``n_jobs``.
    n_jobs : int, optional
        Splits fitted in parallel by :class:`joblib.Parallel` (``None``: one at a time); inside the
        workers BLAS/OpenMP use one thread (``threadpoolctl``) so that the workers do not oversubscribe
        the cores. The results do not depend on ``n_jobs``.
    nlm : bool, default=False
        Also the average NLM (paper §5.4) of each numeric step per split (:func:`fme.fme` with
        ``nlm=True``, one fME per step; per ``by`` group of the test rows), with the same correction:
        rows whose ``estimand`` is ``ANLM``.
    **ame_kwargs
        Passed to :func:`fme.ame` (``target_class``, ``categorical``, ``features``, ``wts``,
        ``extrapolation``, ...; to :func:`fme.fme` for a list of steps). Its inference arguments (``inference``,
        ``bootstrap``, ``vcov``,
        ``df``) and the hypothesis ones are refused: apply :func:`fme.hypotheses` to the table.

    Returns
    -------
    LearnerTable
        :func:`fme.ame`'s label columns (feature, step, level, reference, for a classifier ``class``: the
        class whose probability the AMEs are of, by default the second of ``classes_``, then the ``by``
        columns), ``ame``
        (the mean over splits), std_error, statistic (t), p_value, conf_low, conf_high, ``inference``
        (``"learner (Nadeau-Bengio, J splits, n_train ...)"``), ``covers`` (``"training sets
        (learner)"``), then ``ame_full`` (the AME on all rows of the learner fitted on all rows, the
        fixed-model figure for comparison), ``estimand`` (``AME`` or ``ANLM``), ``repeats``,
        ``n_splits`` (splits with a value for the row), ``n_failed``, ``n_train``, ``n_test``. The
        rows' joint covariance comes from the splits, so :func:`fme.hypotheses` tests differences,
        ratios and equivalence bands across rows. ``table.learner`` (:class:`LearnerSplits`) holds the
        splits' estimates (``split_estimates``, J x rows), the failed splits' errors and ``n_nonconverged``.

    Raises
    ------
    ParameterError, DataError, ModelError
        Bad ``repeats``, ``test_size``, ``X``, ``y`` or ``learner`` (before any fit).
    LearnerError
        Fewer than two splits succeeded.

    Warns
    -----
    LearnerWarning
        Some splits failed (fit or AME): they are counted in ``n_failed`` and left out. Some fits warned
        of non-convergence (a ``ConvergenceWarning``): they are kept and counted
        (``table.learner.n_nonconverged``).

    References
    ----------
    Nadeau, C. and Bengio, Y. (2003). Inference for the generalization error. *Machine Learning* 52,
    239-281.
    Molnar, C., Freiesleben, T., König, G., Herbinger, J., Reisinger, T., Casalicchio, G., Wright, M. N.
    and Bischl, B. (2023). Relating the partial dependence plot and permutation feature importance to
    the data generating process. *Explainable Artificial Intelligence (xAI 2023)*, 456-479.
    """
    X, y, n = _check_inputs(learner, X, y)
    repeats = _check_repeats(repeats)
    n_test = _n_test(n, test_size)
    n_train = n - n_test
    conf_level = check_conf_level(conf_level)
    by_cols = check_by(X.columns, by, RESERVED)
    refused = [k for k in _REFUSED if k in ame_kwargs]
    if refused:
        raise ParameterError(
            f"learner_ame() sets its own inference; drop {refused}. For hypotheses, "
            "equivalence bands or adjusted p-values pass the table to fme.hypotheses()."
        )
    if isinstance(steps, (list, tuple)) and not (steps and _is_step_list(steps)):
        raise ParameterError(
            "steps as a list must hold one or more dicts, each one (multivariate) step such as "
            "{'a': 1, 'b': 0.5}; pass a dict for one row per feature."
        )
    task = _Task(learner, steps, by_cols, nlm, dict(ame_kwargs))

    # The fit on all rows comes first, in this process: it gives ame_full, the rows' canonical order, and
    # raises the library's own errors for bad steps, by columns or target_class before any split is fitted.
    full = task.fit(X, y)
    full_keys, full_labels, full_values = task.estimates(full, X)
    splits = learner_splits(n, repeats, test_size, random_state)
    results = _run(task, X, y, splits, n_jobs)

    errors = [err for _, _, err, _ in results if err is not None]
    ok = [(keys, vals) for keys, vals, err, _ in results if err is None]
    n_nonconverged = sum(flag for *_, flag in results)
    if len(ok) < 2:
        raise LearnerError(
            f"learner_ame(): only {len(ok)} of {count(repeats, 'split')} succeeded; at least 2 are "
            f"needed. First error: {errors[0] if errors else 'none'}. Fix the learner or "
            "raise repeats / test_size."
        )
    if errors:
        warnings.warn(
            f"learner_ame(): {len(errors)} of {count(repeats, 'split')} failed and were left out; the first error: "
            f"{errors[0]}",
            LearnerWarning,
            stacklevel=2,
        )
    if n_nonconverged:
        warnings.warn(
            f"learner_ame(): the fits of {n_nonconverged} of {count(len(ok), 'split')} warned that they did not "
            "converge (kept in the estimate); raise the learner's iteration limit or scale the "
            "features.",
            LearnerWarning,
            stacklevel=2,
        )

    index = {k: i for i, k in enumerate(full_keys)}
    M = np.full((len(ok), len(full_keys)), np.nan)
    for j, (keys, vals) in enumerate(ok):
        pos = [index.get(k, -1) for k in keys]
        keep = np.asarray(pos) >= 0
        M[j, np.asarray(pos)[keep]] = np.asarray(vals, dtype=float)[keep]
    estimate, vcov, counts = corrected_moments(M, n_train, n_test)
    J = len(ok)
    usable = counts[counts >= 2]
    df = float(usable.min() - 1) if usable.size else float(J - 1)
    extra = {"contrast": full_labels["contrast"].to_numpy()} if "contrast" in full_labels else {}
    labels = full_labels.drop(columns=[c for c in ("estimand", "contrast", "_step_no") if c in full_labels])
    estimand = full_labels["estimand"].to_numpy()
    table = level_table(
        labels,
        estimate,
        vcov,
        df=df,
        conf_level=conf_level,
        inference=f"learner (Nadeau-Bengio, {count(J, 'split')}, n_train {n_train})",
        covers=COVERS,
        extra={
            **extra,
            "ame_full": full_values,
            "estimand": estimand,
            "repeats": repeats,
            "n_splits": counts,
            "n_failed": len(errors),
            "n_train": n_train,
            "n_test": n_test,
        },
        table_class=LearnerTable,
    )
    table.learner = LearnerSplits(M, errors, int(n_nonconverged), n_train, n_test)
    # a classifier's table names the class whose probability its AMEs are of, as fme.ame's tables do
    return cast(LearnerTable, with_class(table, _explained_class(full, ame_kwargs.get("target_class"))))


def _explained_class(model: Any, target_class: Any) -> str | None:
    """The class whose probability a classifier's AMEs are of (``target_class``, by default the second of
    ``classes_``, as scikit-learn's binary metrics take it); None for a model that is no classifier."""
    if isinstance(target_class, str) and target_class == "all":
        return None
    return adapt(model, target_class).prediction().explained_class


def corrected_moments(M: np.ndarray, n_train: int, n_test: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, Nadeau-Bengio corrected covariance and count per column of the splits' estimates ``M``
    (J x m, NaN where a split has no value for a row).

    Column means over the finite values; ``S`` the pairwise-complete sample covariance (ddof 1); entry
    (i, k) of the covariance is ``S_ik (1/J_ik + n_test/n_train)`` with ``J_ik`` the splits holding both
    rows (NaN under 2). With no missing value this is ``(1/J + n_test/n_train) * numpy.cov(M.T)``.
    """
    finite = np.isfinite(M)
    counts = finite.sum(axis=0)
    both = finite.T.astype(float) @ finite.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(counts > 0, np.nansum(M, axis=0) / np.maximum(counts, 1), np.nan)
        S = pd.DataFrame(M).cov(min_periods=2).to_numpy()
        vcov = S * (1.0 / both + n_test / n_train)
    return estimate, np.where(both >= 2, vcov, np.nan), counts


# ----------------------------------------------------------------- the work of one split
class _Task:
    """Fits the learner and computes one table's estimates; picklable for joblib's workers."""

    def __init__(self, learner: Any, steps: Any, by_cols: list[Any], nlm: bool, ame_kwargs: dict[str, Any]) -> None:
        self.learner, self.steps, self.by_cols = learner, steps, by_cols
        self.nlm, self.ame_kwargs = nlm, ame_kwargs

    def fit(self, X: pd.DataFrame, y: Any) -> Any:
        if _is_formula_result(self.learner):
            return _formula_refit(self.learner, X, y)
        if _is_estimator(self.learner):
            from sklearn.base import clone

            return clone(self.learner).fit(X, y)
        model = self.learner(X, y)
        if model is None:
            raise ModelError("the learner function returned None; it must return the fitted model.")
        return model

    def estimates(self, model: Any, data: pd.DataFrame) -> tuple[list[tuple[str, ...]], pd.DataFrame, np.ndarray]:
        """The rows' keys (labels without the step, which a rule resolves on each split's rows), their
        labels and their estimates."""
        if _is_step_list(self.steps):
            labels, values = self._fme_rows(model, data, list(self.steps), self.nlm, ame=True)
        else:
            t = _ame_verb(model, data, self.steps, by=self.by_cols or None, inference="sample", **self.ame_kwargs)
            labels = pd.DataFrame(t[LABEL_COLUMNS + self.by_cols]).reset_index(drop=True)
            labels["estimand"] = "AME"
            values = t["ame"].to_numpy(dtype=float)
            if self.nlm:
                numeric = labels.loc[labels["level"].map(_isna), ["feature", "step"]].drop_duplicates()
                nlm_labels, nlm_values = self._fme_rows(
                    model, data, [{f: h} for f, h in zip(numeric["feature"], numeric["step"])], True, ame=False
                )
                labels = pd.concat([labels, nlm_labels.drop(columns=["contrast", "_step_no"])], ignore_index=True)
                values = np.concatenate([values, nlm_values])
        key_cols = [c for c in labels.columns if c != "step"]
        keys = [tuple("<NA>" if _isna(v) else str(v) for v in row) for row in labels[key_cols].itertuples(index=False)]
        return keys, labels, values

    def _fme_rows(
        self, model: Any, data: pd.DataFrame, step_list: list[Any], nlm: bool, *, ame: bool
    ) -> tuple[pd.DataFrame, np.ndarray]:
        """One fME per step dict (:func:`fme.fme`; multivariate when it names several features): its mean
        (``ame``) and its mean NLM (``nlm``), per ``by`` group of the evaluated rows."""
        data = data.reset_index(drop=True)  # the fMEs' index locates their rows' groups
        frames, values = [], []
        for i, step in enumerate(step_list):
            kwargs = (
                self.ame_kwargs
                if ame
                else {k: v for k, v in self.ame_kwargs.items() if k in _FME_KEYS or k.startswith("nlm_")}
            )
            r = _fme_verb(model, data, step, nlm=nlm, inference="sample", **kwargs)
            head = r.tidy().iloc[0]
            res = r.results
            parts = [("AME", r.fme_columns[0])] if ame else []
            parts += [("ANLM", r.nlm_columns[0])] if nlm else []
            # the groups of the rows given, numbered as fme.ame numbers them
            codes, spec = frame_groups(data, self.by_cols)
            codes = codes[data.index.get_indexer(res.index)]
            for estimand, col in parts:
                means = group_means(res[col].to_numpy(dtype=float), codes, spec.n_groups)
                frame = pd.DataFrame({c: [head[c]] * len(means) for c in LABEL_COLUMNS})
                frame = pd.concat([frame, spec.keys.reset_index(drop=True)], axis=1)
                frame["estimand"], frame["contrast"], frame["_step_no"] = estimand, head.get("contrast"), i
                frames.append(frame)
                values.append(np.asarray(means, dtype=float))
        return pd.concat(frames, ignore_index=True), np.concatenate(values)


def _one_split(
    task: _Task, X: pd.DataFrame, y: Any, train: np.ndarray, test: np.ndarray, limit: bool
) -> tuple[list[tuple[str, ...]] | None, np.ndarray | None, str | None, bool]:
    """(keys, estimates, None, not converged) of one split, or (None, None, the error, False) when its fit
    or AME failed. A fit that warned of non-convergence is kept and flagged."""
    if limit:
        from threadpoolctl import threadpool_limits

        context: Any = threadpool_limits(limits=1)
    else:
        context = nullcontext()
    try:
        with context, warnings.catch_warnings(record=True) as caught:
            # the fixed-model warnings of each split's table are not the learner table's; the fit's
            # ConvergenceWarning is counted for the caller
            warnings.simplefilter("always")
            model = task.fit(X.iloc[train], _take(y, train))
            nonconverged = any(w.category.__name__ == "ConvergenceWarning" for w in caught)
            keys, _, values = task.estimates(model, X.iloc[test])
    except Exception as err:  # noqa: BLE001 - a failed split is counted and reported, never fatal
        return None, None, f"{type(err).__name__}: {err}", False
    return keys, values, None, nonconverged


def _run(
    task: _Task, X: pd.DataFrame, y: Any, splits: list[tuple[np.ndarray, np.ndarray]], n_jobs: int | None
) -> list[Any]:
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=n_jobs)
    limit = parallel.n_jobs not in (None, 1)
    return cast(list[Any], parallel(delayed(_one_split)(task, X, y, train, test, limit) for train, test in splits))


# ----------------------------------------------------------------- validation
def _check_inputs(learner: Any, X: Any, y: Any) -> tuple[pd.DataFrame, Any, int]:
    if _is_formula_result(learner):
        support = adapt(learner, None).refit_support()
        if not support:
            raise ModelError(f"learner: {support.reason}; pass a function (X_train, y_train) -> fitted model instead.")
    elif not (_is_estimator(learner) or callable(learner)):
        raise ModelError(
            f"learner must be an unfitted scikit-learn estimator (with fit and get_params), a fitted "
            f"statsmodels formula result or a function (X_train, y_train) -> fitted model, got "
            f"{type(learner).__name__}."
        )
    if not isinstance(X, pd.DataFrame):
        raise DataError(
            f"`X` must be a pandas DataFrame with one column per feature, got {type(X).__name__}; "
            "wrap arrays with pd.DataFrame(X, columns=[...])."
        )
    n = X.shape[0]
    if n < 3:
        raise DataError(f"`X` has {count(n, 'row')}; learner_ame() needs at least 3 (two to train, one to test).")
    return X, align_rows(X, y), n


def _check_repeats(repeats: Any) -> int:
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral) or repeats < 2:
        raise ParameterError(
            f"repeats must be an integer >= 2 (the number of splits; 10-20 is usual), got {repeats!r}."
        )
    return int(repeats)


def _n_test(n: int, test_size: Any) -> int:
    if isinstance(test_size, bool):
        test_size = None
    if isinstance(test_size, numbers.Integral):
        n_test = int(test_size)
    elif isinstance(test_size, numbers.Real) and 0 < cast(float, test_size) < 1:  # a Real: compared as a float
        n_test = math.ceil(float(test_size) * n)
    else:
        raise ParameterError(f"test_size must be a fraction 0 < test_size < 1 or a number of rows, got {test_size!r}.")
    if not 1 <= n_test <= n - 2:
        raise ParameterError(
            f"test_size gives {n_test} test rows of {n}; it must leave at least 1 test row and 2 training rows."
        )
    return n_test


def _is_step_list(steps: Any) -> bool:
    return isinstance(steps, (list, tuple)) and all(isinstance(s, Mapping) for s in steps)


def _is_estimator(learner: Any) -> bool:
    return hasattr(learner, "fit") and hasattr(learner, "get_params")


def _is_formula_result(learner: Any) -> bool:
    """A fitted statsmodels result (its model's class, formula and family are the learner)."""
    return hasattr(learner, "params") and hasattr(getattr(learner, "model", None), "formula")


def _formula_refit(result: Any, X: pd.DataFrame, y: Any) -> Any:
    """The result's model refitted by its formula on the rows (X, y): the outcome is the column ``y.name`` (a
    Series), else the formula's left-hand side; the model adapter's bootstrap recipe does the refit."""
    adapter = adapt(result, None)  # its refit support was checked before any fit (_check_inputs)
    name = y.name if isinstance(y, pd.Series) and y.name is not None else result.model.endog_names
    data = X.assign(**{str(name): np.asarray(y)})
    return adapter.refit(data, np.arange(len(data)))


def _isna(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT


def _take(y: Any, idx: np.ndarray) -> Any:
    return y.iloc[idx] if isinstance(y, (pd.Series, pd.DataFrame)) else np.asarray(y)[idx]
