"""The compiled level 0 of the error-controlled NLM (fme._nlm.level0_kernel) against the NumPy expressions it
replaces in fme._nlm.budget: every output equal to the last bit, on smooth paths, paths with ties (the jump
route), several outputs and row counts around the kernel's tile."""

from __future__ import annotations

import numpy as np
import pytest

from fme._nlm import bracket_kernel
from fme._nlm import budget_routes as R
from fme._nlm.level0_kernel import level0
from fme.nlm import gauss_kronrod_rules

KRON, GAUSS = gauss_kronrod_rules(1)
U, WK, WG = KRON.nodes, KRON.weights, GAUSS.weights


def _numpy_level0(V: np.ndarray, f0: np.ndarray, F: np.ndarray) -> tuple[np.ndarray, ...]:
    """The level 0 as fme._nlm.budget computed it: in NumPy the level, the centre, the ties, and by the compiled
    sums (equal to their NumPy references on several intervals, tests/_nlm/test_budget_routes.py) the
    Gauss-Kronrod sums and hidden jumps of every row as one interval [0, 1]."""
    n, C = f0.shape
    D0 = V - f0[None]
    scale = np.maximum(np.abs(D0).max(axis=0), np.abs(F)) + np.abs(f0)
    c = np.einsum("j,jnc->nc", WK, D0)
    full = np.concatenate([np.zeros((1, n, C)), D0, F[None]])
    jumps = np.all(full[1:] == full[:-1], axis=2).any(axis=0)
    a, b = np.zeros(n), np.ones(n)
    K, G = bracket_kernel.gk_sums(D0, U, WK, WG, a, b, c, F)
    P, cut, iso = R.hidden_jumps(full, a, b, c, F, scale)
    return scale, c, jumps, K, G, P, cut, iso


def _paths(seed: int, n: int, C: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predictions at the 21 nodes, f(x) and the fME of ``n`` rows: smooth, with a jump, constant in pieces."""
    rng = np.random.default_rng(seed)
    t = U[:, None, None]
    x = rng.normal(size=(1, n, C)) * 10.0 ** rng.integers(-3, 4, size=(1, n, 1))
    kind = rng.integers(0, 4, size=(1, n, 1))
    tau = rng.random((1, n, 1))
    smooth = np.tanh(x + 2.0 * t) + 0.1 * x * t**2
    jump = smooth + 3.0 * (t > tau)
    stairs = np.floor(4.0 * (x + t))  # ties between neighbouring nodes
    V = np.where(kind == 0, smooth, np.where(kind == 1, jump, np.where(kind == 2, stairs, x + 0.0 * t)))
    f0 = V[0] - rng.normal(size=(n, C)) * (kind[0] < 3)  # the last kind: a constant path, f(x) on it
    f1 = V[-1] + rng.normal(size=(n, C)) * 0.01 * (kind[0] == 0)
    return np.ascontiguousarray(V), np.ascontiguousarray(f0), f1 - f0


@pytest.mark.parametrize(("seed", "n", "C"), [(0, 1, 1), (1, 63, 1), (2, 64, 1), (3, 65, 2), (4, 500, 1), (5, 300, 3)])
def test_level0_equals_the_numpy_expressions(seed: int, n: int, C: int) -> None:
    V, f0, F = _paths(seed, n, C)
    got = level0(V, f0, F, U, WK, WG, *R.LEVEL0_CONSTANTS)
    want = _numpy_level0(V, f0, F)
    for name, g, w in zip(("scale", "c", "jumps", "K", "G", "P", "cut", "iso"), got, want):
        np.testing.assert_array_equal(g, w, err_msg=name)
    assert n < 60 or (got[2].any() and not got[2].all())  # both routes among the rows


def test_level0_sees_a_jump_as_the_numpy_hidden_jumps_do() -> None:
    """One row with a jump inside a gap (no tie): the compiled pass finds the same isolated jump and cut."""
    t = np.r_[0.0, U, 1.0]
    tau = 0.5 * (t[9] + t[10])
    values = np.sin(1.0 + 2.5 * t) + 0.7 * t + 3.0 * (t > tau)
    V, f0 = values[1:-1, None, None], values[:1, None]
    F = values[-1:, None] - f0
    scale, c, jumps, K, G, P, cut, iso = level0(V, f0, F, U, WK, WG, *R.LEVEL0_CONSTANTS)
    assert not jumps[0] and iso[0] and cut[0] == 0.5 * (t[9] + t[10])
    assert P[0, 0, 0] > 0


@pytest.mark.parametrize(("seed", "C"), [(0, 1), (1, 3)])
def test_compiled_quad_state_equals_the_numpy_one(seed: int, C: int) -> None:
    """Several sub-intervals per row, rows without any, constant (undefined) rows: the same five arrays."""
    from fme._nlm.level0_kernel import quad_state
    from fme.nlm import CONSTANT_ULPS

    rng = np.random.default_rng(seed)
    n, k = 40, 120
    qr = np.sort(rng.integers(0, n - 5, size=k))
    qK = rng.normal(size=(k, 3, C))
    qK[:, 1] = np.abs(qK[:, 1]) + 2.0  # S2 mostly above (S1 - c)^2
    qG = qK + rng.normal(size=(k, 3, C)) * 1e-3
    qP = np.abs(rng.normal(size=(k, 3, C))) * 1e-2
    flat = np.isin(qr, [3, 7])  # two rows whose sums vanish: undefined NLMs
    qK[flat], qG[flat] = 0.0, 0.0
    c, scale = rng.normal(size=(n, C)), np.abs(rng.normal(size=(n, C))) + 1.0
    want = R.quad_state(n, c, scale, qr, qK, qG, qP)
    got = quad_state(n, c, scale, qr, qK, qG, qP, CONSTANT_ULPS)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_level0_on_several_threads_equals_one_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows cut into ranges on three threads (tails shorter than a tile included) give the same bits."""
    from fme._nlm import level0_kernel
    from fme._utils import threads

    V, f0, F = _paths(7, 1_000, 2)
    monkeypatch.setattr(threads, "thread_count", lambda: 1)
    one = level0(V, f0, F, U, WK, WG, *R.LEVEL0_CONSTANTS)
    monkeypatch.setattr(threads, "thread_count", lambda: 3)
    monkeypatch.setattr(threads, "MIN_ROWS_PER_THREAD", 100)
    calls: list[int] = []
    monkeypatch.setattr(level0_kernel, "run_ranges", lambda *a, **k: calls.append(threads.run_ranges(*a, **k)))
    many = level0(V, f0, F, U, WK, WG, *R.LEVEL0_CONSTANTS)
    assert calls == [3]
    for name, a, b in zip(("scale", "c", "jumps", "K", "G", "P", "cut", "iso"), one, many):
        np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("threads_", [1, 3])
@pytest.mark.parametrize(("seed", "C"), [(0, 1), (1, 3)])
def test_quad_state_of_one_sub_interval_per_row_equals_the_numpy_one(
    monkeypatch: pytest.MonkeyPatch, seed: int, C: int, threads_: int
) -> None:
    """Level 0 of smooth paths (sub-interval i is row i): the row-by-row kernel gives the NumPy state's bits,
    with constant (undefined) rows, signed zeros, NaN and infinite sums among them, on one thread or three."""
    from fme._nlm import level0_kernel
    from fme._utils import threads
    from fme.nlm import CONSTANT_ULPS

    monkeypatch.setattr(threads, "thread_count", lambda: threads_)
    monkeypatch.setattr(threads, "MIN_ROWS_PER_THREAD", 16)
    rng = np.random.default_rng(seed)
    n = 200
    qr = np.arange(n)
    qK = rng.normal(size=(n, 3, C)) * 10.0 ** rng.integers(-3, 3, size=(n, 1, 1))
    qK[:, 1] = np.abs(qK[:, 1]) + 2.0
    qG = qK + rng.normal(size=(n, 3, C)) * 1e-3
    qP = np.abs(rng.normal(size=(n, 3, C))) * 1e-2
    qK[:10], qG[:10] = 0.0, 0.0  # constant paths: undefined NLMs
    qK[10:15], qG[10:15] = -0.0, -0.0  # signed zeros: the sums start from +0.0
    qK[15, 1], qG[16, 2], qP[17, 0] = np.nan, np.inf, np.inf
    c, scale = rng.normal(size=(n, C)), np.abs(rng.normal(size=(n, C))) + 1.0
    want = R.quad_state(n, c, scale, qr, qK, qG, qP)
    calls: list[int] = []
    monkeypatch.setattr(level0_kernel, "run_ranges", lambda *a, **k: calls.append(threads.run_ranges(*a, **k)))
    got = level0_kernel.quad_state(n, c, scale, qr, qK, qG, qP, CONSTANT_ULPS)
    assert calls == [threads_]  # the row-by-row kernel ran, on that many ranges
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.array_equal(np.signbit(g), np.signbit(w))


@pytest.mark.parametrize("k", [1, 3])
def test_quad_state_by_row_ranges_on_threads_equals_the_numpy_one(monkeypatch: pytest.MonkeyPatch, k: int) -> None:
    """Sub-intervals of a row anywhere in the list (appended by the rounds), the rows cut into ranges on ``k``
    threads: each row's sums still add its sub-intervals in index order, the same five arrays."""
    from fme._nlm import level0_kernel
    from fme._utils import threads
    from fme.nlm import CONSTANT_ULPS

    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(level0_kernel, "MIN_SLOW_ROWS_PER_THREAD", 8)
    rng = np.random.default_rng(4)
    n, m, C = 50, 170, 2
    qr = rng.integers(0, n - 3, size=m)  # unsorted, three rows without any
    qK = rng.normal(size=(m, 3, C))
    qK[:, 1] = np.abs(qK[:, 1]) + 2.0
    qG = qK + rng.normal(size=(m, 3, C)) * 1e-3
    qP = np.abs(rng.normal(size=(m, 3, C))) * 1e-2
    c, scale = rng.normal(size=(n, C)), np.abs(rng.normal(size=(n, C))) + 1.0
    want = R.quad_state(n, c, scale, qr, qK, qG, qP)
    got = level0_kernel.quad_state(n, c, scale, qr, qK, qG, qP, CONSTANT_ULPS)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
