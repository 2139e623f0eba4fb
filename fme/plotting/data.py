"""What a figure may draw: finite values, histogram edges and densities that survive any distribution.

Pure NumPy (no matplotlib), used by the displays of :mod:`fme.plotting` and by
:mod:`fme.report.analysis.figures`, so every histogram, density and scatter of the project
handles the same awkward inputs the same way:

* all values equal, or a spread below what 30 float bins can resolve (a linear
  model's fMEs differ by ~1e-16 relative): one bar of visible width, no density
  (a kernel density needs a spread);
* one or two values: drawn, no density below three;
* NaN and ±inf: left out, and *said*: :func:`finite_part` counts them and
  :func:`dropped_text` words the note a figure shows;
* nothing finite at all: an empty axis with that note.

Magnitudes up to 1e300 are supported (the property test's domain); beyond that
NumPy's own histogram arithmetic overflows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "FLAT_RTOL",
    "MAX_BINS",
    "Finite",
    "finite_part",
    "finite_rows",
    "dropped_text",
    "is_flat",
    "histogram_edges",
    "kde_curve",
    "subsample",
    "rug_values",
]

#: Values whose range is at most this fraction of their magnitude count as one value: below it the
#: histogram would show float rounding, not a distribution.
FLAT_RTOL = 1e-9
#: Cap on the bins of a rule such as 'auto' (a far outlier would otherwise ask for millions).
MAX_BINS = 200


@dataclass(frozen=True)
class Finite:
    """The finite values of an array and the counts of what was left out."""

    values: np.ndarray
    mask: np.ndarray
    n_nan: int
    n_posinf: int
    n_neginf: int

    @property
    def n_dropped(self) -> int:
        return self.n_nan + self.n_posinf + self.n_neginf

    @property
    def note(self) -> str | None:
        """``'not drawn: 2 non-finite values (1 NaN, 1 +inf)'``, or None when nothing was dropped."""
        return dropped_text(self.n_nan, self.n_posinf, self.n_neginf)


def finite_part(values) -> Finite:
    """Split ``values`` into its finite part and the counts of NaN, +inf and -inf."""
    return finite_rows(values)


def finite_rows(*columns) -> Finite:
    """Rows where every column is finite (a scatter needs both coordinates); counts over all columns' rows.

    ``values`` is the first column's finite rows; the counts say why rows were left out
    (a row with NaN in one column and inf in another counts as NaN).
    """
    cols = [np.asarray(c, dtype=float).ravel() for c in columns]
    mask = np.logical_and.reduce([np.isfinite(c) for c in cols])
    nan = np.logical_or.reduce([np.isnan(c) for c in cols])
    pos = ~nan & np.logical_or.reduce([c == np.inf for c in cols])
    neg = ~nan & ~pos & np.logical_or.reduce([c == -np.inf for c in cols])
    return Finite(
        values=cols[0][mask], mask=mask, n_nan=int(nan.sum()), n_posinf=int(pos.sum()), n_neginf=int(neg.sum())
    )


def dropped_text(n_nan: int, n_posinf: int = 0, n_neginf: int = 0) -> str | None:
    """The note for values a figure left out (None when there are none)."""
    total = n_nan + n_posinf + n_neginf
    if total == 0:
        return None
    parts = [f"{k} {name}" for k, name in ((n_nan, "NaN"), (n_posinf, "+inf"), (n_neginf, "-inf")) if k]
    noun = "value" if total == 1 else "values"
    return f"not drawn: {total} non-finite {noun} ({', '.join(parts)})"


def is_flat(values: np.ndarray, rtol: float = FLAT_RTOL) -> bool:
    """Fewer than two values, or a range at most ``rtol`` times their largest magnitude."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return True
    spread = float(v.max() - v.min())
    return spread <= rtol * float(np.abs(v).max())


def _flat_edges(values: np.ndarray) -> np.ndarray:
    """One bin centred on the values, 10% of their magnitude wide (1 wide around 0)."""
    centre = float(np.mean(values)) if values.size else 0.0
    half = 0.05 * abs(centre) if centre != 0.0 else 0.5
    edges = np.array([centre - half, centre + half])
    if not edges[0] < edges[1]:  # 5% of a subnormal centre underflows to 0: a unit bin, as around 0
        edges = np.array([centre - 0.5, centre + 0.5])
    return edges


def histogram_edges(values, bins: int | str = 30, range: tuple[float, float] | None = None) -> np.ndarray:
    """Bin edges for ``ax.hist`` that are strictly increasing for any finite input.

    Parameters
    ----------
    values : array-like
        Finite values (use :func:`finite_part` first).
    bins : int or str, default=30
        As in :func:`numpy.histogram_bin_edges`; a rule is capped at :data:`MAX_BINS` bins.
    range : (float, float), optional
        Fixed range; ignored when it is empty.

    Returns
    -------
    ndarray
        Edges; a single bin of visible width for flat or empty ``values``.
    """
    v = np.asarray(values, dtype=float)
    if range is not None and range[1] > range[0]:
        return np.histogram_bin_edges(v, bins=bins, range=range)
    if v.size == 0 or is_flat(v):
        return _flat_edges(v)
    lo, hi = float(v.min()), float(v.max())
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            edges = np.histogram_bin_edges(v, bins=bins)
    except (ValueError, MemoryError, OverflowError):
        edges = None
    if edges is None or edges.size - 1 > MAX_BINS or not _increasing(edges):
        n = bins if isinstance(bins, int) and not isinstance(bins, bool) else 30
        edges = _linspace(lo, hi, min(max(n, 1), MAX_BINS))
        # A range just above FLAT_RTOL cannot hold many float-distinct edges: halve until it can.
        while edges.size > 2 and not _increasing(edges):
            edges = _linspace(lo, hi, (edges.size - 1) // 2)
    return edges


def _increasing(edges: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0))


def _linspace(lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` equal bins from ``lo`` to ``hi``, also when ``hi - lo`` overflows (values near ±1.8e308)."""
    width = hi / n - lo / n
    edges = lo + np.arange(n + 1) * width
    edges[-1] = hi
    return edges


def kde_curve(values, n_grid: int = 256, pad: float = 0.05) -> tuple[np.ndarray, np.ndarray] | None:
    """A Gaussian kernel density on a grid over the values' range, or None where it is undefined.

    Undefined: fewer than three values, a flat sample (:func:`is_flat`) or a
    singular covariance (scipy raises); the histogram then stands alone.
    """
    v = np.asarray(values, dtype=float)
    if v.size < 3 or is_flat(v):
        return None
    from scipy.stats import gaussian_kde

    spread = float(v.max() - v.min())
    grid = np.linspace(v.min() - pad * spread, v.max() + pad * spread, n_grid)
    try:
        density = gaussian_kde(v)(grid)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not np.all(np.isfinite(density)):
        return None
    return grid, density


def subsample(n: int, max_points: int | None, seed: int) -> np.ndarray:
    """Sorted positions of the rows a figure draws: all ``n``, or a seeded sample of ``max_points`` of them."""
    if max_points is None or n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_points, replace=False))


def rug_values(values: np.ndarray, max_points: int) -> tuple[np.ndarray, str]:
    """The marks of a rug of all observed values, at most ``max_points`` (an unsampled rug of
    10^5 rows made one SVG 1.17 MB): the distinct values, or when there are more, ``max_points`` evenly
    spaced quantiles of all rows (the rug's density is kept), and the legend label saying which."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    distinct = np.unique(v)
    if distinct.size <= max_points:
        return distinct, "observed values (all rows)"
    q = np.quantile(v, np.linspace(0.0, 1.0, int(max_points)), method="inverted_cdf")
    return q, f"observed values ({max_points:,} quantiles of all rows)"
