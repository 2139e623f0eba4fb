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


def check_tree_params(method: str, tree_params: dict[str, Any]) -> None:
    """Unknown tree parameters (e.g. a misspelt ``minbuckets``) raise, listing the valid names."""
    valid = _valid_names(method)
    unknown = [k for k in tree_params if k not in valid]
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
