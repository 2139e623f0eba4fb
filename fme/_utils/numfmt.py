"""Number formatting: one place for report tables, sentences and the figures (tree labels included).

The report's stages, :mod:`fme.plotting` and :mod:`fme.came` all format through this module, so that a
number in a figure equals its table cell at the same precision, and a missing number or p-value reads
the same in a figure as in a table (``-``, ``p undefined``).

Rules (report checklist §2.4): estimates and their CI bounds share the
decimals of about two significant figures of the CI half-width; thousands
separators; never a false zero (``< 0.001`` instead of ``0.000``); shares are
never rounded to 0 % or 100 % unless exact; ASCII minus signs.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "decimals_for",
    "fmt_num",
    "fmt_sig",
    "fmt_g",
    "fmt_percent",
    "fmt_est",
    "fmt_nlm",
    "fmt_int",
    "fmt_share",
    "fmt_level",
    "fmt_bound",
    "fmt_p",
    "p_phrase",
    "count",
    "MAX_DECIMALS",
    "MAX_EXTRA_DECIMALS",
]

MAX_DECIMALS = 6
#: Decimals at most when a whole number would otherwise hide that the value is not whole.
MAX_EXTRA_DECIMALS = 12


def decimals_for(half_width: float | None, default: int = 3) -> int:
    """Decimals showing ~2 significant figures of ``half_width``."""
    if half_width is None or not math.isfinite(half_width) or half_width <= 0:
        return default
    return int(min(MAX_DECIMALS, max(0, 1 - math.floor(math.log10(half_width)))))


def fmt_num(x: Any, decimals: int = 3, *, signed: bool = False) -> str:
    """Fixed decimals with thousands separators; '-' for missing; no false zeros.

    A value that would round to zero is written ``< 0.001`` (``> -0.001``) for a magnitude; with
    ``signed`` (an estimate, an interval bound, a difference, whose sign is the point) it gets two
    significant digits instead (``0.00025``, ``-0.000045``; ``3.0e-12`` below a millionth), so that its sign
    and size show.
    """
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    x = float(x)
    text = f"{x:,.{decimals}f}"
    if float(text.replace(",", "")) == 0.0 and x != 0.0:
        if signed:  # below a millionth the fixed form would need more decimals than fmt_sig shows
            return fmt_sig(x, 2) if abs(x) >= 1e-6 else f"{x:.1e}"
        tiny = f"{10**-decimals:.{decimals}f}"
        return f"< {tiny}" if x > 0 else f"> -{tiny}"
    if text.startswith("-") and float(text.replace(",", "")) == 0.0:
        text = text[1:]
    whole = float(text.replace(",", ""))
    if decimals >= MAX_DECIMALS and text.rstrip("0").endswith(".") and whole != x:
        # At the decimals cap the CI is narrower than the display: a whole number with six zeros ("1.000000"
        # for 0.9999999979, an ANLM bound just below the NLM's maximum 1) would claim a value it is not.
        # More decimals until the difference shows; beyond MAX_EXTRA_DECIMALS say "< 1.000000" instead.
        for more in range(decimals + 1, MAX_EXTRA_DECIMALS + 1):
            longer = f"{x:,.{more}f}"
            if not longer.rstrip("0").endswith("."):
                return longer
        return f"< {text}" if x < whole else f"> {text}"
    return text


def fmt_est(est: Any, low: Any, high: Any) -> tuple[str, str, str]:
    """Estimate and CI bounds with shared decimals (~2 significant figures of the half-width)."""
    half = None
    if low is not None and high is not None:
        half = (float(high) - float(low)) / 2
    d = decimals_for(half)
    if half == 0.0 and est is not None and math.isfinite(float(est)) and float(est) != 0.0:
        # a zero-width CI gives no precision: 6 significant digits, so 0.99989 is not shown as "1.000"
        d = int(min(MAX_DECIMALS, max(3, 5 - math.floor(math.log10(abs(float(est)))))))
    return fmt_num(est, d, signed=True), fmt_num(low, d, signed=True), fmt_num(high, d, signed=True)


#: Decimals an NLM is shown with at most: the integration error of a single NLM is rarely below 1e-6, so
#: more digits would print noise (an ANLM of 0.9999999 with a zero-width interval).
NLM_DECIMALS = 4


def fmt_nlm(est: Any, low: Any, high: Any) -> tuple[str, str, str]:
    """An NLM average and its interval (paper §5.4: NLM <= 1) as :func:`fmt_est` shows them, with at most
    :data:`NLM_DECIMALS` decimals; a value below 1 that would round to 1 reads ``> 0.9999``, never ``1.0000``."""
    half = None if low is None or high is None else (float(high) - float(low)) / 2
    d = min(decimals_for(half), NLM_DECIMALS)

    def one(x: Any) -> str:
        if x is None or not math.isfinite(float(x)):
            return "-"
        x = float(x)
        if x < 1.0 and round(x, d) >= 1.0:
            return f"> {1 - 10**-d:.{d}f}"
        return fmt_num(x, d, signed=True)

    return one(est), one(low), one(high)


def fmt_int(n: Any) -> str:
    return "-" if n is None else f"{int(n):,}"


def fmt_share(part: int, total: int) -> str:
    """Percentage with one decimal; never shows 0 % or 100 % unless exact."""
    if not total:
        return "-"
    if part == 0:
        return "0%"
    if part == total:
        return "100%"
    p = 100.0 * part / total
    if p < 0.1:
        return "< 0.1%"
    if p > 99.9:
        return "> 99.9%"
    return f"{p:.1f}%"


def fmt_level(conf_level: float) -> str:
    return f"{round(conf_level * 100, 6):g}%"


def fmt_bound(x: Any) -> str:
    """A split threshold or hyperrectangle bound: 6 significant digits (``14.4383``), in rules, tree edge
    labels and the report's leaf tables alike."""
    return f"{float(x):.6g}"


def fmt_p(p: Any) -> str:
    """A p-value: three decimals, ``< 0.001`` below (never a false zero), ``-`` when undefined."""
    if p is None or not math.isfinite(float(p)):
        return "-"
    return "< 0.001" if float(p) < 0.001 else f"{float(p):.3f}"


def p_phrase(p: Any) -> str:
    """``p = 0.034`` or ``p < 0.001`` (``p undefined`` when there is none), for sentences and tables."""
    text = fmt_p(p)
    return "p undefined" if text == "-" else (f"p {text}" if text.startswith("<") else f"p = {text}")


def fmt_sig(x: Any, sig: int = 3, *, trim: bool = False) -> str:
    """``x`` with ``sig`` significant digits, thousands separators and no exponent (at most 8 decimals).

    The figures' form for a number that has no table cell of its own (an average in a legend, a test
    statistic in a tree node); ``-`` when it is missing or not finite, as in the tables.

    Parameters
    ----------
    x : float or None
        Number to format.
    sig : int, default=3
        Significant digits.
    trim : bool, default=False
        Drop trailing zeros (``0.1`` rather than ``0.100``).

    Returns
    -------
    str
    """
    if x is None or not math.isfinite(float(x)):
        return "-"
    x = float(x)
    if x == 0:
        return "0"
    decimals = max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))
    text = f"{x:,.{min(decimals, 8)}f}"
    return text.rstrip("0").rstrip(".") if trim and "." in text else text


def count(n: int | None, singular: str, plural: str | None = None) -> str:
    """'1 point', '2 points', '1,234 subspaces' (never '1 points'); ``plural`` for irregular nouns."""
    word = singular if n is not None and int(n) == 1 else (plural or singular + "s")
    return f"{fmt_int(n)} {word}"


def fmt_g(x: Any, digits: int = 6, *, sign: bool = False, thousands: bool = False) -> str:
    """``x`` in the general form with ``digits`` significant digits (``14.4383``, ``1e-07``, ``0.5``): thresholds,
    steps, data ranges and split values; ``sign`` prints ``+`` for a positive step, ``thousands`` separators;
    ``-`` when missing."""
    if x is None:
        return "-"
    return format(float(x), ("+" if sign else "") + ("," if thousands else "") + f".{digits}g")


def fmt_percent(share: Any, decimals: int = 1, *, sign: bool = False, suffix: str = "%") -> str:
    """A share (0.123) as a percentage with fixed decimals (``12.3%``), or a difference of shares in
    percentage points (``sign=True, suffix=" pp"``: ``+1.5 pp``); ``-`` when missing. Unlike :func:`fmt_share`
    (a count of a total) it rounds plainly."""
    if share is None:
        return "-"
    return format(100 * float(share), ("+" if sign else "") + f".{decimals}f") + suffix
