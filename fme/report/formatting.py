"""Number formatting for reports: re-exports :mod:`fme._utils.numfmt`, shared with the figures.

Rules (report checklist §2.4): estimates and their CI bounds share the
decimals of about two significant figures of the CI half-width; thousands
separators; never a false zero (``< 0.001`` instead of ``0.000``); shares are
never rounded to 0 % or 100 % unless exact; ASCII minus signs.
"""

from __future__ import annotations

from .._utils.numfmt import (MAX_DECIMALS, MAX_EXTRA_DECIMALS, decimals_for, fmt_bound, fmt_est, fmt_int, fmt_level,
                             fmt_num, fmt_p, fmt_share, p_phrase)

__all__ = ["count", "decimals_for", "fmt_num", "fmt_p", "p_phrase", "fmt_est", "fmt_int", "fmt_share", "fmt_level", "fmt_bound", "MAX_DECIMALS",
           "MAX_EXTRA_DECIMALS"]


def count(n: int | None, singular: str, plural: str | None = None) -> str:
    """'1 point', '2 points', '1,234 subspaces' (issue 22 item 4f: never '1 points')."""
    word = singular if n is not None and int(n) == 1 else (plural or singular + "s")
    return f"{fmt_int(n)} {word}"
