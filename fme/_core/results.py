"""The in-memory result of :func:`fme.fme`: :class:`FMEResult` (paper §3.2, §5.1, §5.2, §5.4).

Its public path is :mod:`fme.effects` (and ``fme.FMEResult``); it lives here, below the front doors, so
that the cAME trees and the Dask engine can build one without importing a front door.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._adapters.predictor import make_predictor
from .._nlm.evaluate import NLMSummaryMixin
from .._utils.stats import describe, median
from .._utils.threads import MIN_ROWS_PER_THREAD, beside
from .._utils.validation import check_conf_level
from ..inference.estimates import Estimates, RowInference, sample_inference
from ..steps import MIN_STEP_FRACTION, Step, apply_steps
from .result_base import EffectsPresentation

__all__ = ["FMEResult", "stepped_frames"]


@dataclass(frozen=True, eq=False, repr=False)
class FMEResult(EffectsPresentation, NLMSummaryMixin):
    """Forward marginal effects of one step specification.

    Attributes
    ----------
    results : DataFrame
        Indexed like ``data`` (only the rows evaluated). Columns ``fme`` and,
        with NLMs, ``nlm`` and ``nlm_status`` (``fme_<class>``/``nlm_<class>``/
        ``nlm_status_<class>`` for ``target_class='all'``). ``nlm_status``:
        ``ok``; ``constant`` (f constant along the path, NLM 0/0, NaN);
        ``flat`` (variation negligible, see ``nlm_flat_tol``; NLM NaN);
        ``inaccurate`` (Gauss-Kronrod error estimate above ``nlm_tol``
        after the budget ``nlm_budget``; the NLM is kept and counted in the
        ANLM). Gauss-Kronrod also gives ``nlm_error`` (the error estimate, a
        bound on the jump route; ``nlm_error_<class>``) and ``nlm_route``
        (``quadrature`` or ``jumps``, :mod:`fme._nlm.budget`); with ``on_extrapolation='keep'`` a boolean
        ``extrapolation``; with ``'shrink'`` one ``step_<feature>`` column per
        numeric step holding each row's effective step.
    steps : tuple of Step
        The steps, with rules resolved to numbers.
    excluded : DataFrame
        Rows not evaluated, indexed like ``data``: ``reason_type`` (one of
        ``missing``, ``at_level``, ``extrapolation``), ``point`` (``x``,
        ``x+h`` or ``x and x+h`` for extrapolation) and a readable ``reason``.
    data : DataFrame
        The caller's data (never modified).
    model_features : tuple of str or None
        The model's input columns when it reports them (``feature_names_in_``).
    predictions : DataFrame
        ``f_x`` and ``f_x_step`` for the evaluated rows (auditing).
    nlm_method : str or None
        The NLM method actually used (``exact``, ``gauss-kronrod``,
        ``gauss-legendre``, ``simpson38``); ``auto`` is resolved.
    nlm_linear_threshold : float
        The NLM level counted as "approximately linear" by :attr:`share_linear`.
    inference_rows : RowInference or None
        Per-row ingredients of the AME's uncertainty (see :mod:`fme.inference`):
        delta-method Jacobian rows, bootstrap draws, or only the fMEs
        (``sample``); None for ``target_class='all'``.
    conf_level : float
        Default confidence level of :meth:`conf_int` and :meth:`tidy`.
    positions : ndarray
        Positions (0-based) in ``data`` of the evaluated rows.
    scale : str or None
        The scale of the predictions when it is not the model's plain ``predict``: e.g. a count model
        with an exposure or offset, predicted at each row's exposure (as Stata's ``margins``); also a
        line of :meth:`summary`. None otherwise.
    """

    results: pd.DataFrame
    steps: tuple[Step, ...]
    excluded: pd.DataFrame
    data: pd.DataFrame = field(repr=False)
    predictions: pd.DataFrame = field(repr=False)
    model_description: str = "model"
    output_names: tuple[str, ...] | None = None
    nlm_method: str | None = None
    nlm_nodes: int | None = None
    detector: str | None = None
    on_extrapolation: str | None = None
    model_features: tuple[str, ...] | None = None
    nlm_tol: float | None = None
    nlm_linear_threshold: float = 0.9
    inference_rows: RowInference | None = field(default=None, repr=False)
    conf_level: float = 0.95
    positions: np.ndarray | None = field(default=None, repr=False)
    scale: str | None = None
    #: The class whose probability the effects are of (a classifier with one output), else None.
    explained_class: str | None = None

    # ----------------------------------------------------------------- columns
    @property
    def fme_columns(self) -> list[str]:
        return ["fme"] if self.output_names is None else [f"fme_{c}" for c in self.output_names]

    @property
    def nlm_columns(self) -> list[str]:
        cols = ["nlm"] if self.output_names is None else [f"nlm_{c}" for c in self.output_names]
        return [c for c in cols if c in self.results.columns]

    @property
    def has_nlm(self) -> bool:
        return bool(self.nlm_columns)

    # ----------------------------------------------------------------- figures
    def _reduce(self, cols: list[str], fn: Callable[[np.ndarray], float]) -> Any:
        vals = {c: fn(self.results[c].to_numpy(dtype=float)) for c in cols}
        if self.output_names is None:
            return next(iter(vals.values())) if vals else float("nan")
        return pd.Series({c.split("_", 1)[1]: v for c, v in vals.items()}, dtype=float)

    @property
    def ame(self) -> Any:
        """Average fME (float; a Series per class for ``target_class='all'``)."""
        return self._reduce(self.fme_columns, lambda v: float(np.mean(v)))

    @property
    def sd(self) -> Any:
        """Sample SD (n - 1) of the fMEs."""
        return self._reduce(self.fme_columns, lambda v: float(np.std(v, ddof=1)) if v.size > 1 else float("nan"))

    @property
    def anlm(self) -> Any:
        """Average NLM, ignoring undefined (NaN) values; NaN without NLMs."""
        return self._reduce_nlm(lambda v: float(np.nanmean(v)))

    @property
    def n(self) -> int:
        """Number of rows evaluated."""
        return len(self.results)

    @property
    def n_excluded(self) -> int:
        return len(self.excluded)

    @property
    def n_nlm_undefined(self) -> int:
        """Rows whose NLM is undefined (prediction constant or flat along the path)."""
        if not self.has_nlm:
            return 0
        return int(self.results[self.nlm_columns].isna().any(axis=1).sum())

    def _counts(self, cols: list[str], fn: Callable[[np.ndarray], Any]) -> Any:
        """``fn`` (a count) of each column's values: an int, or a Series per class for several outputs."""
        vals = {c: int(fn(self.results[c].to_numpy(dtype=float))) for c in cols}
        if self.output_names is None:
            return next(iter(vals.values())) if vals else 0
        return pd.Series({c.split("_", 1)[1]: v for c, v in vals.items()}, dtype="int64")

    @property
    def n_negative(self) -> Any:
        """Evaluated rows whose fME is negative (a Series per class for ``target_class='all'``)."""
        return self._counts(self.fme_columns, lambda v: (v < 0).sum())

    @property
    def n_nlm_linear(self) -> Any:
        """Rows whose NLM is at least ``nlm_linear_threshold`` (paper §5.4's "approximately linear"); 0 without
        NLMs (a Series per class for ``target_class='all'``)."""
        t = self.nlm_linear_threshold
        with np.errstate(invalid="ignore"):
            return self._counts(self.nlm_columns, lambda v: (v >= t).sum())

    @property
    def n_kept_extrapolation(self) -> int:
        """Rows flagged as extrapolation points but kept and evaluated (``on_extrapolation='keep'``); 0 otherwise."""
        if "extrapolation" not in self.results.columns:
            return 0
        return int(self.results["extrapolation"].to_numpy(dtype=bool).sum())

    def bootstrap_figures(self) -> dict[str, Any] | None:
        """The bootstrap's own figures: ``n_resamples`` (drawn), ``n_failed`` (refits that failed, left out),
        ``ci`` (``percentile`` or ``normal``) and ``errors`` (their distinct messages); None unless
        :attr:`inference` is ``bootstrap``."""
        rows = self.inference_rows
        if self.inference != "bootstrap" or rows is None or rows.draws is None:
            return None
        return {
            "n_resamples": int(rows.draws.shape[1]) + int(rows.n_failed),
            "n_failed": int(rows.n_failed),
            "ci": rows.ci,
            "errors": list(rows.errors),
        }

    @property
    def extrapolated(self) -> pd.DataFrame:
        """Rows left out as extrapolation points, with the point and reason."""
        return self.excluded[self.excluded["reason_type"] == "extrapolation"]

    # ----------------------------------------------------------------- inference
    def _inference_table(self, conf_level: float | None = None) -> pd.DataFrame:
        level = self.conf_level if conf_level is None else check_conf_level(conf_level)
        if self.inference_rows is not None:
            return self.inference_rows.average().table(level)
        parts = [
            sample_inference(self.results[c].to_numpy(dtype=float)).average().table(level) for c in self.fme_columns
        ]
        return pd.concat(parts, ignore_index=True)

    @property
    def inference(self) -> str:
        """The uncertainty method of the AME: 'delta', 'bootstrap' or 'sample' (paper §5.5's fixed-model CI)."""
        return "sample" if self.inference_rows is None else self.inference_rows.method

    @property
    def feature_values(self) -> pd.DataFrame:
        """The evaluated rows of ``data`` (a copy), aligned with ``results``."""
        return self.data.loc[self.results.index].copy()

    # ----------------------------------------------------------------- presentation primitives
    def _figures(self, col: str) -> dict[str, float]:
        v = self.results[col].to_numpy(dtype=float)
        middle = beside(lambda: median(v), now=v.size < MIN_ROWS_PER_THREAD)  # a selection, beside the sums
        d = describe(v)
        return {**d, "median": middle()}

    def _nlm_figures(self, col: str) -> dict[str, Any]:
        v = self.results[col].to_numpy(dtype=float)
        defined = np.isfinite(v).any()
        middle = beside(lambda: median(v[~np.isnan(v)]) if defined else float("nan"), now=v.size < MIN_ROWS_PER_THREAD)
        d = describe(v)
        st = self.results[col.replace("nlm", "nlm_status", 1)]
        return {
            "mean": d["mean"],
            "sd": d["sd"],
            "q25": d["q25"],
            "q75": d["q75"],
            "median": middle(),
            "share": float(np.mean(v[~np.isnan(v)] >= self.nlm_linear_threshold)) if defined else float("nan"),
            "undefined": int(np.isnan(v).sum()),
            "constant": int((st == "constant").sum()),
            "flat": int((st == "flat").sum()),
            "inaccurate": int((st == "inaccurate").sum()),
            "max_error": self._max_error(col, st),
        }

    def _nlm_counts(self, col: str) -> tuple[int, int]:
        """(defined NLMs, NLMs >= ``nlm_linear_threshold``) of one NLM column."""
        v = self.results[col].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            return int((~np.isnan(v)).sum()), int((v >= self.nlm_linear_threshold).sum())

    def _max_error(self, col: str, status: pd.Series) -> float | None:
        """The largest ``nlm_error`` of the rows marked inaccurate (None without that column or such rows)."""
        ecol = col.replace("nlm", "nlm_error", 1)
        bad = (status == "inaccurate").to_numpy()
        if ecol not in self.results.columns or not bad.any():
            return None
        return float(np.max(self.results[ecol].to_numpy(dtype=float)[bad]))

    def _exclusion_counts(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.excluded["reason_type"].value_counts().items()}

    def _step_lines(self) -> list[str]:
        lines = []
        for st in self.steps:
            if f"step_{st.feature}" in self.results.columns:  # on_extrapolation='shrink'
                share = self.results[f"step_{st.feature}"].to_numpy(dtype=float) / st.value
                q = np.quantile(share, [0.0, 0.25, 0.5, 0.75, 1.0]) if share.size else np.full(5, np.nan)
                lines.append(
                    f"  effective step of {st.feature} (share of h): min {q[0]:.3g}  q25 {q[1]:.3g}  median {q[2]:.3g}"
                    f"  q75 {q[3]:.3g}  max {q[4]:.3g}; shrunk rows {int((share < 1).sum())} "
                    f"(below {MIN_STEP_FRACTION:g} h: excluded)"
                )
        return lines

    def joint_estimates(self) -> tuple[Estimates, list[str], np.ndarray, float]:
        """For :func:`fme.hypotheses`: (the AME's estimates, row label, undefined mask, confidence level), as
        :meth:`fme.EstimatesTable.joint_estimates` gives them."""
        if self.output_names is not None:
            from ..exceptions import ParameterError

            raise ParameterError("hypotheses works on one output; compute the effects for one target_class.")
        rows = self.inference_rows
        est = (rows if rows is not None else sample_inference(self.results["fme"].to_numpy(dtype=float))).average()
        return est, ["b1"], np.zeros(1, dtype=bool), self.conf_level

    def to_frame(self) -> pd.DataFrame:
        """A copy of :attr:`results`."""
        return self.results.copy()


def stepped_frames(result: FMEResult, model: Any, target_class: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluation points and the stepped points (the model's columns) of ``result``'s evaluated rows."""
    X = make_predictor(model, target_class).select(result.data).iloc[result.positions]
    h = None
    if any(f"step_{s.feature}" in result.results.columns for s in result.steps):
        h = {s.feature: result.results[f"step_{s.feature}"].to_numpy(dtype=float) for s in result.steps}
    return X, apply_steps(X, result.steps, h)
