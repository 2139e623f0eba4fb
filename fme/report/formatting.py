"""Number formatting for reports: re-exports :mod:`fme._utils.numfmt`, shared with the figures.

Rules (report checklist §2.4): estimates and their CI bounds share the
decimals of about two significant figures of the CI half-width; thousands
separators; never a false zero (``< 0.001`` instead of ``0.000``); shares are
never rounded to 0 % or 100 % unless exact; ASCII minus signs.
"""

from __future__ import annotations

from .._utils.numfmt import (MAX_DECIMALS, MAX_EXTRA_DECIMALS, decimals_for, fmt_bound, fmt_est, fmt_int, fmt_level, fmt_num, fmt_share)

__all__ = ["decimals_for", "fmt_num", "fmt_est", "fmt_int", "fmt_share", "fmt_level", "fmt_bound", "MAX_DECIMALS",
           "MAX_EXTRA_DECIMALS"]
