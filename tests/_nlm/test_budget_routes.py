"""The sums and bounds of the error-controlled NLM's routes (fme._nlm.budget_routes, fme._nlm.bracket_kernel)
on random brackets: compiled per-row sums equal the NumPy formulas summed by a plain loop, and several outputs
give each output exactly what it gets alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fme._nlm import bracket_kernel as K
from fme._nlm import budget_routes as R


def _brackets(seed: int, n: int = 50, k: int = 400, C: int = 3):
    rng = np.random.default_rng(seed)
    br = np.sort(rng.integers(0, n, size=k))
    a = rng.random(k) * 0.9
    b = a + rng.random(k) * 0.1 + 1e-3
    dL, dR = rng.normal(size=(k, C)), rng.normal(size=(k, C))
    c, F = rng.normal(size=(n, C)), rng.normal(size=(n, C))
    scale = np.abs(rng.normal(size=(n, C))) + 3.0
    dense = rng.random(n) < 0.5
    est = K.rowsum(br, R.bracket_sums(a, b, dL, dR, c[br], F[br]), n)
    est[:, 1] += 5.0  # a variance well above the brackets' own
    return br, a, b, dL, dR, c, F, scale, dense, est


def test_rowsum_equals_a_loop():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 7, size=200)
    vals = rng.normal(size=(200, 3, 2))
    want = np.zeros((7, 3, 2))
    for i, r in enumerate(rows):
        want[r] += vals[i]
    np.testing.assert_array_equal(K.rowsum(rows, vals, 7), want)  # same additions in the same order


@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_sums_equal_the_formulas(seed):
    """The kernels' fused per-row sums equal the NumPy formulas of budget_routes summed row by row."""
    br, a, b, dL, dR, c, F, scale, dense, est = _brackets(seed)
    n = c.shape[0]

    def loop(vals):
        out = np.zeros((n,) + vals.shape[1:])
        for i, r in enumerate(br):
            out[r] += vals[i]
        return out

    want = loop(R.bracket_sums(a, b, dL, dR, c[br], F[br]))
    got = K.bracket_rowsums(br, a, b, dL, dR, c, F, np.zeros((n, 3, c.shape[1])))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(K.bracket_rowsums(br, a, b, dL, dR, c, F, got.copy(), -1.0), 0.0, atol=1e-12)
    np.testing.assert_allclose(
        K.segment_rowsums(br, a, b, dL, c, F, n), loop(R.segment(a, b, dL, c[br], F[br])), rtol=1e-13, atol=1e-13
    )
    s, m, g, J = R.bracket_statics(a, b, dL, dR)
    _, _, ratio, _ = R.nlm_of(est, c, scale)
    s1 = est[:, 0]
    A = np.abs((1.0 - ratio)[br] * g + (ratio * s1)[br] - m * F[br])
    G = np.abs(g - s1[br])
    aj = J * s
    cols = [aj * A, s * A, aj * G, s * G, aj, aj * s, s, s * J, s * s, J]
    want10 = np.stack([loop(np.broadcast_to(v, J.shape)) for v in cols], axis=1)
    np.testing.assert_allclose(K.jump_sums(br, a, b, dL, dR, F, ratio, s1, n), want10, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jump_state_of_several_outputs_is_each_output_alone(seed):
    """Dense rows included (their excursion term multiplies per-bracket sums that do not depend on the
    output): output j's NLM, bound, D and bracket shares equal a call with output j alone."""
    br, a, b, dL, dR, c, F, scale, dense, est = _brackets(seed)
    n, C = c.shape
    nlm, bound, D, share = R.jump_state(n, c, F, scale, est, br, a, b, dL, dR, dense)
    assert np.isfinite(bound).any()
    shares = []
    for j in range(C):
        o = slice(j, j + 1)
        v1, b1, d1, sh1 = R.jump_state(
            n, c[:, o], F[:, o], scale[:, o], est[:, :, o], br, a, b, dL[:, o], dR[:, o], dense
        )
        np.testing.assert_array_equal(nlm[:, o], v1)
        np.testing.assert_allclose(bound[:, o], b1, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(D[:, o], d1)
        shares.append(sh1)
    np.testing.assert_allclose(share, np.max(shares, axis=0), rtol=1e-12, atol=0)


def _reference_split(B, bpick, kk, grp, j, tb, vals, c, F, n):
    """The NumPy cut of the brackets that fme._nlm.budget used before the compiled one (kept as reference)."""
    P = bpick.size
    r, a, b, lv, rv = B["r"][bpick], B["a"][bpick], B["b"][bpick], B["l"][bpick], B["rt"][bpick]
    start = np.cumsum(kk + 2) - (kk + 2)
    pt = np.empty(int((kk + 2).sum()))
    pv = np.empty((pt.size, vals.shape[1]))
    pt[start], pv[start] = a, lv
    pt[start + kk + 1], pv[start + kk + 1] = b, rv
    inner = start[grp] + j
    pt[inner], pv[inner] = tb, vals
    third = (
        np.bincount(r[grp], weights=~(np.all(vals == lv[grp], axis=1) | np.all(vals == rv[grp], axis=1)), minlength=n)
        > 0
    )
    first = np.ones(pt.size - 1, dtype=bool)
    first[(start + kk + 1)[:-1]] = False
    owner = np.repeat(np.arange(P), kk + 2)[:-1]
    tie = np.all(pv[1:] == pv[:-1], axis=1) & first
    si = np.flatnonzero(tie)
    rs = r[owner[si]]
    done = K.rowsum(rs, R.segment(pt[si], pt[si + 1], pv[si], c[rs], F[rs]), n)
    oi = np.flatnonzero(first & ~tie)
    new = {"r": r[owner[oi]], "a": pt[oi], "b": pt[oi + 1], "l": pv[oi], "rt": pv[oi + 1]}
    B["sums"] = (
        B["sums"]
        + K.rowsum(new["r"], R.bracket_sums(new["a"], new["b"], new["l"], new["rt"], c[new["r"]], F[new["r"]]), n)
        - K.rowsum(r, R.bracket_sums(a, b, lv, rv, c[r], F[r]), n)
    )
    _, first = np.unique(owner[oi], return_index=True)
    rest = np.ones(oi.size, dtype=bool)
    rest[first] = False
    for key, v in new.items():
        B[key][bpick] = v[first]
        B[key] = np.concatenate([B[key], v[rest]])
    return done, third


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_cut_equals_the_numpy_cut(seed):
    """Brackets cut at 1-4 probes whose values are the left end, the right end or a third value: the same open
    brackets in the same slots, the same settled sums, running sums and rows with a third value."""
    rng = np.random.default_rng(seed)
    n, k, C = 40, 300, 2
    br = rng.integers(0, n, size=k)
    a = rng.random(k) * 0.9
    b = a + rng.random(k) * 0.1 + 1e-3
    L, Rt = rng.integers(0, 3, size=(k, C)).astype(float), rng.integers(3, 6, size=(k, C)).astype(float)
    c, F = rng.normal(size=(n, C)), rng.normal(size=(n, C))
    B = {"r": br, "a": a, "b": b, "l": L, "rt": Rt}
    B["sums"] = K.bracket_rowsums(br, a, b, L, Rt, c, F, np.zeros((n, 3, C)))
    bpick = np.sort(rng.choice(k, size=120, replace=False))
    kk = rng.integers(1, 5, size=bpick.size)
    grp = np.repeat(np.arange(bpick.size), kk)
    j = np.arange(grp.size) - (np.cumsum(kk) - kk)[grp] + 1
    tb = a[bpick][grp] + j / (kk[grp] + 1.0) * (b - a)[bpick][grp]
    pick = rng.integers(0, 3, size=grp.size)  # probe = left end, right end, or a third value
    vals = np.where((pick == 0)[:, None], L[bpick][grp], np.where((pick == 1)[:, None], Rt[bpick][grp], 9.0))
    want = {key: v.copy() for key, v in B.items()}
    done, third = _reference_split(want, bpick, kk, grp, j, tb, vals, c, F, n)
    got = {key: v.copy() for key, v in B.items()}
    settled, dense = np.zeros((n, 3, C)), np.zeros(n, dtype=bool)
    K.split_brackets(got, bpick, kk, tb, vals, c, F, settled, dense)
    for key in ("r", "a", "b", "l", "rt"):
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    np.testing.assert_allclose(settled, done, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got["sums"], want["sums"], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(dense, third)
    assert third.any() and got["r"].size > k


def test_compiled_gauss_kronrod_sums_equal_the_numpy_ones():
    """Same sums in the same order: equal to the last bit, several outputs, a Gauss weight of zero skipped."""
    from fme.nlm import gauss_kronrod_rules

    rng = np.random.default_rng(7)
    kron, gauss = gauss_kronrod_rules(1)
    I, C = 300, 2  # noqa: E741 - I sub-intervals and C outputs, the kernel's notation
    a = rng.random(I) * 0.5
    b = a + rng.random(I) * 0.5
    Dv, c, F = rng.normal(size=(kron.nodes.size, I, C)), rng.normal(size=(I, C)), rng.normal(size=(I, C))
    want = R.gk_sums(Dv, kron.nodes, kron.weights, gauss.weights, a, b, c, F)
    got = K.gk_sums(Dv, kron.nodes, kron.weights, gauss.weights, a, b, c, F)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_row_argmax_is_the_first_largest_per_row():
    rng = np.random.default_rng(8)
    rows = rng.integers(0, 30, size=500)
    vals = rng.integers(0, 5, size=500).astype(float)  # many ties
    vals[rng.random(500) < 0.05] = np.inf
    order = np.lexsort((-vals, rows))  # the NumPy reference: by row, then largest first, ties by index
    first = np.flatnonzero(np.r_[True, rows[order][1:] != rows[order][:-1]])
    np.testing.assert_array_equal(K.row_argmax(rows, vals, 40), order[first])


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 3),
    st.lists(
        st.tuples(st.integers(0, 5), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0])),
        max_size=40,
    ),
    st.integers(0, 2**31),
)
def test_the_level_seen_is_numpys_maximum_at(n, C, points, seed):
    """Each path's level seen so far: np.maximum.at's numbers, NaN and signed zeros included, for any order."""
    rng = np.random.default_rng(seed)
    special = np.array([0.0, -0.0, np.nan, np.inf, 1.0, 2.5])
    scale = rng.choice(special, size=(n, C))
    f0 = rng.choice(special, size=(n, C)) * rng.choice([1.0, -1.0], size=(n, C))
    rows = np.array([r % n for r, _, _ in points], dtype=np.int64)
    vals = np.array([[v if j == 0 else z + v * 0.5 for j in range(C)] for _, v, z in points]).reshape(-1, C)
    want = scale.copy()
    with np.errstate(invalid="ignore"):
        np.maximum.at(want, rows, np.abs(vals) + np.abs(f0[rows]))
    got = scale.copy()
    K.level_seen(got, rows, vals, f0)
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()


@pytest.mark.parametrize("k", [1, 3])
def test_hidden_jumps_by_ranges_on_threads_are_the_numpy_numbers(monkeypatch, k):
    """The sub-intervals cut into ranges, one per thread: each range's figures are the NumPy reference's."""
    from fme._utils import threads

    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(K, "MIN_SLOW_ROWS_PER_THREAD", 16)
    rng = np.random.default_rng(9)
    m = 301
    V = np.cumsum(rng.normal(size=(23, m, 2)), axis=0)
    V[12:, ::3, 1] += 2.0
    a = rng.random(m) * 0.5
    b = a + rng.random(m) * 0.5
    c, lev = rng.normal(size=(m, 2)), np.abs(V).max(axis=0) + 1.0
    ranges = []
    real = threads.run_ranges
    monkeypatch.setattr(K, "run_ranges", lambda *args, **kw: ranges.append(real(*args, **kw)) or ranges[-1])
    got, want = R.hidden_jumps(V, a, b, c, V[-1], lev), R.hidden_jumps_numpy(V, a, b, c, V[-1], lev)
    assert ranges == [k]
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_jump_routes_sums_and_shares_are_the_same_bits_on_any_threads(monkeypatch, seed):
    """Rows cut into ranges for the sums (each row still adds its brackets in index order), brackets into ranges
    for the shares: the same numbers on three threads as on one, brackets of a row scattered over the list."""
    from fme._utils import threads

    br, a, b, dL, dR, c, F, scale, dense, est = _brackets(seed)
    n = c.shape[0]
    order = np.random.default_rng(seed).permutation(br.size)  # a row's brackets anywhere in the list
    br, a, b, dL, dR = br[order], a[order], b[order], dL[order], dR[order]
    _, D, ratio, _ = R.nlm_of(est, c, scale)
    s1 = est[:, 0]
    H = np.abs(np.random.default_rng(seed).normal(size=ratio.shape))
    bound = np.abs(np.random.default_rng(seed + 7).normal(size=ratio.shape))

    def run(k):
        monkeypatch.setattr(threads, "thread_count", lambda: k)
        monkeypatch.setattr(K, "MIN_SLOW_ROWS_PER_THREAD", 4)
        return (
            K.jump_sums(br, a, b, dL, dR, F, ratio, s1, n),
            K.bracket_shares(br, a, b, dL, dR, F, ratio, s1, H, bound, D),
        )

    for one, many in zip(run(1), run(3)):
        np.testing.assert_array_equal(one, many)
