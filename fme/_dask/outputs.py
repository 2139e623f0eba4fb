"""Several outputs on Dask data: ``fme.fme(..., target_class='all')`` and multi-output models (issue 14).

The batch kernel already evaluates every output (``plan.names``: columns
``fme_<class>``, ``nlm_<class>``, ``nlm_status_<class>``) and its
:class:`~fme._core.kernel.Summary` holds one entry per output, plus the rows
counted across outputs (``rows_any``). :class:`DaskMultiFMEResult` turns
them into the figures of a multi-output :class:`fme.FMEResult`: a Series per
class for the AME, SD, ANLM, median NLM, share linear, standard error and
p-value; a row per class in :meth:`~DaskMultiFMEResult.tidy`; exact quartiles
and medians per output from the sorted values kept on the workers
(:func:`sorted_outputs`, one array per output per partition). Inference is
``sample`` (the only method the pandas path has for several outputs).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pandas as pd

from .effects import DaskFMEResult
from .quantiles import quantiles as _quantiles
from ..inference._estimates import Estimates

__all__ = ["DaskMultiFMEResult", "sorted_outputs"]


def _sorted(values: np.ndarray) -> np.ndarray:
    v = np.sort(values)
    return v[~np.isnan(v)]


def sorted_outputs(results: pd.DataFrame, plan: Any) -> tuple[Any, Any]:
    """A partition's sorted fMEs and defined NLMs (None without NLMs): arrays for one output, tuples of
    arrays (one per output) for several."""
    names = plan.names
    has_nlm = plan.settings is not None
    if names is None:
        nl = _sorted(results["nlm"].to_numpy(dtype=float)) if has_nlm else None
        return _sorted(results["fme"].to_numpy(dtype=float)), nl
    fm = tuple(_sorted(results[f"fme_{c}"].to_numpy(dtype=float)) for c in names)
    nl = tuple(_sorted(results[f"nlm_{c}"].to_numpy(dtype=float)) for c in names) if has_nlm else None
    return fm, nl


class DaskMultiFMEResult(DaskFMEResult):
    """:class:`~fme._dask.effects.DaskFMEResult` of several outputs: figures per class, as :class:`fme.FMEResult`."""

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
    def _quantile_of(self, which: str, j: int, p: float) -> float:
        key = (which, j, p)
        if key not in self._cache:
            parts = self.sorted_parts.get(which)
            if not parts:
                return float("nan")
            from dask import delayed

            m = self.summary_data.fme if which == "fme" else self.summary_data.nlm
            mine = [delayed(operator.getitem)(part, j) for part in parts]
            for k, v in _quantiles(mine, int(m.n[j]), [0.25, 0.5, 0.75]).items():
                self._cache[(which, j, k)] = v
        return self._cache[key]

    def _quantiles_of(self, which: str, p: float) -> pd.Series:
        return self._series([self._quantile_of(which, j, p) for j in range(len(self.output_names))])

    q25 = property(lambda self: self._quantiles_of("fme", 0.25))
    q75 = property(lambda self: self._quantiles_of("fme", 0.75))
    median = property(lambda self: self._quantiles_of("fme", 0.5))

    @property
    def median_nlm(self) -> Any:
        return self._quantiles_of("nlm", 0.5) if self.has_nlm else float("nan")

    # ------------------------------------------------------------- inference (sample, per output)
    def _estimates(self) -> Estimates:
        m = self.summary_data.fme
        n = m.n.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(n >= 2, m.sd() / np.sqrt(n), np.nan)
        return Estimates("sample", np.where(n > 0, m.mean, np.nan), se=se, df=np.maximum(n - 1.0, 1.0))

    def _by_class(self, col: str) -> pd.Series:
        values = self._inference_table()[col].to_numpy(dtype=float)
        return pd.Series(values, index=list(self.output_names), dtype=float)

    std_error = property(lambda self: self._by_class("std_error"))
    p_value = property(lambda self: self._by_class("p_value"))

    def conf_int(self, conf_level: float | None = None) -> pd.DataFrame:
        t = self._inference_table(conf_level)
        return t[["conf_low", "conf_high"]].set_axis(list(self.output_names))

    def tidy(self, conf_level: float | None = None) -> pd.DataFrame:
        """As :meth:`FMEResult.tidy` for several outputs: one row per class."""
        t = self._inference_table(conf_level)
        m = self.summary_data.fme
        sd, q25, q75 = m.sd(), self.q25.to_numpy(), self.q75.to_numpy()
        rows = []
        for j, c in enumerate(self.output_names):
            n = int(m.n[j])
            rows.append({"step": self.describe_steps(), "class": c, "ame": float(m.mean[j]) if n else np.nan,
                         **t.iloc[j].to_dict(), "sd": float(sd[j]), "q25": q25[j], "q75": q75[j], "n": n,
                         "n_excluded": self.n_excluded})
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """Readable summary like :meth:`FMEResult.summary`: a line per output (quantiles exact)."""
        c = self.summary_data.codes
        keep = [f"Forward marginal effects of {self.model_description} (Dask data)",
                f"  step: {self.describe_steps()}", f"  rows evaluated: {self.n} of {int(c.sum())}"]
        labels = ["missing or infinite value in a stepped feature", "already at the target level", "extrapolation"]
        keep += [f"  excluded ({label}): {int(c[k])}" for k, label in enumerate(labels, start=1) if c[k]]
        if self.detector is None:
            keep.append("  extrapolation: not checked (pass extrapolation='envelope' and reference_data)")
        else:
            keep.append(f"  extrapolation: {self.detector}, policy {self.on_extrapolation}, fitted on "
                        f"{self.detector_fit.get('fitted_on', 'the reference data')}")
        ame, sd, q25, med, q75 = self.ame, self.sd, self.q25, self.median, self.q75
        for c in self.fme_columns:
            k = c.split("_", 1)[1]
            keep.append(f"  {c}: AME {ame[k]:.6g}  SD {sd[k]:.6g}  q25 {q25[k]:.6g}  median {med[k]:.6g}  "
                        f"q75 {q75[k]:.6g}")
        if self.has_nlm:
            anlm, mnlm, share = self.anlm, self.median_nlm, self.share_linear
            nsd = self._series(self.summary_data.nlm.sd())
            for c in self.nlm_columns:
                k = c.split("_", 1)[1]
                keep.append(f"  {c}: ANLM {anlm[k]:.6g}  median {mnlm[k]:.6g}  share >= "
                            f"{self.nlm_linear_threshold:g} {share[k]:.3g}  SD {nsd[k]:.6g}  (method: "
                            f"{self.nlm_method})")
            keep.append(f"  nlm rows undefined in any output {self.n_nlm_undefined} (constant "
                        f"{self.n_nlm_constant}, flat {self.n_nlm_flat})  inaccurate {self.n_nlm_inaccurate}")
        return "\n".join(keep)

    def release(self) -> None:
        """Drop the sorted values kept on the workers (computed quantiles stay cached)."""
        for which in ("fme", "nlm"):
            if self.sorted_parts.get(which):
                for j in range(len(self.output_names)):
                    self._quantile_of(which, j, 0.5)
        self.sorted_parts.clear()

    def __repr__(self) -> str:
        return (f"DaskMultiFMEResult(step={self.describe_steps()!r}, n={self.n}, excluded={self.n_excluded}, "
                f"ame={self.ame.round(6).to_dict()})")
