"""Aggregations of forward marginal effects: AME, MEM, MER (paper §3.2) and the
derivative ME (dME) to compare against (paper §4.1, "Forward Difference versus
Derivative").

:mod:`._ame` holds the average marginal effects (the front door :func:`ame` and its in-memory engine),
:mod:`._representative` the effects at representative values (:func:`mer`, :func:`mem`, :func:`typical_values`).
"""

from __future__ import annotations

# dme (the derivative ME, paper §2.2, §3.1) lives with the other derivatives; fme.margins.dme is its public path
from ..slopes import dme
# the tables' column lists, for the tests and the report
from ._ame import _AME_COLUMNS, ame  # noqa: F401
from ._representative import _MER_COLUMNS, mem, mer, typical_values  # noqa: F401

__all__ = ["ame", "mem", "mer", "dme", "typical_values"]
