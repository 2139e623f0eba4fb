"""Marginal effects at representative values in memory: the grid of :func:`fme.mer` / :func:`fme.mem`, resolved
by the front door (typical values, ``at=`` combinations, parsed steps), evaluated here (paper §3.2). Dask data
reach this engine too: their typical values, levels and reference rows come from reductions first
(:func:`fme._dask.margins.local_view`), then the grid, a handful of rows, is evaluated in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.plan import Plan
from .._utils.validation import check_name_clash
from ..exceptions import DataError, ExtrapolationError
from ..inference import EstimatesTable
from ..inference.estimates import COVERS, INFERENCE_COLUMNS, RowInference
from .effects import fme

__all__ = ["mer", "AT_FIX"]

#: The way out of an ``at`` feature named like one of the table's own columns.
AT_FIX = (
    "Rename that feature in the data (and refit the model on the renamed column), or evaluate your own grid "
    "rows with fme.fme(model, grid, steps): its results are indexed like grid, beside your columns."
)


def mer(
    plan: Plan, grid: pd.DataFrame, reference: pd.DataFrame, keys: list[str], steps: Mapping[str, Any], multi: bool
) -> pd.DataFrame:
    """The fME of every row of ``grid`` (the typical values with the ``at`` columns ``keys`` set), one table row
    each: the ``at`` columns, the fME with its uncertainty (``plan.method``), the descriptive columns of a single
    point and the reason where a point was not evaluated; ``multi``: one ``fme_<class>`` column per output
    instead. ``plan``: resolved by the front door on ``grid`` and ``reference`` (the rows the detector is fitted
    on and step rules are computed from)."""
    method = plan.method
    try:
        res = fme(plan, grid, reference, steps)
    except (DataError, ExtrapolationError) as exc:
        # Nothing to evaluate (all at the level, or every grid point outside the data): NaN rows with the reason.
        out = grid[keys].assign(fme=np.nan)
        if not multi:
            for c in INFERENCE_COLUMNS:
                out[c] = {"inference": method, "covers": COVERS[method]}.get(c, np.nan)
            out = out.assign(sd=np.nan, q25=np.nan, q75=np.nan, n=0, n_excluded=1)
        out["note"] = str(exc)
        return out
    if multi:
        check_name_clash(keys, res.results.columns, "at", AT_FIX)
        out = grid[keys].join(res.results)
    else:
        inf = cast(RowInference, res.inference_rows)  # one output: the rows' inference is there
        est = inf.average(np.arange(inf.n), inf.n)
        table = est.table(plan.conf_level).set_index(res.results.index)
        fm = res.results["fme"]
        cols = {
            "fme": fm,
            **{c: table[c] for c in INFERENCE_COLUMNS},
            "sd": pd.Series(np.nan, index=fm.index),
            "q25": fm,
            "q75": fm,
            "n": pd.Series(1, index=fm.index),
            "n_excluded": pd.Series(0, index=fm.index),
        }
        out = grid[keys].join(pd.DataFrame(cols).join(res.results.drop(columns="fme")))
        out["n"] = out["n"].fillna(0).astype(int)
        out["n_excluded"] = out["n_excluded"].fillna(1).astype(int)
        out["inference"] = out["inference"].fillna(inf.method)
        out["covers"] = out["covers"].fillna(COVERS[inf.method])
    out["note"] = res.excluded["reason"].reindex(grid.index).fillna("")
    if multi:
        return out
    # every grid point evaluated, in order: the points' joint uncertainty rides along (for hypothesis=)
    whole = len(res.results) == len(out) and res.results.index.equals(out.index)
    return EstimatesTable.from_frame(out, est if whole else None, conf_level=plan.conf_level)
