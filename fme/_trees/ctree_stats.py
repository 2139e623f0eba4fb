"""Private numerical kernels of :class:`fme.CTree`.

Clean-room implementation written from the project's written specification
(``ctree-spec.md``, sections cited as §n) of the documented behaviour of
R's partykit::ctree / libcoin (Hothorn, Hornik & Zeileis, 2006). No partykit or
libcoin code was consulted.

Everything here works for a single numeric response (Q = 1) with identity
influence function (§1), which is what fMEs need. Per node, the work is a handful
of weighted sums over the node's rows (§13): one pass over the numeric block for
all numeric/ordered covariates at once, a weighted ``bincount`` per factor, and a
``bincount`` + ``cumsum`` scan for the split search.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from ..exceptions import DataError, ParameterError

#: libcoin's zero-variance threshold, an *absolute* one (§3.1, §9.1).
TOL = float(np.sqrt(np.finfo(float).eps))
#: Criteria closer than this to the maximum are tied (§4.2).
TIE_EPS = float(np.sqrt(np.finfo(float).tiny))
EPS = float(np.finfo(float).eps)
#: Largest number of non-empty levels for which partitions are enumerated
#: exhaustively; above it the O(K log K) ordering by level means is used (§5.3).
EXHAUSTIVE_MAX_LEVELS = 16
#: partykit refuses unordered factors with more non-empty levels than this (§5.3).
MAX_FACTOR_LEVELS = 30

NUMERIC, ORDERED, FACTOR = "numeric", "ordered", "factor"


@dataclass
class Covariate:
    """Encoded covariate: kind, levels and the per-row representation."""

    name: str
    kind: str
    levels: list[Any] | None = None
    #: sorted unique non-missing values (numeric) or 1..K (ordered)
    uniq: np.ndarray | None = None
    has_nan: bool = False


def level_codes(values: pd.Series, levels: list[Any]) -> np.ndarray:
    """Position of each value in ``levels``; -1 for missing or unknown values."""
    arr = values.astype(object).to_numpy()
    return pd.Index(levels, dtype=object).get_indexer(arr).astype(np.int64)


def _sorted_levels(values: pd.Series) -> list[Any]:
    uniq = pd.unique(values.dropna())
    try:
        return sorted(uniq)
    except TypeError:  # mixed types: fall back to their text, as R would see them
        return sorted(uniq, key=str)


def encode_fit(X: pd.DataFrame) -> tuple[list[Covariate], np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Encode the covariates of the training data.

    Returns the covariate descriptions, the numeric block ``Z`` (N x p_num, NaN =
    missing; ordered factors as scores 1..K), the rank block (index of each value
    in the column's sorted unique values, -1 = missing; §13) and the factor code
    block (0..K-1, -1 = missing).
    """
    covs: list[Covariate] = []
    num_cols: list[np.ndarray] = []
    rank_cols: list[np.ndarray] = []
    fac_cols: list[np.ndarray] = []
    for name in X.columns:
        s = X[name]
        dt = s.dtype
        if isinstance(dt, pd.CategoricalDtype):
            # R builds the model frame with unused levels dropped (§1); scores of
            # ordered factors are 1..K over the remaining levels.
            present = set(pd.unique(s.dropna()))
            levels = [c for c in dt.categories if c in present]
            codes = level_codes(s, levels)
            if dt.ordered:
                z = np.where(codes >= 0, codes + 1.0, np.nan)
                cov = Covariate(str(name), ORDERED, levels, np.arange(1.0, len(levels) + 1))
                num_cols.append(z)
                rank_cols.append(codes.astype(np.int32))
                cov.has_nan = bool((codes < 0).any())
            else:
                cov = Covariate(str(name), FACTOR, levels)
                fac_cols.append(codes)
                cov.has_nan = bool((codes < 0).any())
        elif pd.api.types.is_bool_dtype(dt) or (
            pd.api.types.is_object_dtype(dt) and pd.api.types.infer_dtype(s, skipna=True) == "boolean"
        ):
            levels = [lv for lv in (False, True) if (s == lv).any()]
            codes = level_codes(s, levels)
            cov = Covariate(str(name), FACTOR, levels, has_nan=bool((codes < 0).any()))
            fac_cols.append(codes)
        elif pd.api.types.is_numeric_dtype(dt):
            z = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            if np.isinf(z).any():
                raise DataError(f"Covariate {name!r} contains infinite values; replace them or use NaN.")
            ok = ~np.isnan(z)
            uniq, inv = np.unique(z[ok], return_inverse=True)
            rk = np.full(len(z), -1, dtype=np.int32)
            rk[ok] = inv
            cov = Covariate(str(name), NUMERIC, None, uniq, has_nan=bool((~ok).any()))
            num_cols.append(z)
            rank_cols.append(rk)
        elif pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt):
            levels = _sorted_levels(s)
            codes = level_codes(s, levels)
            cov = Covariate(str(name), FACTOR, levels, has_nan=bool((codes < 0).any()))
            fac_cols.append(codes)
        else:
            raise DataError(
                f"Covariate {name!r} has unsupported dtype {dt}; use numeric, bool, "
                "string or pandas Categorical columns."
            )
        covs.append(cov)
    n = len(X)
    Z = np.column_stack(num_cols) if num_cols else np.empty((n, 0))
    # ranks and codes are only ever read one column at a time: keep them as 1-D arrays
    R = [np.ascontiguousarray(r, dtype=np.int32) for r in rank_cols]
    F = [np.ascontiguousarray(f, dtype=np.int64) for f in fac_cols]
    return covs, np.ascontiguousarray(Z), R, F


def encode_column(cov: Covariate, s: pd.Series) -> np.ndarray:
    """Encode a prediction-time column with the training levels.

    Numeric: float values (NaN missing). Ordered: scores 1..K (NaN missing or
    unseen level). Factor: codes 0..K-1 with -1 for missing or unseen levels, which
    are then routed like missing values (§6.3).
    """
    if cov.kind == NUMERIC:
        if (
            isinstance(s.dtype, pd.CategoricalDtype)
            or not (pd.api.types.is_numeric_dtype(s.dtype) or s.isna().all())
            or pd.api.types.is_bool_dtype(s.dtype)
        ):
            raise DataError(f"Column {cov.name!r} was numeric at fit time but is {s.dtype} now.")
        return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    codes = level_codes(s, cov.levels)
    if cov.kind == ORDERED:
        return np.where(codes >= 0, codes + 1.0, np.nan)
    return codes


def as_float(values: Any, name: str, what: str) -> np.ndarray:
    """``values`` as a 1-D float array; text, complex or other non-numbers raise DataError naming ``name``."""
    arr = values.to_numpy(dtype=object) if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values)
    if (
        np.iscomplexobj(arr)
        or arr.dtype.kind in "bUS"
        or (
            arr.dtype == object and not all(isinstance(v, numbers.Real) or v is None or v is pd.NA for v in arr.ravel())
        )
    ):
        arr = None
    else:
        try:
            if arr.dtype == object:
                arr = np.where(pd.isna(arr), np.nan, arr)
            arr = np.asarray(arr, dtype=float).ravel()
        except (TypeError, ValueError):
            arr = None
    if arr is None or (arr.ndim != 1):
        raise DataError(
            f"{name} must be {what}: real numbers, one per row of X; got "
            f"{np.asarray(values).dtype} values such as {list(np.ravel(np.asarray(values, dtype=object))[:3])}."
        )
    return arr


def response(y: Any) -> np.ndarray:
    """The response as floats: (n,), or (n, Q) for a response of several columns (e.g. several effects' fMEs,
    the multivariate response of §1); a single column is the numeric response."""
    arr = y.to_numpy(dtype=object) if isinstance(y, pd.DataFrame) else y
    shape = np.shape(arr)
    what = "the numeric response (e.g. the fMEs)"
    if len(shape) == 2 and shape[1] > 1:
        arr = np.asarray(arr, dtype=object)
        return np.column_stack([as_float(arr[:, q], "y", what) for q in range(shape[1])])
    return as_float(arr, "y", what)


# ----------------------------------------------------------------------------
# p-values (§3.2)
# ----------------------------------------------------------------------------


def chi2_log1mp(c: np.ndarray, df: np.ndarray) -> np.ndarray:
    """log(1 - p) = log P(chi2_df <= c), accurate in both tails.

    When p is tiny the CDF rounds to 1; log1p(-sf) keeps p's digits, which the
    Šidák adjustment and the tie rule (§4) rely on.
    """
    c = np.asarray(c, float)
    df = np.asarray(df, float)
    # scipy.special directly: scipy.stats' argument checking dominated the per-node cost
    sf = special.chdtrc(df, c)
    with np.errstate(divide="ignore"):
        lo = np.log(special.chdtr(df, c))
    return np.where(sf < 0.5, np.log1p(-sf), lo)


def norm_max_log1mp(c: float, corr: np.ndarray | None, rng: np.random.Generator | None) -> float:
    """log(1 - p) of a maximum-type statistic (§3.2).

    PQ = 1 is exact. For PQ > 1 the probability P(max |Z_k| <= c) is computed by
    scipy's randomised quasi-Monte Carlo integration (like mvtnorm's Genz-Bretz in
    partykit); the result is random within about 1e-3 absolute unless ``rng`` is seeded.
    """
    if corr is None or corr.shape[0] == 1:
        return float(np.log1p(-2.0 * stats.norm.sf(c)))
    k = corr.shape[0]
    mvn = stats.multivariate_normal(mean=np.zeros(k), cov=corr, allow_singular=True)
    prob = mvn.cdf(np.full(k, c), lower_limit=np.full(k, -c), rng=rng)
    prob = float(np.clip(prob, 0.0, 1.0))
    with np.errstate(divide="ignore"):
        return float(np.log(prob))


# ----------------------------------------------------------------------------
# Variable-selection tests in a node (§2, §3)
# ----------------------------------------------------------------------------


def numeric_tests(Zt: np.ndarray, yt: np.ndarray, wt: np.ndarray, nan_cols: np.ndarray, maximum: bool) -> np.ndarray:
    """Statistics of all numeric/ordered columns of a node at once.

    Returns an array (p_num,) of c (NaN = not tested, §3.4). For Q = 1 the
    quadratic form reduces to (T - mu)^2 / Sigma with centred sums, which is the
    closed form (W - 1) r^2 of §3.3; maximum is its square root.
    """
    p = Zt.shape[1]
    out = np.full(p, np.nan)
    if p == 0:
        return out
    clean = np.flatnonzero(~nan_cols)
    groups: list[tuple[np.ndarray, np.ndarray | None]] = []
    if clean.size:
        groups.append((clean, None))
    for j in np.flatnonzero(nan_cols):
        ok = ~np.isnan(Zt[:, j])
        groups.append((np.array([j]), ok))
    for cols, ok in groups:
        if ok is None:
            Z, y, w = (Zt if cols.size == p else Zt[:, cols]), yt, wt
        else:
            Z, y, w = Zt[ok][:, cols], yt[ok], wt[ok]
        if y.size == 0:
            continue
        W = w.sum()
        if W <= 1.0:  # moments stay zero: the variance check discards the test (§2)
            continue
        ybar = (w @ y) / W
        yc = y - ybar
        wyc = w * yc
        vh = (wyc @ yc) / W
        zbar = (w @ Z) / W
        Zc = Z - zbar
        d = wyc @ Zc
        szz = w @ (Zc * Zc)
        sig = vh * W * szz / (W - 1.0)
        good = sig >= TOL
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(good, d * d / np.where(good, sig, 1.0), np.nan)
        if maximum:
            c = np.sqrt(c)
        out[cols] = c
    return out


def factor_test(
    codes: np.ndarray, K: int, yt: np.ndarray, wt: np.ndarray, maximum: bool
) -> tuple[float, int, np.ndarray | None]:
    """Test of an unordered factor (g = level indicators, P = K; §3.3).

    Returns (c, df, corr): df is the numerical rank of Sigma (MP inverse with the
    relative eigenvalue threshold of §3.1); corr is the correlation matrix used by
    maximum-type p-values. c is NaN when the test is discarded (§3.4).
    """
    ok = codes >= 0
    if not ok.all():
        codes, yt, wt = codes[ok], yt[ok], wt[ok]
    if codes.size == 0:
        return np.nan, 0, None
    W = wt.sum()
    if W <= 1.0:
        return np.nan, 0, None
    ybar = (wt @ yt) / W
    yc = yt - ybar
    vh = ((wt * yc) @ yc) / W
    nk = np.bincount(codes, weights=wt, minlength=K)
    d = np.bincount(codes, weights=wt * yc, minlength=K)
    diag = vh * (W * nk - nk * nk) / (W - 1.0)
    if not (diag >= TOL).any():
        return np.nan, 0, None
    if maximum:
        good = diag > TOL
        c = float(np.max(np.abs(d[good]) / np.sqrt(diag[good])))
        sig = vh / (W - 1.0) * (W * np.diag(nk) - np.outer(nk, nk))
        sg = sig[np.ix_(good, good)]
        sd = np.sqrt(np.diag(sg))
        return c, int(good.sum()), sg / np.outer(sd, sd)
    sig = vh / (W - 1.0) * (W * np.diag(nk) - np.outer(nk, nk))
    lam, vec = np.linalg.eigh(sig)
    keep = lam >= lam.max() * TOL
    proj = vec[:, keep].T @ d
    c = float(np.sum(proj * proj / lam[keep]))
    return c, int(keep.sum()), None


# ----------------------------------------------------------------------------
# Split search (§5)
# ----------------------------------------------------------------------------


def _level_sums(keys: np.ndarray, w: np.ndarray, wyc: np.ndarray, size: int):
    """Weighted per-level sums; compressed to the node's levels when that is cheaper."""
    if keys.size < size:  # sparse in the global value range: sort-based grouping is cheaper
        uq, inv = np.unique(keys, return_inverse=True)
        return uq, np.bincount(inv, weights=w), np.bincount(inv, weights=wyc), np.bincount(inv)
    nk = np.bincount(keys, weights=w, minlength=size)
    cnt = np.bincount(keys, minlength=size)
    present = np.flatnonzero(cnt)
    sk = np.bincount(keys, weights=wyc, minlength=size)
    return present, nk[present], sk[present], cnt[present]


def _centre(y: np.ndarray, w: np.ndarray):
    W = w.sum()
    ybar = (w @ y) / W
    yc = y - ybar
    vh = ((w * yc) @ yc) / W
    return W, w * yc, vh


def _split_rows(keys: np.ndarray, yt: np.ndarray, wt: np.ndarray):
    """The node's rows with the split variable present (keys >= 0), centred.

    Returns (keys, w, W, w * (y - ybar), V_h), or None when fewer than a unit of
    weight remains (no split possible, §5.4).
    """
    ok = keys >= 0
    if not ok.all():
        keys, yt, wt = keys[ok], yt[ok], wt[ok]
    if keys.size == 0:
        return None
    W, wyc, vh = _centre(yt, wt)
    if W <= 1.0:
        return None
    return keys, wt, W, wyc, vh


def _best_cut(nl: np.ndarray, dl: np.ndarray, W: float, vh: float, mb: float, maximum: bool) -> int | None:
    """Index of the candidate split with the largest standardised statistic, or None.

    ``nl``/``dl``: weight and centred response sum of the left child for every
    candidate. Candidates with a zero variance or a child lighter than
    ``minbucket`` score 0; the first maximum wins, so ties go to the earliest
    candidate (§5.2, §5.3).
    """
    sig = vh * nl * (W - nl) / (W - 1.0)
    good = (sig > TOL) & (nl >= mb) & (W - nl >= mb)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(good, dl * dl / np.where(good, sig, 1.0), 0.0)
    if maximum:
        c = np.sqrt(c)
    best = int(np.argmax(c))
    return best if c[best] > 0.0 else None


def split_ordered(ranks: np.ndarray, n_uniq: int, yt: np.ndarray, wt: np.ndarray, mb: int, maximum: bool) -> int | None:
    """Best cut of a numeric or ordered covariate (§5.2).

    ``ranks`` index the column's global sorted unique values (-1 = missing).
    Returns the global index u* of the best cut (left = values <= uniq[u*]) or
    None when no admissible cut exists.
    """
    prep = _split_rows(ranks, yt, wt)
    if prep is None:
        return None
    ranks, wt, W, wyc, vh = prep
    lv, nk, sk, cnt = _level_sums(ranks, wt, wyc, n_uniq)
    # A level counts as present in the node only if it carries weight (§5.2).
    pos = nk > 0
    lv, nk, sk = lv[pos], nk[pos], sk[pos]
    if lv.size < 2:
        return None
    if not (vh * nk * (W - nk) / (W - 1.0) >= TOL).any():  # §5.4
        return None
    best = _best_cut(np.cumsum(nk), np.cumsum(sk), W, vh, mb, maximum)
    return None if best is None else int(lv[best])


def split_factor(
    codes: np.ndarray, K: int, yt: np.ndarray, wt: np.ndarray, mb: int, maximum: bool, name: str
) -> np.ndarray | None:
    """Best binary partition of an unordered factor (§5.3).

    Returns an int array over all K levels: 1 or 2 = child, 0 = level empty in
    the node (routed like a missing value), or None when there is no admissible
    split. Partitions are enumerated in partykit's order (first level always in
    child 1, bit l-1 of j puts level l in child 2) so exact ties resolve the same way.
    """
    prep = _split_rows(codes, yt, wt)
    if prep is None:
        return None
    codes, wt, W, wyc, vh = prep
    nk_all = np.bincount(codes, weights=wt, minlength=K)
    sk_all = np.bincount(codes, weights=wyc, minlength=K)
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
    if not (vh * nk * (W - nk) / (W - 1.0) >= TOL).any():
        return None
    if kp <= EXHAUSTIVE_MAX_LEVELS:
        j = np.arange(1, 2 ** (kp - 1), dtype=np.int64)
        bits = ((j[:, None] >> np.arange(kp - 1)) & 1).astype(float)
        nl = bits @ nk[1:]
        dl = bits @ sk[1:]
    else:
        # Documented deviation: Fisher's ordering by level mean finds the same
        # maximal statistic for Q = 1 but may report another partition on exact ties.
        order = np.argsort(sk / nk, kind="stable")
        nl = np.cumsum(nk[order])[:-1]
        dl = np.cumsum(sk[order])[:-1]
    best = _best_cut(nl, dl, W, vh, mb, maximum)
    if best is None:
        return None
    out = np.zeros(K, dtype=np.int64)
    if kp <= EXHAUSTIVE_MAX_LEVELS:
        in_left = np.concatenate([[False], bits[best].astype(bool)])
    else:
        in_left = np.zeros(kp, dtype=bool)
        in_left[order[: best + 1]] = True
        if in_left[0]:  # keep the first non-empty level in child 1, as partykit does
            in_left = ~in_left
    out[lv] = np.where(in_left, 2, 1)
    return out
