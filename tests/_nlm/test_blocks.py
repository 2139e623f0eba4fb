"""The budgeted NLM's per-block memory (fme._nlm.blocks.BlockWork): disjoint views in their shapes, never too large."""

from __future__ import annotations

import numpy as np
import pytest

from fme._nlm import budget_routes as R
from fme._nlm.blocks import BlockWork
from fme._nlm.level0_kernel import level0, quad_state
from fme.nlm import CONSTANT_ULPS, gauss_kronrod_rules


def test_the_arrays_of_a_block_are_disjoint_views_in_the_kernels_shapes() -> None:
    work = BlockWork(100, 2)
    scale, nlm, err = np.empty((70, 2)), np.empty((70, 2)), np.empty((70, 2))
    lv = work.level0(70, scale)
    st = work.state(70, nlm, err)
    assert lv[0] is scale and st[0] is nlm and st[1] is err
    assert [a.shape for a in lv] == [(70, 2), (70, 2), (70,), (70, 3, 2), (70, 3, 2), (70, 3, 2), (70,), (70,)]
    assert [a.shape for a in st] == [(70, 2), (70, 2), (70, 2), (70,), (70,)]
    mine = list(lv[1:]) + list(st[2:])
    for i, a in enumerate(mine):
        assert a.flags.c_contiguous
        for b in mine[i + 1 :]:
            assert not np.shares_memory(a, b)
    with pytest.raises(ValueError, match="101 rows does not fit a workspace of 100 rows"):
        work.level0(101, np.empty((101, 2)))
    del lv, st, mine
    work.close()
    with pytest.raises(ValueError, match="does not fit"):
        work.state(10, np.empty((10, 2)), np.empty((10, 2)))


def test_the_kernels_write_into_given_arrays_the_numbers_of_fresh_ones() -> None:
    kron, gauss = gauss_kronrod_rules(1)
    u, wk, wg = kron.nodes, kron.weights, gauss.weights
    rng = np.random.default_rng(5)
    x = rng.normal(size=(300, 1))
    V = np.tanh(x[None] + u[:, None, None] * np.array([1.0, -0.5]))  # (21, 300, 2)
    f0, F = np.tanh(x * np.ones(2)), np.tanh(x + np.array([1.0, -0.5])) - np.tanh(x * np.ones(2))
    fresh = level0(V, f0, F, u, wk, wg, *R.LEVEL0_CONSTANTS)
    work = BlockWork(400, 2)
    given = level0(V, f0, F, u, wk, wg, *R.LEVEL0_CONSTANTS, out=work.level0(300, np.empty((300, 2))))
    for a, b in zip(fresh, given):
        np.testing.assert_array_equal(a, b)
    scale, c, _, K, G, P, *_ = given
    qr = np.arange(300)
    want = quad_state(300, c, scale, qr, K, G, P, CONSTANT_ULPS)
    got = quad_state(
        300, c, scale, qr, K, G, P, CONSTANT_ULPS, out=work.state(300, np.empty((300, 2)), np.empty((300, 2)))
    )
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_an_out_array_of_another_shape_or_dtype_is_refused() -> None:
    kron, gauss = gauss_kronrod_rules(1)
    V, f0 = np.zeros((21, 5, 1)), np.zeros((5, 1))
    out = list(BlockWork(5, 1).level0(5, np.empty((5, 1))))
    out[0] = np.empty((5, 1), dtype=np.float32)
    with pytest.raises(ValueError, match="level0's out must be"):
        level0(V, f0, f0, kron.nodes, kron.weights, gauss.weights, *R.LEVEL0_CONSTANTS, out=tuple(out))
    bad = (np.empty((5, 1)), np.empty((5, 1)), np.empty((5, 1)), np.empty(4), np.empty(5))
    with pytest.raises(ValueError, match="quad_state's out must be"):
        quad_state(
            5,
            f0,
            f0,
            np.arange(5),
            np.zeros((5, 3, 1)),
            np.zeros((5, 3, 1)),
            np.zeros((5, 3, 1)),
            CONSTANT_ULPS,
            out=bad,
        )
