"""Kernels of :class:`fme.CTree` for a multivariate response (Q > 1 columns, e.g. several effects' fMEs).

Written from the project's CTREE specification (``ctree-spec.md``, sections cited as §n), no partykit or libcoin
code consulted. The influence function is the identity per column, column-bound (§1): h_i in R^Q. For a
covariate with regression function g (P columns), the linear statistic T = vec(sum_i w_i g_i h_i^T) stacks the
P x Q matrix column by column (element (p, q) at q * P + p), its permutation mean is vec(s_g e_h^T) and its
covariance the Kronecker product

    Sigma = V_h (x) [ W / (W - 1) C_g - 1 / (W - 1) s_g s_g^T ]          (§2)

with V_h the response covariance (divisor W). The quadratic statistic uses the Moore-Penrose inverse with the
relative eigenvalue threshold of §3.1 (PQ > 1 here), the maximum statistic the standardised components whose
variance exceeds the absolute tolerance. The functions mirror :mod:`fme._trees.ctree_stats` (same names and
arguments, ``yt`` an (n, Q) array) so that :class:`fme.CTree` picks one module or the other; the univariate
kernels are untouched, so every one-response tree is the same as before.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError
from .ctree_stats import EXHAUSTIVE_MAX_LEVELS, MAX_FACTOR_LEVELS, TOL

__all__ = ["factor_test", "numeric_tests", "quadratic", "split_factor", "split_ordered"]


def _centre(y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(W, w_i (h_i - e_h) as an (n, Q) array, V_h with divisor W) of the rows (§2)."""
    W = float(w.sum())
    yc = y - (w @ y) / W
    wyc = yc * w[:, None]
    return W, wyc, (wyc.T @ yc) / W


def quadratic(d: np.ndarray, sigma: np.ndarray) -> tuple[float, int]:
    """(T - mu)^T Sigma^+ (T - mu) and the rank of Sigma (§3.1): eigenvalues below the largest times the
    tolerance count as zero (the relative rule of PQ > 1)."""
    lam, vec = np.linalg.eigh(sigma)
    top = lam.max()
    if top <= 0.0:
        return 0.0, 0
    keep = lam >= top * TOL
    proj = vec[:, keep].T @ d
    return float(np.sum(proj * proj / lam[keep])), int(keep.sum())


def _maximum(d: np.ndarray, sigma: np.ndarray) -> tuple[float, int, np.ndarray]:
    """max_k |T_k - mu_k| / sqrt(Sigma_kk) over the components of variance above the tolerance, their number and
    their correlation matrix (for the p-value, §3.2)."""
    diag = np.diag(sigma)
    good = diag > TOL
    c = float(np.max(np.abs(d[good]) / np.sqrt(diag[good])))
    sg = sigma[np.ix_(good, good)]
    sd = np.sqrt(np.diag(sg))
    return c, int(good.sum()), sg / np.outer(sd, sd)


def numeric_tests(
    Zt: np.ndarray, yt: np.ndarray, wt: np.ndarray, nan_cols: np.ndarray, maximum: bool
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray | None]]:
    """Statistics of the node's numeric and ordered columns (g(z) = z, P = 1, so Sigma = V_h * s_z).

    Returns (c, df, corr): c per column (NaN = not tested, §3.4), df the rank of Sigma (quadratic) or the number
    of components (maximum), corr the components' correlation matrix for maximum-type p-values (else None).
    """
    p = Zt.shape[1]
    out, df = np.full(p, np.nan), np.zeros(p)
    corrs: list[np.ndarray | None] = [None] * p
    for j in range(p):
        ok = ~np.isnan(Zt[:, j]) if nan_cols[j] else slice(None)
        z, y, w = Zt[ok, j], yt[ok], wt[ok]
        if z.size == 0 or w.sum() <= 1.0:  # moments stay zero: the variance check discards the test (§2)
            continue
        W, wyc, vh = _centre(y, w)
        zc = z - (w @ z) / W
        d = zc @ wyc  # T - mu = sum_i w_i (z_i - zbar)(h_i - e_h), in R^Q
        sigma = vh * (W * float(w @ (zc * zc)) / (W - 1.0))
        if not (np.diag(sigma) >= TOL).any():
            continue
        if maximum:
            out[j], k, corrs[j] = _maximum(d, sigma)
        else:
            out[j], k = quadratic(d, sigma)
        df[j] = k
    return out, df, corrs


def factor_test(
    codes: np.ndarray, K: int, yt: np.ndarray, wt: np.ndarray, maximum: bool
) -> tuple[float, int, np.ndarray | None]:
    """Test of an unordered factor (g = level indicators, P = K): (c, df, corr) as
    :func:`fme._trees.ctree_stats.factor_test`, with the (K Q)-dimensional Kronecker covariance."""
    ok = codes >= 0
    codes, yt, wt = codes[ok], yt[ok], wt[ok]
    if codes.size == 0 or wt.sum() <= 1.0:
        return np.nan, 0, None
    W, wyc, vh = _centre(yt, wt)
    nk = np.bincount(codes, weights=wt, minlength=K)
    d = np.column_stack([np.bincount(codes, weights=wyc[:, q], minlength=K) for q in range(yt.shape[1])])
    sg = (W * np.diag(nk) - np.outer(nk, nk)) / (W - 1.0)
    sigma = np.kron(vh, sg)
    dvec = d.ravel(order="F")  # vec of the K x Q matrix: element (k, q) at q * K + k
    if not (np.diag(sigma) >= TOL).any():
        return np.nan, 0, None
    if maximum:
        return _maximum(dvec, sigma)
    c, rank = quadratic(dvec, sigma)
    return c, rank, None


# ----------------------------------------------------------------------------
# Split search (§5.1): Sigma_L = V_h n_L (W - n_L) / (W - 1)
# ----------------------------------------------------------------------------


def _best_cut(nl: np.ndarray, dl: np.ndarray, W: float, vh: np.ndarray, mb: float, maximum: bool) -> int | None:
    """Index of the first candidate with the largest two-sample statistic, or None (§5.1-§5.3).

    ``nl``: the left child's weight per candidate; ``dl``: its centred response sums (candidates x Q). The MP
    inverse of V_h f (f > 0) keeps the same eigenvalues, relative to the largest, as V_h's, so
    c_L = dl^T V_h^+ dl / f.
    """
    f = nl * (W - nl) / (W - 1.0)
    good = (f > 0.0) & (nl >= mb) & (W - nl >= mb)
    if maximum:
        var = np.outer(f, np.diag(vh))
        ok = var > TOL
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(ok, np.abs(dl) / np.sqrt(np.where(ok, var, 1.0)), 0.0).max(axis=1)
    else:
        lam, vec = np.linalg.eigh(vh)
        if lam.max() <= 0.0:
            return None
        keep = lam >= lam.max() * TOL
        proj = dl @ vec[:, keep]
        with np.errstate(divide="ignore", invalid="ignore"):
            c = (proj * proj / lam[keep]).sum(axis=1) / np.where(good, f, 1.0)
    c = np.where(good, c, 0.0)
    best = int(np.argmax(c))
    return best if c[best] > 0.0 else None


def _level_rows(keys: np.ndarray, yt: np.ndarray, wt: np.ndarray, size: int):
    """Per-level weights and centred response sums of the rows with the split variable present, or None when
    less than a unit of weight remains (§5.4)."""
    ok = keys >= 0
    keys, yt, wt = keys[ok], yt[ok], wt[ok]
    if keys.size == 0 or wt.sum() <= 1.0:
        return None
    W, wyc, vh = _centre(yt, wt)
    nk = np.bincount(keys, weights=wt, minlength=size)
    sk = np.column_stack([np.bincount(keys, weights=wyc[:, q], minlength=size) for q in range(yt.shape[1])])
    return W, vh, nk, sk


def _all_small(vh: np.ndarray, nk: np.ndarray, W: float) -> bool:
    """§5.4: every per-level variance V_h,qq n_k (W - n_k) / (W - 1) below the tolerance."""
    return not (np.outer(nk * (W - nk) / (W - 1.0), np.diag(vh)) >= TOL).any()


def split_ordered(ranks: np.ndarray, n_uniq: int, yt: np.ndarray, wt: np.ndarray, mb: int, maximum: bool) -> int | None:
    """Best cut of a numeric or ordered covariate (§5.2): the global index u* of the cut (left = values <=
    uniq[u*]), or None."""
    prep = _level_rows(ranks, yt, wt, n_uniq)
    if prep is None:
        return None
    W, vh, nk, sk = prep
    lv = np.flatnonzero(nk > 0)  # a level is present in the node only if it carries weight
    if lv.size < 2 or _all_small(vh, nk[lv], W):
        return None
    best = _best_cut(np.cumsum(nk[lv]), np.cumsum(sk[lv], axis=0), W, vh, mb, maximum)
    return None if best is None else int(lv[best])


def split_factor(
    codes: np.ndarray, K: int, yt: np.ndarray, wt: np.ndarray, mb: int, maximum: bool, name: str
) -> np.ndarray | None:
    """Best binary partition of an unordered factor (§5.3): an int array over the K levels (1 or 2 = child, 0 =
    level empty in the node), or None. Up to :data:`EXHAUSTIVE_MAX_LEVELS` non-empty levels every partition is
    scored in partykit's order; above, the levels are ordered by their mean response projected on the leading
    eigenvector of V_h^+ weighted between-level covariance (a heuristic: Fisher's ordering is exact for Q = 1
    only) and the ordered cuts are scored."""
    prep = _level_rows(codes, yt, wt, K)
    if prep is None:
        return None
    W, vh, nk_all, sk_all = prep
    lv = np.flatnonzero(nk_all > 0)
    kp = lv.size
    if kp < 2:
        return None
    if kp > MAX_FACTOR_LEVELS:
        raise ParameterError(
            f"Factor {name!r} has {kp} non-empty levels in a node; partykit's ctree refuses "
            f"more than {MAX_FACTOR_LEVELS}. Merge rare levels (or convert the column) before fitting."
        )
    nk, sk = nk_all[lv], sk_all[lv]
    if _all_small(vh, nk, W):
        return None
    if kp <= EXHAUSTIVE_MAX_LEVELS:
        j = np.arange(1, 2 ** (kp - 1), dtype=np.int64)
        bits = ((j[:, None] >> np.arange(kp - 1)) & 1).astype(float)
        nl, dl = bits @ nk[1:], bits @ sk[1:]
    else:
        means = sk / nk[:, None]
        between = (means * nk[:, None]).T @ means
        lam, vec = np.linalg.eig(np.linalg.pinv(vh) @ between)
        order = np.argsort(means @ vec[:, np.argmax(lam.real)].real, kind="stable")
        nl, dl = np.cumsum(nk[order])[:-1], np.cumsum(sk[order], axis=0)[:-1]
    best = _best_cut(nl, dl, W, vh, mb, maximum)
    if best is None:
        return None
    if kp <= EXHAUSTIVE_MAX_LEVELS:
        in_left = np.concatenate([[False], bits[best].astype(bool)])
    else:
        in_left = np.zeros(kp, dtype=bool)
        in_left[order[: best + 1]] = True
        if in_left[0]:  # the first non-empty level stays in child 1, as partykit does
            in_left = ~in_left
    out = np.zeros(K, dtype=np.int64)
    out[lv] = np.where(in_left, 2, 1)
    return out
