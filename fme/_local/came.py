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

__all__ = ["came", "came_joint"]


def came(
    effects: FMEResult,
    *,
    sample_size: int | None,
    random_state: Any,
    method: str,
    features: list[str],
    n_partitions: int | None,
    max_sd: float | None,
    conf_level: float,
    standardize: bool,
    params: dict[str, Any],
    tree_params: dict[str, Any],
    honest: bool = False,
    honest_fraction: float = 0.5,
    seed: int = 0,
) -> PartitionResult:
    """:func:`fme.came` of in-memory effects, its arguments validated by :func:`fme.came`. ``sample_size`` and
    ``random_state`` (the Dask engine's sample to grow on) do not apply: every evaluated row is in memory."""
    return grow_partition(
        effects,
        method=method,
        features=features,
        n_partitions=n_partitions,
        max_sd=max_sd,
        conf_level=conf_level,
        standardize=standardize,
        params=params,
        tree_params=tree_params,
        honest=honest,
        honest_fraction=honest_fraction,
        seed=seed,
    )


def came_joint(
    effects: list[FMEResult],
    *,
    sample_size: int | None,
    random_state: Any,
    method: str,
    features: list[str],
    n_partitions: int | None,
    conf_level: float,
    standardize: bool,
    params: dict[str, Any],
    tree_params: dict[str, Any],
    honest: bool = False,
    honest_fraction: float = 0.5,
    seed: int = 0,
) -> JointPartitionResult:
    """:func:`fme.came` of a list of in-memory effects (same rows, same model; validated by :func:`fme.came`):
    one tree on the matrix of their fMEs (:func:`fme._trees.joint.grow_joint`)."""
    return grow_joint(
        effects,
        method=method,
        features=features,
        n_partitions=n_partitions,
        conf_level=conf_level,
        standardize=standardize,
        params=params,
        tree_params=tree_params,
        honest=honest,
        honest_fraction=honest_fraction,
        seed=seed,
    )
