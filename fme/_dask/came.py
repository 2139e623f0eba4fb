"""cAMEs of Dask data, on top of :mod:`fme._dask.effects` (AME tables: :mod:`fme._dask.ame`).

* :func:`came`: :func:`fme.came` on Dask effects: the tree is grown on
  a seeded sample of at most ``sample_size`` evaluated rows (default 10**6;
  all rows, hence the pandas tree, when there are no more), then one pass
  assigns every evaluated row to its subspace and aggregates the cAMEs, their
  CIs and NLM summaries over all rows exactly (merged sums; exact medians).
  Honest: the tree grows on the growing part only, the subspaces' figures and
  the estimation rows' root (``estimation_root``) come from the estimation
  rows, and the pass also returns their fMEs and subspaces for the tree's
  panels (``estimation_sample``: all of them up to ``sample_size``, beyond a
  seeded sample by row label).

Computations: when all evaluated rows fit in the sample (and their fMEs,
features and Jacobian rows take at most :data:`KEEP_BYTES`), the chunks are
evaluated once and kept on the workers (one computation, then one to fetch the
sample); else one for the sample (and, beyond ``sample_size`` rows, one more to
count the growing rows and draw the seeded sample) and the pass evaluates the
chunks anew. Then one for the pass (the subspaces' sums, the data's ranges for
``describe()``), and with NLMs one more for every subspace's median. The plan
and the tree go to each worker once (:func:`fme._dask.common.ship`); each
chunk groups its rows by subspace once (a sort), so the pass costs
O(rows log rows + subspaces) per chunk.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple, cast

import numpy as np
import pandas as pd

from .._core.exclusions import code_of
from .._core.kernel import evaluate_batch
from .._core.plan import Plan
from .._core.results import FMEResult
from .._core.summary import Moments
from .._trees.args import string_columns
from .._trees.grow import grow_partition, honest_mask
from .._trees.joint import JointPartitionResult, grow_joint
from .._trees.partition import LEAF_COLUMNS, NLM_COLUMNS, PartitionResult, estimation_root, subspace_counts
from .._trees.settings import TreeSettings
from .._utils.numfmt import count
from .._utils.validation import seed_of
from ..exceptions import DataError
from ..inference.estimates import INFERENCE_COLUMNS, sample_inference
from .common import Shipped, check_sample_size, ship, tree_reduce
from .leaf_figures import all_leaves, leaf_moments, leaf_row, stack_leaves
from .quantiles import select, store_pivots
from .result import DaskFMEResult

__all__ = ["came", "came_joint"]

#: The evaluated chunks (fMEs, NLMs, features and Jacobian rows) stay on the workers between the sample and the
#: subspaces' pass when all evaluated rows fit in the sample and take at most this many bytes; else each pass
#: evaluates its chunks anew.
KEEP_BYTES = 256 * 2**20

#: ``honest`` and ``panel``: (fraction, seed) of the rows a seeded hash of their labels keeps.
_Split = tuple[float, int]
#: A chunk's leaf sums (arrays over the leaves): fME moments, NLM moments, NLMs at least the threshold, Jacobian
#: sums, growing rows (the last four None when not asked for).
_LeafSums = tuple[Moments, Moments | None, np.ndarray | None, np.ndarray | None, np.ndarray | None]
#: The leaf sums with the chunks' spans, NLM pivots and panel rows listed in order (:func:`_merge_leaves`).
_LeafHead = tuple[_LeafSums, list[tuple[Any, Any]], list[dict[Any, tuple[np.ndarray, int]]], list[pd.DataFrame]]


class _Evaluated(NamedTuple):
    """A chunk's evaluated rows as the cAME passes read them: the fMEs (and NLMs), the partitioning features
    of those rows, their Jacobian rows (delta method; else None) and the chunk's min and max of the numeric
    features over all its rows (for ``describe()``)."""

    results: pd.DataFrame
    X: pd.DataFrame
    jacobian: np.ndarray | None
    span: tuple[Any, Any]


def _evaluate(part: pd.DataFrame, plan: Any, features: list[str], numeric: list[str]) -> _Evaluated:
    batch = evaluate_batch(plan, part, with_rows=plan.method == "delta")
    cols = [c for c in ("fme", "nlm") if c in batch.results.columns]
    jac = None if batch.rows is None or batch.rows.jacobian is None else batch.rows.jacobian
    return _Evaluated(
        batch.results[cols], part.iloc[batch.cand][features], jac, (part[numeric].min(), part[numeric].max())
    )


def _growing_rows(ev: _Evaluated, honest: _Split | None) -> pd.DataFrame:
    """The evaluated rows of a chunk: their fME (and NLM) beside the partitioning features (with ``honest``
    = (fraction, seed), only the rows of the growing part)."""
    out = pd.concat([ev.results, ev.X.rename(columns=lambda c: f"__x_{c}")], axis=1)
    return out if honest is None else out[honest_mask(out.index, *honest)]


def _evaluate_shipped(part: pd.DataFrame, shipped: Shipped, features: list[str], numeric: list[str]) -> _Evaluated:
    return _evaluate(part, shipped.value, features, numeric)


def _rows_with_features(
    part: pd.DataFrame, shipped: Shipped, features: list[str], honest: _Split | None
) -> pd.DataFrame:
    return _growing_rows(_evaluate(part, shipped.value, features, []), honest)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    from dask.dataframe.dispatch import concat

    # as Dask joins a frame's chunks (categorical levels united)
    return concat(list(frames))  # type: ignore[no-untyped-call]  # dask: untyped


def _leaf_pass_of(
    part: pd.DataFrame,
    shipped: Shipped,
    features: list[str],
    leaf_ids: np.ndarray,
    threshold: float,
    honest: _Split | None,
    numeric: list[str],
    panel: _Split | None,
) -> tuple[_LeafHead, dict[int, np.ndarray]]:
    """:func:`_leaf_pass` of a chunk evaluated in this task (``shipped``: the plan, the tree, its lookup)."""
    plan, tree, lookup = shipped.value
    return _leaf_pass(_evaluate(part, plan, features, numeric), tree, lookup, leaf_ids, threshold, honest, panel)


def _leaf_pass_kept(
    ev: _Evaluated,
    shipped: Shipped,
    leaf_ids: np.ndarray,
    threshold: float,
    honest: _Split | None,
    panel: _Split | None,
) -> tuple[_LeafHead, dict[int, np.ndarray]]:
    """:func:`_leaf_pass` of a chunk evaluated before and kept on its worker (``shipped``: tree, lookup)."""
    return _leaf_pass(ev, *cast(tuple[Any, np.ndarray], shipped.value), leaf_ids, threshold, honest, panel)


def _leaf_pass(
    ev: _Evaluated,
    tree: Any,
    lookup: np.ndarray,
    leaf_ids: np.ndarray,
    threshold: float,
    honest: _Split | None,
    panel: _Split | None = None,
) -> tuple[_LeafHead, dict[int, np.ndarray]]:
    """Per subspace: merged-sum ingredients of the cAME figures (arrays over ``leaf_ids``, sorted), with
    ``honest`` = (fraction, seed) over the estimation rows only and the count of growing rows; the chunk's
    min and max of the numeric features (all rows); the fME and subspace of its estimation rows kept by
    ``panel`` = (fraction, seed) (:func:`_panel_rows`; none without); and a store of each subspace's sorted
    defined NLMs with its pivots (for the exact medians)."""
    results, jac_all, span = ev.results, ev.jacobian, ev.span
    n_leaves = leaf_ids.size
    nl_all = results["nlm"].to_numpy(dtype=float) if "nlm" in results.columns else None
    fm = Moments(np.zeros(n_leaves, dtype=np.int64), np.zeros(n_leaves), np.zeros(n_leaves))
    nm = None if nl_all is None else Moments(np.zeros(n_leaves, dtype=np.int64), np.zeros(n_leaves), np.zeros(n_leaves))
    nlin = None if nl_all is None else np.zeros(n_leaves, dtype=np.int64)
    jac = None if jac_all is None else np.zeros((n_leaves, jac_all.shape[1]))
    grown = np.zeros(n_leaves, dtype=np.int64) if honest is not None else None
    store: dict[int, np.ndarray] = {}
    kept_rows = _panel_rows(results.iloc[:0], np.empty(0, dtype=np.int64), leaf_ids, None)
    if len(results):
        X = string_columns(ev.X, "features")
        node = lookup[np.asarray(tree.apply(X), dtype=int)]
        # each row's subspace as a position in leaf_ids (-1: none), then the rows grouped by it in row order
        pos = np.minimum(np.searchsorted(leaf_ids, node), n_leaves - 1)
        pos = np.where(leaf_ids[pos] == node, pos, -1)
        if honest is not None:
            grow = honest_mask(results.index, *honest)
            grown = np.bincount(pos[grow & (pos >= 0)], minlength=n_leaves).astype(np.int64)
            pos = np.where(grow, -1, pos)  # the growing rows take no part in the leaves' figures
        kept_rows = _panel_rows(results, pos, leaf_ids, panel)
        fm_all = results["fme"].to_numpy(dtype=float)
        order = np.argsort(pos, kind="stable")
        cuts = np.searchsorted(pos[order], np.arange(n_leaves + 1))
        fm_n, fm_mean, fm_m2 = fm.n.copy(), fm.mean.copy(), fm.m2.copy()
        if nm is not None:
            nm_n, nm_mean, nm_m2 = nm.n.copy(), nm.mean.copy(), nm.m2.copy()
        for i in np.flatnonzero(cuts[1:] > cuts[:-1]):
            rows = order[cuts[i] : cuts[i + 1]]  # the leaf's rows, in row order (the sums of a row mask)
            m = Moments.of(fm_all[rows])
            fm_n[i], fm_mean[i], fm_m2[i] = m.n[0], m.mean[0], m.m2[0]
            if nm is not None:
                v = cast(np.ndarray, nl_all)[rows]  # NLM moments: the NLMs are there
                m = Moments.of(v)
                nm_n[i], nm_mean[i], nm_m2[i] = m.n[0], m.mean[0], m.m2[0]
                with np.errstate(invalid="ignore"):
                    cast(np.ndarray, nlin)[i] = int((v >= threshold).sum())
                store[int(leaf_ids[i])] = np.sort(v[~np.isnan(v)])
            if jac is not None:
                jac[i] = cast(np.ndarray, jac_all)[rows].sum(axis=0)
        fm = Moments(fm_n, fm_mean, fm_m2)
        if nm is not None:
            nm = Moments(nm_n, nm_mean, nm_m2)
    return ((fm, nm, nlin, jac, grown), [span], [store_pivots(store)], [kept_rows]), store


def _panel_rows(results: pd.DataFrame, pos: np.ndarray, leaf_ids: np.ndarray, panel: _Split | None) -> pd.DataFrame:
    """The ``fme`` and subspace (``node``) of a chunk's rows in a subspace (``pos`` >= 0) that a seeded hash of
    their labels keeps (``panel`` = (fraction, seed); every row from fraction 1 on, none without ``panel``), so
    the rows kept do not depend on the chunks."""
    sel = pos >= 0
    if panel is None:
        sel = np.zeros_like(sel)
    elif panel[0] < 1.0:
        sel &= honest_mask(results.index, *panel)
    return pd.DataFrame(
        {"fme": results["fme"].to_numpy(dtype=float)[sel], "node": leaf_ids[pos[sel]]}, index=results.index[sel]
    )


def _estimation_labels(results: pd.DataFrame, split: _Split) -> pd.Series:
    """The index labels of a chunk's estimation rows (lazy :attr:`PartitionResult.estimated_on` on Dask)."""
    return results.index.to_series()[~honest_mask(results.index, *split)].astype(object)


def _merge_leaves(*heads: _LeafHead) -> _LeafHead:
    """The chunks' leaf sums added up (arrays over the leaves), their spans, pivots and panel rows listed in
    order."""
    (fm, nm, nlin, jac, grown), spans, piv, rows = heads[0][0], *(list(x) for x in heads[0][1:])
    for (f, m, k, j, g), sp, pv, r in heads[1:]:
        fm = fm.merge(f)
        nm = None if nm is None else nm.merge(cast(Moments, m))  # NLMs in every chunk or in none
        nlin = None if nlin is None else nlin + k
        jac = None if jac is None else jac + j
        grown = None if grown is None else grown + g
        spans += sp
        piv += pv
        rows += r
    return (fm, nm, nlin, jac, grown), spans, piv, rows


def _chunk_extrapolation(part: pd.DataFrame, shipped: Shipped, features: list[str]) -> dict[int, int]:
    """Per subspace: the chunk's rows left out as extrapolation points (``shipped``: plan, tree, lookup), taken
    by position (a Dask frame's index labels need not be unique, within a chunk or across chunks)."""
    plan, tree, lookup = shipped.value
    points = np.flatnonzero(evaluate_batch(plan, part, with_rows=False).code == code_of("extrapolation"))
    return subspace_counts(tree, lookup, part.iloc[points][features])


def _chunk_excluded_positions(part: pd.DataFrame, shipped: Shipped) -> np.ndarray:
    """The positions, within the chunk, of the rows the effect left out."""
    return np.flatnonzero(evaluate_batch(shipped.value, part, with_rows=False).code)


def _extrapolation_counts(effects: DaskFMEResult, part: PartitionResult) -> dict[int, int]:
    """:meth:`PartitionResult.extrapolation_counts` over all rows of Dask effects: one pass; each chunk drops
    its extrapolation points down the tree (grown on a sample) and returns only their counts per subspace."""
    from dask.base import compute
    from dask.delayed import delayed

    shipped = ship((effects.plan, part.tree, part._subspace), shared=(cast(Plan, effects.plan).model,))
    counts: dict[int, int] = {}
    for got in compute(
        *[
            delayed(_chunk_extrapolation)(p, shipped, part.features)  # type: ignore[no-untyped-call]  # dask: untyped
            for p in effects.data.to_delayed()
        ]
    ):
        for node, k in got.items():
            counts[node] = counts.get(node, 0) + k
    return counts


def _sample(
    effects: DaskFMEResult, features: list[str], split: _Split | None, sample_size: int, random_state: Any, seed: int
) -> tuple[pd.DataFrame, int, list[Any] | None]:
    """The seeded sample of growing rows the tree grows on (fMEs and ``__x_`` features), the number of growing
    rows and, when every row fits, the evaluated chunks kept on the workers (else None)."""
    from dask.base import persist
    from dask.delayed import delayed

    data, plan = effects.data, cast(Plan, effects.plan)  # set on Dask effects
    meta = pd.concat(
        [
            pd.DataFrame({c: pd.Series(dtype=float) for c in effects.fme_columns + effects.nlm_columns}),
            data._meta[features].rename(columns=lambda c: f"__x_{c}"),
        ],
        axis=1,
    )
    numeric = [f for f in features if pd.api.types.is_numeric_dtype(data._meta[f].dtype)]
    jac = effects.summary_data.jacobian
    width = len(features) + 2 + (0 if jac is None else np.asarray(jac).shape[-1])
    kept = None
    if effects.n <= sample_size and effects.n * width * 8 <= KEEP_BYTES:
        # every (growing) row fits in the sample: the chunks are evaluated once and kept on the workers for
        # the subspaces' pass (no more than the sample the client holds), while the client grows the tree
        shipped = ship(plan, shared=(plan.model,))
        kept = [delayed(_evaluate_shipped)(p, shipped, features, numeric) for p in data.to_delayed()]
        *kept, lazy = persist(*kept, delayed(_concat)([delayed(_growing_rows)(e, split) for e in kept]))  # type: ignore[no-untyped-call]  # dask: untyped
        sample = lazy.compute()
        n = effects.n if split is None else len(sample)
    elif effects.n <= sample_size:
        shipped = ship(plan, shared=(plan.model,))
        sample = delayed(_concat)(
            [delayed(_rows_with_features)(p, shipped, features, split) for p in data.to_delayed()]
        ).compute()
        n = effects.n if split is None else len(sample)
    else:
        rows = data.map_partitions(_rows_with_features, Shipped(plan, shared=(plan.model,)), features, split, meta=meta)
        n = effects.n if split is None else int(rows.shape[0].compute())
        if n <= sample_size:
            sample = rows.compute()
        else:
            sample = rows.sample(frac=min(1.0, sample_size / n), random_state=seed_of(random_state)).compute()
    if not sample.index.is_unique:  # the tree's rows are matched to the data and to the other effects by label
        dup = sample.index[sample.index.duplicated()].unique()[:5].tolist()
        raise DataError(
            f"the index of the Dask data repeats labels (e.g. {dup}), within a chunk or across chunks (chunks "
            "indexed 0, 1, ... each); a cAME matches its rows by label, so give every row its own label, e.g. "
            "build each chunk with its own range (in dd.from_map: chunk.index = range(start, start + len(chunk)))."
        )
    return sample, n, kept


def _small_result(effects: DaskFMEResult, sample: pd.DataFrame, features: list[str]) -> FMEResult:
    """An in-memory :class:`FMEResult` of the sampled rows, for fme.came's own worker to grow the tree on."""
    cols = [c for c in ("fme", "nlm") if c in sample.columns]
    X = sample[[f"__x_{c}" for c in features]].rename(columns=lambda c: c[4:])
    return FMEResult(
        results=sample[cols],
        steps=effects.steps,
        excluded=pd.DataFrame(),
        data=X,
        predictions=pd.DataFrame(index=X.index),
        model_description=effects.model_description,
        explained_class=effects.explained_class,
        nlm_method=effects.nlm_method,
        nlm_linear_threshold=effects.nlm_linear_threshold,
        model_features=tuple(features),
        inference_rows=sample_inference(sample["fme"].to_numpy()),
        conf_level=effects.conf_level,
        positions=np.arange(len(X)),
    )


def _fill(
    effects: DaskFMEResult,
    grown: PartitionResult,
    sample: pd.DataFrame,
    n: int,
    kept: list[Any] | None,
    *,
    features: list[str],
    split: _Split | None,
    sample_size: int,
    seed: int,
) -> PartitionResult:
    """``grown`` (its tree grown on ``sample``) with every subspace's figures over all evaluated rows of
    ``effects``: one pass over the chunks (see the module docstring)."""
    from dask.base import persist
    from dask.delayed import delayed

    data, plan = effects.data, cast(Plan, effects.plan)  # set on Dask effects
    numeric = [f for f in features if pd.api.types.is_numeric_dtype(data._meta[f].dtype)]
    conf_level = grown.conf_level
    # every evaluated row to its subspace, figures merged over all rows; describe(): an unrestricted feature
    # spans the range of all rows of the data (excluded ones too), as in memory, not only the sampled rows
    leaf_ids = np.array(sorted(int(leaf) for leaf in grown.leaf_ids), dtype=np.int64)
    threshold = effects.nlm_linear_threshold
    has_nlm = effects.has_nlm
    # honest: the figure's panels show the estimation rows' fMEs, every one when they fit in sample_size (the
    # pandas figure), else a seeded sample (by label, another seed than the split's)
    panel = None if split is None else (min(1.0, sample_size / max(effects.n - n, 1)), int(seed) + 1)
    if kept is not None:
        shipped = ship((grown.tree, grown._subspace))
        outs = [delayed(_leaf_pass_kept, nout=2)(e, shipped, leaf_ids, threshold, split, panel) for e in kept]
    else:
        shipped = ship((plan, grown.tree, grown._subspace), shared=(plan.model,))
        outs = [
            delayed(_leaf_pass_of, nout=2)(p, shipped, features, leaf_ids, threshold, split, numeric, panel)
            for p in data.to_delayed()
        ]
    tree = tree_reduce([o[0] for o in outs], merge=_merge_leaves)
    medians = {}
    if has_nlm:  # the sorted NLMs stay on the workers for the exact medians (one more round for all leaves)
        persisted = persist(tree, *[o[1] for o in outs])  # type: ignore[no-untyped-call]  # dask: untyped
        (fm, nm, nlin, jac, n_grown), spans, piv, panel_rows = persisted[0].compute()
        problems = [(int(leaf), int(nm.n[i]), [0.5]) for i, leaf in enumerate(leaf_ids)]
        medians = {int(leaf): q[0.5] for leaf, q in zip(leaf_ids, select(list(persisted[1:]), piv, problems))}
        del persisted
    else:
        (fm, nm, nlin, jac, n_grown), spans, piv, panel_rows = tree.compute()
    del kept, outs, tree  # the kept chunks are released on the workers
    index = {int(leaf): i for i, leaf in enumerate(leaf_ids)}
    leaf_rows, leaf_estimates = [], []
    for leaf in grown.leaf_ids:
        i = index[int(leaf)]  # a subspace without estimation rows: NaN figures
        row, est = leaf_row(
            effects,
            leaf_moments(fm, i),
            leaf_moments(nm, i),
            None if nlin is None else nlin[i],
            None if jac is None else jac[i],
            medians.get(int(leaf), np.nan),
            conf_level,
        )
        if split is not None:
            row["n_grown"] = int(n_grown[i])
        leaf_rows.append({"node": leaf, **row, "rule": grown.rule(leaf)})
        leaf_estimates.append(est)
    columns = (
        LEAF_COLUMNS
        + (["n_grown"] if split is not None else [])
        + INFERENCE_COLUMNS
        + (NLM_COLUMNS if has_nlm else [])
        + ["rule"]
    )
    s = effects.summary_data
    root = {
        "node": 1,
        **leaf_row(
            effects,
            s.fme,
            s.nlm,
            None if s.n_linear is None else s.n_linear[0],
            s.jacobian,
            effects.median_nlm,
            conf_level,
        )[0],
        "rule": "(all)",
    }
    if numeric:
        lo = pd.DataFrame([sp[0] for sp in spans]).infer_objects().min()  # chunks as rows: min per column
        hi = pd.DataFrame([sp[1] for sp in spans]).infer_objects().max()
        grown.data_ranges = {f: (float(lo[f]), float(hi[f])) for f in numeric}
    grown._leaf_estimates = stack_leaves(leaf_estimates)
    grown._split_counts = (len(sample), n, n)  # grown on the sample, every subspace's figures over all rows
    if split is not None:
        grown.honest, grown.seed = True, int(seed)
        n_est = int(sum(r["n"] for r in leaf_rows))
        grown._split_counts = (n, n + n_est, n_est)  # growing rows (all, not only the sample), total, estimating
        grown.estimated_on = effects.results.map_partitions(_estimation_labels, split, meta=pd.Series(dtype=object))
    grown.leaves = pd.DataFrame(leaf_rows, columns=columns)
    grown.root = pd.Series(root)[[c for c in columns if c != "n_grown"]]
    grown.estimation_root = estimation_root(grown.root, has_nlm)
    if split is not None:  # the estimation rows' figures: the leaves' sums added up
        row = leaf_row(
            effects,
            all_leaves(fm),
            None if nm is None else all_leaves(nm),
            None if nlin is None else nlin.sum(),
            None if jac is None else jac.sum(axis=0),
            np.nan,
            conf_level,
        )[0]
        grown.estimation_root = estimation_root(row, has_nlm)
        grown.estimation_sample = pd.concat(panel_rows)
    # describe(), predict() and plots use the sampled rows (grown.effects); the figures are over all rows
    grown.dask_effects = effects
    grown._count_extrapolation = partial(_extrapolation_counts, effects)
    grown.grown_on_sample = len(sample) < n
    grown.sample_rows = len(sample)
    grown.notes = list(grown.notes) + [
        f"tree grown on {'a seeded sample of ' if len(sample) < n else 'all '}{len(sample)} of {n} evaluated rows"
        f"{' of the growing part' if split is not None else ''}; "
        "subspace figures over all rows."
    ]
    return grown


def came(
    effects: DaskFMEResult, settings: TreeSettings, *, sample_size: int | None, random_state: Any
) -> PartitionResult:
    """:func:`fme.came` for :class:`~fme._dask.result.DaskFMEResult`, its settings validated by
    :func:`fme.came` (see the module docstring). ``honest``: the tree is grown on the seeded sample of the
    growing part (:func:`fme._trees.grow.honest_mask`, the same rows as in memory) and every subspace's
    figures are summed over all estimation rows."""
    sample_size = check_sample_size(sample_size)
    features, seed = list(settings.features), settings.seed
    split = (float(settings.honest_fraction), int(seed)) if settings.honest else None
    sample, n, kept = _sample(effects, features, split, sample_size, random_state, seed)
    # the tree, grown by fme.came's own worker on an in-memory FMEResult of the sampled rows (already split)
    grown = grow_partition(_small_result(effects, sample, features), settings.unsplit())
    return _fill(effects, grown, sample, n, kept, features=features, split=split, sample_size=sample_size, seed=seed)


def _check_same_kept_rows(effects: list[DaskFMEResult]) -> None:
    """Every effect keeps the same rows of the (same, checked by :func:`fme.came`) data: the rows each one
    excluded (extrapolation points, undefined predictions ...) are compared chunk by chunk by their positions,
    not counted (equal counts of other rows would pass unseen where the tree's sample and the subspaces' counts
    miss them) and not by index label (a Dask frame's labels need not be unique: ``from_map`` chunks often
    repeat 0, 1, ...). Only effects that exclude rows cost a pass (computed together)."""
    from dask.base import compute
    from dask.delayed import delayed

    first = effects[0]
    excluding = [k for k, e in enumerate(effects) if e.n_excluded > 0]
    tasks = []
    for k in excluding:
        plan = cast(Plan, effects[k].plan)  # set on Dask effects
        shipped = ship(plan, shared=(plan.model,))
        tasks.append([delayed(_chunk_excluded_positions)(p, shipped) for p in effects[k].data.to_delayed()])
    got = compute(*tasks)  # type: ignore[no-untyped-call]  # dask: untyped
    rows = dict(zip(excluding, got))

    def same_rows(k: int) -> bool:
        a, b = rows.get(k), rows.get(0)
        if a is None or b is None:
            return a is b
        return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))

    for k, e in enumerate(effects[1:], start=1):
        if not (e.n_excluded == first.n_excluded and same_rows(k)):
            raise DataError(
                f"effects[{k}] ({e.describe_steps()}) was evaluated on other rows than effects[0] (it excludes "
                f"{count(e.n_excluded, 'row')}, effects[0] {first.n_excluded}, not the same ones); a joint "
                "partition needs every effect on the same rows (the same exclusions, e.g. on_extrapolation='keep')."
            )


def came_joint(
    effects: list[DaskFMEResult], settings: TreeSettings, *, sample_size: int | None, random_state: Any
) -> JointPartitionResult:
    """:func:`fme.came` of a list of Dask effects (same data, same model; validated by :func:`fme.came`): the
    joint tree is grown on the seeded sample of growing rows, the same rows for every effect (the sample is drawn
    by the same seed from the same chunks), then each effect's subspace figures are summed over all its rows as
    :func:`came` sums them."""
    sample_size = check_sample_size(sample_size)
    _check_same_kept_rows(effects)
    features, seed = list(settings.features), settings.seed
    split = (float(settings.honest_fraction), int(seed)) if settings.honest else None
    drawn = [_sample(e, features, split, sample_size, random_state, seed) for e in effects]
    first = drawn[0][0].index
    for k, (sample, _, _) in enumerate(drawn[1:], start=1):
        if not sample.index.equals(first):
            raise DataError(
                f"effects[{k}] ({effects[k].describe_steps()}) was evaluated on other rows than effects[0]; a "
                "joint partition needs every effect on the same rows (the same exclusions, e.g. "
                "on_extrapolation='keep')."
            )
    joint = grow_joint(
        [_small_result(e, sample, features) for e, (sample, _, _) in zip(effects, drawn)], settings.unsplit()
    )
    parts = [
        _fill(e, part, sample, n, kept, features=features, split=split, sample_size=sample_size, seed=seed)
        for e, part, (sample, n, kept) in zip(effects, joint.parts, drawn)
    ]
    return JointPartitionResult(parts)


#: The figures of one subspace under the name this module gave them before they moved to :mod:`.leaf_figures`.
_leaf_row = leaf_row
