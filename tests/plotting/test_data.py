"""Histogram edges, densities and non-finite counts that every figure of the project relies on."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fme.plotting.data import (
    FLAT_RTOL,
    MAX_BINS,
    dropped_text,
    finite_part,
    finite_rows,
    histogram_edges,
    is_flat,
    kde_curve,
)

TINY = 1.0 + np.arange(5) * np.finfo(float).eps  # a spread of ~1e-15 relative: a linear model's fMEs


def test_finite_part_counts_each_kind() -> None:
    fin = finite_part([1.0, np.nan, np.inf, -np.inf, 2.0, np.inf])
    assert fin.values.tolist() == [1.0, 2.0]
    assert (fin.n_nan, fin.n_posinf, fin.n_neginf, fin.n_dropped) == (1, 2, 1, 4)
    assert fin.note == "not drawn: 4 non-finite values (1 NaN, 2 +inf, 1 -inf)"
    assert finite_part([1.0, 2.0]).note is None


def test_finite_rows_needs_every_coordinate() -> None:
    fin = finite_rows([1.0, 2.0, np.nan, 4.0, 5.0], [1.0, np.inf, 3.0, np.nan, 5.0])
    assert fin.mask.tolist() == [True, False, False, False, True]
    assert (fin.n_nan, fin.n_posinf, fin.n_neginf) == (2, 1, 0)


def test_dropped_text_singular() -> None:
    assert dropped_text(0, 0, 1) == "not drawn: 1 non-finite value (1 -inf)"


@pytest.mark.parametrize("values", [np.full(7, 3.5), TINY, np.array([2.0]), np.array([0.0, 0.0]), np.empty(0)])
def test_flat_inputs_get_one_visible_bin(values) -> None:
    edges = histogram_edges(values, 30)
    assert edges.size == 2 and edges[1] > edges[0]
    if values.size:
        assert edges[0] <= values.min() and values.max() <= edges[1]
    if values.size and values.mean() == 3.5:
        assert edges.tolist() == pytest.approx([3.5 - 0.175, 3.5 + 0.175])


def test_tiny_spread_is_flat_and_numpy_would_fail() -> None:
    assert is_flat(TINY)
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram_bin_edges(TINY, bins=30)


def test_just_above_the_flat_threshold_still_gives_increasing_edges() -> None:
    v = np.array([1.0, 1.0 + 3 * FLAT_RTOL])
    assert not is_flat(v)
    edges = histogram_edges(v, 30)
    assert np.all(np.diff(edges) > 0) and edges[0] == 1.0 and edges[-1] == v[1]


def test_rules_are_capped() -> None:
    v = np.r_[np.zeros(10_000), np.linspace(0, 1e-6, 10_000), 1e6]  # 'auto' would ask for ~1e12 bins
    edges = histogram_edges(v, "auto")
    assert edges.size - 1 <= MAX_BINS and np.all(np.diff(edges) > 0)


def test_fixed_range_is_kept() -> None:
    assert histogram_edges([0.2], 4, range=(-1.0, 1.0)).tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]


def test_kde_is_none_where_undefined_and_integrates_to_one_otherwise() -> None:
    for v in (TINY, np.array([1.0, 2.0]), np.full(5, 1.0)):
        assert kde_curve(v) is None
    grid, dens = kde_curve(np.random.default_rng(0).normal(size=500), n_grid=2000, pad=3.0)
    assert np.trapezoid(dens, grid) == pytest.approx(1.0, abs=2e-3)


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64,
        st.integers(0, 40),
        elements=st.one_of(st.floats(-1e300, 1e300), st.sampled_from([np.nan, np.inf, -np.inf])),
    ),
    st.one_of(st.integers(1, 60), st.sampled_from(["auto", "fd", "sturges"])),
)
@example(values=np.array([5e-324]), bins=1)  # found by hypothesis: 5% of a subnormal value underflowed to 0
def test_edges_are_strictly_increasing_for_any_input(values, bins) -> None:
    v = finite_part(values).values
    edges = histogram_edges(v, bins)
    assert np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
    if v.size:
        counts, _ = np.histogram(v, bins=edges)
        assert counts.sum() == v.size
