"""Warnings that point at the caller's line, not at fme's internals (layer 0)."""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn_caller"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_caller(message: str, category: type[Warning]) -> None:
    """Issue ``message`` as ``category`` attributed to the first frame outside the fme package.

    The warnings filter then shows it once per line of the caller's code (Python's ``default`` action).
    """
    frame, level = sys._getframe(1), 2  # level 1 is this function
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
