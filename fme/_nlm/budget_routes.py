"""The two routes of the error-controlled NLM: their sums, error estimates and bounds (paper §5.4).

Helpers of :mod:`fme._nlm.budget`, which describes the routes and drives the rounds; :func:`jump_state`
derives the jump route's bound.
Everything here is element-wise over rows, sub-intervals or brackets plus per-row sums, which run compiled
(:mod:`fme._nlm.bracket_kernel`): no per-row Python loop. The three integrals of the NLM along a path, relative to
f(x) and with the fixed centre ``c`` (the level-0 Kronrod mean), are

    S1 = int (f - f(x)),   S2 = int (f - f(x) - c)^2,   N = int (f - f(x) - t F)^2,

with ``F`` = f(x + h) - f(x); D = S2 - (S1 - c)^2 is the variance along the path and NLM = 1 - N / D.
Arrays of sums have shape (k, 3, C): k rows / intervals / brackets, the three integrals, C outputs.
"""

from __future__ import annotations

import numpy as np

from ..nlm import CONSTANT_ULPS, gauss_kronrod_rules
from . import bracket_kernel as _kernel
from .bracket_kernel import rowsum

__all__ = [
    "LEVEL0_CONSTANTS",
    "segment",
    "nlm_of",
    "gk_sums",
    "quad_state",
    "bracket_sums",
    "bracket_statics",
    "jump_state",
    "hidden_jumps",
    "hidden_jumps_numpy",
    "rounding_error",
]

_EPS = np.finfo(float).eps
#: A sub-interval's 23 known points in relative position: its two ends and the 21 Gauss-Kronrod nodes.
_POINTS = np.r_[0.0, gauss_kronrod_rules(1)[0].nodes, 1.0]
#: Points per side of the two one-sided polynomials that predict a gap's far end, each cut down where its
#: weights' absolute sum (its amplification of rounding) would exceed _MAX_LEBESGUE.
_LOW, _HIGH = 4, 8
_MAX_LEBESGUE = 1000.0
#: A gap holds a jump when the higher-degree prediction misses by more than this share of the lower-degree
#: one: a jump J makes every one-sided prediction across it miss by J (the weights sum to 1), while on a
#: smooth path the miss shrinks with the degree (the sine's by 1e-4 from 4 to 8 points, an RBF SVR's path by
#: 1e-2 in the widest gaps).
_JUMP_SHARE = 0.25
#: ... and when it exceeds the rounding of its points: _ROUND_ULPS ulps of the path's level times the weights'
#: absolute sum.
_ROUND_ULPS = 4.0
#: A detected jump is isolated (the sub-interval is then cut inside its gap) when its miss exceeds this
#: multiple of every other gap's.
_OUTLIER = 8.0
#: Per unit total variation and width, the Kronrod + 2 x Gauss error of the partial sums of a smooth factor
#: beyond a step (measured 2.7e-3 for a linear factor on [0, 1]; see hidden_jumps).
_TV_FACTOR = 0.01


def _lagrange(xs: np.ndarray, x0: float) -> np.ndarray:
    w = np.ones(xs.size)
    for i in range(xs.size):
        for k in range(xs.size):
            if k != i:
                w[i] *= (x0 - xs[k]) / (xs[i] - xs[k])
    return w


def _side(points: np.ndarray, target: float, most: int):
    """The nearest ``most`` or fewer of ``points`` (ordered nearest first) whose Lagrange weights at
    ``target`` sum to at most _MAX_LEBESGUE in absolute value (one point always qualifies)."""
    for k in range(min(most, points.size), 0, -1):
        w = _lagrange(_POINTS[points[:k]], target)
        if k == 1 or np.abs(w).sum() <= _MAX_LEBESGUE:
            return points[:k], w


def _stencils():
    """Per gap j (between points j and j + 1), for the low and the high degree: the left points and weights
    predicting point j + 1 and the right points and weights predicting point j."""
    out = []
    for j in range(_POINTS.size - 1):
        left, right = np.arange(j, -1, -1), np.arange(j + 1, _POINTS.size)
        out.append(
            tuple(_side(pts, _POINTS[tgt], most) for most in (_LOW, _HIGH) for pts, tgt in ((left, j + 1), (right, j)))
        )
    return out


_GAPS = _stencils()


def _tables():
    """The stencils as arrays for the compiled kernel: per gap and side (low left, low right, high left, high
    right) the points, weights, their count and the weights' absolute sum. Shorter sides are padded with
    weight 0 on the gap's own left point (a finite value: 0 times it adds an exact 0)."""
    idx = np.zeros((len(_GAPS), 4, _HIGH), dtype=np.int64)
    idx[:] = np.arange(len(_GAPS))[:, None, None]
    wts = np.zeros((len(_GAPS), 4, _HIGH))
    npts = np.zeros((len(_GAPS), 4), dtype=np.int64)
    leb = np.zeros((len(_GAPS), 4))
    for j, sides in enumerate(_GAPS):
        for k, (p, w) in enumerate(sides):
            idx[j, k, : p.size], wts[j, k, : p.size], npts[j, k], leb[j, k] = p, w, p.size, np.abs(w).sum()
    return idx, wts, npts, leb


_TABLES = _tables()
#: What :func:`fme._nlm.level0_kernel.level0` takes beside the values: the stencil tables, the 23 relative points
#: and the constants of :func:`hidden_jumps`.
LEVEL0_CONSTANTS = (_TABLES, _POINTS, _JUMP_SHARE, _ROUND_ULPS, _OUTLIER, _TV_FACTOR)


def segment(a: np.ndarray, b: np.ndarray, d: np.ndarray, c: np.ndarray, F: np.ndarray) -> np.ndarray:
    """(S1, S2, N) of a constant value ``d`` (k, C), relative to f(x), on [a, b]: shape (k, 3, C).

    Closed forms: w d, w (d - c)^2 and int_a^b (d - t F)^2 = w (d - m F)^2 + F^2 w^3 / 12 (m the midpoint).
    """
    out = np.empty((d.shape[0], 3, d.shape[1]))
    w = (b - a)[:, None]
    m = (0.5 * (a + b))[:, None]
    out[:, 0] = w * d
    out[:, 1] = w * (d - c) ** 2
    out[:, 2] = w * (d - m * F) ** 2 + F**2 * w**3 / 12.0
    return out


def nlm_of(T: np.ndarray, c: np.ndarray, scale: np.ndarray):
    """NLM, D, N / D and "undefined" from summed (S1, S2, N) ``T`` (n, 3, C); NaN where D is at rounding level
    (``CONSTANT_ULPS`` eps of the path's own level ``scale``: a constant path)."""
    D = T[:, 1] - (T[:, 0] - c) ** 2
    with np.errstate(over="ignore"):
        undefined = D <= (CONSTANT_ULPS * _EPS * scale) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = T[:, 2] / D
    nlm = 1.0 - ratio
    nlm[undefined] = np.nan
    return nlm, D, np.where(undefined, 0.0, ratio), undefined


def gk_sums(
    Dv: np.ndarray,
    u: np.ndarray,
    wk: np.ndarray,
    wg: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    F: np.ndarray,
):
    """Kronrod and Gauss values of (S1, S2, N) on intervals [a, b]; ``Dv`` (21, I, C) the values minus f(x)."""
    w = (b - a)[:, None]
    K = np.zeros((a.size, 3, Dv.shape[2]))
    G = np.zeros_like(K)
    for j in range(u.size):  # node by node (21), element-wise over the intervals
        t = (a + u[j] * (b - a))[:, None]
        d = Dv[j]
        terms = np.stack([d, (d - c) ** 2, (d - t * F) ** 2], axis=1)
        K += (wk[j] * w)[:, :, None] * terms
        if wg[j]:
            G += (wg[j] * w)[:, :, None] * terms
    return K, G


def quad_state(n, c, scale, qr, qK, qG, qP=None):
    """Quadrature route: per row NLM (Kronrod), error estimate and D (n, C); per sub-interval contribution, and
    the part of it from hidden jumps.

    The estimate is max(|NLM_K - NLM_G|, sum over sub-intervals of |dN_i - NLM' dD_i| / D), the first-order
    effect of each sub-interval's Kronrod-Gauss difference (QUADPACK's local error, carried to the NLM), plus
    the same first-order effect of what a jump between two of its points can do, ``qP`` (I, 3, C) from
    :func:`hidden_jumps`, in absolute values, plus :func:`rounding_error`. A path with a jump inside a
    sub-interval has its Kronrod and Gauss values agree where the jump sits near a sub-interval's centre (both
    rules then split its weight alike); ``qP`` does not depend on that coincidence.
    """
    TK, TG = rowsum(qr, qK, n), rowsum(qr, qG, n)
    vK, DK, ratio, undK = nlm_of(TK, c, scale)
    vG, _, _, undG = nlm_of(TG, c, scale)
    dq = qK - qG
    s1c = (TK[:, 0] - c)[qr]
    rq = ratio[qr]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        contrib = np.abs(dq[:, 2] - rq * (dq[:, 1] - 2.0 * s1c * dq[:, 0])) / DK[qr]
        hidden = (
            np.zeros_like(contrib)
            if qP is None
            else (qP[:, 2] + np.abs(rq) * (qP[:, 1] + 2.0 * np.abs(s1c) * qP[:, 0])) / DK[qr]
        )
    contrib = contrib + hidden
    contrib = np.where(undK[qr], np.where(undG[qr], 0.0, np.inf), contrib)
    contrib[np.isnan(contrib)] = np.inf
    hidden = np.where(undK[qr], 0.0, hidden)
    hidden[np.isnan(hidden)] = np.inf
    e = np.maximum(np.abs(vK - vG), rowsum(qr, contrib, n)) + rounding_error(ratio, TK, c, DK)
    e = np.where(undK & undG, 0.0, e)
    e[np.isnan(e)] = np.inf
    return vK, e, DK, contrib.max(axis=1), hidden.max(axis=1)


def bracket_sums(ba, bb, dL, dR, c, F):
    """(S1, S2, N) of open brackets with their jump at the midpoint m: dL on [a, m], dR on [m, b] (k, 3, C)."""
    hw = (0.5 * (bb - ba))[:, None]
    m = 0.5 * (ba + bb)
    mL, mR = (0.5 * (ba + m))[:, None], (0.5 * (m + bb))[:, None]
    out = np.empty((dL.shape[0], 3, dL.shape[1]))
    out[:, 0] = hw * (dL + dR)
    out[:, 1] = hw * ((dL - c) ** 2 + (dR - c) ** 2)
    out[:, 2] = hw * ((dL - mL * F) ** 2 + (dR - mR * F) ** 2) + F**2 * hw**3 / 6.0
    return out


def bracket_statics(ba, bb, dL, dR):
    """Per bracket quantities that do not change while it stays open: half-width s, midpoint m, the middle
    g = (dL + dR) / 2 of its values and |J| = |dL - dR| (each (k, 1) or (k, C))."""
    s = (0.5 * (bb - ba))[:, None]
    return s, (0.5 * (ba + bb))[:, None], 0.5 * (dL + dR), np.abs(dL - dR)


def jump_state(n, c, F, scale, est, br, ba, bb, dL, dR, dense, shares=True):
    """Jump route: per row NLM, error bound and D (n, C) with every open bracket's jump at its midpoint;
    per bracket its share of the bound (max over outputs), which the rounds spend probes on.

    ``est``: the per-row sums (S1, S2, N) of the settled segments and of the open brackets with their jumps
    at the midpoints (:func:`bracket_sums`); ``br, ba, bb, dL, dR``: the open brackets' rows, ends and values
    (their :func:`bracket_statics` s, m, g, J are derived in the compiled sums);
    ``shares``: False skips the brackets' shares (the final state needs none).

    The truth on an open bracket i (half-width s_i, ends dL_i, dR_i, midpoint m_i) is taken to be one jump
    J_i = dL_i - dR_i at an unknown m_i + x_i, |x_i| <= s_i, plus, on a ``dense`` row, an excursion e_i(t)
    with |e_i| <= H (H: the row's mean |J| over its open brackets) for further jumps the bracket may hide.
    With delta = truth - estimate, r = N / D and S1 of the estimate, exactly::

        N' - r D' = N - r D + int 2 ((1 - r) f - t F + r S1) delta + (1 - r) int delta^2 + r (int delta)^2,
        D' = D + int 2 (f - S1) delta + int delta^2 - (int delta)^2

    (f the estimate). The jump alone gives J_i x_i (2 ((1 - r) g_i + r S1 - m_i F) - F x_i) and
    J_i x_i 2 (g_i - S1) (closed forms, its own delta^2 included). Over |x_i| <= s_i and |e_i| <= H, with the
    values within g_i -+ (|J_i| / 2 + H) on the bracket (the linear factors are largest at the corners):
    E1 = sum_i |J_i| s_i + 2 H s_i bounds |int delta|, and with A_i = |(1 - r) g_i + r S1 - m_i F|,
    G_i = |g_i - S1|, ::

        |N' - r D' - (N - r D)| <= sum_i [|J_i| s_i (2 A_i + |F| s_i)
                                   + 4 H s_i (A_i + |1 - r| (|J_i| / 2 + H) + |F| s_i)
                                   + |1 - r| 2 s_i H (|J_i| + H)] + |r| E1^2 =: A,
        |D' - D| <= sum_i [2 |J_i| s_i G_i + 4 H s_i (G_i + |J_i| / 2 + H) + 2 s_i H (|J_i| + H)] + E1^2 =: E_D,

    so |NLM error| = |N' - r D' - (N - r D)| / D' <= A / (D - E_D) where D > E_D (else infinite); exact (0)
    when no bracket is open. Only A_i and G_i change from round to round; everything else is a per-row sum.
    """
    nlm, D, ratio, und = nlm_of(est, c, scale)
    if not br.size:
        return nlm, np.where(und, 0.0, rounding_error(ratio, est, c, D)), D, np.zeros(0)
    s1 = est[:, 0]
    cnt = np.maximum(np.bincount(br, minlength=n), 1)[:, None]
    sums = _kernel.jump_sums(br, ba, bb, dL, dR, F, ratio, s1, n)  # one pass over the brackets for the ten sums
    sA1, sA2, sG1, sG2, Saj, Sajs, Ss, SsJ, Ss2, SJ = (sums[:, i] for i in range(10))
    H = SJ / cnt * dense[:, None]
    om = np.abs(1.0 - ratio)
    aF = np.abs(F)
    E1 = Saj + 2.0 * H * Ss
    quad = 2.0 * H * (SsJ + H * Ss)
    num = (
        2.0 * sA1
        + aF * Sajs
        + 4.0 * H * (sA2 + om * (0.5 * SsJ + H * Ss) + aF * Ss2)
        + om * quad
        + np.abs(ratio) * E1**2
    )
    ED = 2.0 * sG1 + 4.0 * H * (sG2 + 0.5 * SsJ + H * Ss) + quad + E1**2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bound = np.where(D > ED, num / (D - ED), np.inf)
        bound = np.where(num + ED == 0, 0.0, bound)  # no jump left to place: the closed form is exact
    bound = bound + rounding_error(ratio, est, c, D)
    if not shares:
        return nlm, bound, D, np.zeros(0)
    # a bracket's share: its first-order part of the bound (a probe halves its s), the largest over outputs
    return nlm, bound, D, _kernel.bracket_shares(br, ba, bb, dL, dR, F, ratio, s1, H, bound, D)


def _miss(Vf, target, side, floor):
    """|one-sided prediction - value| less the prediction's rounding (``floor`` times its weights' sum), >= 0."""
    pts, w = side
    pred = np.zeros(Vf.shape[1:])
    for i, wi in zip(pts, w):
        pred += wi * Vf[i]
    return np.maximum(np.abs(pred - Vf[target]) - floor * np.abs(w).sum(), 0.0)


def hidden_jumps(
    Vf: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, F: np.ndarray, level: np.ndarray | None = None
):
    """:func:`hidden_jumps_numpy`, compiled (:func:`fme._nlm.bracket_kernel.hidden_jumps`; 0.4 s per 10^5
    sub-intervals in NumPy, about as long as a small model's predict of their nodes)."""
    Vf = np.asarray(Vf, dtype=float)
    lev = np.zeros(Vf.shape[1:]) if level is None else level
    return _kernel.hidden_jumps(Vf, a, b, c, F, lev, *_TABLES, _POINTS, _JUMP_SHARE, _ROUND_ULPS, _OUTLIER, _TV_FACTOR)


def hidden_jumps_numpy(
    Vf: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, F: np.ndarray, level: np.ndarray | None = None
):
    """What a jump between two of a sub-interval's 23 points can do to its Gauss-Kronrod sums (paper §5.4).

    ``Vf`` (23, I, C): the values minus f(x) at the ends and nodes of the sub-intervals [a, b] (``c``, ``F``
    (I, C) their rows' centre and fME; ``level`` (I, C) the path's level |f(x)| + max |f - f(x)|, for the
    rounding floor). Per gap j and degree, the better of two one-sided polynomials (:data:`_LOW`,
    :data:`_HIGH` points, the nearest on each side) predicts the gap's far end and misses it, less the
    rounding of its points (:data:`_ROUND_ULPS`). A jump J in the gap makes both degrees miss by about J (the
    weights sum to 1; a gap next to it has one clean side); on a smooth path the miss shrinks with the degree.
    So gap j holds a jump when the high degree's miss exceeds :data:`_JUMP_SHARE` of the low degree's (over
    the gap and its neighbours; counted in part between half that share and the share), of size m_j: the
    smaller miss, at most the gap's own difference plus the neighbouring slopes over its width.

    A jump of size J at tau in a gap of width w_j changes an integrand phi(f) by the step H(t - tau) psi(t),
    psi = phi(f + J) - phi(f); the Kronrod rule places that step within w_j / 2 of tau and the Gauss rule
    within w_j (measured on the 22 gaps), so the Kronrod value and the Kronrod - Gauss difference together miss
    it by at most 2 w_j |psi(tau)| + :data:`_TV_FACTOR` (b - a) TV(psi). With |psi| <= m_j (2 |f - f(x) - z| +
    m_j) at the gap's ends (z = c for S2, t F for N; |psi| = m_j for S1) and TV(psi) <= 2 m_j (TV of the values
    (+ |F| (b - a) for N)) this gives per-sub-interval bounds P (I, 3, C) on |dS1|, |dS2|, |dN|, which
    :func:`quad_state` carries to the NLM. A kink (ReLU) counts as a small jump, which bounds what it does too;
    a smooth path that an 8-point polynomial cannot follow at the sub-interval's spacing (exp(-5 (t - 0.4)^2)
    on [0, 1]) may be taken for small jumps, which costs refinement, not validity.
    It is an assumption, not a guarantee, like the jump route's bound: two jumps inside one gap that nearly
    cancel, or a jump far smaller than the low degree's miss on a steep smooth path, go unseen.

    Returns
    -------
    P : ndarray (I, 3, C)
    cut : ndarray (I,)
        The midpoint of the gap with the largest jump (over outputs), NaN where no gap holds one: where to cut
        a sub-interval whose hidden-jump part dominates its error.
    isolated : ndarray (I,) of bool
        That jump's miss is more than :data:`_OUTLIER` times every other gap's (the cut then leaves no jump
        on the far side; otherwise a bisection separates the jumps first).
    """
    Vf = np.asarray(Vf, dtype=float)
    w = b - a
    floor = _ROUND_ULPS * _EPS * np.maximum(np.abs(Vf).max(axis=0), 0.0 if level is None else level)
    low = np.empty((len(_GAPS),) + Vf.shape[1:])
    m = np.empty_like(low)
    for j, (low_l, low_r, high_l, high_r) in enumerate(_GAPS):  # 22 gaps, element-wise over the sub-intervals
        low[j] = np.minimum(_miss(Vf, j + 1, low_l, floor), _miss(Vf, j, low_r, floor))
        m[j] = np.minimum(_miss(Vf, j + 1, high_l, floor), _miss(Vf, j, high_r, floor))
    # the low degree's miss over the gap and its neighbours: on a smooth path the miss changes sign along the
    # gaps and can be near 0 in one of them by chance, not in three; a jump's own gap keeps its J
    near = low.copy()
    near[1:] = np.maximum(near[1:], low[:-1])
    near[:-1] = np.maximum(near[:-1], low[1:])
    # counted in full above _JUMP_SHARE, not below half of it, linearly between: a threshold would make the
    # estimate jump with the last bit of a value (BLAS models give a row a few ulps apart in another batch)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.clip(2.0 * m / (_JUMP_SHARE * near) - 1.0, 0.0, 1.0)
    share[np.isnan(share)] = 0.0
    # the jump's size: both degrees miss a jump by about J, so the smaller of the two; a kink (ReLU) inside
    # the high degree's points but outside the gap is amplified by its weights (up to _MAX_LEBESGUE) and the
    # low degree's miss is then the better guess. And a jump in the gap cannot exceed the gap's own difference
    # beyond what the neighbouring slopes allow.
    d = np.abs(np.diff(Vf, axis=0))  # (22, I, C)
    slope = d / np.diff(_POINTS)[:, None, None]
    beside = np.zeros_like(slope)
    beside[1:] = slope[:-1]
    beside[:-1] = np.maximum(beside[:-1], slope[1:])
    m = share * np.minimum(np.minimum(m, low), d + beside * np.diff(_POINTS)[:, None, None])
    tt = a[None, :] + np.outer(_POINTS, w)  # (23, I)
    tv = d.sum(axis=0)
    # |psi| where the step sits: the larger of the gap's two ends
    zc = np.abs(Vf - c[None])
    zn = np.abs(Vf - tt[:, :, None] * F[None])
    big_c = np.maximum(zc[1:], zc[:-1])
    big_n = np.maximum(zn[1:], zn[:-1])
    wj = (2.0 * np.diff(_POINTS))[:, None, None] * w[None, :, None]
    tvw = _TV_FACTOR * w[:, None]
    P = np.empty((Vf.shape[1], 3, Vf.shape[2]))
    P[:, 0] = (m * wj).sum(axis=0)
    P[:, 1] = (m * (wj * (2.0 * big_c + m) + tvw * 2.0 * tv)).sum(axis=0)
    P[:, 2] = (m * (wj * (2.0 * big_n + m) + tvw * 2.0 * (tv + np.abs(F) * w[:, None]))).sum(axis=0)
    worst = m.max(axis=2)  # (22, I)
    top = np.argmax(worst, axis=0)
    first = np.take_along_axis(worst, top[None], axis=0)[0]
    rest = worst.copy()
    np.put_along_axis(rest, top[None], -np.inf, axis=0)
    isolated = (first > 0) & (first > _OUTLIER * rest.max(axis=0))
    mid = 0.5 * (_POINTS[top] + _POINTS[top + 1])
    return P, np.where(first > 0, a + mid * w, np.nan), isolated


def rounding_error(ratio: np.ndarray, T: np.ndarray, c: np.ndarray, D: np.ndarray) -> np.ndarray:
    """What the floating-point arithmetic of the sums can do to an NLM 1 - N / D from summed (S1, S2, N) ``T``
    (n, 3, C): a few eps of their terms, 32 eps (1 + |r| (S2 + (S1 - c)^2) / D), r = N / D (D = S2 - (S1 - c)^2
    cancels). Without it a straight path, whose quadrature is exact, reports an error below the rounding of
    its own NLM. The rounding of the model's values is the flat-path rule's business (:data:`fme.nlm.FLAT_ULPS`).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = 32.0 * _EPS * (1.0 + np.abs(ratio) * (np.abs(T[:, 1]) + (T[:, 0] - c) ** 2) / D)
    return np.where(np.isfinite(out), out, 0.0)
