"""AME tables of Dask data (issue 14): :func:`fme.ame` on a ``dask.dataframe.DataFrame``.

:func:`ame_dask` runs one pass of the kernel per table row (numeric steps,
rules, observation-wise categorical levels; classic categorical levels, all
of a feature's levels in one pass, :mod:`fme._dask.classic`; delta,
bootstrap (one seed for every row) and sample inference; ``by`` groups and
their pairwise differences from per-group sums of the same pass,
:mod:`fme._dask.groups`). The cAMEs of Dask data are in :mod:`fme._dask.came`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .effects import DaskFMEResult, _model_frames, as_dask
from ..exceptions import DataError, ParameterError

__all__ = ["ame_dask"]


def ame_dask(model: Any, data: Any, steps: Any, *, inference: str, by: Any, hypothesis: Any, bootstrap: Any,
             conf_level: float, features: Any, categorical: str, columns: list[str], **fme_kwargs: Any) -> pd.DataFrame:
    """:func:`fme.ame` on Dask data: one :func:`fme_dask` pass per row of the table (univariate steps)."""
    from ..effects import fme
    from ..exceptions import FeatureError, StepError
    from ..inference._methods import resolve_method
    from ..predictors import make_predictor
    from .._utils.validation import is_categorical
    from ..margins import _HYPOTHESES, _check_by

    if categorical not in ("observation", "classic"):
        raise ParameterError(f"categorical must be 'observation' or 'classic', got {categorical!r}.")
    if hypothesis not in _HYPOTHESES:
        raise ParameterError(f"hypothesis must be None or 'pairwise', got {hypothesis!r}.")
    data = _model_frames(model, as_dask(data, "data"))
    meta = data._meta
    by_cols = _check_by(meta, by)
    if hypothesis == "pairwise" and not by_cols:
        raise ParameterError("hypothesis='pairwise' compares by-groups; pass by=<column>.")
    groups = None
    if by_cols:
        from .groups import group_keys

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
                levels = _all_levels(data, feature)
            else:
                levels = [value]
            if categorical == "classic":
                rows.extend(_classic_rows(model, data, feature, value, levels if value is None else
                                          _all_levels(data, feature), method, bootstrap, conf_level, groups,
                                          hypothesis, fme_kwargs))
                continue
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


def _classic_rows(model: Any, data: Any, feature: str, value: Any, levels: list, method: str, bootstrap: Any,
                  conf_level: float, groups: Any, hypothesis: Any, fme_kwargs: dict) -> list[dict[str, Any]]:
    """The table rows of the categorical ``feature`` with ``categorical='classic'`` (one pass for all levels,
    :mod:`fme._dask.classic`)."""
    from .classic import classic_reference, classic_results

    reference = classic_reference(feature, value, levels)
    results = classic_results(model, data, feature, reference, levels, method=method, bootstrap=bootstrap,
                              conf_level=conf_level, groups=groups, target_class=fme_kwargs.get("target_class"),
                              batch_size=fme_kwargs.get("batch_size"), progress=fme_kwargs.get("progress"))
    rows: list[dict[str, Any]] = []
    for res in results:
        head = {"feature": feature, "step": np.nan, "level": res.steps[0].value, "reference": reference}
        if groups is not None:
            rows.extend(_group_rows(res, head, groups, hypothesis, conf_level, method))
        else:
            t = res.tidy(conf_level).iloc[0].to_dict()
            t.pop("step")
            t["inference"] = method
            rows.append({**head, **t})
        res.release()
    return rows


def _all_levels(data: Any, feature: str) -> list:
    """The levels of a categorical column of the Dask ``data``, as :func:`fme.steps._levels` of all rows."""
    from dask.dataframe.utils import has_known_categories

    from ..steps import _levels

    col = data._meta[feature]
    known = isinstance(col.dtype, pd.CategoricalDtype) and has_known_categories(col)
    return _levels(col) if known else _levels(data[feature].dropna().drop_duplicates().compute())


# ----------------------------------------------------------------- by groups
def _fme_grouped(model: Any, data: Any, step: dict, groups: Any, **kwargs: Any) -> DaskFMEResult:
    """:func:`fme.fme` on Dask data with ``groups`` summed in the same pass (fme's own defaults)."""
    import inspect

    from .effects import fme_dask
    from ..effects import fme

    bound = inspect.signature(fme).bind(model, data, step, **kwargs)
    bound.apply_defaults()
    args = {k: v for k, v in bound.arguments.items() if k not in ("model", "data", "steps")}
    return fme_dask(model, data, step, groups=groups, **args)


def _group_estimates(res: DaskFMEResult) -> Any:
    """The groups' AMEs with their uncertainty, as :meth:`RowInference.average` gives them in memory."""
    from ..inference._estimates import Estimates

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

    from .quantiles import quantiles as _quantiles

    parts = [delayed(lambda d, k=g: (d or {}).get(k, np.empty(0)))(p) for p in res.group_parts]
    return _quantiles(parts, n, [0.25, 0.75])


def _group_rows(res: DaskFMEResult, head: dict, groups: Any, hypothesis: Any, conf_level: float,
                method: str) -> list[dict[str, Any]]:
    """The table rows of one step: one per group, or one per pair of groups (``hypothesis='pairwise'``)."""
    from ..inference._estimates import pairwise_matrix, undefined_where

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
    from .groups import group_sizes
    from ..inference._estimates import pairwise_matrix

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
