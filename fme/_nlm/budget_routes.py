"""The two routes of the error-controlled NLM: their sums, error estimates and bounds (paper §5.4; issue 26).

Helpers of :mod:`fme._nlm.budget`, which describes the routes and drives the rounds; :func:`jump_state`
derives the jump route's bound.
Everything here is element-wise over rows, sub-intervals or brackets plus per-row sums, which run compiled
(:mod:`fme._nlm.bracket_kernel`): no per-row Python loop. The three integrals of the NLM along a path, relative to f(x) and with the
fixed centre ``c`` (the level-0 Kronrod mean), are

    S1 = int (f - f(x)),   S2 = int (f - f(x) - c)^2,   N = int (f - f(x) - t F)^2,

with ``F`` = f(x + h) - f(x); D = S2 - (S1 - c)^2 is the variance along the path and NLM = 1 - N / D.
Arrays of sums have shape (k, 3, C): k rows / intervals / brackets, the three integrals, C outputs.
"""

from __future__ import annotations

import numpy as np

from ..nlm import CONSTANT_ULPS
from . import bracket_kernel as _kernel
from .bracket_kernel import rowsum

__all__ = ["segment", "nlm_of", "gk_sums", "quad_state", "bracket_sums", "bracket_statics", "jump_state"]

_EPS = np.finfo(float).eps


def segment(a: np.ndarray, b: np.ndarray, d: np.ndarray, c: np.ndarray, F: np.ndarray) -> np.ndarray:
    """(S1, S2, N) of a constant value ``d`` (k, C), relative to f(x), on [a, b]: shape (k, 3, C).

    Closed forms: w d, w (d - c)^2 and int_a^b (d - t F)^2 = w (d - m F)^2 + F^2 w^3 / 12 (m the midpoint).
    """
    out = np.empty((d.shape[0], 3, d.shape[1]))
    w = (b - a)[:, None]
    m = (0.5 * (a + b))[:, None]
    out[:, 0] = w * d
    out[:, 1] = w * (d - c) ** 2
    out[:, 2] = w * (d - m * F) ** 2 + F ** 2 * w ** 3 / 12.0
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


def gk_sums(Dv: np.ndarray, u: np.ndarray, wk: np.ndarray, wg: np.ndarray, a: np.ndarray, b: np.ndarray,
            c: np.ndarray, F: np.ndarray):
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


def quad_state(n, c, scale, qr, qK, qG):
    """Quadrature route: per row NLM (Kronrod), error estimate and D (n, C); per sub-interval contribution.

    The estimate is max(|NLM_K - NLM_G|, sum over sub-intervals of |dN_i - NLM' dD_i| / D), the first-order
    effect of each sub-interval's Kronrod-Gauss difference (QUADPACK's local error, carried to the NLM).
    """
    TK, TG = rowsum(qr, qK, n), rowsum(qr, qG, n)
    vK, DK, ratio, undK = nlm_of(TK, c, scale)
    vG, _, _, undG = nlm_of(TG, c, scale)
    dq = qK - qG
    s1c = (TK[:, 0] - c)[qr]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        contrib = np.abs(dq[:, 2] - ratio[qr] * (dq[:, 1] - 2.0 * s1c * dq[:, 0])) / DK[qr]
    contrib = np.where(undK[qr], np.where(undG[qr], 0.0, np.inf), contrib)
    contrib[np.isnan(contrib)] = np.inf
    e = np.maximum(np.abs(vK - vG), rowsum(qr, contrib, n))
    e = np.where(undK & undG, 0.0, e)
    e[np.isnan(e)] = np.inf
    return vK, e, DK, contrib.max(axis=1)


def bracket_sums(ba, bb, dL, dR, c, F):
    """(S1, S2, N) of open brackets with their jump at the midpoint m: dL on [a, m], dR on [m, b] (k, 3, C)."""
    hw = (0.5 * (bb - ba))[:, None]
    m = 0.5 * (ba + bb)
    mL, mR = (0.5 * (ba + m))[:, None], (0.5 * (m + bb))[:, None]
    out = np.empty((dL.shape[0], 3, dL.shape[1]))
    out[:, 0] = hw * (dL + dR)
    out[:, 1] = hw * ((dL - c) ** 2 + (dR - c) ** 2)
    out[:, 2] = hw * ((dL - mL * F) ** 2 + (dR - mR * F) ** 2) + F ** 2 * hw ** 3 / 6.0
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
    With delta = truth - estimate, r = N / D and S1 of the estimate, exactly

        N' - r D' = N - r D + int 2 ((1 - r) f - t F + r S1) delta + (1 - r) int delta^2 + r (int delta)^2,
        D' = D + int 2 (f - S1) delta + int delta^2 - (int delta)^2

    (f the estimate). The jump alone gives J_i x_i (2 ((1 - r) g_i + r S1 - m_i F) - F x_i) and
    J_i x_i 2 (g_i - S1) (closed forms, its own delta^2 included). Over |x_i| <= s_i and |e_i| <= H, with the
    values within g_i -+ (|J_i| / 2 + H) on the bracket (the linear factors are largest at the corners):
    E1 = sum_i |J_i| s_i + 2 H s_i bounds |int delta|, and with A_i = |(1 - r) g_i + r S1 - m_i F|,
    G_i = |g_i - S1|,

        |N' - r D' - (N - r D)| <= sum_i [|J_i| s_i (2 A_i + |F| s_i)
                                   + 4 H s_i (A_i + |1 - r| (|J_i| / 2 + H) + |F| s_i)
                                   + |1 - r| 2 s_i H (|J_i| + H)] + |r| E1^2 =: A,
        |D' - D| <= sum_i [2 |J_i| s_i G_i + 4 H s_i (G_i + |J_i| / 2 + H) + 2 s_i H (|J_i| + H)] + E1^2 =: E_D,

    so |NLM error| = |N' - r D' - (N - r D)| / D' <= A / (D - E_D) where D > E_D (else infinite); exact (0)
    when no bracket is open. Only A_i and G_i change from round to round; everything else is a per-row sum.
    """
    nlm, D, ratio, und = nlm_of(est, c, scale)
    if not br.size:
        return nlm, np.zeros_like(nlm), D, np.zeros(0)
    s1 = est[:, 0]
    cnt = np.maximum(np.bincount(br, minlength=n), 1)[:, None]
    sums = _kernel.jump_sums(br, ba, bb, dL, dR, F, ratio, s1, n)  # one pass over the brackets for the ten sums
    sA1, sA2, sG1, sG2, Saj, Sajs, Ss, SsJ, Ss2, SJ = (sums[:, i] for i in range(10))
    H = SJ / cnt * dense[:, None]
    om = np.abs(1.0 - ratio)
    aF = np.abs(F)
    E1 = Saj + 2.0 * H * Ss
    quad = 2.0 * H * (SsJ + H * Ss)
    num = (2.0 * sA1 + aF * Sajs + 4.0 * H * (sA2 + om * (0.5 * SsJ + H * Ss) + aF * Ss2) + om * quad
           + np.abs(ratio) * E1 ** 2)
    ED = 2.0 * sG1 + 4.0 * H * (sG2 + 0.5 * SsJ + H * Ss) + quad + E1 ** 2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bound = np.where(D > ED, num / (D - ED), np.inf)
        bound = np.where(num + ED == 0, 0.0, bound)  # no jump left to place: the closed form is exact
    if not shares:
        return nlm, bound, D, np.zeros(0)
    # a bracket's share: its first-order part of the bound (a probe halves its s), the largest over outputs
    return nlm, bound, D, _kernel.bracket_shares(br, ba, bb, dL, dR, F, ratio, s1, H, bound, D)
