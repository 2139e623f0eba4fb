"""Descriptive statistics shared by AMEs and cAMEs (paper §5.5, "Interpretation and CIs")."""

from __future__ import annotations

import numpy as np

from .distributions import t_ppf

__all__ = ["describe", "median", "quartiles"]


def describe(
    values: np.ndarray,
    conf_level: float = 0.95,
    upper: float | None = None,
    sums: tuple[float, float, tuple[float, float]] | None = None,
) -> dict[str, float]:
    """Mean, sample SD (n - 1), CoV = SD/|mean|, t-based CI and quartiles.

    The CI is mean +- t(1 - alpha/2, n - 1) * SD / sqrt(n) with
    alpha = 1 - conf_level (paper §5.5). NaN values are ignored; the
    returned ``n`` counts the values used. Undefined quantities are NaN
    (SD and CI need n >= 2; CoV needs a non-zero mean). ``upper``: a bound
    of the quantity (1 for the NLM, paper §5.4); the CI is truncated there
    (min(ci_high, upper)), which keeps its coverage for a bounded mean. ``sums``: ``np.add.reduce`` of the
    values (not NaN) and of their squared deviations from its mean, and their quartiles (:func:`quartiles`),
    when a compiled pass already has them (:func:`fme.inference.one_group.one_group_sums`).
    """
    v = np.asarray(values, dtype=float)
    total = np.add.reduce(v) if sums is None else sums[0]  # NaN where a value is (or +inf meets -inf)
    if np.isnan(total) and (nan := np.isnan(v)).any():
        v = v[~nan]
        total = np.add.reduce(v)
    n = v.size
    out = {
        "mean": np.nan,
        "sd": np.nan,
        "cov": np.nan,
        "se": np.nan,
        "ci_low": np.nan,
        "ci_high": np.nan,
        "q25": np.nan,
        "q75": np.nan,
        "n": float(n),
    }
    if n == 0:
        return out
    # v.mean() and v.std(ddof=1) as NumPy computes them (the same sums), from one sum and one scratch array that
    # then holds the copy the quartiles are selected in: memory already paged in, not a second fresh array
    mean = float(total) / n
    out["mean"] = mean
    if sums is None:
        scratch = np.subtract(v, mean)
        np.multiply(scratch, scratch, out=scratch)
        sum_sq = float(np.add.reduce(scratch))
        np.copyto(scratch, v)
        out["q25"], out["q75"] = quartiles(scratch, overwrite=True)
    else:
        sum_sq = float(sums[1])
        out["q25"], out["q75"] = sums[2]
    if n >= 2:
        sd = float(np.sqrt(sum_sq / (n - 1)))
        se = sd / np.sqrt(n)
        half = float(t_ppf(0.5 + conf_level / 2.0, n - 1)) * se
        high = mean + half if upper is None else min(mean + half, upper)
        out.update(sd=sd, se=se, ci_low=min(mean - half, high), ci_high=high)
        out["cov"] = sd / abs(mean) if mean != 0 else np.nan
    return out


def quartiles(values: np.ndarray, overwrite: bool = False) -> tuple[float, float]:
    """``np.quantile(values, [0.25, 0.75])`` (its default, linear interpolation) of finite or infinite values
    without NaN, the same numbers (a zero's sign aside) at a fraction of its time: NumPy partitions once at six
    positions (its slow path for several); here each order statistic is found by one single-position partition
    (NumPy's fast selection) or, next to the previous one, as the least of what is left above it, and
    interpolated by NumPy's own formula. ``overwrite``: ``values`` (a float array) may be reordered in place
    instead of copied."""
    v = np.asarray(values, dtype=float)
    n = v.size
    if n < 4:
        return tuple(float(q) for q in np.quantile(v, [0.25, 0.75]))  # type: ignore[return-value]
    virtual = (n - 1) * np.array([0.25, 0.75])
    previous = np.floor(virtual)
    gamma = virtual - previous
    lo = previous.astype(np.intp)
    # below the last position for n >= 4: previous + 1 is a valid index, as NumPy takes it
    positions = sorted({int(lo[0]), int(lo[0]) + 1, int(lo[1]), int(lo[1]) + 1})
    work = v if overwrite and v is values else v.copy()
    stats_at: dict[int, float] = {}
    start = 0
    for k in positions:
        rest = work[start:]
        if k == start:  # the least of the rest: a pass, no partition
            i = int(rest.argmin())
            rest[0], rest[i] = rest[i], rest[0]
        else:
            rest.partition(k - start)  # in place: everything before k - start is <= it, everything after >=
        stats_at[k] = float(rest[k - start])
        start = k + 1
    a = np.array([stats_at[int(lo[0])], stats_at[int(lo[1])]])
    b = np.array([stats_at[int(lo[0]) + 1], stats_at[int(lo[1]) + 1]])
    # numpy.lib._function_base_impl._lerp, term by term
    diff = b - a
    out = np.add(a, diff * gamma)
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return float(out[0]), float(out[1])


def median(values: np.ndarray) -> float:
    """``np.median(values)``, the same number (a zero's sign aside) at a fraction of its time: NumPy partitions
    at two or three positions at once (its slow path for several, 8 ms at 10^6 values); here one single-position
    partition finds the upper middle value and, for an even count, the lower one is the largest value left of it,
    and the two are averaged as NumPy's ``mean`` of them does, ``(a + b) / 2``. NaN if a value is NaN (as NumPy),
    or if there is none."""
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return float("nan")
    work = v.copy()
    k = n // 2
    work.partition(k)
    upper = float(work[k])
    if np.isnan(work).any():  # NumPy's answer for any NaN (its partition puts them last)
        return float("nan")
    if n % 2:
        return upper
    lower = float(work[:k].max())
    return float(np.add(lower, upper) / 2.0)
