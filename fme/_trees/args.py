"""Argument checks shared by :func:`fme.came` and :func:`fme.partition_stability`."""

from __future__ import annotations

import inspect
from typing import Any

import pandas as pd

from ..exceptions import DataError, ParameterError
from .ctree import CTree

__all__ = ["check_tree_params", "string_columns"]


def _valid_names(method: str) -> list[str]:
    if method == "ctree":
        return [p for p in inspect.signature(CTree.__init__).parameters if p != "self"]
    from sklearn.tree import DecisionTreeRegressor

    return sorted(DecisionTreeRegressor().get_params())


#: Names other tools (and the literature) give to :func:`fme.came`'s own arguments: a call with one of them is
#: told fme's name instead of being read as an unknown tree parameter.
CAME_ALIASES = {"scale": "standardize", "n_leaves": "n_partitions", "level": "conf_level", "alpha_ci": "conf_level"}


def check_tree_params(method: str, tree_params: dict[str, Any]) -> None:
    """Unknown tree parameters (e.g. a misspelt ``minbuckets``) raise, listing the valid names; a name that
    another tool gives one of :func:`fme.came`'s own arguments (``scale`` for ``standardize``) names fme's."""
    valid = _valid_names(method)
    unknown = [k for k in tree_params if k not in valid]
    aliased = [k for k in unknown if k in CAME_ALIASES]
    if aliased:
        k = aliased[0]
        raise ParameterError(
            f"fme.came has no argument {k}=; it is called {CAME_ALIASES[k]}= here "
            f"(pass {CAME_ALIASES[k]}={tree_params[k]!r})."
        )
    if unknown:
        raise ParameterError(
            f"unknown tree parameter(s) {unknown} for method={method!r}; valid names: {', '.join(valid)}."
        )


def string_columns(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """``frame`` with its column labels as text (the trees and rules name features by text)."""
    if all(isinstance(c, str) for c in frame.columns):
        return frame
    labels = [str(c) for c in frame.columns]
    if len(set(labels)) != len(labels):
        raise DataError(
            f"the column labels of `{name}` {list(frame.columns)} coincide as text; rename them so each is unique."
        )
    return frame.set_axis(labels, axis=1)
