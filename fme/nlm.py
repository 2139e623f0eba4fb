"""The non-linearity measure (NLM) of forward marginal effects (paper §5.4).

Along the path gamma(t) = x + t h, t in [0, 1], the NLM compares the
prediction with the secant g(t) = f(x) + t fME:

    NLM = 1 - int_0^1 (f(gamma(t)) - g(t))^2 dt / int_0^1 (f(gamma(t)) - fbar)^2 dt,
    fbar = int_0^1 f(gamma(t)) dt.

The path length ||h|| of the line integrals cancels. Both integrals and
``fbar`` use the same quadrature rule, as the paper's code does.

Methods (``nlm_method``): ``"exact"`` for tree ensembles (closed forms over
the piecewise-constant path, :mod:`fme._nlm.exact`); ``"gauss-kronrod"``: the
10-node Gauss-Legendre rule with its 21-node Kronrod extension, whose
difference is a per-row error estimate, with adaptive subdivision of the rows
that miss ``nlm_tol``; ``"gauss-legendre"`` (fixed nodes, no estimate);
``"simpson38"`` (the paper's code); ``"auto"`` (default): exact where
supported, Gauss-Kronrod otherwise.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy.special import roots_legendre

from .exceptions import ParameterError

__all__ = ["NLM_METHODS", "QuadratureRule", "quadrature_rule", "gauss_kronrod_rules", "nlm_from_path"]

NLM_METHODS = ("auto", "exact", "gauss-kronrod", "gauss-legendre", "simpson38")
#: Methods that are a fixed quadrature rule (see :func:`quadrature_rule`).
QUADRATURE_METHODS = ("gauss-legendre", "simpson38")
#: Default ``nlm_tol``: the a-posteriori error bound per row of the Gauss-Kronrod NLM.
DEFAULT_NLM_TOL = 1e-6
#: Default ``nlm_max_level``: at most 2**5 = 32 sub-intervals x 21 nodes per row.
DEFAULT_MAX_LEVEL = 5
# Gauss-Kronrod (10, 21) on [-1, 1] (QUADPACK qk21): non-negative abscissae, largest first;
# odd positions (1, 3, ...) are the 10-point Gauss nodes.
_GK21_X = (
    0.995657163025808080735527280689003,
    0.973906528517171720077964012084452,
    0.930157491355708226001207180059508,
    0.865063366688984510732096688423493,
    0.780817726586416897063717578345042,
    0.679409568299024406234327365114874,
    0.562757134668604683339000099272694,
    0.433395394129247190799265943165784,
    0.294392862701460198131126603103866,
    0.148874338981631210884826001129720,
    0.0,
)
_GK21_K = (
    0.011694638867371874278064396062192,
    0.032558162307964727478818972459390,
    0.054755896574351996031381300244580,
    0.075039674810919952767043140916190,
    0.093125454583697605535065465083366,
    0.109387158802297641899210590325805,
    0.123491976262065851077958109831074,
    0.134709217311473325928054001771707,
    0.142775938577060080797094273138717,
    0.147739104901338491374841515972068,
    0.149445554002916905664936468389821,
)
_GK21_G = (
    0.066671344308688137593568809893332,
    0.149451349150580593145776339657697,
    0.219086362515982043995534934228163,
    0.269266719309996355091226921569469,
    0.295524224714752870173892994651338,
)
#: Gauss-Legendre nodes by default: exact for polynomial paths of degree <= 2*16 - 1
#: in (f - g)^2, and ~1e-12 on smooth kernels such as an RBF SVM over a moderate step.
DEFAULT_GL_POINTS = 16
#: The NLM is 0/0 (status ``constant``) when the SD of f along the path is at most
#: CONSTANT_ULPS * eps * scale, scale = |f(x)| + max |f - f(x)| on the path (between
#: max |f| and 3 max |f|): the path does not vary beyond the rounding of its own values.
CONSTANT_ULPS = 64
#: ... and undefined (status ``flat``, NLM NaN) up to FLAT_ULPS * eps * scale, a few
#: hundred ulps of max |f|: values rounded to r ulps perturb the NLM by up to about
#: 2 rho (sqrt(1 - NLM) + 1 - NLM), rho = r / (SD / (eps max |f|)), i.e. by a few
#: percent at this threshold for r = 1-2, and in proportion to 1 / SD above it.
FLAT_ULPS = 256


@dataclass(frozen=True)
class QuadratureRule:
    """Nodes ``t`` in [0, 1] and weights summing to 1.

    ``interior`` marks the nodes that need a prediction; the endpoints t = 0
    and t = 1 reuse f(x) and f(x + h).
    """

    method: str
    nodes: np.ndarray
    weights: np.ndarray

    @property
    def interior(self) -> np.ndarray:
        return (self.nodes > 0.0) & (self.nodes < 1.0)

    @property
    def n_evaluations(self) -> int:
        """Extra predictions per observation (beyond f(x) and f(x + h))."""
        return int(self.interior.sum())


def _positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def quadrature_rule(
    method: str = "gauss-legendre", points: int | None = None, intervals: int | None = None
) -> QuadratureRule:
    """Build the quadrature rule for the NLM integrals.

    Parameters
    ----------
    method : {'gauss-legendre', 'simpson38'}, default='gauss-legendre'
        ``gauss-legendre``: ``points`` Gauss-Legendre nodes mapped to [0, 1]
        (scipy's ``roots_legendre``), exact for polynomials of degree
        ``2*points - 1``. ``simpson38``: composite Simpson 3/8 rule with
        ``intervals`` sub-intervals (nodes t = j / (3k)), the rule used by the
        paper's code and the R package fmeffects.
    points : int, optional
        Gauss-Legendre nodes (default 16, at least 2). Only for ``gauss-legendre``.
    intervals : int, optional
        Simpson 3/8 sub-intervals (default 1). Only for ``simpson38``.
    """
    if method not in QUADRATURE_METHODS:
        raise ParameterError(f"unknown nlm_method {method!r}; use one of {', '.join(NLM_METHODS)}.")
    if method == "gauss-legendre":
        if intervals is not None:
            raise ParameterError("nlm_intervals applies to nlm_method='simpson38'; use nlm_points for Gauss-Legendre.")
        # one node cannot see any variation along the path (II = 0): every NLM would be NaN
        m = DEFAULT_GL_POINTS if points is None else _positive_int(points, "nlm_points", minimum=2)
        x, w = roots_legendre(m)
        return QuadratureRule(method, (x + 1.0) / 2.0, w / 2.0)
    if points is not None:
        raise ParameterError("nlm_points applies to nlm_method='gauss-legendre'; use nlm_intervals for Simpson 3/8.")
    k = 1 if intervals is None else _positive_int(intervals, "nlm_intervals")
    nodes = np.arange(3 * k + 1) / (3 * k)
    coef = np.where(np.arange(3 * k + 1) % 3 == 0, 2.0, 3.0)
    coef[0] = coef[-1] = 1.0
    return QuadratureRule(method, nodes, coef / (8.0 * k))


def gauss_kronrod_rules(intervals: int = 1) -> tuple[QuadratureRule, QuadratureRule]:
    """Composite Gauss-Kronrod (10, 21) on ``intervals`` equal sub-intervals of [0, 1].

    Returns the Kronrod rule and the Gauss rule on the *same* nodes (the
    Gauss weights are 0 at the Kronrod-only nodes), so one set of predictions
    gives both; their NLMs differ by the error estimate.
    """
    x = np.array(_GK21_X[:-1] + (0.0,) + tuple(-v for v in reversed(_GK21_X[:-1])))
    kw = np.array(_GK21_K[:-1] + (_GK21_K[-1],) + tuple(reversed(_GK21_K[:-1])))
    gw = np.zeros(21)
    g_half = np.array(_GK21_G)
    gw[1:10:2] = g_half
    gw[11:21:2] = g_half[::-1]
    order = np.argsort(x)
    x, kw, gw = x[order], kw[order], gw[order]
    k = int(intervals)
    starts = np.arange(k) / k
    nodes = (starts[:, None] + (x[None, :] + 1.0) / (2.0 * k)).ravel()
    kron = np.tile(kw / (2.0 * k), k)
    gauss = np.tile(gw / (2.0 * k), k)
    return QuadratureRule("gauss-kronrod", nodes, kron), QuadratureRule("gauss-kronrod", nodes, gauss)


def nlm_from_path(
    f0: np.ndarray,
    f1: np.ndarray,
    f_interior: np.ndarray,
    rule: QuadratureRule,
    return_sd: bool = False,
    return_scale: bool = False,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """NLM for many paths at once from predictions along them.

    Parameters
    ----------
    f0, f1 : ndarray of shape (n,) or (n, c)
        f(x) and f(x + h).
    f_interior : ndarray of shape (k, n) or (k, n, c)
        Predictions at the rule's interior nodes, in node order.
    rule : QuadratureRule

    return_sd : bool, default=False
        Also return the SD of f along the path (square root of the second
        integral), used to tell flat paths (:func:`fme._nlm.evaluate.classify`).
    return_scale : bool, default=False
        Also return the level of the path's values, |f(x)| + max |f - f(x)|
        over the nodes (the rounding scale of :data:`FLAT_ULPS`); implies ``return_sd``.

    Returns
    -------
    ndarray of shape (n,) or (n, c)
        NaN where f is constant along the path (the NLM is 0/0, undefined).
        With ``return_sd``: (nlm, sd); with ``return_scale``: (nlm, sd, scale).
    """
    f0 = np.asarray(f0, dtype=float)
    f1 = np.asarray(f1, dtype=float)
    f_interior = np.asarray(f_interior, dtype=float)
    fme = f1 - f0
    # Work relative to f(x): a constant path then gives exact zeros, not rounding noise.
    # One node at a time with element-wise operations only (no reductions over a
    # batch-shaped array, no BLAS): every row's result is then bit-for-bit the same
    # whatever the batch size or memory layout, temporaries stay O(n), and the two
    # sums are taken directly (two passes) instead of via cancelling expansions
    # such as S2 - mean^2.
    interior = np.cumsum(rule.interior) - 1

    def dev(k: int) -> np.ndarray:
        if rule.nodes[k] == 0.0:
            return np.zeros_like(f0)
        if rule.nodes[k] == 1.0:
            return fme
        return f_interior[interior[k]] - f0

    mean = np.zeros_like(f0)
    for k in range(rule.nodes.size):
        mean += rule.weights[k] * dev(k)
    num = np.zeros_like(f0)
    den = np.zeros_like(f0)
    scale = np.zeros_like(f0)
    for k in range(rule.nodes.size):
        d = dev(k)
        num += rule.weights[k] * (d - rule.nodes[k] * fme) ** 2
        den += rule.weights[k] * (d - mean) ** 2
        np.maximum(scale, np.abs(d), out=scale)
    scale += np.abs(f0)
    with np.errstate(over="ignore"):  # |f| near float max: the threshold is inf, the path counts as flat
        undefined = den <= (CONSTANT_ULPS * np.finfo(float).eps * scale) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - num / den
    out[undefined] = np.nan
    if return_scale:
        return out, np.sqrt(den), scale
    if return_sd:
        return out, np.sqrt(den)
    return out
