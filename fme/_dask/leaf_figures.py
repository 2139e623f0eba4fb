"""A subspace's figures on Dask data from merged moments (:mod:`fme._dask.came`): cAME, SD, CoV, t-interval,
the inference columns and the NLM summaries, as :class:`fme._trees.partition.PartitionResult` computes them in
memory."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .._core.summary import Moments
from .._utils.distributions import t_ppf
from ..inference.estimates import Estimates
from .result import DaskFMEResult

__all__ = ["all_leaves", "describe_moments", "leaf_moments", "leaf_row", "stack_leaves"]


def all_leaves(m: Moments) -> Moments:
    """The moments of every leaf's rows together."""
    out = cast(Moments, leaf_moments(m, 0))
    for i in range(1, m.n.size):
        out = out.merge(cast(Moments, leaf_moments(m, i)))
    return out


def leaf_moments(m: Moments | None, i: int) -> Moments | None:
    return None if m is None else Moments(m.n[i : i + 1], m.mean[i : i + 1], m.m2[i : i + 1])


def describe_moments(m: Any, conf_level: float, upper: float | None = None) -> dict[str, float]:
    """:func:`fme._utils.stats.describe` (without quartiles) from merged moments."""

    n = int(m.n[0])
    out = {"mean": np.nan, "sd": np.nan, "cov": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": float(n)}
    if n == 0:
        return out
    mean = float(m.mean[0])
    out["mean"] = mean
    if n >= 2:
        sd = float(m.sd()[0])
        se = sd / np.sqrt(n)
        half = float(t_ppf(0.5 + conf_level / 2.0, n - 1)) * se
        high = mean + half if upper is None else min(mean + half, upper)
        out.update(sd=sd, ci_low=min(mean - half, high), ci_high=high)
        out["cov"] = sd / abs(mean) if mean != 0 else np.nan
    return out


def leaf_row(
    effects: DaskFMEResult, fm: Any, nm: Any, nlin: Any, jac: Any, median_nlm: float, conf_level: float
) -> tuple[dict[str, Any], Estimates]:
    """A subspace's figures (from merged moments) and its cAME's :class:`Estimates` (for the leaf tests)."""
    d = describe_moments(fm, conf_level)
    row = {
        "n": int(d["n"]),
        "came": d["mean"],
        "sd_fme": d["sd"],
        "cov_fme": d["cov"],
        "came_ci_low": d["ci_low"],
        "came_ci_high": d["ci_high"],
    }
    n = int(fm.n[0])
    est = np.array([d["mean"]])
    if effects.inference_method == "delta":
        vcov = cast(np.ndarray, effects.summary_data.vcov)  # set for delta
        grad = (jac / n)[None, :] if n else np.zeros((1, vcov.shape[0]))
        e = Estimates("delta", est, grad=grad, vcov=vcov)
    else:
        se = np.array([d["sd"] / np.sqrt(n) if n >= 2 else np.nan])
        e = Estimates("sample", est, se=se, df=np.array([max(n - 1.0, 1.0)]))
    # a leaf of fewer than 2 (estimation) rows has no spread to estimate from: no interval, as in memory
    row.update(e.records(conf_level, undefined=np.array([n < 2]))[0])
    if nm is not None:
        e2 = describe_moments(nm, conf_level, upper=1.0)
        k = int(nm.n[0])
        row.update(
            canlm=e2["mean"],
            sd_nlm=e2["sd"],
            cov_nlm=e2["cov"],
            canlm_ci_low=e2["ci_low"],
            canlm_ci_high=e2["ci_high"],
            n_nlm=k,
            median_nlm=median_nlm,
            share_linear=float(nlin / k) if k else np.nan,
        )
    return row, e


def stack_leaves(estimates: list[Estimates]) -> Estimates:
    """One :class:`Estimates` of several subspaces' cAMEs (disjoint rows) from one per subspace."""
    est = np.concatenate([e.estimate for e in estimates])
    if estimates[0].method == "delta":
        grads = [cast(np.ndarray, e.grad) for e in estimates]  # set for delta
        return Estimates("delta", est, grad=np.vstack(grads), vcov=estimates[0].vcov)
    return Estimates(
        "sample",
        est,
        se=np.concatenate([cast(np.ndarray, e.se) for e in estimates]),
        df=np.concatenate([e.df for e in estimates]),
    )
