"""Tests on several estimates at once: contrasts, a joint Wald test and multiple-comparison adjustment.

Built on :class:`~fme.inference._estimates.Estimates`, whatever its method: the joint covariance of the
estimates is ``G V G'`` for the delta method, the covariance of the refits' draws for the bootstrap, and
diagonal for ``sample`` estimates over disjoint rows (cAME leaves, by-groups).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..exceptions import ParameterError
from ._estimates import Estimates, pairwise_matrix

__all__ = ["MULTCOMP", "covariance", "contrast_matrix", "wald_test", "adjust_pvalues"]

#: Multiple-comparison adjustments (statsmodels' names).
MULTCOMP = ("holm", "bonferroni", "fdr_bh")


def covariance(est: Estimates) -> np.ndarray:
    """The joint covariance matrix of ``est.estimate`` (m x m)."""
    if est.method == "delta":
        return est.grad @ est.vcov @ est.grad.T
    if est.method == "bootstrap":
        draws = np.asarray(est.draws, dtype=float)
        if draws.shape[1] < 2:
            return np.full((draws.shape[0],) * 2, np.nan)
        return np.atleast_2d(np.cov(draws))
    return np.diag(np.asarray(est.se, dtype=float) ** 2)


def contrast_matrix(m: int, hypothesis: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Rows of differences between m estimates: ``"pairwise"`` (every j - i, i < j) or ``"reference"``
    (every j - 0), and the (i, j) pairs."""
    if hypothesis == "pairwise":
        return pairwise_matrix(m)
    if hypothesis == "reference":
        pairs = [(0, j) for j in range(1, m)]
        L = np.zeros((len(pairs), m))
        for r, (i, j) in enumerate(pairs):
            L[r, j], L[r, i] = 1.0, -1.0
        return L, pairs
    raise ParameterError(f"hypothesis must be 'pairwise' or 'reference', got {hypothesis!r}.")


def wald_test(est: Estimates, L: np.ndarray) -> dict[str, float]:
    """Joint test of ``L @ estimate = 0``: W = (Lb)' (L C L')^+ (Lb) ~ chi-squared with rank(L C L') df.

    The pseudo-inverse keeps the test defined when contrasts are linearly dependent (as the pairwise
    differences of m estimates are: rank m - 1)."""
    L = np.atleast_2d(np.asarray(L, dtype=float))
    b = L @ est.estimate
    S = L @ covariance(est) @ L.T
    if not np.all(np.isfinite(S)) or not np.all(np.isfinite(b)):
        return {"statistic": float("nan"), "df": float("nan"), "p_value": float("nan")}
    df = int(np.linalg.matrix_rank(S))
    if df == 0:
        return {"statistic": float("nan"), "df": 0.0, "p_value": float("nan")}
    w = float(b @ np.linalg.pinv(S) @ b)
    return {"statistic": w, "df": float(df), "p_value": float(stats.chi2.sf(w, df))}


def adjust_pvalues(p: np.ndarray, method: str) -> np.ndarray:
    """p-values adjusted for multiple comparisons (``holm``, ``bonferroni`` or ``fdr_bh``); NaN stays NaN."""
    if method not in MULTCOMP:
        raise ParameterError(f"multcomp must be one of {MULTCOMP}, got {method!r}.")
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method=method)[1]
    return out


def contrast_table(est: Estimates, L: np.ndarray, labels: list[str], conf_level: float,
                   multcomp: str | None) -> pd.DataFrame:
    """One row per contrast: ``hypothesis``, ``estimate`` and the inference columns, with ``p_value_adj``
    (and ``multcomp`` naming the adjustment) when ``multcomp`` is given."""
    c = est.contrast(L)
    table = c.table(conf_level)
    out = pd.concat([pd.DataFrame({"hypothesis": labels, "estimate": c.estimate}), table], axis=1)
    if multcomp is not None:
        out["p_value_adj"] = adjust_pvalues(out["p_value"].to_numpy(), multcomp)
        out["multcomp"] = multcomp
    return out
