"""The normal and Student t tail probabilities and quantiles of fme's tests and intervals, as ufunc calls.

``scipy.stats.t.sf(x, df)`` and its kin check their arguments and place the answers through a generic layer
of about fifty NumPy calls before they reach the special function that computes them; for the one to a few
numbers of a table's rows that layer is nearly all of the cost (0.3-0.6 ms of an AME table, once a pass over
10^6 rows has streamed the caches out: benchmarks/README.md, "Seventh pass"). These call the same special
functions (``scipy.special.stdtr``, ``stdtrit``, ``ndtr``, ``ndtri``) directly and give ``scipy.stats``' numbers
to the bit, including its answers at the edges (NaN for a degrees of freedom not above 0 or a probability
outside [0, 1], the infinities at 0 and 1): tests/_utils/test_distributions.py compares them on a grid of
edges and at random.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

__all__ = ["norm_cdf", "norm_ppf", "norm_sf", "t_cdf", "t_ppf", "t_sf"]


def t_sf(x: Any, df: Any) -> Any:
    """``scipy.stats.t.sf(x, df)``: P(T > x) for Student's t with ``df`` degrees of freedom."""
    return special.stdtr(df, np.negative(x))


def t_cdf(x: Any, df: Any) -> Any:
    """``scipy.stats.t.cdf(x, df)``: P(T <= x) for Student's t with ``df`` degrees of freedom."""
    return special.stdtr(df, x)


def t_ppf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.ppf(q, df)``: the ``q`` quantile of Student's t with ``df`` degrees of freedom."""
    out = special.stdtrit(df, q)
    # stdtrit gives +inf at q = 0; the quantile there is the support's lower end, as scipy.stats places it
    low = np.logical_and(np.equal(q, 0.0), np.greater(df, 0.0))
    if np.any(low):
        out = np.where(low, -np.inf, out)
        return out[()] if out.ndim == 0 else out
    return out


def norm_sf(x: Any) -> Any:
    """``scipy.stats.norm.sf(x)``: P(Z > x) for the standard normal."""
    return special.ndtr(np.negative(x))


def norm_cdf(x: Any) -> Any:
    """``scipy.stats.norm.cdf(x)``: P(Z <= x) for the standard normal."""
    return special.ndtr(x)


def norm_ppf(q: Any) -> Any:
    """``scipy.stats.norm.ppf(q)``: the ``q`` quantile of the standard normal."""
    return special.ndtri(q)
