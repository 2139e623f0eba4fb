"""What every fME result shows, built once on a few primitives (in memory and on Dask data alike).

:class:`~fme._core.results.FMEResult`, :class:`~fme._dask.result.DaskFMEResult` and
:class:`~fme._dask.outputs.DaskMultiFMEResult` differ in where their figures come from (the rows in
memory; summaries merged over chunks; one summary per output), not in how they are presented. Each
provides the primitives below; :class:`EffectsPresentation` builds ``tidy()``, ``conf_int()``,
``std_error``, ``p_value``, ``summary()`` and ``repr()`` from them, so the engines print the same text.

Primitives: ``output_names``, ``steps``, ``model_description``, ``detector``, ``on_extrapolation``,
``nlm_method``, ``nlm_nodes``, ``nlm_tol``, ``nlm_linear_threshold``, ``fme_columns``, ``nlm_columns``,
``n``, ``n_excluded``, ``ame``; ``_inference_table(conf_level)`` (one row per output),
``_figures(column)`` (mean, sd, q25, median, q75, n of a column of fMEs), ``_nlm_figures(column)``,
``_exclusion_counts()``; optional hooks ``_summary_title``, ``_fitted_on()``, ``_step_lines()`` and
``_nlm_footer()``.

On these primitives every result also has the same *public figures*, whatever engine computed it:
:meth:`~EffectsPresentation.exclusion_counts`, :attr:`~EffectsPresentation.n_total`,
:attr:`~EffectsPresentation.n_extrapolation`, :meth:`~EffectsPresentation.quantiles` and
:meth:`~EffectsPresentation.nlm_figures` (and, per engine, ``n_negative``, ``n_nlm_linear`` and
``n_kept_extrapolation``). A report or a user reads these, never the primitives: on the same rows the two
engines give the same figures (the moments merged over chunks equal the pooled ones up to rounding, the
Dask quantiles are exact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from .._utils.numfmt import count

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..steps import Step

__all__ = ["EffectsPresentation", "EXCLUSION_LABELS", "with_class"]

#: Readable labels of the exclusion reasons, in the order the summaries list them.
EXCLUSION_LABELS = {
    "missing": "missing or infinite value in a stepped feature",
    "at_level": "already at the target level",
    "extrapolation": "extrapolation",
    "incomplete": "missing value in a model input, left out as the model's fit did",
    "unknown_level": "a categorical input at a level the fitted model never saw",
}


def with_class(table: Any, explained: str | None) -> Any:
    """``table`` with a ``class`` column naming the class whose probability its rows are of (after ``reference``
    when there is one, else first), as ``target_class='all'`` tables show every class: a classifier's effects never
    leave the class implicit. ``table`` itself (changed in place, keeping its joint uncertainty), unchanged for a
    model that is no classifier or a table that already names its classes. A lazy (Dask) table: a new one with
    the column."""
    if explained is None or "class" in table.columns:
        return table
    columns = list(table.columns)
    at = columns.index("reference") + 1 if "reference" in columns else 0
    if not isinstance(table, pd.DataFrame):
        return table.assign(**{"class": explained})[columns[:at] + ["class"] + columns[at:]]
    table.insert(at, "class", explained)
    return table


class EffectsPresentation:
    """``tidy()``, ``conf_int()``, ``std_error``, ``p_value``, ``summary()`` and ``repr()`` of an fME result."""

    _summary_title = "Forward marginal effects of {model}"

    # The primitives each result provides (declared for the type checker; the concrete result classes define
    # them as dataclass fields, properties and methods).
    steps: tuple[Step, ...]
    output_names: tuple[Any, ...] | None
    model_description: str
    detector: str | None
    on_extrapolation: str | None
    nlm_method: str | None
    nlm_nodes: int | None
    nlm_tol: float | None
    nlm_linear_threshold: float
    scale: str | None
    explained_class: str | None

    if TYPE_CHECKING:  # pragma: no cover - typing only: never defined here at run time

        @property
        def fme_columns(self) -> list[str]: ...

        @property
        def nlm_columns(self) -> list[str]: ...

        @property
        def n(self) -> int: ...

        @property
        def n_excluded(self) -> int: ...

        @property
        def ame(self) -> Any: ...

        def _inference_table(self, conf_level: float | None = None) -> pd.DataFrame: ...

        def _figures(self, col: str) -> dict[str, float]: ...

        def _nlm_figures(self, col: str) -> dict[str, Any]: ...

        def _nlm_counts(self, col: str) -> tuple[int, int]: ...

        def _exclusion_counts(self) -> dict[str, int]: ...

    # ------------------------------------------------------------- steps
    def describe_steps(self) -> str:
        return ", ".join(s.describe() for s in self.steps)

    @property
    def step_dict(self) -> dict[str, Any]:
        return {s.feature: s.value for s in self.steps}

    # ------------------------------------------------------------- inference
    def _one_or_series(self, col: str) -> Any:
        values = self._inference_table()[col].to_numpy(dtype=float)
        if self.output_names is None:
            return float(values[0])
        return pd.Series(values, index=list(self.output_names), dtype=float)

    @property
    def std_error(self) -> Any:
        """Standard error of the AME under :attr:`inference` (a Series per class for several outputs)."""
        return self._one_or_series("std_error")

    @property
    def p_value(self) -> Any:
        """Two-sided p-value of AME = 0 (z for delta/bootstrap, t for sample)."""
        return self._one_or_series("p_value")

    def conf_int(self, conf_level: float | None = None) -> Any:
        """(low, high) CI of the AME (a DataFrame with one row per class for several outputs)."""
        t = self._inference_table(conf_level)
        if self.output_names is None:
            return float(t["conf_low"].iloc[0]), float(t["conf_high"].iloc[0])
        return t[["conf_low", "conf_high"]].set_axis(list(self.output_names))

    def _step_columns(self) -> dict[str, Any]:
        """feature, step, level, reference as :func:`fme.ame` fills them (a multivariate step: the features
        joined by ', ', step NaN), and ``contrast``, the readable step (``rm + 1``, ``chas -> 1``)."""
        if len(self.steps) == 1:
            s = self.steps[0]
            head = {
                "feature": s.feature,
                "step": float(s.value) if s.is_numeric else float("nan"),
                "level": None if s.is_numeric else s.value,
                "reference": None,
            }
        else:
            head = {
                "feature": ", ".join(str(s.feature) for s in self.steps),
                "step": float("nan"),
                "level": None,
                "reference": None,
            }
        return {**head, "contrast": self.describe_steps()}

    def tidy(self, conf_level: float | None = None) -> pd.DataFrame:
        """The AME as a table, with the columns of :func:`fme.ame` where they mean the same:
        feature, step, level, reference, contrast (the readable step), (class), ame, std_error,
        statistic, p_value, conf_low, conf_high, inference, covers (``model uncertainty`` or
        ``model held fixed``), sd, q25, q75, n, n_excluded (one row; one per class for several outputs)."""
        t = self._inference_table(conf_level)
        rows = []
        for j, col in enumerate(self.fme_columns):
            d = self._figures(col)
            row: dict[str, Any] = self._step_columns()
            if self.output_names is not None:
                row["class"] = self.output_names[j]
            elif self.explained_class is not None:
                # the explained class is never implicit: a binary classifier's table says which probability
                row["class"] = self.explained_class
            row.update(
                {
                    "ame": d["mean"],
                    **t.iloc[j].to_dict(),
                    "sd": d["sd"],
                    "q25": d["q25"],
                    "q75": d["q75"],
                    "n": int(d["n"]),
                    "n_excluded": self.n_excluded,
                }
            )
            rows.append(row)
        return pd.DataFrame(rows)

    # ------------------------------------------------------------- public figures (both engines)
    def _output_column(self, columns: list[str], output: Any, what: str) -> str:
        """The column of ``output`` among ``columns`` (``fme``/``nlm`` columns); one output needs none."""
        from ..exceptions import ParameterError

        if not columns:
            raise ParameterError(f"these effects have no {what} figures; recompute with fme.fme(..., nlm=True).")
        if output is None:
            if len(columns) > 1:
                raise ParameterError(f"the effects have one {what} column per class {columns}; pass output=<class>.")
            return columns[0]
        col = f"{columns[0].split('_', 1)[0]}_{output}"
        if col not in columns:
            raise ParameterError(f"output={output!r} is not one of the classes {list(self.output_names or [])}.")
        return col

    def exclusion_counts(self) -> dict[str, int]:
        """Rows left out, by reason (paper §3.2, §5.1).

        Returns
        -------
        dict
            ``missing`` (missing or infinite value in a stepped feature), ``at_level`` (already at the
            target level), ``extrapolation`` (left out as extrapolation points) and ``incomplete`` (missing
            value in a model input); every reason is a key, 0 when no row was left out for it.
        """
        counts = self._exclusion_counts()
        return {key: int(counts.get(key, 0)) for key in EXCLUSION_LABELS}

    @property
    def n_total(self) -> int:
        """Rows of the data: the evaluated ones and those left out (:meth:`exclusion_counts`)."""
        return int(self.n) + int(self.n_excluded)

    @property
    def n_extrapolation(self) -> int:
        """Rows left out as extrapolation points (paper §5.1); 0 without a detector or when the policy keeps
        them (see ``n_kept_extrapolation``)."""
        return self.exclusion_counts()["extrapolation"]

    def quantiles(self, output: Any = None) -> dict[str, float]:
        """Quartiles and median of the fMEs (paper §5.5's description of their distribution).

        Parameters
        ----------
        output : class label, optional
            For effects with one column per class (``target_class='all'``): the class.

        Returns
        -------
        dict
            ``q25``, ``median`` and ``q75`` as :func:`numpy.quantile` (linear interpolation) gives them for
            the pooled fMEs; NaN without evaluated rows. On Dask data they are exact too (order statistics
            counted over the chunks, not estimated).
        """
        d = self._figures(self._output_column(self.fme_columns, output, "fME"))
        return {"q25": float(d["q25"]), "median": float(d["median"]), "q75": float(d["q75"])}

    def nlm_figures(self, output: Any = None) -> dict[str, Any]:
        """The summary of the NLMs (paper §5.4): how far each fME is from a linear effect along its step.

        Parameters
        ----------
        output : class label, optional
            For effects with one column per class: the class.

        Returns
        -------
        dict
            ``n`` (rows with a defined NLM), ``mean`` (the ANLM), ``sd`` (n - 1), ``median``,
            ``share_linear`` and ``n_linear`` (defined NLMs >= ``nlm_linear_threshold``), ``n_undefined``,
            ``n_constant`` and ``n_flat`` (prediction constant or flat along the path: NLM undefined),
            ``n_inaccurate`` (error estimate above ``nlm_tol``, NLM kept) and ``max_error`` (largest error
            estimate of those, or None).

        Raises
        ------
        ParameterError
            When the effects have no NLMs.
        """
        col = self._output_column(self.nlm_columns, output, "NLM")
        f = self._nlm_figures(col)
        n, n_linear = self._nlm_counts(col)
        return {
            "n": n,
            "mean": float(f["mean"]),
            "sd": float(f["sd"]),
            "median": float(f["median"]),
            "share_linear": float(f["share"]),
            "n_linear": n_linear,
            "n_undefined": int(f["undefined"]),
            "n_constant": int(f["constant"]),
            "n_flat": int(f["flat"]),
            "n_inaccurate": int(f["inaccurate"]),
            "max_error": f.get("max_error"),
        }

    def release(self) -> None:
        """Free what the engine keeps for later figures (in memory: nothing; on Dask data the sorted values
        on the workers, after the quantiles were computed). The figures stay available."""

    # ------------------------------------------------------------- summary
    def _fitted_on(self) -> str | None:
        return None

    def _step_lines(self) -> list[str]:
        return []

    def _nlm_footer(self) -> list[str]:
        return []

    def _method_text(self) -> str:
        method = (
            cast(str, self.nlm_method)
            if self.nlm_nodes is None
            else f"{self.nlm_method}, {count(self.nlm_nodes, 'node')}"
        )
        if self.nlm_method == "gauss-kronrod" and self.nlm_tol is not None:
            method += f", tol {self.nlm_tol:g}"
        return method

    def summary(self) -> str:
        """Readable summary: steps, rows evaluated/excluded, extrapolation, AME, SD, quartiles, ANLM."""
        lines = [
            self._summary_title.format(model=self.model_description),
            f"  step: {self.describe_steps()}",
            *self._step_lines(),
            f"  rows evaluated: {self.n} of {self.n + self.n_excluded}",
        ]
        if getattr(self, "scale", None):
            lines.append(f"  scale: {self.scale}")
        counts = self._exclusion_counts()
        lines += [
            f"  excluded ({label}): {counts[key]}" for key, label in EXCLUSION_LABELS.items() if counts.get(key, 0)
        ]
        if self.detector is None:
            lines.append("  extrapolation: not checked (pass extrapolation='envelope' and reference_data)")
        else:
            fitted = self._fitted_on()
            lines.append(
                f"  extrapolation: {self.detector}, policy {self.on_extrapolation}"
                + ("" if fitted is None else f", fitted on {fitted}")
            )
        t = self._inference_table()
        level = getattr(self, "conf_level", 0.95)
        for j, col in enumerate(self.fme_columns):
            d = self._figures(col)
            lines.append(
                f"  {col}: AME {d['mean']:.6g}  SD {d['sd']:.6g}  q25 {d['q25']:.6g}  "
                f"median {d['median']:.6g}  q75 {d['q75']:.6g}"
            )
            r = t.iloc[j]
            lines.append(
                f"    std_error {r['std_error']:.6g}  {100 * level:g}% CI [{r['conf_low']:.6g}, "
                f"{r['conf_high']:.6g}]  ({r['inference']}: {r['covers']})"
            )
        t = self.nlm_linear_threshold
        for col in self.nlm_columns:
            f = self._nlm_figures(col)
            text = (
                f"  {col}: ANLM {f['mean']:.6g}  median {f['median']:.6g}  share >= {t:g} {f['share']:.3g}  "
                f"SD {f['sd']:.6g}  "
            )
            if f.get("q25") is not None:
                text += f"q25 {f['q25']:.6g}  q75 {f['q75']:.6g}  "
            if f.get("undefined") is not None:
                text += (
                    f"undefined {f['undefined']} (constant {f['constant']}, flat {f['flat']})  "
                    f"inaccurate {f['inaccurate']}  "
                )
                if f["inaccurate"]:  # their NLMs are kept: say so, with the largest error estimate
                    worst = f.get("max_error")
                    hint = "; a larger nlm_budget tightens it" if self.nlm_method == "gauss-kronrod" else ""
                    text += (
                        "(included in the ANLM"
                        + ("" if worst is None else f"; error estimate up to {worst:.3g}")
                        + hint
                        + ")  "
                    )
            lines.append(text + f"(method: {self._method_text()})")
        lines += self._nlm_footer()
        return "\n".join(lines)

    def __repr__(self) -> str:
        ame = self.ame
        ame_txt = f"{ame:.6g}" if isinstance(ame, float) else ame.round(6).to_dict()
        return (
            f"{type(self).__name__}(step={self.describe_steps()!r}, n={self.n}, excluded={self.n_excluded}, "
            f"ame={ame_txt})"
        )
