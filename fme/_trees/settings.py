"""The resolved settings of one partition: :func:`fme.came`'s arguments after its checks, handed as one value to
the engines (:mod:`fme._local.came`, :mod:`fme._dask.came`) and to the growing code (:mod:`fme._trees.grow`,
:mod:`fme._trees.joint`), which trust them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["TreeSettings"]


@dataclass(frozen=True)
class TreeSettings:
    """How to grow, reduce and estimate one partition (paper §5.5), validated by :func:`fme.came`.

    Attributes
    ----------
    method : {'ctree', 'cart'}
    features : tuple of str
        The partitioning features, in the data's order.
    n_partitions, max_sd : int or float, optional
        The reduction of the grown tree (at most one is set; ``max_sd`` only for one effect).
    conf_level : float
    standardize : bool
        Each effect's fMEs scaled to SD 1 before growing.
    params : mapping
        The record kept in :attr:`~fme.PartitionResult.params`.
    tree_params : mapping
        The tree's own parameters (``minbucket``, ``alpha``, ...).
    honest : bool
        Grow on ``honest_fraction`` of the rows (drawn by ``seed``), estimate every leaf figure on the others.
    honest_fraction : float
    seed : int
    """

    method: str
    features: tuple[str, ...]
    n_partitions: int | None
    max_sd: float | None
    conf_level: float
    standardize: bool
    params: Mapping[str, Any] = field(default_factory=dict)
    tree_params: Mapping[str, Any] = field(default_factory=dict)
    honest: bool = False
    honest_fraction: float = 0.5
    seed: int = 0

    def with_seed(self, seed: int) -> TreeSettings:
        """The same settings with another seed of the honest split (a repetition of ``n_splits``)."""
        return replace(self, seed=int(seed))

    def unsplit(self) -> TreeSettings:
        """The same tree on rows already split (the Dask engine grows on its sample of the growing rows)."""
        return replace(self, honest=False, honest_fraction=0.5, seed=0)
