"""The Dask engine's side of the array route (:mod:`fme._local.arrays`): Dask data are DataFrames, so an array of
the array API standard never reaches this engine; its entry points refuse, naming what to pass instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.plan import AMEOptions, Plan
from ..exceptions import ParameterError

__all__ = ["fme", "ame"]

_MESSAGE = (
    "{verb} on Dask takes a dask.dataframe.DataFrame; an array of the array API standard is evaluated in memory "
    "(pass it with feature_names=, or wrap a Dask array as dask.dataframe.from_dask_array(X, columns=[...]))."
)


def fme(plan: Plan, data: Any, reference: Any, steps: Any) -> Any:
    """Refuses: arrays take the in-memory array route (see the module docstring)."""
    raise ParameterError(_MESSAGE.format(verb="fme.fme"))


def ame(plan: Plan, data: Any, reference: Any, steps: Mapping[str, Any], table: AMEOptions) -> Any:
    """Refuses: arrays take the in-memory array route (see the module docstring)."""
    raise ParameterError(_MESSAGE.format(verb="fme.ame"))
