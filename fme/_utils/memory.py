"""Float memory kept from one call to the next for the frames fme hands a model and then drops.

Every fME call writes x + h (paper Eq. 5.1's f(x + h)) as one float block for the model's ``predict``, and the
NLM its path points x + t h (§5.4). A fresh block of that size is mapped anew by the operating system, which
zeroes every page of it before fme's own write and unmaps it after the call: at 10^6 rows and 10 features about
2 ms of a call whose model takes 9 ms (benchmarks/README.md). So the block's memory is kept when the frame is
dropped and the next frame of at most its size is written into it, pages already mapped.

A block goes back only when nothing else refers to it: its owner's reference count, read after the caller has
dropped its own frame, must be the one it had when it was made. A model that keeps its input (or a view of it)
holds a reference, and the block is then left to it, as fresh memory always was (predictions that view it are
copied as they come back, :func:`held_elsewhere`). What is kept is at most :func:`keep_limit` bytes
(``FME_KEEP_MEMORY_MB``, default 256; 0 keeps nothing), the most recently returned first; :func:`release_memory`
frees it at once. Blocks below :data:`MIN_CELLS` are not kept: the allocator already reuses memory of that size.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any

import numpy as np

__all__ = ["MIN_CELLS", "Scratch", "copy_on_write", "held_elsewhere", "keep_limit", "kept_bytes", "release_memory"]

#: The least cells (float64) of a block that is kept (4 MiB: below it the allocator reuses its own heap).
MIN_CELLS = 1 << 19

#: The default of ``FME_KEEP_MEMORY_MB``: the most memory kept between calls, in MiB.
DEFAULT_KEEP_MB = 256

_lock = threading.Lock()
_kept: list[np.ndarray] = []  # free owners, the most recently returned last


def keep_limit() -> int:
    """The most bytes kept between calls: ``FME_KEEP_MEMORY_MB`` (MiB; 0 keeps nothing), else
    :data:`DEFAULT_KEEP_MB` MiB; read at every return, so that it can be changed while a process runs."""
    raw = os.environ.get("FME_KEEP_MEMORY_MB", "").strip()
    try:
        mb = float(raw) if raw else float(DEFAULT_KEEP_MB)
    except ValueError:
        mb = float(DEFAULT_KEEP_MB)  # an unreadable setting keeps the default, as an unset one
    return max(0, int(mb * (1 << 20)))


def kept_bytes() -> int:
    """The bytes kept now, free for the next call."""
    with _lock:
        return sum(a.nbytes for a in _kept)


def release_memory() -> int:
    """Free the float memory fme keeps between calls for the frames it hands a model; returns the bytes freed.

    fME calls write x + h into memory kept from the previous call of at least its size (at most
    ``FME_KEEP_MEMORY_MB`` MiB, default 256; set it to 0 to keep none), which spares the operating system's
    mapping and zeroing of fresh pages on every call. This hands that memory back now.

    Returns
    -------
    int
        The bytes no longer kept.

    Examples
    --------
    >>> import fme
    >>> fme.release_memory() >= 0
    True
    """
    with _lock:
        freed = sum(a.nbytes for a in _kept)
        _kept.clear()
    return freed


def copy_on_write() -> bool:
    """Whether pandas copies a shared block before writing to it (always from pandas 3, by option before): a
    model writing into a frame whose block another pandas object shares then writes into a copy."""
    import pandas as pd

    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    return pd.options.mode.copy_on_write is True


def _reading(values: Any) -> list[int]:
    # the reference counts of ``values`` and of each object its memory hangs from (``.base``, down to the owner),
    # each read while this function's one local refers to it
    counts = []
    while values is not None:
        counts.append(sys.getrefcount(values))
        # an array's base, or the object a memoryview exports (np.frombuffer's base)
        values = values.obj if isinstance(values, memoryview) else getattr(values, "base", None)
    return counts


@functools.cache
def _calibration() -> tuple[int, int]:
    # the counts of an array that one local of its caller refers to, read through as many frames as
    # held_elsewhere reads its argument (_like_held_elsewhere stands for it), and of an owner only its view refers to
    probe = np.empty(1)[:]
    leaf, owner = _like_held_elsewhere(probe)
    return leaf, owner


def _like_held_elsewhere(values: Any) -> list[int]:
    return _reading(values)


def held_elsewhere(values: np.ndarray) -> bool:
    """Whether anything but the caller's one local variable refers to ``values``, or anything but the view above it
    to an object its memory hangs from (its ``.base`` chain: a view's array, a buffer it was made from). A model's
    predictions that it keeps (a buffer it writes again at its next call), or that are a view of its input, are then
    not fme's alone. Memory an array library keeps beneath objects of its own (a PyTorch tensor's storage behind a
    new tensor each call) is out of its sight. Read relative to an array read the same way, once per process
    (:func:`_calibration`), so that what the interpreter counts for the reading itself cancels out; the caller must
    hold ``values`` in exactly one local variable. An object kept alive by a reference cycle counts as held."""
    leaf, owner = _calibration()
    counts = _reading(values)
    return counts[0] != leaf or any(c != owner for c in counts[1:])


def _refs(holder: Scratch) -> int:
    # read the same way at the owner's birth and at its return, so that whatever the interpreter counts for the
    # reading itself cancels out
    return sys.getrefcount(holder.owner)


class Scratch:
    """The memory of one frame that a caller hands a model and then drops: :meth:`take` gives the block,
    :meth:`give_back` returns it for the next call, if nothing else refers to it."""

    def __init__(self) -> None:
        self.owner: np.ndarray | None = None
        self._born = 0

    def take(self, cells: int) -> np.ndarray:
        """A 1-D float64 array of ``cells`` values (contents undefined): kept memory of at least that size where
        some is free (the smallest such), else fresh memory. One block per :class:`Scratch`."""
        if self.owner is not None:
            raise RuntimeError("a Scratch holds one block; give it back before taking another")
        found = None
        if cells >= MIN_CELLS:
            with _lock:
                fits = [i for i, a in enumerate(_kept) if a.size >= cells]
                if fits:
                    found = _kept.pop(min(fits, key=lambda i: _kept[i].size))
        self.owner = np.empty(cells) if found is None else found
        found = None  # the holder's attribute alone refers to the block now
        self._born = _refs(self)
        return self.owner[:cells]

    def shared(self, views: int = 0) -> bool:
        """Whether anything but this holder and ``views`` views the caller still holds refers to the block (a
        model kept its input, or a view of it)."""
        return self.owner is not None and _refs(self) != self._born + views

    def give_back(self) -> bool:
        """Keep the block for the next call if nothing but this holder refers to it (the caller has dropped
        every frame and view of it) and it fits :func:`keep_limit`; returns whether it was kept."""
        if self.owner is None:
            return False
        unshared = _refs(self) == self._born
        owner, self.owner = self.owner, None
        if not unshared or owner.size < MIN_CELLS:
            return False
        limit = keep_limit()
        with _lock:
            _kept.append(owner)
            total = sum(a.nbytes for a in _kept)
            while _kept and total > limit:  # the least recently returned go first
                total -= _kept.pop(0).nbytes
            return any(a is owner for a in _kept)


def _forget_in_child() -> None:
    # a fork taken while another thread held the lock would leave it held for good in the child
    global _lock
    _lock = threading.Lock()
    _kept.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
