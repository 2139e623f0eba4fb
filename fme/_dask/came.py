"""cAMEs of Dask data (issue 14), on top of :mod:`fme._dask.effects` (AME tables: :mod:`fme._dask.ame`).

* :func:`came_dask`: :func:`fme.came` on Dask effects: the tree is grown on
  a seeded sample of at most ``sample_size`` evaluated rows (default 10**6;
  all rows, hence the pandas tree, when there are no more), then one pass
  assigns every evaluated row to its subspace and aggregates the cAMEs, their
  CIs and NLM summaries over all rows exactly (merged sums; exact medians).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._core.kernel import evaluate_batch
from .._core.results import FMEResult
from .._core.summary import Moments
from .._trees.args import string_columns
from .._trees.grow import grow_partition
from .._trees.partition import _LEAF_COLUMNS, _NLM_COLUMNS, PartitionResult
from ..inference._estimates import INFERENCE_COLUMNS, Estimates, sample_inference
from .common import _check_sample_size, _seed
from .quantiles import quantiles as _quantiles
from .result import DaskFMEResult

__all__ = ["came_dask"]


def _rows_with_features(part: pd.DataFrame, plan: Any, features: list[str]) -> pd.DataFrame:
    """The evaluated rows of a partition: their fME (and NLM) beside the partitioning features."""
    batch = evaluate_batch(plan, part, with_rows=False)
    cols = [c for c in ("fme", "nlm") if c in batch.results.columns]
    feats = part.iloc[batch.cand][features]
    return pd.concat([batch.results[cols], feats.rename(columns=lambda c: f"__x_{c}")], axis=1)


def _leaf_pass(part: pd.DataFrame, plan: Any, features: list[str], tree: Any, lookup: np.ndarray,
               leaf_ids: list[int], threshold: float) -> tuple:
    """Per subspace: merged-sum ingredients of the cAME figures, and the sorted defined NLMs."""
    batch = evaluate_batch(plan, part, with_rows=plan.method == "delta")
    out: dict[int, tuple] = {}
    sorted_nlm: dict[int, np.ndarray] = {}
    if batch.cand.size == 0:
        return out, sorted_nlm
    X = string_columns(part.iloc[batch.cand][features], "features")
    node = lookup[np.asarray(tree.apply(X), dtype=int)]
    fm = batch.results["fme"].to_numpy(dtype=float)
    nl = batch.results["nlm"].to_numpy(dtype=float) if "nlm" in batch.results.columns else None
    jac = None if batch.rows is None or batch.rows.jacobian is None else batch.rows.jacobian
    for leaf in leaf_ids:
        mask = node == leaf
        if not mask.any():
            continue
        nm = nlin = None
        if nl is not None:
            v = nl[mask]
            nm = Moments.of(v)
            with np.errstate(invalid="ignore"):
                nlin = int((v >= threshold).sum())
            sorted_nlm[leaf] = np.sort(v[~np.isnan(v)])
        out[leaf] = (Moments.of(fm[mask]), nm, nlin, None if jac is None else jac[mask].sum(axis=0))
    return out, sorted_nlm


def _merge_leaves(*parts: tuple) -> dict:
    total: dict[int, list] = {}
    for stats, _ in parts:
        for leaf, (fm, nm, nlin, jac) in stats.items():
            if leaf not in total:
                total[leaf] = [fm, nm, nlin, jac]
                continue
            t = total[leaf]
            t[0] = t[0].merge(fm)
            t[1] = nm if t[1] is None else t[1] if nm is None else t[1].merge(nm)
            t[2] = None if nlin is None else (t[2] or 0) + nlin
            t[3] = None if jac is None else t[3] + jac
    return total


def _describe_moments(m: Any, conf_level: float, upper: float | None = None) -> dict[str, float]:
    """:func:`fme._utils.stats.describe` (without quartiles) from merged moments."""
    from scipy import stats

    n = int(m.n[0])
    out = {"mean": np.nan, "sd": np.nan, "cov": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": float(n)}
    if n == 0:
        return out
    mean = float(m.mean[0])
    out["mean"] = mean
    if n >= 2:
        sd = float(m.sd()[0])
        se = sd / np.sqrt(n)
        half = float(stats.t.ppf(0.5 + conf_level / 2.0, n - 1)) * se
        high = mean + half if upper is None else min(mean + half, upper)
        out.update(sd=sd, ci_low=min(mean - half, high), ci_high=high)
        out["cov"] = sd / abs(mean) if mean != 0 else np.nan
    return out


def _leaf_row(effects: DaskFMEResult, fm: Any, nm: Any, nlin: Any, jac: Any, median_nlm: float,
              conf_level: float) -> dict[str, Any]:
    d = _describe_moments(fm, conf_level)
    row = {"n": int(d["n"]), "came": d["mean"], "sd_fme": d["sd"], "cov_fme": d["cov"],
           "came_ci_low": d["ci_low"], "came_ci_high": d["ci_high"]}
    n = int(fm.n[0])
    est = np.array([d["mean"]])
    if effects.inference_method == "delta":
        e = Estimates("delta", est, grad=(jac / n)[None, :], vcov=effects.summary_data.vcov)
    else:
        se = np.array([d["sd"] / np.sqrt(n) if n >= 2 else np.nan])
        e = Estimates("sample", est, se=se, df=np.array([max(n - 1.0, 1.0)]))
    row.update(e.table(conf_level).iloc[0].to_dict())
    if nm is not None:
        e2 = _describe_moments(nm, conf_level, upper=1.0)
        k = int(nm.n[0])
        row.update(canlm=e2["mean"], sd_nlm=e2["sd"], cov_nlm=e2["cov"], canlm_ci_low=e2["ci_low"],
                   canlm_ci_high=e2["ci_high"], n_nlm=k, median_nlm=median_nlm,
                   share_linear=float(nlin / k) if k else np.nan)
    return row


def came_dask(effects: DaskFMEResult, *, sample_size: int | None, random_state: Any, method: str,
              features: list[str], n_partitions: int | None, max_sd: float | None, conf_level: float,
              standardize: bool, params: dict, tree_params: dict) -> PartitionResult:
    """:func:`fme.came` for :class:`~fme._dask.result.DaskFMEResult`, its arguments validated by
    :func:`fme.came` (see the module docstring)."""
    import dask
    from dask import delayed

    sample_size = _check_sample_size(sample_size)
    data, plan = effects.data, effects.plan
    meta = pd.concat([pd.DataFrame({c: pd.Series(dtype=float) for c in effects.fme_columns + effects.nlm_columns}),
                      data._meta[features].rename(columns=lambda c: f"__x_{c}")], axis=1)
    rows = data.map_partitions(_rows_with_features, plan, features, meta=meta)
    n = effects.n
    if n <= sample_size:
        sample = rows.compute()
    else:
        sample = rows.sample(frac=min(1.0, sample_size / n), random_state=_seed(random_state)).compute()
    # the tree, grown by fme.came's own worker on an in-memory FMEResult of the sampled rows
    cols = [c for c in ("fme", "nlm") if c in sample.columns]
    X = sample[[f"__x_{c}" for c in features]].rename(columns=lambda c: c[4:])
    small = FMEResult(results=sample[cols], steps=effects.steps, excluded=pd.DataFrame(), data=X,
                      predictions=pd.DataFrame(index=X.index), model_description=effects.model_description,
                      nlm_method=effects.nlm_method, nlm_linear_threshold=effects.nlm_linear_threshold,
                      model_features=tuple(features), inference_rows=sample_inference(sample["fme"].to_numpy()),
                      conf_level=effects.conf_level, positions=np.arange(len(X)))
    grown = grow_partition(small, method=method, features=features, n_partitions=n_partitions, max_sd=max_sd,
                           conf_level=conf_level, standardize=standardize, params=params, tree_params=tree_params)
    conf_level = grown.conf_level
    # every evaluated row to its subspace; figures merged over all rows
    leaf_ids = list(grown.leaf_ids)
    threshold = effects.nlm_linear_threshold
    outs = [delayed(_leaf_pass, nout=2)(p, plan, features, grown.tree, grown._subspace, leaf_ids, threshold)
            for p in data.to_delayed()]
    merged = delayed(_merge_leaves)(*outs)
    persisted = dask.persist(merged, *[o[1] for o in outs])
    totals = persisted[0].compute()
    sorted_parts = persisted[1:]
    leaf_rows = []
    for leaf in leaf_ids:
        fm, nm, nlin, jac = totals[leaf]
        med = np.nan
        if nm is not None and int(nm.n[0]):
            parts = [delayed(lambda d, k=leaf: d.get(k, np.empty(0)))(p) for p in sorted_parts]
            med = _quantiles(parts, int(nm.n[0]), [0.5])[0.5]
        leaf_rows.append({"node": leaf, **_leaf_row(effects, fm, nm, nlin, jac, med, conf_level),
                          "rule": grown.rule(leaf)})
    has_nlm = effects.has_nlm
    columns = _LEAF_COLUMNS + INFERENCE_COLUMNS + (_NLM_COLUMNS if has_nlm else []) + ["rule"]
    s = effects.summary_data
    root = {"node": 1, **_leaf_row(effects, s.fme, s.nlm, None if s.n_linear is None else s.n_linear[0],
                                   s.jacobian, effects.median_nlm, conf_level), "rule": "(all)"}
    # describe(): an unrestricted feature spans the range of all rows of the data (excluded ones too), as in
    # memory, not only the sampled evaluated rows the tree was grown on
    numeric = [f for f in features if pd.api.types.is_numeric_dtype(data._meta[f].dtype)]
    if numeric:
        lo, hi = dask.compute(data[numeric].min(), data[numeric].max())
        grown.data_ranges = {f: (float(lo[f]), float(hi[f])) for f in numeric}
    grown.leaves = pd.DataFrame(leaf_rows, columns=columns)
    grown.root = pd.Series(root)[columns]
    # describe(), predict() and plots use the sampled rows (grown.effects); the figures are over all rows
    grown.dask_effects = effects
    grown.grown_on_sample = len(sample) < n
    grown.sample_rows = len(sample)
    grown.notes = list(grown.notes) + [
        f"tree grown on {'a seeded sample of ' if len(sample) < n else 'all '}{len(sample)} of {n} evaluated rows; "
        "subspace figures over all rows."]
    return grown
