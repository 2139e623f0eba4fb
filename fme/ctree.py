"""Conditional inference trees (CTREE) reproducing R's ``partykit::ctree``: the public path of
:class:`CTree`, whose implementation lives in :mod:`fme._trees.ctree` (written from the project's CTREE
specification, never from partykit's code)."""

from ._trees.ctree import CTree

__all__ = ["CTree"]
