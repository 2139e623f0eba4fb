"""The unified (Feldman-Cousins) confidence interval for the noncentrality of an F statistic.

The one-way ANOVA of an effect's fMEs on a partition's regions (:meth:`fme.JointPartitionResult.heterogeneity`)
has the statistic F ~ F'(df1, df2, lambda), noncentral with lambda >= 0, and the regions' explained share is
eta^2 = lambda / (lambda + n) (Steiger 2004, Psychol. Methods 9, 164-182). Inverting F's CDF at alpha/2 and
1 - alpha/2 gives an equal-tailed interval that covers a true lambda = 0 with probability 1 - alpha/2, not
1 - alpha, because its lower bound cannot fall below 0. The unified construction of Feldman & Cousins (1998,
Phys. Rev. D 57, 3873-3889) is a Neyman belt whose acceptance regions are ordered by the likelihood ratio

    R(F; lambda) = p(F | lambda) / p(F | lambda_best(F)),   lambda_best(F) = argmax_{lambda >= 0} p(F | lambda),

so that it covers every lambda >= 0, 0 included, with probability exactly 1 - alpha, and its lower bound leaves 0
exactly when the F test of lambda = 0 rejects at alpha.

Computation. The densities are the Poisson mixture of beta densities summed in log space (:func:`ncf_logpdf`:
equal to scipy's ``ncf.pdf`` to about 1e-10 where that is a normal number, and finite far in the tails where it
underflows to 0, as the likelihood ratios at a region's ends need); the CDF is scipy's (``special.ncfdtr``,
Boost's noncentral beta). lambda_best(F) is 0 for F <= 1 (the score at lambda = 0 is positive exactly when F > 1)
and otherwise the root of the score, found by a safeguarded Newton iteration from the identity
d p_a / d lambda = (p_{a+1} - p_a) / 2 of the noncentral beta density in its first shape a = df1 / 2. R is
unimodal in F (the family has a monotone likelihood ratio), so every acceptance region is an interval [F1, F2]
with R(F1) = R(F2) (or F1 = 0), and the confidence set of an observed f is the interval [lambda_L, lambda_U]
where f is the upper (lower) end of the region. Each end
is found by one root search over the region's other end, F1 (F2), with lambda the root of R(f; lambda) =
R(F1; lambda) between lambda_best(F1) and lambda_best(f); every search is bracketed, so it cannot wander.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

__all__ = ["NcfUnavailable", "UnifiedInterval", "acceptance_region", "lambda_best", "ncf_logpdf", "unified_interval"]


def _floor(f_value: float, df1: float, df2: float) -> float:
    """A lower end for searches over F in (0, f): below it the central F holds less than 1e-12 (and so does
    every noncentral one), and its density there is still a normal number."""
    return min(0.5 * min(f_value, 1.0), float(stats.f.ppf(1e-12, df1, df2)))


class NcfUnavailable(ArithmeticError):
    """The construction cannot be computed here: scipy's noncentral F CDF is NaN (its series does not converge) or
    the density's Poisson sum would need more than :data:`_MAX_TERMS` terms (lambda beyond about 8e8)."""


def _check(value: np.ndarray | float) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if np.isnan(arr).any():
        raise NcfUnavailable("scipy's noncentral F returned NaN")
    return arr


#: The most Poisson terms one density sums (about 30 sqrt(lambda / 2) are needed): lambda up to about 8e8.
_MAX_TERMS = 600_000


def _log_ncbeta(log_x: float, log_1mx: float, a: np.ndarray, b: float, mu: float) -> np.ndarray:
    """log of the noncentral beta density sum_k Pois(k; mu) Beta(a + k, b)(x), for an array of first shapes ``a``,
    summed in log space over a window of 15 SDs of the mixing index either side of the largest term (no
    underflow far in the tails; the terms left out are below exp(-100) of the sum)."""
    head = (a - 1.0) * log_x + (b - 1.0) * log_1mx - special.betaln(a, b)
    if mu <= 0:
        return head
    # the largest term: the ratio of consecutive terms mu x (a + b + k) / ((k + 1)(a + k)) crosses 1
    mx = mu * np.exp(log_x)
    p = a + 1.0 - mx
    k_star = np.maximum(0.0, (-p + np.sqrt(np.maximum(p * p - 4.0 * (a - mx * (a + b)), 0.0))) / 2.0)
    width = float(15.0 * np.sqrt(k_star.max() + 1.0) + 30.0)
    if 2.0 * width > _MAX_TERMS:
        raise NcfUnavailable("the noncentral F's Poisson mixture has too many terms to sum")
    first = max(0.0, np.floor(k_star.min() - width))
    k = np.arange(first, np.ceil(k_star.max() + width) + 1.0)
    # the first term in closed form, the others by the log ratios of consecutive terms (a cumulative sum)
    a_col = a[:, None]
    start = -mu + first * np.log(mu) - special.gammaln(first + 1.0) + head + first * log_x
    start = start + special.betaln(a, b) - special.betaln(a + first, b)
    ratio = np.log(mu) + log_x + np.log(a_col + b + k[:-1]) - np.log(k[:-1] + 1.0) - np.log(a_col + k[:-1])
    terms = np.concatenate([start[:, None], start[:, None] + np.cumsum(ratio, axis=1)], axis=1)
    top = terms.max(axis=1)
    return top + np.log(np.exp(terms - top[:, None]).sum(axis=1))


def ncf_logpdf(f_value: float, df1: float, df2: float, lam: float, extra: int = 0) -> np.ndarray:
    """log p(F | lambda) of the noncentral F(df1, df2, lambda) at F = ``f_value`` > 0, and with ``extra`` = 1, 2
    the log noncentral beta densities with the first shape raised by 1, 2 at the same beta variable x = df1 F /
    (df1 F + df2), each with the same Jacobian dx/dF (so their differences are log p_{a+j} / p_a). The Poisson
    mixture of beta densities (Johnson, Kotz & Balakrishnan 1995, ch. 30), summed in log space: finite far in
    the tails where scipy's ``ncf.pdf`` underflows to 0; equal to it to about 1e-10 relative elsewhere."""
    log_num, log_den = np.log(df1 * f_value), np.log(df2)
    log_sum = np.logaddexp(log_num, log_den)
    log_x, log_1mx = log_num - log_sum, log_den - log_sum
    a = df1 / 2.0 + np.arange(extra + 1, dtype=float)
    log_jac = np.log(df1) + np.log(df2) - 2.0 * log_sum
    return _log_ncbeta(float(log_x), float(log_1mx), a, df2 / 2.0, lam / 2.0) + log_jac


def _cdf(f_value: float, df1: float, df2: float, lam: float) -> float:
    """P(F <= f | lambda) (scipy's ``ncfdtr``, the ufunc behind ``stats.ncf.cdf``)."""
    if f_value <= 0:
        return 0.0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        value = special.ncfdtr(df1, df2, lam, f_value) if lam > 0 else special.fdtr(df1, df2, f_value)
    return float(np.clip(_check(value), 0.0, 1.0))


def _finite(x: float) -> float:
    """A log-likelihood difference for a bracketed root search: +-inf (a density underflowed far in a tail,
    which fixes the sign) becomes a large finite number of that sign."""
    return float(np.clip(x, -1e300, 1e300))


def _score_ratios(f_value: float, df1: float, df2: float, lam: float) -> tuple[float, float]:
    """(r1, r2) = (p_{a+1} / p_a, p_{a+2} / p_a) of the noncentral beta densities of x = df1 F / (df1 F + df2)
    (first shape a = df1 / 2 raised by 1 and 2): the score of lambda is (r1 - 1) / 2 and its derivative
    (r2 - r1^2) / 4 (from d p_a / d lambda = (p_{a+1} - p_a) / 2)."""
    logs = ncf_logpdf(f_value, df1, df2, lam, extra=2)
    with np.errstate(over="ignore"):
        return float(np.exp(logs[1] - logs[0])), float(np.exp(logs[2] - logs[0]))


def lambda_best(f_value: float, df1: float, df2: float) -> float:
    """The maximum likelihood estimate argmax_{lambda >= 0} p(f | lambda) of the noncentral F's noncentrality.

    0 when f <= 1 (the score at lambda = 0, ((a + b) x / a - 1) / 2 with x the beta variable, is positive exactly
    when f > 1; the likelihood, a Poisson mixture with log-concave weights in its index, is taken as
    unimodal in lambda, so 0 is then the maximum: the tests check it against a bounded search of scipy's
    density); otherwise the root of the score by Newton's method safeguarded by a bracket (relative precision
    about 1e-12).

    Raises
    ------
    NcfUnavailable
        Where the density's Poisson sum is too long (see :class:`NcfUnavailable`).
    """
    if not f_value > 1.0:
        return 0.0
    guess = max(df1 * (f_value * max(df2 - 2.0, 1.0) / df2 - 1.0), 1e-3)
    # about the estimate's SD: the numerator's noncentral chi-square and the denominator's chi-square(df2)
    spread = 6.0 * np.sqrt(2.0 * (df1 + 2.0 * guess) + 2.0 * guess**2 / df2)

    lo, hi = 0.0, guess + spread
    for _ in range(200):  # the bracket's upper end: a negative score
        if _score_ratios(f_value, df1, df2, hi)[0] < 1.0:
            break
        lo, hi = hi, 2.0 * hi
    lam = min(max(guess, lo), hi)
    for _ in range(100):
        r1, r2 = _score_ratios(f_value, df1, df2, lam)
        s = r1 - 1.0
        if s > 0:
            lo = lam
        else:
            hi = lam
        slope = (r2 - r1 * r1) / 2.0
        step = -s / slope if slope < 0 else np.inf
        new = lam + step
        if not lo < new < hi:  # Newton left the bracket: bisect
            new = 0.5 * (lo + hi)
        if abs(new - lam) <= 1e-13 * (1.0 + lam) or hi - lo <= 1e-13 * (1.0 + hi):
            return float(new)
        lam = new
    return float(lam)


@dataclass
class _Point:
    """An F value with its lambda_best and the log-likelihood there, computed once."""

    f: float
    best: float
    loglik_best: float

    @classmethod
    def at(cls, f_value: float, df1: float, df2: float) -> _Point:
        best = lambda_best(f_value, df1, df2)
        return cls(f_value, best, float(ncf_logpdf(f_value, df1, df2, best)[0]))

    def log_ratio(self, lam: float, df1: float, df2: float) -> float:
        """log R(f; lambda) <= 0."""
        return float(ncf_logpdf(self.f, df1, df2, lam)[0]) - self.loglik_best


def _root(fun: object, lo: float, hi: float, xtol: float) -> float:
    return float(optimize.brentq(fun, lo, hi, xtol=xtol, rtol=1e-13, maxiter=300))  # type: ignore[call-overload]


def _crossing(obs: _Point, other: _Point, df1: float, df2: float) -> float:
    """The lambda between the two points' lambda_best at which R(obs; lambda) = R(other; lambda) (unique: the
    log-ratio difference is monotone in lambda by the monotone likelihood ratio)."""
    lo, hi = sorted((obs.best, other.best))
    if hi <= lo:
        return lo

    def phi(lam: float) -> float:
        return _finite(obs.log_ratio(lam, df1, df2) - other.log_ratio(lam, df1, df2))

    return _root(phi, lo, hi, 1e-12 * (1.0 + hi))


def _lower_end(obs: _Point, df1: float, df2: float, alpha: float) -> float:
    """lambda_L: the least lambda whose acceptance region holds f, 0 when the F test does not reject at alpha."""
    f = obs.f
    level = 1.0 - alpha
    if not f > float(stats.f.ppf(level, df1, df2)):
        return 0.0
    # R(0; lambda) = exp(-lambda / 2) (the density ratio's limit at F -> 0); below lambda_c it is under R(f;
    # lambda), so the region {R > R(f)} is [0, f) and f is its upper end where P(F <= f | lambda) = 1 - alpha
    lam_c = _root(lambda lam: _finite(obs.log_ratio(lam, df1, df2) + lam / 2.0), 0.0, obs.best, 1e-12)
    if _cdf(f, df1, df2, lam_c) <= level:
        return _root(lambda lam: _cdf(f, df1, df2, lam) - level, 0.0, lam_c, 1e-12 * (1.0 + lam_c))
    cache: dict[float, float] = {}

    def gap(f1: float) -> float:
        if f1 >= f:
            return -level
        other = _Point.at(f1, df1, df2)
        lam = cache[f1] = _crossing(obs, other, df1, df2)
        return _cdf(f, df1, df2, lam) - _cdf(f1, df1, df2, lam) - level

    f_lo = _floor(f, df1, df2)
    if gap(f_lo) <= 0:  # the region's lower end is below f_lo, where P(F < f_lo | lambda) < 1e-12
        return cache.get(f_lo, lam_c)
    f1 = _root(gap, f_lo, f, 1e-14 * f)
    gap(f1)
    return cache[f1]


def _upper_end(obs: _Point, df1: float, df2: float, alpha: float) -> float:
    """lambda_U: the greatest lambda whose acceptance region holds f (f its lower end)."""
    f = obs.f
    level = 1.0 - alpha
    start = max(f, 1.0)
    cache: dict[float, float] = {}

    def gap(f2: float) -> float:
        if f2 <= start:
            return _cdf(1.0, df1, df2, 0.0) - _cdf(f, df1, df2, 0.0) - level if f < 1.0 else -level
        other = _Point.at(f2, df1, df2)
        lam = cache[f2] = _crossing(obs, other, df1, df2)
        return _cdf(f2, df1, df2, lam) - _cdf(f, df1, df2, lam) - level

    if gap(start) >= 0:  # f below 1 and a level under P(f < F <= 1 | 0): f leaves the belt at any lambda > 0
        return 0.0
    # a first bracket from the equal-tailed bound's region: F2 beyond the (1 - alpha/2)-quantile there
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        lam_et = float(special.ncfdtrinc(df1, df2, alpha / 2.0, f))
        top = float(stats.ncf.ppf(1.0 - alpha / 4.0, df1, df2, lam_et)) if np.isfinite(lam_et) else np.nan
    hi = top if np.isfinite(top) and top > start else 2.0 * start + 1.0
    lo = start
    for _ in range(200):
        if gap(hi) > 0:
            break
        lo, hi = hi, start + 2.0 * (hi - start)
    else:
        raise NcfUnavailable("no upper end found for the acceptance region")
    f2 = _root(gap, lo, hi, 1e-14 * hi)
    gap(f2)
    return cache[f2]


@dataclass(frozen=True)
class UnifiedInterval:
    """The unified interval [lambda_low, lambda_high] of the noncentrality and the estimate lambda_best."""

    lambda_low: float
    lambda_high: float
    lambda_best: float


def unified_interval(f_value: float, df1: float, df2: float, conf_level: float = 0.95) -> UnifiedInterval:
    """The unified (Feldman-Cousins) confidence interval of the noncentrality lambda >= 0 of an F statistic.

    Parameters
    ----------
    f_value : float
        The observed statistic, >= 0.
    df1, df2 : float
        Its degrees of freedom (> 0; not necessarily integers).
    conf_level : float, default=0.95

    Returns
    -------
    UnifiedInterval
        ``lambda_low <= lambda_high`` and the estimate ``lambda_best`` (in the interval).

    Notes
    -----
    The Neyman belt of Feldman & Cousins (1998, Phys. Rev. D 57, 3873) on F ~ F'(df1, df2, lambda), acceptance
    regions ordered by R(F; lambda) = p(F | lambda) / p(F | lambda_best(F)): each region holds probability
    conf_level exactly, so the interval covers every true lambda >= 0 (0 included) with probability conf_level;
    lambda_low > 0 exactly when the central F test rejects lambda = 0 at alpha = 1 - conf_level (the region at
    lambda = 0 is [0, F_crit], R(F; 0) being 1 for F <= 1 and falling above). The bounds are found to a relative
    precision of about 1e-10. Assumes F is an F statistic with the stated degrees of freedom (for the ANOVA: fixed
    groups, independent normal errors with one variance; Steiger 2004).

    Raises
    ------
    NcfUnavailable
        Where scipy's noncentral F CDF is NaN (its series does not converge) or the density's Poisson sum is too
        long (lambda beyond about 8e8); the caller falls back to an approximation.
    """
    alpha = 1.0 - conf_level
    # F = 0 (every region's mean equal to rounding) as the least positive F: R(F; lambda) is continuous at 0
    obs = _Point.at(max(float(f_value), 1e-200), float(df1), float(df2))
    low = _lower_end(obs, float(df1), float(df2), alpha)
    high = _upper_end(obs, float(df1), float(df2), alpha)
    return UnifiedInterval(low, max(high, low), obs.best)


def acceptance_region(lam: float, df1: float, df2: float, conf_level: float = 0.95) -> tuple[float, float]:
    """The belt's acceptance region [F1, F2] at noncentrality ``lam``: P(F1 <= F <= F2 | lam) = conf_level and
    R(F1; lam) = R(F2; lam), or F1 = 0 where R(0; lam) = exp(-lam / 2) is the lower of the two. For checks
    (slow: nested root searches)."""
    level = conf_level
    if lam <= 0:
        return 0.0, float(stats.f.ppf(level, df1, df2))
    # the mode of R(.; lam): the F whose lambda_best is lam (the score grows with F)
    f_lo, f_hi = 1.0, 2.0 + 2.0 * lam / df1
    while _score_ratios(f_hi, df1, df2, lam)[0] < 1.0:
        f_lo, f_hi = f_hi, 2.0 * f_hi
    mode = _root(lambda f: _score_ratios(f, df1, df2, lam)[0] - 1.0, f_lo, f_hi, 1e-13 * f_hi)

    def right_end(log_r: float) -> float:
        hi = 2.0 * mode
        while _Point.at(hi, df1, df2).log_ratio(lam, df1, df2) > log_r:
            hi *= 2.0
        return _root(lambda f: _Point.at(f, df1, df2).log_ratio(lam, df1, df2) - log_r, mode, hi, 1e-13 * hi)

    top = right_end(-lam / 2.0)
    if _cdf(top, df1, df2, lam) < level:  # the region reaches 0
        return 0.0, float(stats.ncf.ppf(level, df1, df2, lam))

    def gap(f1: float) -> float:
        if f1 >= mode:
            return -level
        f2 = right_end(_Point.at(f1, df1, df2).log_ratio(lam, df1, df2))
        return _cdf(f2, df1, df2, lam) - _cdf(f1, df1, df2, lam) - level

    f_lo = _floor(mode, df1, df2)
    if gap(f_lo) <= 0:  # the lower end is below f_lo, where P(F < f_lo | lam) < 1e-12
        return 0.0, float(stats.ncf.ppf(level, df1, df2, lam))
    f1 = _root(gap, f_lo, mode, 1e-14 * mode)
    return f1, right_end(_Point.at(f1, df1, df2).log_ratio(lam, df1, df2))
