"""When a Wald test is a test: its hypothesis must be identified and its standard errors above rounding.

A Wald statistic ``W = c' S^+ c`` of q contrasts ``c = R theta`` of m estimates is a number whatever its
inputs; it is a test only when

(a) the hypothesis is identified. Write the contrasts' covariance as ``S = (R F)(R F)'`` with F the factor
    of the estimates' covariance: under the delta method ``F = J V^{1/2}`` (J the m x k Jacobian of the
    estimates in the parameters, V their covariance, so that the k columns are the parameter directions
    measured in standard deviations), for the bootstrap the centred refits' draws over ``sqrt(B - 1)``, for
    ``sample`` estimates over disjoint rows ``diag(se)``. ``r = rank(R F)`` is the number of independent
    directions the contrasts vary in, and the test has r degrees of freedom (a generalised inverse when
    ``r < q``, as pairwise differences need: they are linearly dependent). ``d = rank(F)`` over the
    estimates the hypothesis involves is the number of parameter directions those estimates depend on.
    ``rank(R F) = d - dim(col F  ∩  null R)``, so ``r = d`` says that no parameter direction moves the
    estimates within the set the hypothesis allows (``null R``; for "all equal": a common level). A
    hypothesis that allows a set of values (``rank R`` below the number of estimates involved) but that the
    model can reach only at a point is not identified as the hypothesis it states: its linearisation fixes
    every parameter direction, and under the delta method the statistic then depends on the contrasts
    only through that point. Under a log link every estimate scales with ``exp(b0)``, so the estimates lie
    in the span of their own Jacobian (``J e_0 = theta``), ``c = R J e_0`` and with ``r = d = k``
    ``W = e_0' V^{-1} e_0``: the intercept's information (for a Poisson GLM the sum of the fitted counts),
    whatever the leaves (paper §5.5's leaf cAMEs, 7 leaves of a 6-parameter model). At the null
    (``R theta = 0``) ``R J e_0 = R theta = 0``: ``e_0`` falls into the null space of ``R J``, whose rank
    there is below d, while at the estimate it is d: the chi-squared limit does not hold. From first derivatives
    alone this cannot be told
    apart from a model whose estimates are equal only at a point, such as all zero (an effect ``b2 z`` made
    of one interaction coefficient: equal leaves mean ``b2 = 0``); there the statistic is valid but tests no
    effect rather than equal effects, and it is refused too. The rule applies to the delta method, the only one
    whose columns are parameter directions; for the bootstrap the covariance must have more refits than
    independent contrasts (else its rank is set by the refits, not by the contrasts); estimates over
    disjoint rows (``sample``) are independent, so every hypothesis on them is identified.

(b) every standard error is above rounding: a standard error below ``ROUNDING_TOL`` times the scale of
    what it measures (the larger of the estimate, the magnitude of the estimates it combines and, for a
    contrast, the standard error it would have without cancellation) is the rounding of a quantity that
    does not vary, and its statistic (7.3e16 from an SE of 6.7e-18 for an estimate of 0.21) is rounding
    too.

Ranks are counted by singular values of the factor with its rows scaled to the magnitude of their terms
(:func:`numerical_rank`): rounding in a row is then of order machine epsilon relative to 1, and a singular
value counts when it exceeds ``ROUNDING_TOL`` (``sqrt(eps)``, about 1.5e-8) times the largest. The square
root leaves eight orders of magnitude between rounding (about 1e-16) and the tolerance, wide enough for
Jacobians by central differences (error about 1e-10 relative), and a direction 1e8 times less precise than
another carries no information a statistic could use.

A test that fails (a) or (b) has NaN statistic and p-value and a ``note`` saying why in words.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from .._utils.numfmt import fmt_g

__all__ = ["ROUNDING_TOL", "identification_note", "numerical_rank", "rounding_mask", "rounding_note"]

#: Relative tolerance separating genuine rank and precision from rounding: sqrt(machine epsilon).
ROUNDING_TOL = float(np.sqrt(np.finfo(float).eps))


def numerical_rank(M: np.ndarray, row_scale: np.ndarray | None = None) -> int:
    """The rank of ``M`` that rounding does not make: singular values of ``diag(1/row_scale) M`` above
    :data:`ROUNDING_TOL` times the largest.

    Parameters
    ----------
    M : ndarray (q, p)
    row_scale : ndarray (q,), optional
        The magnitude of the terms each row sums (its rounding is relative to it); default: the rows' norms.
        Rows of zero scale are zero and count for nothing.

    Returns
    -------
    int
    """
    M = np.atleast_2d(np.asarray(M, dtype=float))
    if M.size == 0:
        return 0
    scale = np.linalg.norm(M, axis=1) if row_scale is None else np.asarray(row_scale, dtype=float)
    keep = scale > 0
    if not keep.any():
        return 0
    sv = np.linalg.svd(M[keep] / scale[keep, None], compute_uv=False)
    return int(np.sum(sv > ROUNDING_TOL * sv[0])) if sv.size and sv[0] > 0 else 0


def rounding_mask(se: np.ndarray, estimate: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """Where a standard error is at rounding level: ``se <= ROUNDING_TOL * max(|estimate|, scale)``.

    ``scale``: the magnitude of what the estimate is made of (the estimates a contrast combines, the
    standard error without cancellation); rounding is relative to the largest. A zero standard error of a
    zero estimate counts as rounding too (nothing varies). NaN standard errors are not flagged (they are
    undefined for another reason, which their own figures show).
    """
    se = np.asarray(se, dtype=float)
    size = np.abs(np.asarray(estimate, dtype=float))
    if scale is not None:
        size = np.fmax(size, np.asarray(scale, dtype=float))
    with np.errstate(invalid="ignore"):
        return cast(np.ndarray, np.isfinite(se) & (se <= ROUNDING_TOL * np.nan_to_num(size, nan=0.0)))


def rounding_note(se: float, estimate: float, what: str = "") -> str:
    """``"standard error at rounding level (6.7e-18 for an estimate of 0.21)"``; ``what`` names the
    estimate (``"contrast 3"``: ``"(8.3e-17 for contrast 3, an estimate of -8.9e-16)"``)."""
    whose = f"{what}, an estimate" if what else "an estimate"
    return (
        f"standard error at rounding level ({fmt_g(se, 2)} for {whose} of {fmt_g(estimate + 0.0, 2)}): the "
        "quantity does not vary, so no test applies"
    )


def identification_note(q: int, d: int) -> str:
    """Why ``q`` contrasts that fix all ``d`` parameter directions of their estimates are not identified
    (``q >= d``)."""
    dirs = f"{d} parameter direction{'s' if d != 1 else ''}"
    if q > d:
        head = (
            f"{q} contrasts but the estimates depend on only {dirs}, "
            f"{'all of which' if d != 1 else 'which'} the contrasts fix"
        )
    else:
        head = (
            f"the {q} contrasts fix all {dirs} the estimates depend on"
            if q != 1
            else "the contrast fixes the one parameter direction the estimates depend on"
        )
    return (
        f"not identified: {head}; none is left for the values the hypothesis allows (such as a common "
        "level), so the Wald statistic would measure the parameters' precision, not the hypothesis"
    )
