"""Conditional average marginal effects on feature subspaces (paper §5.5).

The fMEs of a model are partitioned into subspaces (hyperrectangles) where
they are homogeneous, by a tree grown with the fMEs as response and the
features as partitioning variables. Each subspace gets a conditional AME
(cAME), a conditional average NLM (cANLM), their SDs, coefficients of
variation CoV = SD / |mean| and t-based confidence intervals

    mean +- t(1 - alpha/2, n - 1) * SD / sqrt(n).

``method="ctree"`` uses :class:`fme.CTree` (partykit's CTREE, as the
paper); ``method="cart"`` a scikit-learn CART tree. ``n_partitions`` and
``max_sd`` reduce the grown tree as R's fmeffects does.

This module is the front door: :func:`came` validates its arguments once
(:func:`_check_came_args`, on in-memory or Dask effects alike) and hands them
to the in-memory engine (:func:`fme._local.came.came`) or the Dask
engine (:func:`fme._dask.came.came`); :func:`partition_stability` refits
on subsamples. The result, :class:`PartitionResult` with its tables (the leaf tests'
:class:`LeafTests`), lives in :mod:`fme._trees.partition` and is re-exported here.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._core.result_base import with_class
from ._core.results import FMEResult
from ._dask import came as dask_came
from ._dask.outputs import DaskMultiFMEResult
from ._dask.result import DaskFMEResult
from ._local import came as local_came
from ._trees.args import check_tree_params
from ._trees.joint import JointPartitionResult
from ._trees.partition import LeafTests, PartitionResult
from ._trees.settings import TreeSettings
from ._utils.numfmt import count
from ._utils.progress import progress_bar
from ._utils.validation import check_conf_level, check_random_state, seed_of
from .exceptions import DataError, FeatureError, FMEError, ParameterError

__all__ = ["came", "JointPartitionResult", "PartitionResult", "LeafTests", "partition_stability"]


# ---------------------------------------------------------------- public API
def came(
    effects: FMEResult | Sequence[FMEResult],
    *,
    method: str = "ctree",
    features: list[str] | None = None,
    n_partitions: int | None = None,
    max_sd: float | None = None,
    conf_level: float = 0.95,
    standardize: bool = True,
    sample_size: int | None = None,
    random_state: Any = None,
    honest: bool = True,
    honest_fraction: float = 0.5,
    n_splits: int = 1,
    **tree_params: Any,
) -> PartitionResult:
    """Conditional AMEs on subspaces found by a tree (paper §5.5), honest by default; of one effect, or of
    several effects at once (joint regions).

    The paper, R's fmeffects and marginaleffects' heterogeneity recipe grow the tree and estimate each
    leaf's cAME and CI on the same rows; the tree picks the splits that separate the fMEs most, so those
    intervals are too narrow and leaf differences look more significant than they are (Athey & Imbens,
    PNAS 2016). With ``honest=True`` (the default) the tree is grown and reduced on a seeded part of the
    evaluated rows and every leaf figure (cAME, SD, CI, cANLM, inference columns) comes from the other
    part only (:attr:`PartitionResult.grown_on`, :attr:`PartitionResult.estimated_on`, ``n``/``n_grown``
    in :attr:`PartitionResult.leaves`). Pass ``honest=False`` for the paper's procedure (the replication
    notebooks do); its leaves table then says that the intervals are not adjusted for the selection.

    Joint regions: given a list of effects (``fme.came([eff_a, eff_b, eff_c])``, each from :func:`fme.fme` on
    the same rows with the same model) one tree is grown on the matrix of their fMEs, one column per effect:
    CTREE with a multivariate response (its tests and split statistic use all columns at once: the Kronecker
    covariance of partykit's ctree) or CART on the squared error summed over the columns. With
    ``standardize=True`` each effect's fMEs are scaled to SD 1 before growing, so that no effect dominates by
    its unit; the figures stay in each effect's own unit. The result, a :class:`JointPartitionResult`, has one
    ``leaves`` row per (leaf, effect) (column ``effect``: the effect's step label), ``test()`` with one Holm
    adjustment across every effect's leaf differences, and ``heterogeneity()``: the share of each effect's fME
    variance that the regions explain, with intervals (the decomposition of Herbinger et al., JMLR 2024). A
    list of one effect gives exactly ``fme.came(effect)``. ``max_sd`` and ``n_splits > 1`` apply to one
    effect only.

    Parameters
    ----------
    effects : FMEResult or list of FMEResult
        From :func:`fme.fme`; a single output (not ``target_class='all'``). A list (or tuple): several
        effects of the same model on the same evaluated rows (all in memory or all of Dask data), partitioned
        jointly (see above); a :class:`~fme.exceptions.DataError` names an effect whose rows or model differ.
    method : {'ctree', 'cart'}, default='ctree'
        CTREE (:class:`fme.CTree`, partykit's algorithm, as the paper)
        or CART (scikit-learn's ``DecisionTreeRegressor``; categorical
        features are one-hot encoded and each split maps back to a level set).
    features : list of str, optional
        Partitioning variables; default: the model's input columns if known,
        else every column of the data the effects were computed on.
    n_partitions : int, optional
        Reduce the grown tree to this many subspaces by greedily merging the
        sibling leaves whose pooled fMEs have the smallest SD (R fmeffects).
    max_sd : float, optional
        Reduce to the fewest subspaces whose largest fME SD is below
        ``max_sd``. With ``n_partitions`` or ``max_sd`` the tree grows with
        fmeffects' defaults alpha = 0.35, minbucket = 2% of n unless given.
    conf_level : float, default=0.95
        Confidence level of the t-based CIs.
    standardize : bool, default=True
        Grow the tree on standardised fMEs (of several effects: each column by its own SD). CTREE's
        statistics and p-values are invariant to this, but partykit's *absolute* variance tolerance
        (1.5e-8) stops trees on tiny-scale responses such as probabilities or
        small steps (CTREE spec §9); standardising removes that artefact. (GADGET and other tools call it
        ``scale``; passing ``scale=`` is refused with this name.)
        Reported figures are always on the fME scale.
    sample_size : int, optional
        Effects of Dask data (:func:`fme.fme` on a ``dask.dataframe.DataFrame``)
        only: the tree is grown on a seeded sample (``random_state``) of at
        most this many evaluated rows (default 10**6; when there are no more
        rows, all of them: the tree of the pandas path); every row is then
        assigned to its subspace and the cAMEs, CIs and NLM summaries are
        aggregated over all rows exactly. ``notes`` and ``grown_on_sample``
        say whether a sample was used.
    random_state : int, optional
        Seed of that sample and of the honest split (default 0).
    honest : bool, default=True
        Grow the tree on one part of the rows and estimate the leaves on the other (see above). Which part
        a row falls in depends only on the seed and the row's index label (a seeded hash), so reordered
        rows, or the same rows as Dask data, give the same partition.
    honest_fraction : float, default=0.5
        Share of the evaluated rows that grow the tree (the rest estimate the leaves), in (0, 1).
    n_splits : int, default=1
        Repeat the honest split this many times (seeds derived from ``random_state``; the first is the
        partition returned) and report, in :attr:`PartitionResult.splits` and
        :attr:`PartitionResult.split_summary`, how often the first split recurs, the spread of the leaf
        cAMEs and the median p-value of the global test across splits (as in Chernozhukov et al.'s GATES;
        twice the median is a valid p-value over the splits).
    **tree_params
        Tree parameters by partykit's names (``minbucket``, ``alpha``,
        ``testtype``, ``mincriterion``, ``maxdepth``, ...) or, for CART,
        scikit-learn's (``min_samples_leaf``, ``max_depth``, ...). CTree's
        ``majority`` defaults to True here (partykit: False): a row with a
        missing value or a level absent from a node (an honest estimation row,
        an extrapolation point) goes to the child with more training rows, not
        to a random one, so its subspace is the same in every run and engine.
        The trees grown on the evaluated rows are the same either way.

    Returns
    -------
    PartitionResult

    Examples
    --------
    >>> part = fme.came(eff, minbucket=100, testtype="teststatistic", mincriterion=0.99)  # doctest: +SKIP
    >>> part.leaves[["node", "n", "came", "came_ci_low", "came_ci_high"]]              # doctest: +SKIP
    >>> joint = fme.came([eff_a, eff_b, eff_c], minbucket=100)                         # doctest: +SKIP
    >>> joint.leaves[["node", "effect", "n", "came", "conf_low", "conf_high"]]         # doctest: +SKIP
    >>> joint.heterogeneity()[["effect", "share_explained", "share_ci_low", "share_ci_high"]]  # doctest: +SKIP
    """
    if isinstance(effects, (list, tuple)):
        return _came_joint(
            list(effects),
            dict(
                method=method,
                features=features,
                n_partitions=n_partitions,
                max_sd=max_sd,
                conf_level=conf_level,
                standardize=standardize,
                sample_size=sample_size,
                random_state=random_state,
                honest=honest,
                honest_fraction=honest_fraction,
                n_splits=n_splits,
                **tree_params,
            ),
        )
    if isinstance(effects, DaskMultiFMEResult):  # several outputs of Dask data, as for FMEResult below
        raise ParameterError("came needs one fME per row; compute effects with a single target_class, not 'all'.")
    on_dask = isinstance(effects, DaskFMEResult)
    if not on_dask and sample_size is not None:
        raise ParameterError(
            "sample_size applies to Dask effects only (the tree is then grown on a sample); "
            "in-memory effects use every row."
        )
    if not on_dask and not isinstance(effects, FMEResult):
        raise DataError(f"`effects` must be the FMEResult of fme.fme(...), got {type(effects).__name__}.")
    if effects.output_names is not None:
        raise ParameterError("came needs one fME per row; compute effects with a single target_class, not 'all'.")
    if effects.n == 0:
        raise DataError("the effects have no evaluated rows; nothing to partition.")
    conf_level, features, params = _check_came_args(
        effects, method, features, n_partitions, max_sd, conf_level, standardize, tree_params
    )
    _check_honest(honest, honest_fraction, n_splits)
    seed = seed_of(random_state)
    params = {**params, "honest": bool(honest), "honest_fraction": float(honest_fraction)}
    seeds = [seed] + [int(s) for s in np.random.SeedSequence(seed).generate_state(n_splits - 1)]

    settings = TreeSettings(
        method=method,
        features=tuple(features),
        n_partitions=n_partitions,
        max_sd=max_sd,
        conf_level=conf_level,
        standardize=standardize,
        params=params,
        tree_params=tree_params,
        honest=bool(honest),
        honest_fraction=float(honest_fraction),
        seed=seed,
    )
    engine: Any = dask_came if on_dask else local_came

    def one(split_seed: int) -> PartitionResult:
        return engine.came(effects, settings.with_seed(split_seed), sample_size=sample_size, random_state=random_state)

    part = one(seeds[0])
    if n_splits > 1:
        part.splits, part.split_summary = _split_stability(part, [part] + [one(s) for s in seeds[1:]], seeds)
    # a classifier's cAMEs are of one class's probability: the leaves say which, as every table of its effects
    with_class(part.leaves, getattr(effects, "explained_class", None))
    return part


def _check_honest(honest: Any, honest_fraction: Any, n_splits: Any) -> None:
    """:func:`came`'s honest-split arguments."""
    if not isinstance(honest, (bool, np.bool_)):
        raise ParameterError(f"honest must be True or False, got {honest!r}.")
    if (
        isinstance(honest_fraction, bool)
        or not isinstance(honest_fraction, numbers.Real)
        or not 0 < honest_fraction < 1
    ):
        raise ParameterError(f"honest_fraction must be a number strictly between 0 and 1, got {honest_fraction!r}.")
    if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral) or n_splits < 1:
        raise ParameterError(f"n_splits must be a positive integer, got {n_splits!r}.")
    if n_splits > 1 and not honest:
        raise ParameterError("n_splits repeats the honest split; pass honest=True (or n_splits=1).")


def _same_rows_and_model(effects: list[Any], on_dask: bool) -> None:
    """Every effect of a joint partition on the rows and model of the first; a DataError names the one that is
    not. In memory the model is not kept: the same model predicts the same f(x) on the same rows."""
    first = effects[0]
    for k, e in enumerate(effects[1:], start=1):
        if on_dask:
            from dask.base import tokenize

            same_rows = e.n == first.n and (e.data is first.data or tokenize(e.data) == tokenize(first.data))
            same_model = e.plan.model is first.plan.model
        else:
            # the tree splits every effect's fMEs on the first effect's features: the data must be the same,
            # also where the model ignores a column (f(x) alike on other data)
            same_rows = e.results.index.equals(first.results.index) and (
                e.data is first.data or e.data.equals(first.data)
            )
            fx, fx0 = e.predictions.get("f_x"), first.predictions.get("f_x")
            same_model = e.model_description == first.model_description and (
                fx is None or fx0 is None or np.array_equal(fx.to_numpy(), fx0.to_numpy(), equal_nan=True)
            )
        if not same_rows:
            raise DataError(
                f"effects[{k}] ({e.describe_steps()}) was evaluated on other rows or other data than effects[0] "
                f"({count(e.n, 'row')} vs {first.n}, other index labels or other values); a joint partition needs "
                "every effect on the same rows: compute them on the same data with the same exclusions (e.g. "
                "on_extrapolation='keep')."
            )
        if not same_model:
            raise DataError(
                f"effects[{k}] ({e.describe_steps()}) comes from another model than effects[0] "
                f"({e.model_description!r} vs {first.model_description!r}, or other predictions f(x)); a joint "
                "partition needs the effects of one model."
            )


def _came_joint(effects: list[Any], kw: dict[str, Any]) -> PartitionResult:
    """:func:`came` of a list of effects: checked, then one tree on the matrix of their fMEs."""
    if not effects:
        raise ParameterError("came got an empty list of effects; pass one or more results of fme.fme.")
    if len(effects) == 1:
        return came(effects[0], **kw)
    on_dask = isinstance(effects[0], DaskFMEResult)
    for k, e in enumerate(effects):
        if isinstance(e, DaskMultiFMEResult) or not isinstance(e, (FMEResult, DaskFMEResult)):
            raise DataError(
                f"effects[{k}] must be the result of fme.fme(...) with a single output, got {type(e).__name__}."
            )
        if isinstance(e, DaskFMEResult) != on_dask:
            raise DataError(
                f"effects[{k}] is {'not ' if on_dask else ''}of Dask data but effects[0] is"
                f"{'' if on_dask else ' not'}; a joint partition needs all effects in memory or all on Dask."
            )
        if e.output_names is not None:
            raise ParameterError(
                f"effects[{k}] has several outputs (target_class='all'); compute it with a single target_class."
            )
        if e.n == 0:
            raise DataError(f"effects[{k}] has no evaluated rows; nothing to partition.")
    tree_params = {k: v for k, v in kw.items() if k not in _CAME_ARGS}
    if kw["max_sd"] is not None:
        raise ParameterError("max_sd applies to one effect; reduce a joint partition with n_partitions.")
    if kw["n_splits"] != 1:
        raise ParameterError("n_splits applies to one effect; use n_splits=1 for a joint partition.")
    if not on_dask and kw["sample_size"] is not None:
        raise ParameterError("sample_size applies to Dask effects only; in-memory effects use every row.")
    _same_rows_and_model(effects, on_dask)
    _check_honest(kw["honest"], kw["honest_fraction"], 1)
    conf_level, features, params = _check_came_args(
        effects[0],
        kw["method"],
        kw["features"],
        kw["n_partitions"],
        None,
        kw["conf_level"],
        kw["standardize"],
        tree_params,
    )
    params = {**params, "honest": bool(kw["honest"]), "honest_fraction": float(kw["honest_fraction"])}
    settings = TreeSettings(
        method=kw["method"],
        features=tuple(features),
        n_partitions=kw["n_partitions"],
        max_sd=None,
        conf_level=conf_level,
        standardize=kw["standardize"],
        params=params,
        tree_params=tree_params,
        honest=bool(kw["honest"]),
        honest_fraction=float(kw["honest_fraction"]),
        seed=seed_of(kw["random_state"]),
    )
    engine: Any = dask_came if on_dask else local_came
    part = engine.came_joint(effects, settings, sample_size=kw["sample_size"], random_state=kw["random_state"])
    # a classifier's cAMEs are of one class's probability: every effect's leaves say which, as for one effect
    for one in part.parts:
        with_class(one.leaves, getattr(one.effects, "explained_class", None))
    part.refresh()
    return part


#: :func:`came`'s own keyword arguments (the others are tree parameters).
_CAME_ARGS = (
    "method",
    "features",
    "n_partitions",
    "max_sd",
    "conf_level",
    "standardize",
    "sample_size",
    "random_state",
    "honest",
    "honest_fraction",
    "n_splits",
)


def _split_stability(
    part: PartitionResult, parts: list[PartitionResult], seeds: list[int]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per honest split: its seed, first split, leaves, range of leaf cAMEs and the global test's p-value;
    and their summary (share of splits with the first split of ``part``, median p-value, 2 x median)."""
    rows = []
    for k, (p, s) in enumerate(zip(parts, seeds)):
        came_values = p.leaves["came"].to_numpy(dtype=float)
        glob = p.test().global_test if len(p.leaf_ids) > 1 else {"p_value": np.nan}
        rows.append(
            {
                "split": k + 1,
                "seed": s,
                "root_split": p.root_split,
                "n_leaves": len(p.leaf_ids),
                "came_min": float(np.nanmin(came_values)),
                "came_max": float(np.nanmax(came_values)),
                "global_p_value": glob["p_value"],
            }
        )
    table = pd.DataFrame(rows)
    p = table["global_p_value"].to_numpy(dtype=float)
    med = float(np.nanmedian(p)) if np.isfinite(p).any() else float("nan")
    summary = {
        "n_splits": len(parts),
        "root_split": part.root_split,
        "share_same_root_split": float(np.mean([r == part.root_split for r in table["root_split"]])),
        "n_leaves_min": int(table["n_leaves"].min()),
        "n_leaves_max": int(table["n_leaves"].max()),
        "came_min": float(table["came_min"].min()),
        "came_max": float(table["came_max"].max()),
        "median_global_p_value": med,
        "global_p_value_split_adjusted": min(1.0, 2.0 * med),
    }
    return table, summary


def _check_came_args(
    effects: Any,
    method: Any,
    features: Any,
    n_partitions: Any,
    max_sd: Any,
    conf_level: Any,
    standardize: bool,
    tree_params: dict,
) -> tuple[float, list[str], dict]:
    """:func:`came`'s arguments checked against ``effects`` (in memory or Dask): the confidence level, the
    partitioning features (defaults resolved) and the record of the arguments (``PartitionResult.params``)."""
    conf_level = check_conf_level(conf_level)
    if method not in ("ctree", "cart"):
        raise ParameterError(f"method must be 'ctree' or 'cart', got {method!r}.")
    if n_partitions is not None and max_sd is not None:
        raise ParameterError("give either n_partitions or max_sd, not both.")
    if n_partitions is not None and (
        isinstance(n_partitions, bool) or not isinstance(n_partitions, numbers.Integral) or n_partitions < 2
    ):
        raise ParameterError(f"n_partitions must be an integer >= 2, got {n_partitions!r}.")
    if max_sd is not None and (not isinstance(max_sd, numbers.Real) or not np.isfinite(max_sd) or max_sd <= 0):
        raise ParameterError(f"max_sd must be a positive number, got {max_sd!r}.")
    if isinstance(features, str):
        features = [features]  # one feature, not its letters
    if features is not None and len(list(features)) == 0:
        raise ParameterError("`features` is empty; name at least one partitioning feature, or None for the default.")
    check_tree_params(method, tree_params)
    params = {
        "features": None if features is None else list(features),
        "n_partitions": n_partitions,
        "max_sd": max_sd,
        "standardize": standardize,
        **tree_params,
    }
    columns = effects.data.columns
    if features is None:
        features = list(effects.model_features) if effects.model_features is not None else list(columns)
    missing = [f for f in features if f not in columns]
    if missing:
        raise FeatureError(
            f"partitioning feature(s) {missing} are not columns of the data the effects were computed on."
        )
    return conf_level, list(features), params


#: Absolute size parameters per tree method, scaled to the subsample by :func:`partition_stability`.
_SIZE_PARAMS = {"ctree": ("minbucket", "minsplit"), "cart": ("min_samples_leaf", "min_samples_split")}


def _subset(effects: FMEResult, positions: np.ndarray) -> FMEResult:
    """The same effects restricted to some evaluated rows (by position)."""
    rows = effects.inference_rows
    return dataclasses.replace(
        effects,
        results=effects.results.iloc[positions],
        predictions=effects.predictions.iloc[positions],
        inference_rows=None if rows is None else rows.take(positions),
        positions=None if effects.positions is None else effects.positions[positions],
    )


def _refit(effects: FMEResult, partition: PartitionResult, params: dict, at_most: bool) -> PartitionResult:
    """One refit of :func:`partition_stability` with the partition's method and ``params``."""
    cap = params.get("n_partitions")
    if at_most and cap is not None:
        grown = came(
            effects,
            method=partition.method,
            conf_level=partition.conf_level,
            **{k: v for k, v in params.items() if k != "n_partitions"},
        )
        if len(grown.leaf_ids) <= int(cap):
            return grown
    return came(effects, method=partition.method, conf_level=partition.conf_level, **params)


def partition_stability(
    partition: PartitionResult,
    *,
    n_subsamples: int = 20,
    fraction: float = 0.5,
    random_state: int | None = 0,
    scale_sizes: bool = True,
    progress: bool | None = None,
    at_most: bool = False,
) -> pd.DataFrame:
    """Refit a partition on random subsamples of its rows: how stable are the AME and the subspaces?

    Small leaves of a tree are unstable (paper §5.5; report checklist §1.7
    asks for "variation across subsamples"). Each subsample draws
    ``round(fraction * n)`` of the evaluated rows without replacement and
    grows the tree again with the same method and arguments
    (:attr:`PartitionResult.params`); the fMEs themselves are not recomputed,
    so this measures the sampling variability of the summaries given the
    fitted model, not model-refit uncertainty.

    Parameters
    ----------
    partition : PartitionResult
        From :func:`came`.
    n_subsamples : int, default=20
    fraction : float, default=0.5
        Share of the evaluated rows in each subsample, in (0, 1).
    random_state : int, numpy Generator or None, default=0
        Seed of the subsample draws (None: seed 0 as well; a Generator, e.g. ``numpy.random.default_rng()``, for
        draws of its own).
    scale_sizes : bool, default=True
        Scale absolute size parameters given to :func:`came` (CTREE
        ``minbucket``/``minsplit``, CART integer ``min_samples_leaf``/
        ``min_samples_split``) by the subsample share, so a refit may split
        as finely, relative to its rows, as the full tree. Defaults that
        :func:`came` derives from n (``n_partitions``/``max_sd``) follow the
        subsample anyway.
    progress : bool, optional
        A progress bar over the refits: default on a terminal only, unless
        ``FME_PROGRESS=0`` (:mod:`fme._utils.progress`).
    at_most : bool, default=False
        For a partition reduced with ``n_partitions``: True takes it as an upper bound, so a refit whose tree,
        grown with the partition's other parameters, has no more leaves keeps it as grown (the reduction of
        paper §5.5 applies only to a larger one); False repeats the exact call, and a refit that grows fewer
        leaves fails (``error``). The growth parameters should then be explicit in :func:`came`'s call (CTREE
        ``alpha``/``minbucket``, CART ``min_samples_leaf``): without ``n_partitions`` their defaults are not
        those of a reduction.

    Returns
    -------
    DataFrame
        One row per subsample: ``subsample``, ``n``, ``ame`` (mean fME of
        the subsample), ``n_leaves``, ``root_split`` (feature of the first
        split, None for a single node), ``same_root_split`` (equal to the
        full partition's), ``ari`` (adjusted Rand index between the
        subsample's subspaces and the full partition's on the subsample's
        rows: 1 = the same grouping, about 0 = unrelated) and ``error``
        (the message when the refit failed, e.g. fewer leaves than
        ``n_partitions``; the tree columns are then missing).
    """
    from sklearn.metrics import adjusted_rand_score

    if not isinstance(partition, PartitionResult):
        raise DataError(f"`partition` must be the PartitionResult of fme.came(...), got {type(partition).__name__}.")
    if isinstance(partition, JointPartitionResult):
        raise ParameterError(
            "partition_stability refits the partition of one effect; pass one effect's partition of the joint one, "
            "part.parts[k] (its refits grow one-effect trees), or refit fme.came([...]) on subsamples yourself."
        )
    if isinstance(n_subsamples, bool) or not isinstance(n_subsamples, numbers.Integral) or n_subsamples < 1:
        raise ParameterError(f"n_subsamples must be a positive integer, got {n_subsamples!r}.")
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0 < fraction < 1:
        raise ParameterError(f"fraction must be a number strictly between 0 and 1, got {fraction!r}.")
    effects = partition.effects
    n = effects.n
    m = int(round(fraction * n))
    if m < 2:
        raise ParameterError(f"a subsample of {fraction:g} x {count(n, 'row')} has fewer than 2 rows; raise fraction.")
    rng = check_random_state(random_state)
    fmes = effects.results["fme"].to_numpy(dtype=float)
    full_leaf = partition.leaf_of_row.to_numpy()
    full_root = partition.root_split
    params = dict(partition.params)
    if scale_sizes:
        # Absolute leaf/split sizes are relative to n: a minbucket of 30 on 106 rows allows splits,
        # on a half-sample of 53 it forbids every split, and the refit would look "unstable" for that alone.
        for key in _SIZE_PARAMS[partition.method]:
            v = params.get(key)
            if isinstance(v, numbers.Real) and not isinstance(v, bool) and v >= 1:
                params[key] = max(1, round(v * m / n)) if isinstance(v, numbers.Integral) else v * m / n
    rows = []
    for b in progress_bar(
        range(int(n_subsamples)), total=int(n_subsamples), desc="stability refits", progress=progress
    ):
        pos = np.sort(rng.choice(n, size=m, replace=False))
        row: dict[str, Any] = {
            "subsample": b + 1,
            "n": m,
            "ame": float(fmes[pos].mean()),
            "n_leaves": pd.NA,
            "root_split": None,
            "same_root_split": pd.NA,
            "ari": np.nan,
            "error": None,
        }
        try:
            sub = _refit(_subset(effects, pos), partition, params, at_most)
        except FMEError as exc:
            row["error"] = str(exc)
        else:
            root = sub.root_split
            row.update(
                n_leaves=len(sub.leaf_ids),
                root_split=root,
                same_root_split=root == full_root,
                ari=float(adjusted_rand_score(full_leaf[pos], sub.leaf_of_row.to_numpy())),
            )
        rows.append(row)
    out = pd.DataFrame(rows)
    # nullable dtypes: a failed refit has no tree figures (<NA>), the others stay integers/booleans
    return out.astype({"n_leaves": "Int64", "same_root_split": "boolean"})
