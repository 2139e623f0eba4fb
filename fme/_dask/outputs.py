"""Several outputs on Dask data: ``fme.fme(..., target_class='all')`` and multi-output models.

The batch kernel already evaluates every output (``plan.names``: columns
``fme_<class>``, ``nlm_<class>``, ``nlm_status_<class>``) and its
:class:`~fme._core.summary.Summary` holds one entry per output, plus the rows
counted across outputs (``rows_any``). :class:`DaskMultiFMEResult` turns
them into the figures of a multi-output :class:`fme.FMEResult`: a Series per
class for the AME, SD, ANLM, median NLM, share linear, standard error and
p-value; a row per class in :meth:`~DaskMultiFMEResult.tidy`; exact quartiles
and medians per output from the sorted values kept on the workers
(:func:`sorted_outputs`, one array per output per partition). Inference is
``sample`` (the only method the pandas path has for several outputs).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.summary import Moments
from ..inference.estimates import Estimates
from .result import DaskFMEResult

__all__ = ["DaskMultiFMEResult", "sorted_outputs"]


def _sorted(values: np.ndarray) -> np.ndarray:
    v = np.sort(values)
    return cast(np.ndarray, v[~np.isnan(v)])


def sorted_outputs(results: pd.DataFrame, plan: Any) -> tuple[Any, Any]:
    """A partition's sorted fMEs and defined NLMs (None without NLMs): arrays for one output, tuples of
    arrays (one per output) for several."""
    names = plan.names
    has_nlm = plan.settings is not None
    if names is None:
        nl: np.ndarray | tuple[np.ndarray, ...] | None = (
            _sorted(results["nlm"].to_numpy(dtype=float)) if has_nlm else None
        )
        return _sorted(results["fme"].to_numpy(dtype=float)), nl
    fm = tuple(_sorted(results[f"fme_{c}"].to_numpy(dtype=float)) for c in names)
    nl = tuple(_sorted(results[f"nlm_{c}"].to_numpy(dtype=float)) for c in names) if has_nlm else None
    return fm, nl


class DaskMultiFMEResult(DaskFMEResult):
    """:class:`~fme._dask.effects.DaskFMEResult` of several outputs: figures per class, as :class:`fme.FMEResult`."""

    output_names: tuple[Any, ...]  # always given for several outputs

    # ------------------------------------------------------------- columns
    @property
    def fme_columns(self) -> list[str]:
        return [f"fme_{c}" for c in self.output_names]

    @property
    def nlm_columns(self) -> list[str]:
        return [f"nlm_{c}" for c in self.output_names] if self.has_nlm else []

    def _series(self, values: Any) -> pd.Series:
        # FMEResult keys these by the column suffix, i.e. str(class)
        return pd.Series(np.asarray(values, dtype=float), index=[str(c) for c in self.output_names], dtype=float)

    # ------------------------------------------------------------- figures
    @property
    def ame(self) -> pd.Series:
        m = self.summary_data.fme
        return self._series(np.where(m.n > 0, m.mean, np.nan))

    @property
    def sd(self) -> pd.Series:
        return self._series(self.summary_data.fme.sd())

    @property
    def anlm(self) -> Any:
        m = self.summary_data.nlm
        if m is None:
            return float("nan")
        return self._series(np.where(m.n > 0, m.mean, np.nan))

    @property
    def share_linear(self) -> Any:
        m = self.summary_data.nlm
        if m is None:
            return float("nan")
        with np.errstate(invalid="ignore", divide="ignore"):
            return self._series(np.where(m.n > 0, self.summary_data.n_linear / np.maximum(m.n, 1), np.nan))

    def _any(self, i: int) -> int:
        r = self.summary_data.rows_any
        return 0 if r is None else int(r[i])

    n_nlm_constant = property(lambda self: self._any(0))
    n_nlm_flat = property(lambda self: self._any(1))
    n_nlm_inaccurate = property(lambda self: self._any(2))
    n_nlm_undefined = property(lambda self: self._any(3))

    # ------------------------------------------------------------- exact quantiles per output
    def _quantiles_of(self, which: str, p: float) -> pd.Series:
        return self._series([self._quantile_of(which, j, p) for j in range(len(self.output_names))])

    # ------------------------------------------------------------- presentation primitives
    def _nlm_figures(self, col: str) -> dict[str, Any]:
        k = col.split("_", 1)[1]
        return {
            "mean": self.anlm[k],
            "median": self.median_nlm[k],
            "share": self.share_linear[k],
            "sd": self._series(cast(Moments, self.summary_data.nlm).sd())[k],
        }  # has NLMs here

    def _nlm_footer(self) -> list[str]:
        if not self.has_nlm:
            return []
        return [
            f"  nlm rows undefined in any output {self.n_nlm_undefined} (constant {self.n_nlm_constant}, "
            f"flat {self.n_nlm_flat})  inaccurate {self.n_nlm_inaccurate}"
        ]

    # ------------------------------------------------------------- inference (sample, per output)
    def _estimates(self) -> Estimates:
        m = self.summary_data.fme
        n = m.n.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(n >= 2, m.sd() / np.sqrt(n), np.nan)
        return Estimates("sample", np.where(n > 0, m.mean, np.nan), se=se, df=np.maximum(n - 1.0, 1.0))
