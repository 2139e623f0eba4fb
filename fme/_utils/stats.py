"""Descriptive statistics shared by AMEs and cAMEs (paper §5.5, "Interpretation and CIs")."""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["describe"]


def describe(values: np.ndarray, conf_level: float = 0.95, upper: float | None = None) -> dict[str, float]:
    """Mean, sample SD (n - 1), CoV = SD/|mean|, t-based CI and quartiles.

    The CI is mean +- t(1 - alpha/2, n - 1) * SD / sqrt(n) with
    alpha = 1 - conf_level (paper §5.5). NaN values are ignored; the
    returned ``n`` counts the values used. Undefined quantities are NaN
    (SD and CI need n >= 2; CoV needs a non-zero mean). ``upper``: a bound
    of the quantity (1 for the NLM, paper §5.4); the CI is truncated there
    (min(ci_high, upper)), which keeps its coverage for a bounded mean.
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
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
    mean = float(v.mean())
    out["mean"] = mean
    out["q25"], out["q75"] = (float(q) for q in np.quantile(v, [0.25, 0.75]))
    if n >= 2:
        sd = float(v.std(ddof=1))
        se = sd / np.sqrt(n)
        half = float(stats.t.ppf(0.5 + conf_level / 2.0, n - 1)) * se
        high = mean + half if upper is None else min(mean + half, upper)
        out.update(sd=sd, se=se, ci_low=min(mean - half, high), ci_high=high)
        out["cov"] = sd / abs(mean) if mean != 0 else np.nan
    return out
