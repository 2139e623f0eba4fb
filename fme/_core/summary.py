"""Mergeable summaries of evaluated batches: what the engines add up instead of keeping rows.

:func:`summarise` turns one :class:`~fme._core.kernel.Batch` into a :class:`Summary` (counts, Chan's
pairwise mean and sum of squares in :class:`Moments`, NLM status counts, the delta method's Jacobian
sums); two summaries merge exactly (:meth:`Summary.merge`), so the Dask engine tree-reduces the
summaries of its chunks and gets the figures of the pandas path to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from .exclusions import N_CODES
from .kernel import Batch
from .plan import Plan

__all__ = ["Moments", "WMoments", "RowSums", "Summary", "summarise"]


#: Values of ``nlm_status`` counted in a :class:`Summary`, in order.
_STATUS = ("ok", "constant", "flat", "inaccurate")


# ----------------------------------------------------------------- mergeable summaries
@dataclass(frozen=True)
class Moments:
    """Count, mean and sum of squared deviations of columns of values (NaN ignored).

    Two sets merge exactly in the sense of Chan, Golub & LeVeque (1979): the
    merged mean and M2 equal those of the pooled values up to rounding, so an
    AME and SD from partitions agree with the in-memory ones to ~1e-15
    relative (unless the mean is nearly cancelled).
    """

    n: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> Moments:
        v = np.asarray(values, dtype=float)
        v = v[:, None] if v.ndim == 1 else v
        ok = ~np.isnan(v)
        n = ok.sum(axis=0).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, np.where(ok, v, 0.0).sum(axis=0) / np.maximum(n, 1), 0.0)
            # two-pass within a batch: the deviations from the batch's own mean
            m2 = np.where(ok, (v - mean) ** 2, 0.0).sum(axis=0)
        return cls(n, mean, m2)

    def merge(self, other: Moments) -> Moments:
        n = self.n + other.n
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = other.mean - self.mean
            w = np.where(n > 0, other.n / np.maximum(n, 1), 0.0)
            mean = self.mean + delta * w
            m2 = self.m2 + other.m2 + delta**2 * self.n * w
        return Moments(n, mean, m2)

    def sd(self, ddof: int = 1) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > ddof, np.sqrt(self.m2 / (self.n - ddof)), np.nan)


@dataclass(frozen=True, eq=False)
class WMoments:
    """Mergeable weighted moments per group of columns of values (weights w, 1 for unweighted means).

    ``n`` rows and ``w`` = sum w per group (G,); ``mean`` = sum w v / sum w, ``q`` = sum w^2 (v - mean)^2 and
    ``s1`` = sum w^2 (v - mean) per group and column (G, c); ``s2`` = sum w^2 (G,). Two sets merge exactly (the
    sums about the merged mean follow from those about each set's own mean), so the weighted mean and its
    fixed-weights standard error, sqrt(n/(n-1) sum w^2 (v - m)^2) / sum w (:meth:`RowInference.average`),
    equal the in-memory ones up to rounding.
    """

    n: np.ndarray
    w: np.ndarray
    mean: np.ndarray
    q: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    @classmethod
    def of(
        cls, values: np.ndarray, codes: np.ndarray, weights: np.ndarray | None, n_groups: int, spread: bool = True
    ) -> WMoments:
        """Of the rows with ``codes >= 0`` (values (n,) or (n, c); NaN values are kept: they make the mean NaN,
        as the in-memory averaging matrix does). ``spread=False``: the means only (``q``, ``s1`` NaN, so a
        standard error asked of them is NaN), for the delta method and the bootstrap, which do not use it."""
        v = np.asarray(values, dtype=float)
        v = v[:, None] if v.ndim == 1 else v
        ok = codes >= 0
        if not ok.all():
            codes, v = codes[ok], v[ok]
            weights = None if weights is None else np.asarray(weights, dtype=float)[ok]
        c = codes
        w = None if weights is None else np.asarray(weights, dtype=float)
        n = np.bincount(c, minlength=n_groups).astype(np.int64)
        tot = n.astype(float) if w is None else np.bincount(c, weights=w, minlength=n_groups)
        cols = range(v.shape[1])
        wv = v if w is None else w[:, None] * v
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.column_stack([np.bincount(c, weights=wv[:, j], minlength=n_groups) for j in cols])
            mean = np.where(tot[:, None] > 0, mean / np.where(tot > 0, tot, 1.0)[:, None], 0.0)
        w2 = np.ones(c.size) if w is None else w**2
        s2 = n.astype(float) if w is None else np.bincount(c, weights=w2, minlength=n_groups)
        if not spread:
            nan = np.full(mean.shape, np.nan)
            return cls(n, tot, mean, nan, nan.copy(), s2)
        with np.errstate(invalid="ignore"):
            dev = v - mean[c]
        q = np.column_stack([np.bincount(c, weights=w2 * dev[:, j] ** 2, minlength=n_groups) for j in cols])
        s1 = np.column_stack([np.bincount(c, weights=w2 * dev[:, j], minlength=n_groups) for j in cols])
        return cls(n, tot, mean, q, s1, s2)

    def merge(self, other: WMoments) -> WMoments:
        w = self.w + other.w
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(w > 0, other.w / np.where(w > 0, w, 1.0), 0.0)[:, None]
        mean = self.mean + (other.mean - self.mean) * share

        def about(m: WMoments) -> tuple[np.ndarray, np.ndarray]:
            d = m.mean - mean  # the set's own mean minus the merged one
            return m.q + 2.0 * d * m.s1 + d**2 * m.s2[:, None], m.s1 + d * m.s2[:, None]

        (qa, sa), (qb, sb) = about(self), about(other)
        return WMoments(self.n + other.n, w, mean, qa + qb, sa + sb, self.s2 + other.s2)

    def se(self) -> np.ndarray:
        """The weighted mean's standard error with the weights held fixed (G, c); NaN below two rows."""
        n = self.n.astype(float)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n >= 2, np.sqrt(n / (n - 1.0) * self.q) / self.w[:, None], np.nan)


@dataclass(frozen=True, eq=False)
class RowSums:
    """Mergeable per-group sums of per-row values and their delta-method Jacobians (the margins vocabulary:
    predictions, slopes, comparisons, averaged over the rows or ``by`` groups, weighted or not).

    ``moments``: the (weighted) means and spread of the c columns of values per group; ``jacobian``: per group
    and column the (weighted) sum of the rows' Jacobians in the model's k parameters (G, c, k), or None;
    ``vcov``: their covariance. The in-memory path computes them over all rows at once, the Dask engine per
    chunk and merged, so both give the same estimates up to rounding.
    """

    moments: WMoments
    jacobian: np.ndarray | None = None
    vcov: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def of(
        cls,
        values: np.ndarray,
        jacobian: np.ndarray | None,
        codes: np.ndarray,
        n_groups: int,
        weights: np.ndarray | None = None,
        vcov: np.ndarray | None = None,
        spread: bool = True,
    ) -> RowSums:
        """Of rows with values (n, c) and Jacobians (n, c, k), or a list of c (n, k) Jacobians (no copy into one
        array), or None; ``codes`` their groups (-1: unused)."""
        from scipy import sparse

        codes = np.asarray(codes, dtype=np.int64)
        v = np.asarray(values, dtype=float)
        v = v[:, None] if v.ndim == 1 else v
        jac = None
        if jacobian is not None:
            cols = (
                list(jacobian)
                if isinstance(jacobian, (list, tuple))
                else [jacobian[:, j, :] for j in range(jacobian.shape[1])]
            )
            if n_groups == 1 and weights is None and bool(np.all(codes == 0)):
                sums = [np.asarray(J, dtype=float).sum(axis=0)[None, :] for J in cols]  # one group of all rows
            else:
                used = np.flatnonzero(codes >= 0)
                w = np.ones(used.size) if weights is None else np.asarray(weights, dtype=float)[used]
                S = sparse.csr_matrix((w, (codes[used], used)), shape=(n_groups, codes.size))
                sums = [np.asarray(S @ np.asarray(J, dtype=float)) for J in cols]
            jac = np.stack(sums, axis=1)
        return cls(WMoments.of(v, codes, weights, n_groups, spread), jac, vcov)

    def merge(self, other: RowSums) -> RowSums:
        # a chunk without evaluated rows has no Jacobian rows: it adds nothing
        jac = (
            other.jacobian
            if self.jacobian is None
            else self.jacobian
            if other.jacobian is None
            else self.jacobian + other.jacobian
        )
        return RowSums(self.moments.merge(other.moments), jac, self.vcov if self.vcov is not None else other.vcov)

    @property
    def means(self) -> np.ndarray:
        """The groups' (weighted) means of each column (G, c); 0 for a group without rows (as an averaging
        matrix gives)."""
        return self.moments.mean

    def mean_jacobian(self) -> np.ndarray:
        """The groups' (weighted) mean Jacobians (G, c, k): the gradients of :attr:`means`."""
        w = self.moments.w
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(w[:, None, None] > 0, self.jacobian / np.where(w > 0, w, 1.0)[:, None, None], 0.0)


@dataclass(frozen=True)
class Summary:
    """Mergeable summaries of evaluated batches (one entry per output column).

    Attributes
    ----------
    codes : ndarray (5,)
        Rows evaluated, missing/infinite, already at the level, extrapolation, incomplete model input.
    fme, nlm, spread : Moments
        Of the fMEs, of the defined NLMs, of the predictions f(x) and f(x + h)
        (the scale of the flat-path test).
    n_linear : ndarray
        Defined NLMs >= the threshold.
    status : ndarray (4, m)
        Counts of ``ok``, ``constant``, ``flat``, ``inaccurate``.
    jacobian : ndarray (k,) or None
        Delta method: the sum of the rows' Jacobians d fME_i / d theta
        (the AME's gradient is this over n); ``vcov`` the parameter covariance.
    n_kept_extrapolation : int
        With ``on_extrapolation='keep'``: evaluated rows flagged as extrapolation.
    groups : object with ``merge``, optional
        Per-group sums of ``by`` groups (:class:`fme._dask.groups.GroupSums`).
    rows_any : ndarray (4,) or None
        Several outputs with NLMs: rows with ``constant``, ``flat``,
        ``inaccurate`` status in any output, and rows with an undefined
        (NaN) NLM in any output (the counts of :class:`fme.FMEResult`).
    """

    codes: np.ndarray
    fme: Moments
    nlm: Moments | None = None
    spread: Moments | None = None
    n_linear: np.ndarray | None = None
    status: np.ndarray | None = None
    jacobian: np.ndarray | None = None
    vcov: np.ndarray | None = field(default=None, repr=False)
    info: dict[str, Any] = field(default_factory=dict, repr=False)
    n_kept_extrapolation: int = 0
    groups: Any = field(default=None, repr=False)
    rows_any: np.ndarray | None = None
    #: The largest ``nlm_error`` of the rows marked inaccurate, per output (NaN: none).
    nlm_max_error: np.ndarray | None = None
    #: What a caller's per-chunk hook summed beside the fMEs (an object with ``merge``; the Dask engine's
    #: comparison scales, :mod:`fme._dask.vocab`), or None.
    extra: Any = field(default=None, repr=False)

    def merge(self, other: Summary) -> Summary:
        def add(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else a + b

        def mrg(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else a.merge(b)

        return replace(
            self,
            codes=self.codes + other.codes,
            fme=self.fme.merge(other.fme),
            nlm=mrg(self.nlm, other.nlm),
            spread=mrg(self.spread, other.spread),
            n_linear=add(self.n_linear, other.n_linear),
            status=add(self.status, other.status),
            jacobian=add(self.jacobian, other.jacobian),
            vcov=self.vcov if self.vcov is not None else other.vcov,
            info={**other.info, **self.info},
            n_kept_extrapolation=self.n_kept_extrapolation + other.n_kept_extrapolation,
            groups=mrg(self.groups, other.groups),
            rows_any=add(self.rows_any, other.rows_any),
            extra=mrg(self.extra, other.extra),
            nlm_max_error=self.nlm_max_error
            if other.nlm_max_error is None
            else other.nlm_max_error
            if self.nlm_max_error is None
            else np.fmax(self.nlm_max_error, other.nlm_max_error),
        )


def summarise(batch: Batch, plan: Plan, threshold: float = 0.9) -> Summary:
    """The mergeable :class:`Summary` of one evaluated batch."""
    names = plan.names
    res = batch.results
    fcols = ["fme"] if names is None else [f"fme_{c}" for c in names]
    fm = Moments.of(res[fcols].to_numpy(dtype=float))
    codes = np.bincount(batch.code, minlength=N_CODES).astype(np.int64)
    spread = Moments.of(np.concatenate([batch.f0, batch.f1]))
    nlm = n_linear = status = rows_any = max_err = None
    if plan.settings is not None:
        ncols = ["nlm"] if names is None else [f"nlm_{c}" for c in names]
        scols = ["nlm_status"] if names is None else [f"nlm_status_{c}" for c in names]
        v = res[ncols].to_numpy(dtype=float)
        nlm = Moments.of(v)
        with np.errstate(invalid="ignore"):
            n_linear = (v >= threshold).sum(axis=0).astype(np.int64)
        st = res[scols].to_numpy()
        status = np.array([(st == s).sum(axis=0) for s in _STATUS], dtype=np.int64)
        ecols = ["nlm_error"] if names is None else [f"nlm_error_{c}" for c in names]
        if all(c in res.columns for c in ecols):
            err = np.where(st == "inaccurate", res[ecols].to_numpy(dtype=float), np.nan)
            max_err = np.full(err.shape[1], np.nan)
            has = (st == "inaccurate").any(axis=0)
            max_err[has] = np.nanmax(err[:, has], axis=0)
        if names is not None:
            rows_any = np.array(
                [(st == s).any(axis=1).sum() for s in _STATUS[1:]] + [np.isnan(v).any(axis=1).sum()], dtype=np.int64
            )
    jac = vcov = None
    info: dict[str, Any] = {}
    rows = batch.rows
    if rows is not None and rows.method == "delta":
        jac, vcov, info = cast(np.ndarray, rows.jacobian).sum(axis=0), rows.vcov, dict(rows.info)
    kept = int(res["extrapolation"].sum()) if "extrapolation" in res.columns else 0
    return Summary(
        codes=codes,
        fme=fm,
        nlm=nlm,
        spread=spread,
        n_linear=n_linear,
        status=status,
        jacobian=jac,
        vcov=vcov,
        info=info,
        n_kept_extrapolation=kept,
        rows_any=rows_any,
        nlm_max_error=max_err,
    )
