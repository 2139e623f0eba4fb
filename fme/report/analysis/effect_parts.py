"""The pieces of an effect's analysis that both report engines share (in memory and ``engine: dask``).

:mod:`fme.report.analysis` (pandas) and :mod:`fme.report.analysis.dask_analysis` (Dask) both import from here
and never from each other's internals: the JSON-ready statistics, the cAME partition with its summary
and stability refits, the step-sensitivity table, and the words of what a Dask report computes on its
seeded sample and over all rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

import fme

from ...effects import DASK_SAMPLE_SIZE
from ...models import formula_categoricals
from ..inputs.config import EffectConfig
from ..inputs.specs import bootstrap_kwargs, make_detector
from ..inputs.verdicts import global_test_claim
from .checks import refit_columns

__all__ = [
    "REPORT_SAMPLE_SIZE",
    "SAMPLE_BASED",
    "ALL_ROWS",
    "STEP_FACTORS",
    "sample_info",
    "t_figures",
    "figures_of",
    "run_effect_fme",
    "json_num",
    "grow_partition",
    "partition_summary",
    "stability",
    "step_sensitivity",
    "root_split",
]


# ------------------------------------------------------------------ statistics
def t_figures(n: int, mean: float, sd: float, conf: float, upper: float | None = None) -> dict[str, Any]:
    """n, mean, SD, standard error and the t interval mean +- t(1 - alpha/2, n - 1) SD / sqrt(n) (paper §5.5's
    fixed-model interval) from the moments; ``upper`` truncates the interval (1 for the NLM, paper §5.4)."""
    from scipy import stats

    out: dict[str, Any] = {"n": int(n), "mean": None, "sd": None, "se": None, "ci_low": None, "ci_high": None}
    if n == 0:
        return out
    out["mean"] = float(mean)
    if n >= 2:
        half = float(stats.t.ppf(0.5 + conf / 2, n - 1)) * sd / math.sqrt(n)
        high = mean + half if upper is None else min(mean + half, upper)
        out.update(sd=float(sd), se=float(sd) / math.sqrt(n), ci_low=mean - half, ci_high=high)
    return out


def figures_of(res: Any, conf: float) -> dict[str, Any]:
    """n, AME, SD, SE and the fixed-model CI of an effect result of either engine, from its public figures."""
    n = int(res.n)
    return t_figures(n, res.ame if n else float("nan"), res.sd if n >= 2 else float("nan"), conf)


def json_num(x: Any) -> Any:
    """JSON-safe number: NaN/inf -> None, numpy scalars -> Python."""
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(float(x)) else None
    return x


#: The growth parameters of a reduction (paper §5.5, fmeffects): a few per cent of the rows per leaf.
_REDUCE_SHARE = 0.02


def _own_columns(model: Any, train: pd.DataFrame | None, target: str | None) -> list | None:
    """The training data's columns the model's bootstrap refits fit on (None: all but the target)."""
    return None if train is None or target is None else refit_columns(model, train, target)


def run_effect_fme(
    model: Any,
    data: Any,
    reference: Any,
    eff: EffectConfig,
    seed: int,
    target_class: Any,
    train: pd.DataFrame | None,
    target: str | None,
    refits: Any = None,
) -> tuple[Any, dict, bool, dict, bool, float]:
    """The effect's :func:`fme.fme` as both engines run it (pandas frame or Dask data): its result, the
    steps, whether every stepped feature is numeric, the detector spec, whether NLMs were computed and the
    confidence level. ``refits``: the build's :class:`fme.inference.RefitCache` (bootstrap refits shared
    between effects), or None."""
    from ..._utils.validation import is_categorical

    steps = dict(eff.steps)
    # a C() column of a statsmodels formula is categorical in the model whatever its dtype: its step is a level
    coded = formula_categoricals(model)
    numeric = all(not is_categorical(data[f]) and f not in coded for f in steps if f in data.columns)
    det_spec = eff.extrapolation
    kwargs: dict[str, Any] = {"reference_data": reference, "random_state": seed, "target_class": target_class}
    if det_spec["method"] != "none":
        kwargs.update(extrapolation=make_detector(det_spec, seed), on_extrapolation=eff.on_extrapolation)
    use_nlm = bool(eff.nlm) and numeric
    conf = float(eff.conf_level)
    res = fme.fme(
        model,
        data,
        steps,
        nlm=use_nlm,
        nlm_method=eff.nlm_method,
        conf_level=conf,
        # the refits fit on the model's own columns of the training data
        **bootstrap_kwargs(eff.inference, train, target, seed, refits, _own_columns(model, train, target)),
        **kwargs,
    )
    return res, steps, numeric, det_spec, use_nlm, conf


def grow_partition(res: Any, eff: EffectConfig, conf: float, **came_kwargs: Any) -> Any:
    """The effect's cAME partition (:func:`fme.came` with the config's ``partition``), or None when the
    config switches it off or fewer than 2 rows were evaluated.

    ``max_leaves`` (default 8): the tree is pruned to at most that many subspaces (the
    paper's reduction, §5.5); a grown tree with fewer leaves stays as grown. Without tree parameters in the
    config it grows as for a reduction in fmeffects (CTree ``alpha`` 0.35 and ``minbucket`` 2 % of the rows,
    CART ``min_samples_leaf`` 2 %); with them, as they say (the method's defaults for the rest).
    ``max_leaves: null`` keeps every leaf of the grown tree.
    """
    if eff.partition is False or res.n < 2:
        return None
    params = dict(eff.partition)
    method = params.pop("method", "ctree")
    feats = params.pop("features", None)
    cap = params.pop("max_leaves", None)
    # honest estimation is no tree parameter: it goes to fme.came beside them
    came_kwargs = {
        **came_kwargs,
        **{k: params.pop(k) for k in ("honest", "honest_fraction", "n_splits") if k in params},
    }
    if cap is None or "n_partitions" in params:
        return fme.came(res, method=method, features=feats, conf_level=conf, **came_kwargs, **params)
    n = int(res.n)
    # fme.came's reduction would fill these in: give them explicitly, so the grown tree is the same either way
    if method == "ctree":
        fill = {"alpha": 0.35, "minbucket": _REDUCE_SHARE * n} if not params else {"alpha": 0.05, "minbucket": 7}
    else:
        fill = {"min_samples_leaf": max(1, int(round(_REDUCE_SHARE * n))) if not params else 1}
    params = {**fill, **params}
    grown = fme.came(res, method=method, features=feats, conf_level=conf, **came_kwargs, **params)
    if len(grown.leaf_ids) <= int(cap):
        return grown
    return fme.came(res, method=method, features=feats, conf_level=conf, n_partitions=int(cap), **came_kwargs, **params)


def partition_summary(part: Any, eff: EffectConfig, n_extrapolation: Any, levels: dict | None = None) -> dict:
    """The JSON-ready subspaces of ``part``: each leaf's figures, box and ``n_extrapolation(node)``.

    ``levels`` (``engine: dask``): every categorical feature's levels over all rows of the data. An unrestricted
    categorical side of a box then lists them, as the pandas report does from the whole data; the Dask
    partition's own data are the evaluated rows of its sample, which lack the rows already at a level or left
    out as extrapolation points ({excellent, fair, good} where pandas lists {..., poor}).
    """
    leaves = []
    levels = levels or {}
    for _, row in part.leaves.iterrows():
        leaf = {k: json_num(v) for k, v in row.items()}
        box = part.describe(int(row["node"]))
        leaf["box"] = [
            {
                "feature": str(f),
                "range": str(b["range"]),
                "restricted": bool(b["restricted"]),
                "kind": str(b["kind"]),
                "eval_min": json_num(b["min"]),
                "eval_max": json_num(b["max"]),
            }
            for f, b in box.iterrows()
        ]
        for b in leaf["box"]:
            if b["kind"] == "categorical" and not b["restricted"] and b["feature"] in levels:
                b["range"] = "{" + ", ".join(map(str, levels[b["feature"]])) + "}"
        leaf["n_extrapolation"] = n_extrapolation(int(row["node"]))
        leaves.append(leaf)
    counts = part.row_counts
    grown, estimated = counts["grown"], counts["estimated"]
    out = {
        "method": eff.partition.get("method", "ctree"),
        "params": eff.partition,
        "leaves": leaves,
        "root": {k: json_num(v) for k, v in part.root.items()},
        "estimation_root": {k: json_num(v) for k, v in part.estimation_root.items()},
        "notes": list(part.notes),
        "features": part.features,
        "root_split": root_split(part),
        "honest": bool(part.honest),
        "honesty": part.honesty,
        "n_grown": int(grown),
        "n_estimated": int(estimated),
        "tests": _leaf_tests(part),
        "splits": None,
    }
    if part.split_summary is not None:
        out["splits"] = {k: json_num(v) for k, v in part.split_summary.items()}
    if out["tests"] is not None:  # the verdict the report may state about the test, verified once here
        out["tests"]["claim"] = global_test_claim(out["tests"], float(part.conf_level), leaves).to_dict()
    return out


def _leaf_tests(part: Any) -> dict | None:
    """Differences between the leaf cAMEs with Holm-adjusted p-values, and the global test that all are equal;
    None for fewer than 2 subspaces of 2 or more (estimation) rows. ``left_out``: the leaves of fewer rows, which
    have no interval and enter no test."""
    if int((part.leaves["n"].to_numpy() >= 2).sum()) < 2:  # a leaf of fewer than 2 rows enters no test
        return None
    t = part.test(multcomp="holm")
    rows = [
        {
            "hypothesis": str(r["hypothesis"]),
            **{c: json_num(r[c]) for c in ("estimate", "std_error", "p_value", "p_value_adj", "conf_low", "conf_high")},
        }
        for _, r in t.iterrows()
    ]
    g = t.global_test
    return {
        "rows": rows,
        "global": {k: json_num(v) for k, v in g.items()},
        "multcomp": "holm",
        "inference": str(t["inference"].iloc[0]),
        "honest": bool(part.honest),
        "left_out": [int(x) for x in t.left_out],
    }


def stability(
    part: Any, eff: EffectConfig, seed: int, ame: Any, n_evaluated: int | None = None, why: str | None = None
) -> tuple[Any, dict | None]:
    """The partition-stability refits the config asks for, and their summary (None, None without).

    ``part`` is the partition the refits resample (:meth:`InMemory.stability_partition`, ``DaskRows``'); with
    ``n_evaluated`` (a Dask sample: all evaluated rows of the data) the summary says that its rows are a sample
    of them. A reduction to ``max_leaves`` is an upper bound for the refits as for the full tree
    (:func:`grow_partition`): a refit that grows fewer leaves keeps them. When the refits cannot run at all
    (no partition: ``why``; too few rows) the summary is ``{"not_run": reason}``, so the report says so.
    """
    if not eff.stability:
        return None, None
    spec = eff.stability
    head = {"subsamples": int(spec["subsamples"]), "fraction": float(spec["fraction"])}
    if part is None:
        if eff.partition is False:  # switched off with the partition: nothing was configured to run
            return None, None
        return None, {**head, "not_run": why or "no cAME partition to resample"}
    try:
        stab = fme.partition_stability(
            part,
            n_subsamples=head["subsamples"],
            fraction=head["fraction"],
            random_state=seed,
            at_most="n_partitions" not in eff.partition,
        )
    except fme.FMEError as exc:
        return None, {**head, "not_run": str(exc)}
    out = _stability_summary(stab, part, ame, spec)
    out["of_sample"] = None if n_evaluated is None or int(part.effects.n) >= n_evaluated else int(n_evaluated)
    return stab, out


def root_split(part: Any) -> dict | None:
    """The first split of the (reduced) tree: feature and threshold or level sets (None: a single leaf)."""
    nodes = part.nodes
    if nodes.at[1, "is_leaf"]:
        return None
    levels = nodes.at[1, "split_levels"]
    return {
        "feature": str(nodes.at[1, "split_feature"]),
        "value": json_num(nodes.at[1, "split_value"]),
        "levels": None
        if not isinstance(levels, dict)
        # a level absent from the node goes to neither side (CTree: None)
        else {str(k): (None if v is None else int(v)) for k, v in levels.items()},
    }


def _stability_summary(stab: pd.DataFrame, part: Any, ame: float, spec: dict) -> dict:
    """Checklist §1.7: how the AME and the subspaces vary across random subsamples (JSON-ready)."""
    ok = stab[stab["error"].isna()]
    same_sign = np.sign(stab["ame"].to_numpy(dtype=float)) == np.sign(ame)
    out: dict[str, Any] = {
        "subsamples": int(spec["subsamples"]),
        "fraction": float(spec["fraction"]),
        "n_each": int(stab["n"].iloc[0]),
        "ame_min": float(stab["ame"].min()),
        "ame_max": float(stab["ame"].max()),
        "ame_sd": float(stab["ame"].std(ddof=1)) if len(stab) > 1 else None,
        "n_same_sign": int(same_sign.sum()),
        "root_split": part.root_split,
        "n_rows": int(part.effects.n),
        "n_leaves_full": len(part.leaf_ids),
        "n_refits": int(len(ok)),
        "n_failed": int(len(stab) - len(ok)),
        "errors": sorted(set(stab["error"].dropna().astype(str))),
    }
    if len(ok):
        ari = ok["ari"].to_numpy(dtype=float)
        leaves = ok["n_leaves"].to_numpy(dtype=float)
        out.update(
            n_same_root=int(ok["same_root_split"].astype(bool).sum()),
            ari_median=float(np.median(ari)),
            ari_min=float(ari.min()),
            ari_max=float(ari.max()),
            leaves_median=float(np.median(leaves)),
            leaves_min=int(leaves.min()),
            leaves_max=int(leaves.max()),
        )
    return out


#: Step multipliers of the sensitivity table (§1.7): h/2, h, 2h.
STEP_FACTORS = (0.5, 1.0, 2.0)


def _row_figures(r: Any, conf: float) -> dict:
    """n, extrapolation points, AME and CI of a sensitivity row's result (either engine; public figures)."""
    st = figures_of(r, conf)
    n_ep = r.n_extrapolation if r.detector is not None else None
    r.release()  # nothing else of it is needed
    return {"n": st["n"], "n_extrapolation": n_ep, "ame": st["mean"], "ci_low": st["ci_low"], "ci_high": st["ci_high"]}


def step_sensitivity(
    model: Any,
    data: Any,
    reference: Any,
    res: Any,
    summary: dict,
    eff: EffectConfig,
    seed: int,
    target_class: Any = None,
) -> list[dict] | None:
    """AME (CI, n) at h/2, h and 2h, every step component scaled together; None for categorical steps.

    The resolved step values (rules such as ``sd`` already turned into numbers) are scaled; detector and
    policy are those of the effect. The row for h repeats the effect's own numbers.
    """
    if not summary["numeric"]:
        return None
    conf = float(eff.conf_level)
    base = {st.feature: float(st.value) for st in res.steps}
    rows = []
    for factor in STEP_FACTORS:
        if factor == 1.0:
            rows.append(
                {
                    "factor": factor,
                    "steps": base,
                    "step_label": summary["step_label"],
                    "n": summary["n"],
                    "n_extrapolation": summary["n_extrapolation"],
                    "ame": summary["ame"],
                    "ci_low": summary["ci_low"],
                    "ci_high": summary["ci_high"],
                }
            )
            continue
        steps = {f: h * factor for f, h in base.items()}
        kwargs: dict[str, Any] = {"reference_data": reference, "random_state": seed, "target_class": target_class}
        if eff.extrapolation["method"] != "none":
            kwargs.update(extrapolation=make_detector(eff.extrapolation, seed), on_extrapolation=eff.on_extrapolation)
        row: dict[str, Any] = {"factor": factor, "steps": steps}
        try:
            r = fme.fme(model, data, steps, **kwargs)
        except fme.FMEError as exc:  # e.g. every row extrapolates at 2h: say so in the table
            row.update(
                step_label=", ".join(f"{f} {h:+g}" for f, h in steps.items()),
                error=str(exc),
                n=0,
                n_extrapolation=None,
                ame=None,
                ci_low=None,
                ci_high=None,
            )
            rows.append(row)
            continue
        row.update(step_label=r.describe_steps(), **_row_figures(r, conf))
        rows.append(row)
    return rows


#: Rows of the seeded sample behind the per-row figures of an ``engine: dask`` report.
REPORT_SAMPLE_SIZE = 100_000


#: What an ``engine: dask`` report computes on the sample (words for the report and results.json).
SAMPLE_BASED = (
    "the fME and NLM distribution figures",
    "the extrapolation map",
    "the per-row table tables/<effect>-fme.csv",
    "where the extrapolation points are",
    "the shrunk steps",
    "the evaluated ranges of the subspaces' boxes",
    "the partition stability refits",
)


#: ... and over all rows.
ALL_ROWS = (
    "row counts and exclusions",
    "AMEs with their standard errors, CIs and quartiles",
    "the NLM summaries",
    "model-uncertainty intervals",
    "the AME with extrapolation points kept",
    "the step sensitivity table",
    "the cAME subspace figures",
    "the feature overview",
    "the feature dictionary",
)


def sample_info(n: int, size: int, seed: int) -> dict[str, Any]:
    """JSON-ready description of the sample of :func:`fme.report.inputs.sources.sample_rows`, and the largest
    number of evaluated rows fme grows a cAME tree on (``tree_sample_size``; the report's words need it and
    read it here, in ``results.json``)."""
    return {
        "size": int(size),
        "rows": int(min(n, size)),
        "of": int(n),
        "all_rows": bool(n <= size),
        "seed": int(seed),
        "based_on_sample": list(SAMPLE_BASED),
        "all_rows_items": list(ALL_ROWS),
        "tree_sample_size": int(DASK_SAMPLE_SIZE),
    }
