"""cAMEs in memory: :func:`fme.came` on an :class:`~fme._core.results.FMEResult` (the Dask mirror:
:mod:`fme._dask.came`). The tree is grown and reduced on the evaluated rows, honestly by default (paper §5.5;
:func:`fme._trees.grow.grow_partition`).
"""

from __future__ import annotations

from typing import Any

from .._core.results import FMEResult
from .._trees.grow import grow_partition
from .._trees.joint import JointPartitionResult, grow_joint
from .._trees.partition import PartitionResult
from .._trees.settings import TreeSettings

__all__ = ["came", "came_joint"]


def came(
    effects: FMEResult, settings: TreeSettings, *, sample_size: int | None = None, random_state: Any = None
) -> PartitionResult:
    """:func:`fme.came` of in-memory effects, its settings validated by :func:`fme.came`. ``sample_size`` and
    ``random_state`` (the Dask engine's sample to grow on) do not apply: every evaluated row is in memory."""
    return grow_partition(effects, settings)


def came_joint(
    effects: list[FMEResult], settings: TreeSettings, *, sample_size: int | None = None, random_state: Any = None
) -> JointPartitionResult:
    """:func:`fme.came` of a list of in-memory effects (same rows, same model; validated by :func:`fme.came`):
    one tree on the matrix of their fMEs (:func:`fme._trees.joint.grow_joint`)."""
    return grow_joint(effects, settings)
