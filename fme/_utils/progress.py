"""Progress bars for long work: tqdm on a terminal, distributed's progress for Dask.

Shown only when standard error is a terminal, and never when ``progress=False``
or the environment variable ``FME_PROGRESS=0`` (so logs, CI and notebooks run
by papermill stay clean).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["progress_enabled", "progress_bar", "dask_progress"]


def progress_enabled(progress: bool | None = None) -> bool:
    """Whether to show progress: ``progress`` if given, else on a terminal unless ``FME_PROGRESS=0``."""
    if progress is not None:
        return bool(progress)
    if os.environ.get("FME_PROGRESS", "").strip().lower() in ("0", "false", "no", "off"):
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def progress_bar(
    iterable: Iterable,
    *,
    total: int | None = None,
    desc: str = "",
    progress: bool | None = None,
    min_items: int = 2,
    leave: bool = False,
) -> Iterable:
    """``iterable`` wrapped in a tqdm bar when progress is on and there are at least ``min_items`` items
    (``leave``: keep the finished bar on screen)."""
    if total is not None and total < min_items or not progress_enabled(progress):
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=leave)


def dask_progress(collections: Any, progress: bool | None = None) -> None:
    """distributed's progress bar over persisted collections (only with a distributed client)."""
    if not progress_enabled(progress):
        return
    try:
        from distributed import default_client
        from distributed import progress as _progress

        default_client()
    except (ImportError, ValueError):
        return
    _progress(collections)
