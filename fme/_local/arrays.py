"""The array route of :func:`fme.fme` and :func:`fme.ame`: data given as an array of the array API standard
(NumPy, CuPy, PyTorch, ...) and a model that is a plain function of such an array (paper §3.2, §5.4).

The front door validated the array (:func:`fme._core.arrays.check_array_data`) and resolved the plan
(:func:`fme._core.plan.front_plan`, ``Planned.on_arrays``). Here the steps are derived as on a DataFrame
(:meth:`~fme._core.plan.Plan.with_steps`, on a frame of the array's columns without rows; a rule such as ``"sd"``
reads the stepped columns, copied to the host), the rows with a missing or infinite stepped value are left out
(:func:`fme._core.arrays.array_exclusions`, tested on the device), and the batch kernels of the DataFrame route run
unchanged on a frame of (row, t) pairs: the fixed-rule NLMs (:func:`fme._core.kernel.evaluate_steps`, in batches of
``batch_size`` rows, :func:`fme.nlm.nlm_from_path` inside it) and the error-controlled
Gauss-Kronrod NLM (:func:`fme._nlm.evaluate.nlm_values`), whose bookkeeping chooses the points of every path;
f(x) and f(x + h) without a fixed rule are two calls per batch that name their rows by a slice (``_fmes``).
Each frame of pairs goes to an :class:`~fme._adapters.array_function.ArrayPredictor`, which builds the points
x + t h in the array's namespace on its device, calls the model there and brings back only the predictions
(points x predictions, within the kernels' frame sizes). The points are the DataFrame route's numbers, so the fMEs,
NLMs and statuses are those of :func:`fme.fme` on ``pd.DataFrame(array, columns=feature_names)`` (to the model's
own rounding).

The result is the same :class:`~fme._core.results.FMEResult` (its ``data`` the array as a host DataFrame, one copy
for a device array) and the same AME table (:class:`~fme.inference.table.EstimatesTable`); the Dask engine's
counterpart (:mod:`fme._dask.arrays`) refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._adapters.array_function import ROW, ArrayPredictor, Pairs, T
from .._core.arrays import ArrayData, array_exclusions
from .._core.exclusions import check_evaluated, excluded_frame
from .._core.kernel import evaluate_steps
from .._core.plan import AMEOptions, Plan
from .._core.results import FMEResult
from .._nlm.evaluate import nlm_values
from .._nlm.path_frames import FRAME_CELLS
from .._utils.columns import frame_of
from .._utils.progress import progress_bar
from .._utils.stats import describe
from .._utils.threads import waited_on_error
from ..exceptions import ParameterError
from ..extrapolation.guards import detector_name
from ..inference.estimates import COVERS, Estimates, sample_inference, undefined_where
from ..inference.table import EstimatesTable
from ..inference.wald import stack_estimates
from ..steps import STACK_CELL_BUDGET, Step

__all__ = ["fme", "ame", "evaluate", "refuse_table_options"]


@dataclass(frozen=True)
class _PathStep(Step):
    """The one step of the (row, t) frames: t + 1 moves a point from x (t = 0) to x + h (t = 1). It describes
    itself as the caller's steps, so the kernels' messages and progress bars name those."""

    label: str = ""

    def describe(self) -> str:
        return self.label


#: Rows of a fixed-rule NLM batch however wide the data (the DataFrame route's floor).
_MIN_BATCH = 10_000
#: The Gauss-Kronrod nodes per row of the error-controlled NLM's first frames.
_GK_NODES = 21


def fme(plan: Plan, data: ArrayData, reference: Any, steps: Any) -> FMEResult:
    """:func:`fme.fme` on the array ``data`` with ``plan`` resolved by the front door (``reference`` is None: step
    rules read ``data``)."""
    return evaluate(plan, data, reference, steps)


def evaluate(plan: Plan, data: ArrayData, reference: Any, steps: Any, host: pd.DataFrame | None = None) -> FMEResult:
    """The :class:`FMEResult` of the step specification ``steps`` on ``data`` (see the module docstring); its
    ``data`` is ``host`` when given, else the array copied to the host.

    Raises
    ------
    StepError, FeatureError
        A categorical step or an unknown feature (as on a DataFrame: every column of an array is numeric).
    DataError
        No row can be evaluated.
    """
    frame = data.empty_frame()
    # a rule such as "sd" reads the stepped columns: those (only) are copied to the host, once per call
    ruled = isinstance(steps, Mapping) and any(isinstance(v, str) for v in steps.values())
    stepped_cols = [f for f in steps if f in data.feature_names] if ruled else []
    rules = data.host_frame(stepped_cols) if stepped_cols else frame
    stepped = plan.with_steps(frame, steps, rules)
    code, notes = array_exclusions(data, stepped.steps)
    check_evaluated(stepped, code, lambda: rules)
    cand = np.flatnonzero(code == 0)
    label = ", ".join(s.describe() for s in stepped.steps)
    predictor = ArrayPredictor(
        plan.model,
        data.values,
        data.xp,
        data.device,
        [data.column(s.feature) for s in stepped.steps],
        [float(s.value) for s in stepped.steps],
        plan.predictor.description,
        data.library,
    )
    path = (_PathStep(T, "numeric", 1.0, label=label),)
    f0, f1, nlm, status, extra = _evaluate_rows(stepped, predictor, cand, path, len(data.feature_names))
    res: dict[str, Any] = {"fme": f1 - f0}
    if nlm is not None:
        res.update(nlm=nlm, nlm_status=status)
        if "err" in extra:
            res.update(nlm_error=extra["err"], nlm_route=extra["route"])
    index = pd.RangeIndex(data.n)
    out_index = index if cand.size == data.n else index[cand]  # every row: the index as it is
    settings, names = stepped.settings, stepped.predictor.feature_names
    return FMEResult(
        results=frame_of(res, out_index),  # the columns are this call's own arrays
        steps=stepped.steps,
        excluded=excluded_frame(code, notes, index),
        data=data.host_frame() if host is None else host,
        predictions=frame_of({"f_x": f0, "f_x_step": f1}, out_index),
        model_description=stepped.predictor.description,
        explained_class=None,
        output_names=None,
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=float(plan.options.nlm_linear_threshold),
        detector=None if plan.detector is None else detector_name(plan.detector),
        on_extrapolation=plan.policy,
        model_features=None if names is None else tuple(names),
        inference_rows=sample_inference(res["fme"]),
        conf_level=plan.conf_level,
        positions=cand,
        scale=None,
    )


def _evaluate_rows(
    plan: Plan, predictor: ArrayPredictor, cand: np.ndarray, path: tuple[Step, ...], width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, dict[str, Any]]:
    """f(x), f(x + h) and, with the plan's NLM, the NLMs, their status and the method's extra columns
    (Gauss-Kronrod: ``err``, ``route``) of the rows at the positions ``cand``; the frames are as large as the
    DataFrame route's on data ``width`` columns wide (``batch_size`` rows when given)."""
    rule, settings, batch = plan.rule, plan.settings, plan.batch_size
    extra: dict[str, Any] = {}
    if settings is None:  # the fMEs alone: the rows named by position
        f0, f1 = _fmes(predictor, cand, batch, path[0].describe(), plan.progress)
        return f0, f1, None, None, extra
    # the NLM's kernels take the rows as a frame of (row, t) pairs
    pairs = pd.DataFrame({ROW: cand.astype(float), T: np.zeros(cand.size)})
    if rule is not None:
        size = batch or max(_MIN_BATCH, STACK_CELL_BUDGET // (max(1, width) * max(1, rule.n_evaluations)))
        got = evaluate_steps(predictor, pairs, path, rule, size, None, plan.progress)
        nlm, status = got.classified(settings.flat_tol, plan.spread)
        return got.f0, got.f1, nlm, status, extra
    f0, f1 = _fmes(predictor, cand, batch, path[0].describe(), plan.progress)
    frames = batch or max(1000, FRAME_CELLS // (max(1, width) * _GK_NODES))
    nlm, status, _, extra = nlm_values(
        settings,
        predictor,
        pairs,
        path,
        None,
        f0,
        f1,
        frames,
        spread=plan.spread,
        return_sd=True,
        progress=plan.progress,
    )
    return f0, f1, nlm, status, extra


def _fmes(
    predictor: ArrayPredictor, cand: np.ndarray, batch: int | None, label: str, progress: bool | None
) -> tuple[np.ndarray, np.ndarray]:
    """f(x) and f(x + h) of the rows ``cand`` (ascending positions), in batches of ``batch`` rows (default all):
    each call names its rows by a slice when they are consecutive (no exclusions), else by their positions, and
    one t for all (:class:`~fme._adapters.array_function.Pairs`), so nothing per point crosses to the device."""
    n = cand.size
    size = batch or max(n, 1)
    consecutive = n > 0 and int(cand[-1] - cand[0]) == n - 1
    f0_parts, f1_parts = [], []
    starts = range(0, n, size)
    for start in progress_bar(starts, total=len(starts), desc=f"fME {label}", progress=progress):
        stop = min(start + size, n)
        rows = slice(int(cand[0]) + start, int(cand[0]) + stop) if consecutive else cand[start:stop]
        where = (start, stop, n)
        moved = predictor.points_beside(Pairs(rows, 1.0))  # x + h written while the model predicts f(x)
        with waited_on_error(moved):
            f0_parts.append(predictor(Pairs(rows, 0.0), stage="f(x)", rows=where))
        f1_parts.append(predictor(moved(), stage=f"f(x + h) for the step {label}", rows=where))
    if not f0_parts:
        return np.empty(0), np.empty(0)
    if len(f0_parts) == 1:  # one batch: its arrays as they are
        return f0_parts[0], f1_parts[0]
    return np.concatenate(f0_parts), np.concatenate(f1_parts)


def ame(plan: Plan, data: ArrayData, reference: Any, steps: Mapping[str, Any], table: AMEOptions) -> EstimatesTable:
    """:func:`fme.ame` on the array ``data``: one univariate fME per feature of ``steps`` (:func:`evaluate`), its
    mean, the fixed-model interval (``inference='sample'``, paper §5.5) and the spread of the fMEs, as the rows of
    the DataFrame route's table.

    Raises
    ------
    ParameterError
        ``by``, ``wts``, ``hypothesis`` or ``vcov='unconditional'``: they need a DataFrame
        (:func:`refuse_table_options`).
    """
    refuse_table_options(
        by=table.by_cols, wts=table.wts, hypothesis=table.hypothesis, unconditional=table.unconditional
    )
    frame = data.empty_frame()
    rows: list[dict[str, Any]] = []
    done: list[Estimates] = []
    for feature, value in steps.items():
        # the table reads the fMEs only: no host copy of the array for the result's data
        res = evaluate(plan, data, reference, {feature: value}, host=frame)
        values = res.results["fme"].to_numpy(dtype=float)
        est = sample_inference(values).average(np.zeros(values.size, dtype=np.int64), 1)
        d = describe(values, table.conf_level)
        figures = undefined_where(est.table(table.conf_level), np.array([values.size == 0]))
        rows.append(
            {
                "feature": feature,
                "step": res.steps[0].value,
                "level": None,
                "reference": None,
                "ame": d["mean"],
                **figures.iloc[0].to_dict(),
                "sd": d["sd"],
                "q25": d["q25"],
                "q75": d["q75"],
                "n": int(d["n"]),
                "n_excluded": data.n - values.size,
                "inference": table.method,
                "covers": COVERS[table.method],
            }
        )
        done.append(est)
    out = pd.DataFrame(rows, columns=list(table.columns))
    return EstimatesTable.from_frame(out, stack_estimates(done), conf_level=table.conf_level)


def refuse_table_options(**given: Any) -> None:
    """:func:`fme.ame`'s options that need a DataFrame (``by``, ``wts``, ``hypothesis``, ``vcov='unconditional'``):
    a ParameterError names those given (None or empty when not)."""
    names = {"unconditional": "vcov='unconditional'"}
    used = [names.get(k, k) for k, v in given.items() if v is not None and not (isinstance(v, (tuple, list)) and not v)]
    if used:
        raise ParameterError(
            f"fme.ame on an array does not take {', '.join(used)}; pass the data as a DataFrame "
            "(pd.DataFrame(numpy_array, columns=feature_names)) for by-groups, weights, hypotheses and the "
            "unconditional variance."
        )
