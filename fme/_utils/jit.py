"""numba's ``njit`` for fme's compiled kernels (:mod:`fme._nlm.tree_kernel`, :mod:`fme._nlm.bracket_kernel`),
cached on disk where a cache can be written.

numba looks for a writable cache folder when the function is decorated, i.e. when fme is imported: beside the
source (``__pycache__``), then ``NUMBA_CACHE_DIR`` or the user's cache. A read-only installation in a process
without a writable home has none, and ``njit(cache=True)`` raises there, which would make ``import fme`` fail.
Such a process compiles the kernels in memory instead, once per process (about 10 s, see
benchmarks/README.md, "First call").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba

__all__ = ["njit"]


def njit(**options: Any) -> Callable[[Callable], Callable]:
    """``numba.njit(cache=True, **options)``, or without the disk cache where numba finds no place to write it."""

    def decorate(func: Callable) -> Callable:
        try:
            return numba.njit(cache=True, **options)(func)
        except RuntimeError as exc:
            if "cannot cache" not in str(exc):
                raise
            return numba.njit(cache=False, **options)(func)

    return decorate
