"""The types every inference method shares: :class:`Estimates` (averages with their uncertainty, as tables)
and :class:`RowInference` (per-row ingredients any average over a subset of rows is computed from).

See :mod:`fme.inference` for the three meanings of an AME's uncertainty (delta, bootstrap, sample).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import sparse

from .._utils.distributions import norm_ppf, norm_sf, t_ppf, t_sf
from .._utils.jit import njit
from .._utils.numfmt import count
from .._utils.warn import warn_caller
from ..exceptions import BootstrapWarning, ParameterError
from .validity import rounding_mask, rounding_note

__all__ = [
    "INFERENCE_METHODS",
    "INFERENCE_COLUMNS",
    "COVERS",
    "COVERS_UNCONDITIONAL",
    "BOOTSTRAP_CIS",
    "RowInference",
    "Estimates",
    "check_inference",
    "group_matrix",
    "alloc_draws",
    "pair_label",
    "sample_inference",
    "undefined_where",
    "pairwise_matrix",
    "KERNEL_ROWS",
    "UNDEFINED_COLUMNS",
]

INFERENCE_METHODS = ("auto", "delta", "bootstrap", "sample")
#: The uncertainty columns of every aggregated table (ame, mer, mem, cAME leaves), in order.
INFERENCE_COLUMNS = ["std_error", "statistic", "p_value", "conf_low", "conf_high", "inference", "covers"]
#: What the interval of each method covers (the ``covers`` column, beside ``inference``).
COVERS = {"delta": "model uncertainty", "bootstrap": "model uncertainty", "sample": "model held fixed"}
#: What the delta interval with ``vcov='unconditional'`` covers (:mod:`fme.inference.unconditional`).
COVERS_UNCONDITIONAL = "model uncertainty and sampled rows"
BOOTSTRAP_CIS = ("percentile", "normal")
#: Rows from which one group's sample average is summed by a compiled kernel instead of the averaging matrix: below,
#: the matrix costs under a millisecond and a process need not compile the kernel (once per machine where numba
#: can cache it, once per process where it cannot).
KERNEL_ROWS = 50_000


def check_inference(inference: Any) -> str:
    """Validate the ``inference`` argument."""
    if not isinstance(inference, str) or inference not in INFERENCE_METHODS:
        raise ParameterError(
            f"inference must be one of {INFERENCE_METHODS}, got {inference!r}: 'delta' (parameter covariance), "
            "'bootstrap' (refits; pass bootstrap={...}), 'sample' (fixed model) or 'auto'."
        )
    return inference


def group_matrix(codes: np.ndarray, n_groups: int, weights: np.ndarray | None = None) -> sparse.csr_matrix:
    """Sparse (n_groups x n) averaging matrix: row g holds 1/n_g on the rows with code g (codes < 0: unused),
    or with ``weights`` w_i / (sum of the group's weights): weighted means (survey or frequency weights)."""
    codes = np.asarray(codes, dtype=np.int64)
    used = np.flatnonzero(codes >= 0)
    rows = codes[used]
    counts = np.bincount(rows, minlength=n_groups)
    if weights is None and n_groups == 1:  # one group of equal weights: 1 / n_0 each, as the division gives it
        w = np.full(used.size, 1.0 / float(counts[0]) if used.size else np.nan)
    else:
        w_used = np.ones(used.size) if weights is None else np.asarray(weights, dtype=float)[used]
        totals = counts.astype(float) if weights is None else np.bincount(rows, weights=w_used, minlength=n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = w_used / totals[rows]
    # the CSR arrays directly, each group's rows in ascending order (what the (row, column) constructor's stable
    # sort gives, without its sort: the same matrix, so the same sums)
    order = np.argsort(rows, kind="stable") if n_groups > 1 else slice(None)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sparse.csr_matrix((w[order], used[order], indptr), shape=(n_groups, codes.size))


@dataclass(frozen=True, eq=False)
class Estimates:
    """Estimates with what their uncertainty needs; linear combinations keep it.

    Attributes
    ----------
    method : {'delta', 'bootstrap', 'sample'}
    estimate : ndarray (m,)
    grad : ndarray (m, k) or None
        Delta: gradients w.r.t. the parameters; ``vcov`` their covariance.
    draws : ndarray (m, B) or None
        Bootstrap: the estimates under each successful refit.
    se, df : ndarray (m,) or None
        Sample: the standard errors SD/sqrt(n) and t degrees of freedom. Delta: t degrees of freedom
        when given (``df=``), else normal quantiles.
    ci : {'percentile', 'normal'}
        Bootstrap CI type.
    n_failed : int
        Bootstrap refits that failed (left out of ``draws``), non-converged ones included unless kept.
    errors : tuple of str
        Their distinct error messages (at most 5).
    n_nonconverged : int
        Bootstrap refits that did not converge (left out unless ``keep_nonconverged``).
    basis : object or None
        Delta with ``vcov='unconditional'``: the token of the call whose rows' basis ``grad`` is written in
        (:mod:`fme.inference.unconditional`); estimates of two calls have no joint covariance, so
        :func:`~fme.inference.wald.stack_estimates` does not stack them. None: ``grad`` is in the parameters.
    scale : ndarray (m,) or None
        The magnitude of the estimates each one combines (``|L| @ |estimate|`` of the estimates a contrast
        ``L`` is taken of); None: its own ``|estimate|``. Rounding in an estimate and its standard error is
        relative to it: a standard error below :data:`~fme.inference.validity.ROUNDING_TOL` times it is
        rounding, and its test is not valid (:meth:`table`, :meth:`notes`).
    """

    method: str
    estimate: np.ndarray
    grad: np.ndarray | None = None
    vcov: np.ndarray | None = None
    draws: np.ndarray | None = None
    se: np.ndarray | None = None
    df: np.ndarray | None = None
    ci: str = "percentile"
    n_failed: int = 0
    errors: tuple[str, ...] = ()
    n_nonconverged: int = 0
    scale: np.ndarray | None = None
    basis: object | None = None

    @property
    def magnitude(self) -> np.ndarray:
        """The scale rounding is relative to: :attr:`scale`, or ``|estimate|`` where none was given."""
        own = np.abs(np.asarray(self.estimate, dtype=float))
        return own if self.scale is None else cast(np.ndarray, np.fmax(own, np.asarray(self.scale, dtype=float)))

    def contrast(self, L: np.ndarray) -> Estimates:
        """Linear combinations ``L @ estimate`` (e.g. pairwise differences) with their uncertainty.

        For ``sample`` the combined rows are taken as independent (disjoint
        groups): se = sqrt(L^2 @ se^2), normal quantiles (df = inf).
        """
        L = np.asarray(L, dtype=float)
        est = L @ self.estimate
        # a difference of two large, nearly equal estimates is small; its rounding is the large ones'
        scale = np.abs(L) @ np.nan_to_num(self.magnitude, nan=0.0)
        if self.method == "delta":
            df = None if self.df is None else np.full(est.size, float(np.min(self.df)))
            return replace(self, estimate=est, grad=L @ self.grad, df=df, scale=scale)
        if self.method == "bootstrap":
            return replace(self, estimate=est, draws=L @ cast(np.ndarray, self.draws), scale=scale)
        se = np.sqrt((L**2) @ (cast(np.ndarray, self.se) ** 2))
        return replace(self, estimate=est, se=se, df=np.full(est.size, np.inf), scale=scale)

    def take(self, positions: np.ndarray) -> Estimates:
        """The estimates at ``positions`` with their uncertainty: an undefined one left out stays out of the
        tests of the others (a NaN variance times a zero weight would make them undefined too)."""
        pos = np.asarray(positions, dtype=int)

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[pos]

        return replace(
            self,
            estimate=self.estimate[pos],
            grad=pick(self.grad),
            draws=pick(self.draws),
            se=pick(self.se),
            df=pick(self.df),
            scale=pick(self.scale),
        )

    def standard_errors(self) -> np.ndarray:
        """The standard error of each estimate under its method."""
        m = self.estimate.size
        if self.method == "delta":
            grad, vcov = cast(np.ndarray, self.grad), cast(np.ndarray, self.vcov)  # set for delta
            var = np.einsum("mk,kl,ml->m", grad, vcov, grad) if m else np.empty(0)
            return np.sqrt(np.maximum(var, 0.0))
        if self.method == "bootstrap":
            draws = cast(np.ndarray, self.draws)  # set for bootstrap
            return draws.std(axis=1, ddof=1) if draws.shape[1] > 1 else np.full(m, np.nan)
        return cast(np.ndarray, self.se)  # set for sample

    def notes(self) -> np.ndarray:
        """Why the test of an estimate is not valid, in words (``""`` where it is): a standard error at rounding
        level (:func:`~fme.inference.validity.rounding_mask`)."""
        se = self.standard_errors()
        flag = rounding_mask(se, self.estimate, self.magnitude)
        return np.array([rounding_note(s, e) if f else "" for s, e, f in zip(se, self.estimate, flag)], dtype=object)

    def table(self, conf_level: float = 0.95) -> pd.DataFrame:
        """The columns :data:`INFERENCE_COLUMNS`, one row per estimate (``covers``: what the interval
        covers, ``model uncertainty`` or ``model held fixed``): :meth:`table_columns` as a frame."""
        return pd.DataFrame(self.table_columns(conf_level))

    def records(self, conf_level: float = 0.95, undefined: np.ndarray | None = None) -> list[dict[str, Any]]:
        """The rows of :meth:`table` as dicts (what ``table.iloc[i].to_dict()`` gives), for tables that put each
        estimate's figures beside labels of their own, without a frame made for each; ``undefined``: a mask of
        the estimates whose uncertainty figures are NaN (:func:`undefined_where`'s)."""
        cols = self.table_columns(conf_level)
        if undefined is not None and np.any(undefined):
            mask = np.asarray(undefined, dtype=bool)
            for c in UNDEFINED_COLUMNS:
                cols[c] = np.where(mask, np.nan, cols[c])
        values = {c: v.tolist() for c, v in cols.items()}  # Python numbers and strings, as a frame's row gives them
        return [{c: v[i] for c, v in values.items()} for i in range(self.estimate.size)]

    def table_columns(self, conf_level: float = 0.95) -> dict[str, np.ndarray]:
        """The columns of :meth:`table` by name (each one value per estimate).

        A standard error at rounding level (below :data:`~fme.inference.validity.ROUNDING_TOL` times the
        estimate's :attr:`magnitude`) leaves ``statistic`` and ``p_value`` NaN: its z would be the ratio of
        an estimate to rounding (:meth:`notes` says so in words); the interval stays (of width ~0: the
        quantity does not vary)."""
        m = self.estimate.size
        alpha = 1.0 - conf_level
        est = self.estimate
        se = self.standard_errors()
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.method == "delta":
                z = est / se
                # z and normal quantiles; t with ``df`` when given (marginaleffects' df= for linear models)
                if self.df is None:
                    p, q = 2.0 * norm_sf(np.abs(z)), norm_ppf(1.0 - alpha / 2.0)
                else:
                    t_df = np.asarray(self.df, dtype=float)
                    p, q = 2.0 * t_sf(np.abs(z), t_df), t_ppf(1.0 - alpha / 2.0, t_df)
                lo, hi = est - q * se, est + q * se
            elif self.method == "bootstrap":
                draws = cast(np.ndarray, self.draws)  # set for bootstrap
                b = draws.shape[1]
                z = est / se
                p = 2.0 * norm_sf(np.abs(z))
                if self.ci == "percentile" and b > 1:
                    _check_percentile_draws(b, conf_level)
                    lo, hi = np.quantile(draws, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1)
                else:
                    q = norm_ppf(1.0 - alpha / 2.0)
                    lo, hi = est - q * se, est + q * se
            else:
                z = est / se
                df = self.df
                p = 2.0 * t_sf(np.abs(z), df)
                q = t_ppf(1.0 - alpha / 2.0, df)
                lo, hi = est - q * se, est + q * se
        # A zero standard error gives an undefined statistic, not +-inf; one at rounding level, not 1e16.
        valid = (se > 0) & ~rounding_mask(se, est, self.magnitude)
        z = np.where(valid, z, np.nan)
        p = np.where(valid, p, np.nan)
        return {
            "std_error": se,
            "statistic": z,
            "p_value": p,
            "conf_low": lo,
            "conf_high": hi,
            "inference": np.full(m, self.method, dtype=object),
            "covers": np.full(m, COVERS[self.method] if self.basis is None else COVERS_UNCONDITIONAL, dtype=object),
        }


#: A percentile bound should rest on at least this many draws beyond it (200 draws at 95%).
MIN_TAIL_DRAWS = 5


def _check_percentile_draws(b: int, conf_level: float) -> None:
    """Warn when a percentile interval at ``conf_level`` rests on fewer than :data:`MIN_TAIL_DRAWS` draws in each
    tail (fewer than 200 draws at 95%)."""
    tail = b * (1.0 - conf_level) / 2.0
    if tail < MIN_TAIL_DRAWS - 1e-9:
        need = int(np.ceil(MIN_TAIL_DRAWS * 2.0 / (1.0 - conf_level) - 1e-9))
        warn_caller(
            f"the {100 * conf_level:g}% percentile bootstrap interval rests on {count(b, 'refit')}, about {tail:.3g} "
            "beyond "
            f"each bound; its bounds are noisy. Use bootstrap={{..., 'n_resamples': {need}}} or more (at least "
            f"{need} successful refits at this level), or 'ci': 'normal'.",
            BootstrapWarning,
        )


@dataclass(frozen=True, eq=False)
class RowInference:
    """Per-row uncertainty ingredients of n evaluated fMEs (one output).

    Attributes
    ----------
    method : {'delta', 'bootstrap', 'sample'}
    values : ndarray (n,)
        The fMEs of the fitted model.
    jacobian : ndarray (n, k) or None
        Delta: d fME_i / d theta.
    vcov : ndarray (k, k) or None
        Delta: the parameter covariance.
    draws : ndarray (n, B) or None
        Bootstrap: fME_i under each successful refit.
    ci : {'percentile', 'normal'}
    n_failed : int
        Bootstrap refits that failed (left out of ``draws``; counted and reported), non-converged ones
        included unless kept.
    errors : tuple of str
        The distinct error messages of failed refits (at most 5).
    n_nonconverged : int
        Bootstrap refits that did not converge.
    info : dict
        Details (kernel: 'analytic'/'numerical'; n_resamples; random_state; for bootstrap ``kept``: the
        positions, in the seed order, of the resamples whose refits are the columns of ``draws``, so that two
        models' draws from the same seeds can be paired resample by resample).
    """

    method: str
    values: np.ndarray
    jacobian: np.ndarray | None = None
    vcov: np.ndarray | None = None
    draws: np.ndarray | None = None
    ci: str = "percentile"
    n_failed: int = 0
    errors: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)
    n_nonconverged: int = 0

    @property
    def n(self) -> int:
        return int(self.values.size)

    def take(self, positions: np.ndarray) -> RowInference:
        """The same ingredients restricted to some rows (positions into ``values``).

        Bootstrap draws are copied into RAM or, beyond the run's ``memory_limit``, a temporary
        memory-mapped file (:func:`alloc_draws`)."""
        pos = np.asarray(positions)
        draws = None
        if self.draws is not None:
            idx = np.arange(self.n)[pos]
            draws = alloc_draws(idx.size, self.draws.shape[1], self.info.get("memory_limit"))
            np.take(self.draws, idx, axis=0, out=draws)
        return replace(
            self, values=self.values[pos], jacobian=None if self.jacobian is None else self.jacobian[pos], draws=draws
        )

    def average(
        self, codes: np.ndarray | None = None, n_groups: int | None = None, weights: np.ndarray | None = None
    ) -> Estimates:
        """Averages over groups of rows (``codes[i]`` = group of row i, -1 = unused); one group by default.

        ``weights``: weighted means. Their ``sample`` standard error is the weighted mean's with the weights
        held fixed, sqrt(n/(n-1) sum w_i^2 (v_i - m)^2) / sum w_i, which equals SD/sqrt(n) for equal weights."""
        n = self.n
        if (
            self.method == "sample"
            and weights is None
            and n >= KERNEL_ROWS
            and (codes is None or _one_group(codes, n_groups))
        ):
            # one group of every row, equal weights: the averaging matrix's sums in one compiled pass each, without
            # building it (the same sums in the same order, so the same numbers)
            mean, ss = _one_group_sums(np.ascontiguousarray(self.values, dtype=float), 1.0 / float(n))
            count = np.array([float(n)])
            with np.errstate(invalid="ignore", divide="ignore"):
                sd = np.sqrt(np.array([ss]) / (count - 1.0))
                se = np.where(count >= 2, sd / np.sqrt(count), np.nan)
            return Estimates("sample", np.array([mean]), se=se, df=np.maximum(count - 1.0, 1.0))
        if codes is None:
            codes, n_groups = np.zeros(n, dtype=np.int64), 1
        n_groups = cast(int, n_groups)  # given with codes
        W = group_matrix(codes, n_groups, weights)
        est = W @ self.values
        if self.method == "delta":
            return Estimates("delta", est, grad=np.asarray(W @ self.jacobian), vcov=self.vcov)
        if self.method == "bootstrap":
            return Estimates(
                "bootstrap",
                est,
                draws=np.asarray(W @ self.draws),
                ci=self.ci,
                n_failed=self.n_failed,
                errors=self.errors,
                n_nonconverged=self.n_nonconverged,
            )
        # sample: t-based over each group's rows (paper §5.5)
        codes = np.asarray(codes)
        used: Any = codes >= 0
        if used.all():  # every row counts: slices instead of masked copies (the same values)
            used = slice(None)
        cu = codes[used]
        cnt = np.array([float(n)]) if n_groups == 1 and isinstance(used, slice) else None
        cnt = np.bincount(cu, minlength=n_groups).astype(float) if cnt is None else cnt
        if n_groups == 1 and isinstance(used, slice):  # one group of every row: its estimate, not gathered
            dev = self.values - est[0]
        else:
            dev = np.zeros(n)
            dev[used] = self.values[used] - est[cu]
        if weights is None:
            ss = np.bincount(cu, weights=dev[used] ** 2, minlength=n_groups)
            with np.errstate(invalid="ignore", divide="ignore"):
                sd = np.sqrt(ss / (cnt - 1.0))
                se = np.where(cnt >= 2, sd / np.sqrt(cnt), np.nan)
        else:
            w = np.asarray(weights, dtype=float)[used]
            tot = np.bincount(cu, weights=w, minlength=n_groups)
            ss = np.bincount(cu, weights=(w * dev[used]) ** 2, minlength=n_groups)
            with np.errstate(invalid="ignore", divide="ignore"):
                se = np.where(cnt >= 2, np.sqrt(cnt / (cnt - 1.0) * ss) / tot, np.nan)
        return Estimates("sample", est, se=se, df=np.maximum(cnt - 1.0, 1.0))


def _one_group(codes: np.ndarray, n_groups: int | None) -> bool:
    """Whether ``codes`` put every row in group 0 of one (no row unused)."""
    codes = np.asarray(codes)
    return n_groups == 1 and bool(codes.size == 0 or (codes.min() == 0 and codes.max() == 0))


@njit(nogil=True, error_model="numpy")
def _one_group_sums(values: np.ndarray, w: float) -> tuple[float, float]:
    """(sum of ``w * v_i``, sum of ``(v_i - that)^2``), each in row order: the one-group averaging matrix's
    product (:func:`group_matrix`, all weights ``w = 1/n``; the CSR product adds ``w * v_i`` row by row) and the
    sample's sum of squares as ``np.bincount`` adds it (row by row)."""
    total = 0.0
    for i in range(values.size):
        total += w * values[i]
    ss = 0.0
    for i in range(values.size):
        d = values[i] - total
        ss += d * d
    return total, ss


def alloc_draws(n: int, B: int, memory_limit: int | None) -> np.ndarray:
    """An n x B float64 array for bootstrap draws: in RAM up to ``memory_limit`` bytes (None: no limit),
    else backed by an anonymous temporary file (deleted when the array is garbage-collected)."""
    if memory_limit is None or 8 * n * B <= memory_limit or n * B == 0:
        return np.empty((n, B))
    import tempfile

    with tempfile.TemporaryFile(prefix="fme-bootstrap-") as fh:
        # the map keeps the (already unlinked) file alive after the handle is closed
        return np.memmap(fh, dtype=np.float64, mode="w+", shape=(n, B))


def sample_inference(values: np.ndarray) -> RowInference:
    """Fixed-model ingredients: only the fMEs."""
    return RowInference("sample", np.asarray(values, dtype=float))


#: The figures of an estimate's uncertainty, NaN where the estimate is over no evaluated rows.
UNDEFINED_COLUMNS = ("std_error", "statistic", "p_value", "conf_low", "conf_high")


def undefined_where(table: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """``table`` with its uncertainty figures NaN where ``mask``: an estimate over no evaluated rows.

    An empty group's average is undefined; its averaging row is all zeros, which would otherwise read as an
    estimate of 0 known exactly (std_error 0) and give differences with other groups a spurious p-value.
    """
    if not np.any(mask):
        return table
    out = table.copy()
    out.loc[np.asarray(mask, dtype=bool), list(UNDEFINED_COLUMNS)] = np.nan
    return out


def pair_label(keys: pd.DataFrame, i: int, j: int) -> str:
    """ "(b) - (a)" for groups j (b) and i (a) of ``keys``; a missing key value reads ``NA`` (whatever its dtype)."""

    def one(g: int) -> str:
        return "(" + ", ".join("NA" if pd.isna(v) else str(v) for v in keys.iloc[g]) + ")"

    return f"{one(j)} - {one(i)}"


def pairwise_matrix(m: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Rows e_j - e_i for i < j: "(b) - (a)", "(c) - (a)", "(c) - (b)" (marginaleffects' order and sign)."""
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    L = np.zeros((len(pairs), m))
    for r, (i, j) in enumerate(pairs):
        L[r, j], L[r, i] = 1.0, -1.0
    return L, pairs
