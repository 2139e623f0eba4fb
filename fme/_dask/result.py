"""The result of :func:`fme.fme` on Dask data: :class:`DaskFMEResult`, the summaries of
:class:`fme.FMEResult` merged over all chunks, with lazy row tables."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.plan import Plan
from .._core.result_base import EffectsPresentation
from .._core.summary import Moments, Summary
from .._utils.validation import check_conf_level
from ..inference.estimates import Estimates
from ..steps import Step
from .quantiles import quantiles as _quantiles

__all__ = ["DaskFMEResult"]


def _count_below(a: np.ndarray, x: float) -> int:
    """Values of the sorted array ``a`` below ``x``."""
    return int(np.searchsorted(a, x, side="left"))


# ----------------------------------------------------------------- the result
@dataclass(frozen=True, eq=False, repr=False)
class DaskFMEResult(EffectsPresentation):
    """Forward marginal effects of Dask data: the summaries of :class:`fme.FMEResult`, lazy row tables.

    Attributes
    ----------
    results, excluded : dask.dataframe.DataFrame
        As :attr:`FMEResult.results` / :attr:`FMEResult.excluded`, computed
        lazily (each computation evaluates the kernel on the partitions again).
    summary_data : Summary
        The merged summaries of all partitions (one pass).
    detector_fit : dict
        What the detector was fitted on (all rows for the envelope, else a
        seeded sample of ``sample_size`` rows).
    detector_frame : DataFrame or None
        The pandas frame the detector was fitted on (None without a detector),
        over the detector's columns: for the envelope a small frame of the
        finite min and max of every numeric column and the levels of every
        categorical one over all reference rows (a detector fitted on it equals
        one fitted on all rows); for any other detector the seeded sample of at
        most ``sample_size`` reference rows (all of them when there are no
        more; :data:`fme.effects.DASK_SAMPLE_SIZE` by default). A detector
        fitted on it in memory flags as this one does.
    """

    results: Any
    excluded: Any
    steps: tuple[Step, ...]
    summary_data: Summary = field(repr=False)
    model_description: str = "model"
    nlm_method: str | None = None
    nlm_nodes: int | None = None
    nlm_tol: float | None = None
    nlm_linear_threshold: float = 0.9
    detector: str | None = None
    on_extrapolation: str | None = None
    inference_method: str = "sample"
    conf_level: float = 0.95
    detector_fit: dict[str, Any] = field(default_factory=dict)
    detector_frame: pd.DataFrame | None = field(default=None, repr=False)
    sorted_parts: dict[str, Any] = field(default_factory=dict, repr=False)
    output_names: tuple[Any, ...] | None = None
    data: Any = field(default=None, repr=False)
    plan: Plan | None = field(default=None, repr=False)
    model_features: tuple[str, ...] | None = None
    bootstrap_draws: tuple[np.ndarray, dict[str, Any]] | None = field(default=None, repr=False)
    groups: Any = field(default=None, repr=False)
    group_parts: list[Any] = field(default_factory=list, repr=False)
    _cache: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)
    scale: str | None = None
    #: The class whose probability the effects are of (a classifier with one output), else None.
    explained_class: str | None = None

    # ------------------------------------------------------------- columns
    fme_columns = property(lambda self: ["fme"])

    @property
    def nlm_columns(self) -> list[str]:
        return ["nlm"] if self.summary_data.nlm is not None else []

    @property
    def has_nlm(self) -> bool:
        return self.summary_data.nlm is not None

    # ------------------------------------------------------------- figures (one pass, exact merges)
    @property
    def n(self) -> int:
        return int(self.summary_data.codes[0])

    @property
    def n_excluded(self) -> int:
        return int(self.summary_data.codes[1:].sum())

    @property
    def ame(self) -> float:
        return float(self.summary_data.fme.mean[0]) if self.n else float("nan")

    @property
    def sd(self) -> float:
        return float(self.summary_data.fme.sd()[0])

    @property
    def anlm(self) -> float:
        m = self.summary_data.nlm
        return float("nan") if m is None or m.n[0] == 0 else float(m.mean[0])

    @property
    def share_linear(self) -> float:
        m = self.summary_data.nlm
        n_linear = self.summary_data.n_linear
        return float("nan") if m is None or m.n[0] == 0 else float(cast(np.ndarray, n_linear)[0] / m.n[0])

    def _status(self, i: int) -> int:
        st = self.summary_data.status
        return 0 if st is None else int(st[i, 0])

    n_nlm_constant = property(lambda self: self._status(1))
    n_nlm_flat = property(lambda self: self._status(2))
    n_nlm_inaccurate = property(lambda self: self._status(3))

    @property
    def n_nlm_undefined(self) -> int:
        return cast(int, self.n_nlm_constant + self.n_nlm_flat)

    @property
    def n_nlm_linear(self) -> int:
        """Rows whose NLM is at least ``nlm_linear_threshold`` (merged counts; 0 without NLMs)."""
        return 0 if self.summary_data.n_linear is None else int(self.summary_data.n_linear[0])

    @property
    def n_kept_extrapolation(self) -> int:
        """Rows flagged as extrapolation points but kept and evaluated (``on_extrapolation='keep'``); 0 otherwise."""
        return int(self.summary_data.n_kept_extrapolation)

    @property
    def n_negative(self) -> int:
        """Evaluated rows whose fME is negative: counted in the sorted values kept on the workers (only the counts
        reach the client), once; :meth:`release` counts them before it frees those values."""
        key = ("fme", "negative")
        if key not in self._cache:
            parts = self.sorted_parts.get("fme")
            if not parts:
                return 0 if not self.n else self._missing_parts("n_negative")
            from dask.base import compute
            from dask.delayed import delayed

            self._cache[key] = int(sum(compute(*[delayed(_count_below)(a, 0.0) for a in parts])))  # type: ignore[no-untyped-call]  # dask: untyped
        return cast(int, self._cache[key])

    def bootstrap_figures(self) -> dict[str, Any] | None:
        """The bootstrap's own figures, as :meth:`fme.FMEResult.bootstrap_figures`: ``n_resamples``,
        ``n_failed``, ``ci`` and ``errors``; None unless the inference is ``bootstrap``."""
        if self.inference_method != "bootstrap" or self.bootstrap_draws is None:
            return None
        info = self.bootstrap_draws[1]
        return {
            "n_resamples": int(info["n_resamples"]),
            "n_failed": int(info["n_failed"]),
            "ci": info["ci"],
            "errors": list(info["errors"]),
        }

    def _missing_parts(self, what: str) -> int:
        from ..exceptions import FMEError

        raise FMEError(
            f"{what} needs the sorted fMEs, freed by release() before it was asked for; ask for it before release()."
        )

    # ------------------------------------------------------------- exact quantiles (two rounds of counting)
    def _quantile_of(self, which: str, j: int, p: float) -> float:
        """The ``p`` quantile of output ``j``'s fMEs (``which='fme'``) or defined NLMs (``'nlm'``), exact, from
        the sorted values kept on the workers (cached: computed once for the quartiles and the median)."""
        key = (which, j, p)
        if key not in self._cache:
            parts = self.sorted_parts.get(which)
            if not parts:
                return float("nan")
            from dask.delayed import delayed

            m = cast(Moments, self.summary_data.fme if which == "fme" else self.summary_data.nlm)  # parts: NLMs set
            # one output: a chunk's sorted values are one array; several: a tuple of arrays, one per output
            mine = parts if self.output_names is None else [delayed(operator.getitem)(part, j) for part in parts]
            for k, v in _quantiles(mine, int(m.n[j]), [0.25, 0.5, 0.75]).items():
                self._cache[(which, j, k)] = v
        return cast(float, self._cache[key])

    def _quantiles_of(self, which: str, p: float) -> Any:
        return self._quantile_of(which, 0, p)

    q25 = property(lambda self: self._quantiles_of("fme", 0.25))
    q75 = property(lambda self: self._quantiles_of("fme", 0.75))
    median = property(lambda self: self._quantiles_of("fme", 0.5))

    @property
    def median_nlm(self) -> Any:
        return self._quantiles_of("nlm", 0.5) if self.has_nlm else float("nan")

    def release(self) -> None:
        """Drop the sorted values kept on the workers for the quantiles (computed ones stay cached, and so does
        :attr:`n_negative`)."""
        for which in ("fme", "nlm"):
            if self.sorted_parts.get(which):
                for j in range(1 if self.output_names is None else len(self.output_names)):
                    self._quantile_of(which, j, 0.5)
        if self.sorted_parts.get("fme") and self.output_names is None:
            self.n_negative  # noqa: B018 - counted (and cached) while the sorted values are there
        self.sorted_parts.clear()

    # ------------------------------------------------------------- presentation primitives
    def _figures(self, col: str) -> dict[str, float]:
        j = self.fme_columns.index(col)
        m = self.summary_data.fme
        n = int(m.n[j])
        return {
            "mean": float(m.mean[j]) if n else float("nan"),
            "sd": float(m.sd()[j]),
            "n": n,
            "q25": self._quantile_of("fme", j, 0.25),
            "median": self._quantile_of("fme", j, 0.5),
            "q75": self._quantile_of("fme", j, 0.75),
        }

    def _nlm_figures(self, col: str) -> dict[str, Any]:
        m = cast(Moments, self.summary_data.nlm)  # asked for with NLMs
        return {
            "mean": self.anlm,
            "median": self.median_nlm,
            "share": self.share_linear,
            "sd": float(m.sd()[0]),
            "undefined": self.n_nlm_undefined,
            "constant": self.n_nlm_constant,
            "flat": self.n_nlm_flat,
            "inaccurate": self.n_nlm_inaccurate,
            "max_error": self._max_error(0),
        }

    def _nlm_counts(self, col: str) -> tuple[int, int]:
        """(defined NLMs, NLMs >= ``nlm_linear_threshold``), merged over the chunks."""
        j = self.nlm_columns.index(col)
        nlm, n_linear = cast(Moments, self.summary_data.nlm), cast(np.ndarray, self.summary_data.n_linear)  # NLMs set
        return int(nlm.n[j]), int(n_linear[j])

    def _max_error(self, j: int) -> float | None:
        e = self.summary_data.nlm_max_error
        return None if e is None or np.isnan(e[j]) else float(e[j])

    def _exclusion_counts(self) -> dict[str, int]:
        c = self.summary_data.codes
        return {
            "missing": int(c[1]),
            "at_level": int(c[2]),
            "extrapolation": int(c[3]),
            "incomplete": int(c[4]),
            "unknown_level": int(c[5]),
        }

    _summary_title = "Forward marginal effects of {model} (Dask data)"

    def _fitted_on(self) -> str:
        return cast(str, self.detector_fit.get("fitted_on", "the reference data"))

    # ------------------------------------------------------------- inference
    @property
    def inference(self) -> str:
        return self.inference_method

    def _estimates(self) -> Estimates:
        s, n = self.summary_data, self.n
        est = np.array([self.ame])
        if self.inference_method == "delta":
            return Estimates("delta", est, grad=(cast(np.ndarray, s.jacobian) / n)[None, :], vcov=s.vcov)
        if self.inference_method == "bootstrap":
            draws, info = cast(tuple[np.ndarray, dict[str, Any]], self.bootstrap_draws)  # set for bootstrap
            return Estimates("bootstrap", est, draws=draws[None, :], ci=info["ci"])
        se = np.array([self.sd / np.sqrt(n) if n >= 2 else np.nan])
        return Estimates("sample", est, se=se, df=np.array([max(n - 1.0, 1.0)]))

    def _inference_table(self, conf_level: float | None = None) -> pd.DataFrame:
        level = self.conf_level if conf_level is None else check_conf_level(conf_level)
        return self._estimates().table(level)
