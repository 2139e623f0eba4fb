"""AME tables and cAMEs of Dask data (issue 14), on top of :mod:`fme._dask`.

* :func:`ame_dask`: :func:`fme.ame` on Dask data, one pass of the kernel per
  table row (numeric steps, rules, observation-wise categorical levels;
  delta, bootstrap (one seed for every row) and sample inference; ``by``
  groups and their pairwise differences from per-group sums of the same
  pass, :mod:`fme._dask_groups`).
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

from ._dask import DaskFMEResult, _model_frames, _seed, as_dask
from .exceptions import DataError, ParameterError

__all__ = ["ame_dask", "came_dask"]


def ame_dask(model: Any, data: Any, steps: Any, *, inference: str, by: Any, hypothesis: Any, bootstrap: Any,
             conf_level: float, features: Any, categorical: str, columns: list[str], **fme_kwargs: Any) -> pd.DataFrame:
    """:func:`fme.ame` on Dask data: one :func:`fme_dask` pass per row of the table (univariate steps)."""
    from .effects import fme
    from .exceptions import FeatureError, StepError
    from .inference import resolve_method
    from .predictors import make_predictor
    from ._validation import is_categorical
    from .steps import _levels

    from .margins import _HYPOTHESES, _check_by

    if categorical not in ("observation", "classic"):
        raise ParameterError(f"categorical must be 'observation' or 'classic', got {categorical!r}.")
    if categorical != "observation":
        raise ParameterError("categorical='classic' is not available on Dask data yet; use 'observation'.")
    if hypothesis not in _HYPOTHESES:
        raise ParameterError(f"hypothesis must be None or 'pairwise', got {hypothesis!r}.")
    data = _model_frames(model, as_dask(data, "data"))
    meta = data._meta
    by_cols = _check_by(meta, by)
    if hypothesis == "pairwise" and not by_cols:
        raise ParameterError("hypothesis='pairwise' compares by-groups; pass by=<column>.")
    groups = None
    if by_cols:
        from ._dask_groups import group_keys

        groups = group_keys(data, by_cols)
    method = resolve_method(inference, model, bootstrap)
    if bootstrap is not None and dict(bootstrap).get("random_state") is None:
        # one seed for every row of the table: the same resamples, as the pandas path's shared refits
        bootstrap = {**dict(bootstrap), "random_state": int(np.random.SeedSequence().entropy % (2 ** 63))}
    if steps is None:
        if features is None:
            names = make_predictor(model, fme_kwargs.get("target_class")).feature_names
            features = names if names is not None else list(meta.columns)
        for f in features:
            if f not in meta.columns:
                raise FeatureError(f"unknown feature {f!r}: not a column of the data.")
        steps = {f: (None if is_categorical(meta[f]) else 1.0) for f in features}
    elif not hasattr(steps, "items") or len(steps) == 0:
        raise StepError("`steps` must be a non-empty dict such as {'age': 1, 'sex': None}, or None for all features.")
    rows = []
    for feature, value in steps.items():
        if feature not in meta.columns:
            raise FeatureError(f"unknown feature {feature!r}: not a column of the data.")
        if is_categorical(meta[feature]):
            if value is None:
                col = meta[feature]
                from dask.dataframe.utils import has_known_categories

                known = isinstance(col.dtype, pd.CategoricalDtype) and has_known_categories(col)
                levels = _levels(col) if known else _levels(data[feature].dropna().drop_duplicates().compute())
            else:
                levels = [value]
            targets = [(np.nan, lv) for lv in levels]
        else:
            targets = [(value, None)]
        for step, level in targets:
            head = {"feature": feature, "step": np.nan if level is not None else None, "level": level,
                    "reference": None}
            step_arg = {feature: level if level is not None else step}
            try:
                # bootstrap: each row refits with the same seeds (the same resamples), not one shared run
                if groups is None:
                    res = fme(model, data, step_arg, inference=method, bootstrap=bootstrap, conf_level=conf_level,
                              **fme_kwargs)
                else:
                    res = _fme_grouped(model, data, step_arg, groups, inference=method, bootstrap=bootstrap,
                                       conf_level=conf_level, **fme_kwargs)
            except DataError:
                if level is None:
                    raise
                if groups is not None:
                    rows.extend(_empty_group_rows(head, data, groups, hypothesis, method))
                    continue
                rows.append({**head, "ame": np.nan, "std_error": np.nan, "statistic": np.nan, "p_value": np.nan,
                             "conf_low": np.nan, "conf_high": np.nan, "inference": method, "sd": np.nan,
                             "q25": np.nan, "q75": np.nan, "n": 0, "n_excluded": int(data.shape[0].compute())})
                continue
            if level is None:
                head["step"] = res.steps[0].value
            else:
                head["level"] = res.steps[0].value
            if groups is not None:
                rows.extend(_group_rows(res, head, groups, hypothesis, conf_level, method))
                res.release()
                continue
            t = res.tidy(conf_level).iloc[0].to_dict()
            t.pop("step")
            t["inference"] = method
            rows.append({**head, **t})
            res.release()
    middle = ["hypothesis"] if hypothesis == "pairwise" else by_cols
    return pd.DataFrame(rows, columns=columns[:4] + middle + columns[4:])


# ----------------------------------------------------------------- by groups
def _fme_grouped(model: Any, data: Any, step: dict, groups: Any, **kwargs: Any) -> DaskFMEResult:
    """:func:`fme.fme` on Dask data with ``groups`` summed in the same pass (fme's own defaults)."""
    import inspect

    from ._dask import fme_dask
    from .effects import fme

    bound = inspect.signature(fme).bind(model, data, step, **kwargs)
    bound.apply_defaults()
    args = {k: v for k, v in bound.arguments.items() if k not in ("model", "data", "steps")}
    return fme_dask(model, data, step, groups=groups, **args)


def _group_estimates(res: DaskFMEResult) -> Any:
    """The groups' AMEs with their uncertainty, as :meth:`RowInference.average` gives them in memory."""
    from .inference import Estimates

    g = res.summary_data.groups
    n = g.fme.n.astype(float)
    # a group without evaluated rows: estimate 0 and zero gradient, as the pandas averaging matrix gives
    est = np.where(n > 0, g.fme.mean, 0.0)
    if res.inference_method == "delta":
        with np.errstate(invalid="ignore", divide="ignore"):
            grad = np.where(n[:, None] > 0, g.jacobian / n[:, None], 0.0)
        return Estimates("delta", est, grad=grad, vcov=res.summary_data.vcov)
    if res.inference_method == "bootstrap":
        _, info = res.bootstrap_draws
        return Estimates("bootstrap", est, draws=info["group_draws"], ci=info["ci"])
    sd = g.fme.sd()
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(n >= 2, sd / np.sqrt(n), np.nan)
    return Estimates("sample", est, se=se, df=np.maximum(n - 1.0, 1.0))


def _group_quartiles(res: DaskFMEResult, g: int, n: int) -> dict[float, float]:
    from dask import delayed

    from ._dask_quantiles import quantiles as _quantiles

    parts = [delayed(lambda d, k=g: (d or {}).get(k, np.empty(0)))(p) for p in res.group_parts]
    return _quantiles(parts, n, [0.25, 0.75])


def _group_rows(res: DaskFMEResult, head: dict, groups: Any, hypothesis: Any, conf_level: float,
                method: str) -> list[dict[str, Any]]:
    """The table rows of one step: one per group, or one per pair of groups (``hypothesis='pairwise'``)."""
    from .inference import pairwise_matrix, undefined_where

    g = res.summary_data.groups
    used = g.fme.n.astype(np.int64)
    size_all = g.size_all
    est = _group_estimates(res)
    keys = groups.keys
    if hypothesis == "pairwise":
        L, pairs = pairwise_matrix(groups.n_groups)
        empty_pair = np.array([used[i] == 0 or used[j] == 0 for i, j in pairs], dtype=bool)
        table = undefined_where(est.contrast(L).table(conf_level), empty_pair)
        labels = [" - ".join(f"({', '.join(str(v) for v in keys.iloc[k])})" for k in (j, i)) for i, j in pairs]
        return [{**head, "hypothesis": labels[r], "ame": np.nan if empty_pair[r] else float(L[r] @ est.estimate),
                 **table.iloc[r].to_dict(),
                 "inference": method, "sd": np.nan, "q25": np.nan, "q75": np.nan, "n": int(used[i] + used[j]),
                 "n_excluded": int(size_all[i] + size_all[j] - used[i] - used[j])}
                for r, (i, j) in enumerate(pairs)]
    table = undefined_where(est.table(conf_level), used == 0)
    sd = g.fme.sd()
    rows = []
    for k in range(groups.n_groups):
        n = int(used[k])
        q = _group_quartiles(res, k, n)
        rows.append({**head, **{c: keys[c].iloc[k] for c in groups.by},
                     "ame": float(g.fme.mean[k]) if n else np.nan, **table.iloc[k].to_dict(),
                     "inference": method, "sd": float(sd[k]), "q25": q[0.25], "q75": q[0.75], "n": n,
                     "n_excluded": int(size_all[k] - n)})
    return rows


def _empty_group_rows(head: dict, data: Any, groups: Any, hypothesis: Any, method: str) -> list[dict[str, Any]]:
    """A level no row could move to: its rows per group (or pair) with NaN figures, as the pandas path."""
    from ._dask_groups import group_sizes
    from .inference import pairwise_matrix

    size = group_sizes(data, groups)
    nan = {"ame": np.nan, "std_error": np.nan, "statistic": np.nan, "p_value": np.nan, "conf_low": np.nan,
           "conf_high": np.nan, "inference": method, "sd": np.nan, "q25": np.nan, "q75": np.nan}
    keys = groups.keys
    if hypothesis == "pairwise":
        _, pairs = pairwise_matrix(groups.n_groups)
        return [{**head, "hypothesis": " - ".join(f"({', '.join(str(v) for v in keys.iloc[k])})" for k in (j, i)),
                 **nan, "n": 0, "n_excluded": int(size[i] + size[j])} for i, j in pairs]
    return [{**head, **{c: keys[c].iloc[k] for c in groups.by}, **nan, "n": 0, "n_excluded": int(size[k])}
            for k in range(groups.n_groups)]


# ----------------------------------------------------------------- cAMEs
def _rows_with_features(part: pd.DataFrame, plan: Any, features: list[str]) -> pd.DataFrame:
    """The evaluated rows of a partition: their fME (and NLM) beside the partitioning features."""
    from ._kernel import evaluate_batch

    batch = evaluate_batch(plan, part, with_rows=False)
    cols = [c for c in ("fme", "nlm") if c in batch.results.columns]
    feats = part.iloc[batch.cand][features]
    return pd.concat([batch.results[cols], feats.rename(columns=lambda c: f"__x_{c}")], axis=1)


def _leaf_pass(part: pd.DataFrame, plan: Any, features: list[str], tree: Any, lookup: np.ndarray,
               leaf_ids: list[int], threshold: float) -> tuple:
    """Per subspace: merged-sum ingredients of the cAME figures, and the sorted defined NLMs."""
    from ._kernel import Moments, evaluate_batch
    from ._tree_args import string_columns

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
    """:func:`fme._stats.describe` (without quartiles) from merged moments."""
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
    from .inference import Estimates

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


def came_dask(effects: DaskFMEResult, *, sample_size: int | None, random_state: Any, **came_kwargs: Any):
    """:func:`fme.came` for :class:`~fme._dask.DaskFMEResult` (see the module docstring)."""
    import dask
    from dask import delayed

    from ._dask import _check_sample_size
    from ._dask_quantiles import quantiles as _quantiles
    from .came import _LEAF_COLUMNS, _NLM_COLUMNS, came
    from .effects import FMEResult
    from .inference import INFERENCE_COLUMNS, sample_inference

    sample_size = _check_sample_size(sample_size)
    if effects.n == 0:
        raise DataError("the effects have no evaluated rows; nothing to partition.")
    data, plan = effects.data, effects.plan
    features = came_kwargs.get("features")
    if isinstance(features, str):
        features = [features]
    if features is None:
        features = list(effects.model_features) if effects.model_features is not None else list(data.columns)
    missing = [f for f in features if f not in data.columns]
    if missing:
        from .exceptions import FeatureError

        raise FeatureError(f"partitioning feature(s) {missing} are not columns of the data the effects were "
                           "computed on.")
    features = list(features)
    meta = pd.concat([pd.DataFrame({c: pd.Series(dtype=float) for c in effects.fme_columns + effects.nlm_columns}),
                      data._meta[features].rename(columns=lambda c: f"__x_{c}")], axis=1)
    rows = data.map_partitions(_rows_with_features, plan, features, meta=meta)
    n = effects.n
    if n <= sample_size:
        sample = rows.compute()
    else:
        sample = rows.sample(frac=min(1.0, sample_size / n), random_state=_seed(random_state)).compute()
    # the tree, grown by fme.came itself on an in-memory FMEResult of the sampled rows
    cols = [c for c in ("fme", "nlm") if c in sample.columns]
    X = sample[[f"__x_{c}" for c in features]].rename(columns=lambda c: c[4:])
    small = FMEResult(results=sample[cols], steps=effects.steps, excluded=pd.DataFrame(), data=X,
                      predictions=pd.DataFrame(index=X.index), model_description=effects.model_description,
                      nlm_method=effects.nlm_method, nlm_linear_threshold=effects.nlm_linear_threshold,
                      model_features=tuple(features), inference_rows=sample_inference(sample["fme"].to_numpy()),
                      conf_level=effects.conf_level, positions=np.arange(len(X)))
    kwargs = dict(came_kwargs)
    kwargs["features"] = features
    grown = came(small, **kwargs)
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
