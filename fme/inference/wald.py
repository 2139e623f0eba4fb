"""Tests on several estimates at once: contrasts, a joint Wald test and multiple-comparison adjustment.

Built on :class:`~fme.inference.estimates.Estimates`, whatever its method: the joint covariance of the
estimates is ``G V G'`` for the delta method, the covariance of the refits' draws for the bootstrap, and
diagonal for ``sample`` estimates over disjoint rows (cAME leaves, by-groups).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from .._utils.distributions import norm_cdf, norm_sf, t_cdf, t_sf
from .._utils.numfmt import count
from ..exceptions import ParameterError
from .estimates import Estimates, pairwise_matrix
from .validity import identification_note, numerical_rank, rounding_mask, rounding_note

__all__ = [
    "MULTCOMP",
    "covariance",
    "covariance_factor",
    "contrast_matrix",
    "validity_note",
    "wald_test",
    "adjust_pvalues",
    "stack_estimates",
]

#: Multiple-comparison adjustments (statsmodels' names).
MULTCOMP = ("holm", "bonferroni", "fdr_bh")


def covariance(est: Estimates) -> np.ndarray:
    """The joint covariance matrix of ``est.estimate`` (m x m)."""
    if est.method == "delta":
        grad, vcov = cast(np.ndarray, est.grad), cast(np.ndarray, est.vcov)  # set for delta
        return cast(np.ndarray, grad @ vcov @ grad.T)
    if est.method == "bootstrap":
        draws = np.asarray(est.draws, dtype=float)
        if draws.shape[1] < 2:
            return np.full((draws.shape[0],) * 2, np.nan)
        return np.atleast_2d(np.cov(draws))
    return np.diag(np.asarray(est.se, dtype=float) ** 2)


def contrast_matrix(m: int, hypothesis: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Rows of differences between m estimates: ``"pairwise"`` (every j - i, i < j) or ``"reference"``
    (every j - 0), and the (i, j) pairs."""
    if hypothesis == "pairwise":
        return pairwise_matrix(m)
    if hypothesis == "reference":
        pairs = [(0, j) for j in range(1, m)]
        L = np.zeros((len(pairs), m))
        for r, (i, j) in enumerate(pairs):
            L[r, j], L[r, i] = 1.0, -1.0
        return L, pairs
    raise ParameterError(f"hypothesis must be 'pairwise' or 'reference', got {hypothesis!r}.")


def covariance_factor(est: Estimates) -> tuple[np.ndarray, np.ndarray]:
    """F with ``covariance(est) = F F'``, and the magnitude of the terms each entry of F sums (its rounding
    is relative to them).

    Delta: ``F = J V^{1/2}`` (one column per parameter direction, in standard deviations; ``V^{1/2}`` from
    the eigenvalues of V, negative rounding ones taken as 0), magnitude ``|J| |V^{1/2}|``; bootstrap: the
    centred draws over ``sqrt(B - 1)``, magnitude the draws' own; sample: ``diag(se)``.
    """
    if est.method == "delta":
        grad, vcov = cast(np.ndarray, est.grad), cast(np.ndarray, est.vcov)  # set for delta
        if not np.all(np.isfinite(vcov)):
            nan = np.full(np.shape(grad), np.nan)
            return nan, nan
        w, U = np.linalg.eigh((vcov + vcov.T) / 2.0)
        half = U * np.sqrt(np.maximum(w, 0.0))
        return grad @ half, np.abs(grad) @ np.abs(half)
    if est.method == "bootstrap":
        draws = np.asarray(est.draws, dtype=float)
        b = max(draws.shape[1] - 1, 1)
        return (draws - draws.mean(axis=1, keepdims=True)) / np.sqrt(b), np.abs(draws) / np.sqrt(b)
    se = np.diag(np.asarray(est.se, dtype=float))
    return se, np.abs(se)


def validity_note(
    est: Estimates, L: np.ndarray, factor: tuple[np.ndarray, np.ndarray] | None = None, value: np.ndarray | None = None
) -> str:
    """Why the Wald test of ``L @ estimate = 0`` is not a test (``""`` when it is): see
    :mod:`fme.inference.validity`.

    (b) A contrast whose standard error is at rounding level (relative to the contrast, the estimates it
    combines and its standard error without cancellation). (a) Under the delta method, contrasts that fix every
    parameter direction of the estimates they involve while the hypothesis allows a set of values
    (``rank(L F) = rank(F)`` and ``rank(L) <`` the estimates involved); under the bootstrap, a covariance whose
    rank the refits set (fewer than ``rank(L) + 1``). ``factor``: :func:`covariance_factor` of ``est``, when
    known (several tests of the same estimates); ``value``: the tested quantity when ``L`` is the gradient of
    a non-linear one (default ``L @ estimate``).
    """
    L = np.atleast_2d(np.asarray(L, dtype=float))
    F, F_abs = covariance_factor(est) if factor is None else factor
    # only the estimates the hypothesis involves count: another row's undefined figures or its parameter
    # directions say nothing about this test
    involved = np.flatnonzero(np.any(L != 0, axis=0))
    L, F, F_abs = L[:, involved], F[involved], F_abs[involved]
    b = L @ est.estimate[involved] if value is None else np.atleast_1d(np.asarray(value, dtype=float))
    if not (np.all(np.isfinite(F)) and np.all(np.isfinite(b))):
        return ""  # undefined, which the NaN statistic says: no note to add
    G = L @ F
    se = np.linalg.norm(G, axis=1)
    plain = np.linalg.norm(np.abs(L) @ F_abs, axis=1)  # the standard errors without cancellation
    scale = np.fmax(np.abs(L) @ np.nan_to_num(est.magnitude[involved], nan=0.0), plain)
    flagged = np.flatnonzero(rounding_mask(se, b, scale))
    if flagged.size:
        k = int(flagged[0])
        return rounding_note(se[k], b[k], f"contrast {k + 1}" if b.size > 1 else "")
    q_rank = numerical_rank(L)
    if est.method == "delta" and q_rank < involved.size:
        r = numerical_rank(G, plain)
        d = numerical_rank(F, np.linalg.norm(F_abs, axis=1))
        if r >= d > 0:
            return identification_note(L.shape[0], d)
    if est.method == "bootstrap" and cast(np.ndarray, est.draws).shape[1] - 1 < q_rank:
        n_refits = cast(np.ndarray, est.draws).shape[1]  # set for bootstrap
        return (
            f"not identified: the covariance of {q_rank} independent contrasts is estimated from "
            f"{count(n_refits, 'refit')}, which span at most {n_refits - 1} directions; use at least "
            f"{count(q_rank + 1, 'refit')}"
        )
    return ""


def wald_test(est: Estimates, L: np.ndarray) -> dict[str, Any]:
    """Joint test of ``L @ estimate = 0``: W = (Lb)' (L C L')^+ (Lb) ~ chi-squared with r = rank(L C L') df.

    The generalised inverse keeps the test defined when contrasts are linearly dependent (as the pairwise
    differences of m estimates are: rank m - 1). r is counted on the factor ``L F`` of ``L C L'`` (C = F F',
    :func:`covariance_factor`) with its rows scaled to the magnitude of their terms
    (:func:`~fme.inference.validity.numerical_rank`), not on ``L C L'``, whose rounding is the square of
    the factor's; W keeps the r leading singular directions of that scaled factor.

    Returns
    -------
    dict
        ``statistic``, ``df``, ``p_value`` and ``note``: ``""`` for a valid test; else why it is not a test
        (:func:`validity_note`: a hypothesis that is not identified, a standard error at rounding level), with
        NaN statistic and p-value.
    """
    L = np.atleast_2d(np.asarray(L, dtype=float))
    b = L @ est.estimate
    F, F_abs = covariance_factor(est)
    nan = float("nan")
    if not (np.all(np.isfinite(F)) and np.all(np.isfinite(b))):
        return {"statistic": nan, "df": nan, "p_value": nan, "note": ""}
    plain = np.linalg.norm(np.abs(L) @ F_abs, axis=1)
    df = numerical_rank(L @ F, plain)
    note = validity_note(est, L, (F, F_abs))
    if note or df == 0:
        return {
            "statistic": nan,
            "df": float(df),
            "p_value": nan,
            "note": note or "not identified: the contrasts do not depend on the parameters",
        }
    # row scaling changes no statistic of full rank; with r < q it fixes which directions are rounding
    keep = plain > 0
    U, sv, _ = np.linalg.svd((L @ F)[keep] / plain[keep, None], full_matrices=False)
    proj = U[:, :df].T @ (b[keep] / plain[keep])
    w = float(np.sum((proj / sv[:df]) ** 2))
    return {"statistic": w, "df": float(df), "p_value": float(stats.chi2.sf(w, df)), "note": ""}


def adjust_pvalues(p: np.ndarray, method: str) -> np.ndarray:
    """p-values adjusted for multiple comparisons (``holm``, ``bonferroni`` or ``fdr_bh``); NaN stays NaN."""
    if method not in MULTCOMP:
        raise ParameterError(f"multcomp must be one of {MULTCOMP}, got {method!r}.")
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method=method)[1]
    return out


def row_notes(est: Estimates, L: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
    """:func:`validity_note` of each row of ``L`` tested alone (its z test): ``""`` where it is valid.
    ``values``: the tested quantities when ``L`` holds their gradients (non-linear hypotheses)."""
    L = np.atleast_2d(np.asarray(L, dtype=float))
    if not L.size:
        return np.empty(0, dtype=object)
    factor = covariance_factor(est)
    return np.array(
        [
            validity_note(est, L[i : i + 1], factor, None if values is None else values[i : i + 1])
            for i in range(L.shape[0])
        ],
        dtype=object,
    )


def invalidate(table: pd.DataFrame, notes: np.ndarray) -> pd.DataFrame:
    """``table`` with ``statistic``/``p_value`` NaN where a test is not valid and a ``note`` column saying why
    (``""`` where it is)."""
    out = table.copy()
    bad = np.asarray([bool(n) for n in notes], dtype=bool)
    out.loc[bad, ["statistic", "p_value"]] = np.nan
    out["note"] = np.asarray(notes, dtype=object)
    return out


def contrast_table(
    est: Estimates, L: np.ndarray, labels: list[str], conf_level: float, multcomp: str | None
) -> pd.DataFrame:
    """One row per contrast: ``hypothesis``, ``estimate``, the inference columns and ``note`` (why a contrast's
    test is not valid, :func:`validity_note`; ``""`` where it is), with ``p_value_adj`` (and ``multcomp`` naming
    the adjustment) when ``multcomp`` is given."""
    c = est.contrast(L)
    table = invalidate(c.table(conf_level), row_notes(est, L))
    out = pd.concat([pd.DataFrame({"hypothesis": labels, "estimate": c.estimate}), table], axis=1)
    if multcomp is not None:
        out["p_value_adj"] = adjust_pvalues(out["p_value"].to_numpy(), multcomp)
        out["multcomp"] = multcomp
    return out


# ----------------------------------------------------------------- the margins vocabulary
#: Named hypotheses (marginaleffects' names); "pairwise" keeps fme's order "(b) - (a)" (later minus earlier).
NAMED = ("pairwise", "revpairwise", "reference", "revreference", "sequential", "revsequential")


def named_matrix(m: int, hypothesis: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Contrast rows for a named hypothesis over m estimates, with the (minuend, subtrahend) of each row.

    ``pairwise``: b_j - b_i for i < j; ``revpairwise``: b_i - b_j; ``reference``: b_j - b_1;
    ``revreference``: b_1 - b_j; ``sequential``: b_{j+1} - b_j; ``revsequential``: b_j - b_{j+1}."""
    if hypothesis in ("pairwise", "revpairwise"):
        idx = [(j, i) for i in range(m) for j in range(i + 1, m)]
    elif hypothesis in ("reference", "revreference"):
        idx = [(j, 0) for j in range(1, m)]
    elif hypothesis in ("sequential", "revsequential"):
        idx = [(j + 1, j) for j in range(m - 1)]
    else:
        raise ParameterError(
            f"hypothesis must be one of {NAMED}, an equation such as 'b1 - b2 = 0' or a matrix, got {hypothesis!r}."
        )
    if hypothesis.startswith("rev"):
        idx = [(b, a) for a, b in idx]
    L = np.zeros((len(idx), m))
    for r, (a, b) in enumerate(idx):
        L[r, a], L[r, b] = 1.0, -1.0
    return L, idx


_FUNCS = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs}


def parse_equation(text: str, m: int) -> tuple[Callable[[np.ndarray], np.ndarray], str]:
    """``"b1 - b2 = 0"`` or ``"b2 / b1 = 1"`` -> (function of the estimate vector giving lhs - rhs, label).

    Terms ``b1`` .. ``bm`` are the rows in the order printed (numbered from 1); numbers, + - * / ** and
    exp, log, sqrt, abs are allowed; anything else is refused (the string is parsed, never executed)."""
    import ast

    if text.count("=") != 1:
        raise ParameterError(f"an equation hypothesis needs exactly one '=', e.g. 'b1 - b2 = 0'; got {text!r}.")
    lhs, rhs = (part.strip() for part in text.split("="))
    try:
        expr = ast.parse(f"({lhs}) - ({rhs})", mode="eval")
    except SyntaxError as exc:
        raise ParameterError(
            f"hypothesis {text!r} is not an equation of the rows b1..b{m}: it cannot be read "
            f"near {_term_near(lhs, rhs, exc.offset)!r}; write terms such as 'b2 / b1 = 1' "
            "(rows b1, b2, ..., numbers, + - * / ** and exp/log/sqrt/abs)."
        ) from None
    allowed = (
        ast.Expression,
        ast.BinOp,
        ast.UnaryOp,
        ast.Constant,
        ast.Name,
        ast.Call,
        ast.Load,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.Div,
        ast.Pow,
        ast.USub,
        ast.UAdd,
    )
    for node in ast.walk(expr):
        if not isinstance(node, allowed) or (
            isinstance(node, ast.Constant) and not isinstance(node.value, (int, float))
        ):
            raise ParameterError(
                f"hypothesis {text!r}: only b1..b{m}, numbers, + - * / ** and exp/log/sqrt/abs "
                f"are allowed ({type(node).__name__} is not)."
            )
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
            raise ParameterError(f"hypothesis {text!r}: the functions allowed are {sorted(_FUNCS)}.")
        if isinstance(node, ast.Name) and node.id not in _FUNCS:
            if not (node.id[0] == "b" and node.id[1:].isdigit() and 1 <= int(node.id[1:]) <= m):
                raise ParameterError(
                    f"hypothesis {text!r}: {node.id!r} is not a row; the rows are b1..b{m} "
                    "(numbered from 1 in the order printed)."
                )
    code = compile(expr, "<hypothesis>", "eval")

    def g(b: np.ndarray) -> np.ndarray:
        env = {f"b{k + 1}": b[k] for k in range(m)}
        with np.errstate(all="ignore"):
            return np.asarray(eval(code, {"__builtins__": {}, **_FUNCS}, env), dtype=float)  # noqa: S307 - AST checked

    return g, f"{lhs} = {rhs}"


def _term_near(lhs: str, rhs: str, offset: int | None) -> str:
    """The words of an equation around the place the parser stopped at (``offset`` into "(lhs) - (rhs)")."""
    if offset is None:
        return f"{lhs} = {rhs}"
    pos = offset - 2  # 1-based, after "("
    side, pos = (lhs, pos) if pos <= len(lhs) else (rhs, pos - len(lhs) - 5)
    words = side.split()
    ends = np.cumsum([len(w) + 1 for w in words])
    k = int(np.searchsorted(ends, max(pos, 0), side="right")) if words else 0
    return " ".join(words[max(k - 1, 0) : k + 1]) or side


def jacobian(g: Callable[..., Any], b: np.ndarray) -> np.ndarray:
    """d g / d b (one row per value of g) by central differences (step 1e-6 * max(1, |b_k|)): error O(step^2)
    for smooth g."""
    q = np.atleast_1d(g(b)).size
    out = np.empty((q, b.size))
    for k in range(b.size):
        h = 1e-6 * max(1.0, abs(b[k]))
        up, dn = b.copy(), b.copy()
        up[k] += h
        dn[k] -= h
        out[:, k] = (np.atleast_1d(g(up)) - np.atleast_1d(g(dn))) / (2 * h)
    return out


def transform(est: Estimates, g: Callable[..., Any], cov: np.ndarray | None = None) -> Estimates:
    """The estimate of a (possibly non-linear, possibly vector-valued) function ``g`` of the estimates, with its
    uncertainty: the delta method (gradient by central differences) for ``delta`` and ``sample`` estimates,
    ``g`` of each refit's draws for the bootstrap."""
    b = np.asarray(est.estimate, dtype=float)
    value = np.atleast_1d(g(b)).astype(float)
    q = value.size
    grad = jacobian(g, b)
    # to first order, the magnitude of the terms g combines (rounding in g is relative to them)
    scale = np.abs(np.nan_to_num(grad, nan=0.0)) @ np.nan_to_num(est.magnitude, nan=0.0)
    if est.method == "bootstrap":
        refits = cast(np.ndarray, est.draws)  # set for bootstrap
        draws = np.column_stack([np.atleast_1d(g(refits[:, k])) for k in range(refits.shape[1])])
        return Estimates(
            "bootstrap",
            value,
            draws=draws.astype(float).reshape(q, -1),
            ci=est.ci,
            n_failed=est.n_failed,
            errors=est.errors,
            scale=scale,
        )
    if est.method == "delta":
        df = None if est.df is None else np.full(q, float(np.min(est.df)))
        return Estimates("delta", value, grad=grad @ est.grad, vcov=est.vcov, df=df, scale=scale, basis=est.basis)
    c = covariance(est) if cov is None else cov
    se = np.sqrt(np.maximum(np.diag(grad @ c @ grad.T), 0.0))
    return Estimates("sample", value, se=se, df=np.full(q, np.inf), scale=scale)


def equivalence_columns(
    table: pd.DataFrame, estimate: np.ndarray, equivalence: Any, df: np.ndarray | None = None
) -> pd.DataFrame:
    """Two one-sided tests (TOST) against ``equivalence = [low, high]``, with marginaleffects' names:
    ``statistic_noninf`` = (estimate - low) / se, ``p_value_noninf`` its upper tail (H0: theta <= low);
    ``statistic_nonsup`` = (estimate - high) / se, ``p_value_nonsup`` its lower tail (H0: theta >= high);
    ``p_value_equiv`` the larger of the two. Normal quantiles, t with ``df`` where given (sample). A row
    whose ``note`` says its test is not valid (:func:`validity_note`) gets NaN statistics and p-values."""
    try:
        low, high = (float(v) for v in equivalence)
    except (TypeError, ValueError):
        raise ParameterError(f"equivalence must be [low, high], got {equivalence!r}.") from None
    if not (np.isfinite(low) and np.isfinite(high)) or low > high:
        raise ParameterError(f"equivalence must be two finite numbers with low <= high, got {equivalence!r}.")
    se = table["std_error"].to_numpy(dtype=float)
    t_df = None if df is None else np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        s_lo = (estimate - low) / se
        s_hi = (estimate - high) / se
    if "note" in table.columns:
        # the standard error that rules out a test of 0 rules out a test of the bounds too
        bad = table["note"].fillna("").astype(bool).to_numpy()
        s_lo, s_hi = np.where(bad, np.nan, s_lo), np.where(bad, np.nan, s_hi)
    out = table.copy()
    out["statistic_noninf"], out["p_value_noninf"] = s_lo, norm_sf(s_lo) if t_df is None else t_sf(s_lo, t_df)
    out["statistic_nonsup"], out["p_value_nonsup"] = s_hi, norm_cdf(s_hi) if t_df is None else t_cdf(s_hi, t_df)
    out["p_value_equiv"] = np.fmax(out["p_value_noninf"].to_numpy(), out["p_value_nonsup"].to_numpy())
    return out


def stack_estimates(parts: list[Estimates]) -> Estimates | None:
    """One :class:`Estimates` of the rows of several (the table's rows in order); None when they do not
    share one method (then no joint covariance is known)."""
    parts = [p for p in parts if p is not None]
    if not parts or len({p.method for p in parts}) != 1:
        return None
    # unconditional estimates of different calls are written in different bases of their rows
    if any(p.basis is not parts[0].basis for p in parts):
        return None
    est = np.concatenate([np.asarray(p.estimate, dtype=float) for p in parts])
    scale = None if all(p.scale is None for p in parts) else np.concatenate([p.magnitude for p in parts])
    method = parts[0].method
    if method == "delta":
        # t degrees of freedom (df=) stay with the rows when every part has them
        df = None if any(p.df is None for p in parts) else np.concatenate([np.asarray(p.df, float) for p in parts])
        grads = [cast(np.ndarray, p.grad) for p in parts]  # set for delta
        return Estimates(
            "delta", est, grad=np.vstack(grads), vcov=parts[0].vcov, df=df, scale=scale, basis=parts[0].basis
        )
    if method == "bootstrap":
        draws = [cast(np.ndarray, p.draws) for p in parts]  # set for bootstrap
        if len({d.shape[1] for d in draws}) != 1:
            return None
        return Estimates(
            "bootstrap",
            est,
            draws=np.vstack(draws),
            ci=parts[0].ci,
            n_failed=parts[0].n_failed,
            errors=parts[0].errors,
            scale=scale,
        )
    return Estimates(
        "sample",
        est,
        se=np.concatenate([cast(np.ndarray, p.se) for p in parts]),
        df=np.concatenate([p.df for p in parts]),
        scale=scale,
    )
