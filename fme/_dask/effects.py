"""fMEs, NLMs and AMEs of a Dask DataFrame (issue 14): the batch kernel mapped over partitions.

:func:`fme_dask` is what :func:`fme.fme` runs when ``data`` (or
``reference_data``) is a ``dask.dataframe.DataFrame``:

1. the arguments are validated on the first rows (and on the stepped columns
   of the reference data when a step is a rule such as ``"sd"`` or a level of
   a non-categorical column: those columns are computed);
2. a detector is fitted: the envelope from min/max reductions and the
   categorical levels over all reference rows (identical to pandas); every
   other detector on a seeded sample of at most ``sample_size`` reference rows
   (default :data:`DEFAULT_SAMPLE_SIZE`; all rows when there are no more);
3. one pass of :func:`fme._core.kernel.evaluate_batch` per partition gives the
   mergeable :class:`~fme._core.kernel.Summary` (tree-reduced) and, kept on the
   workers, the partition's sorted fMEs and NLMs, from which exact quartiles
   and medians are selected by two small rounds of counting;
4. with NLMs, the flat-path test's scale (the SD of all f(x), f(x + h),
   :func:`fme._nlm.evaluate.classify`) is merged by that pass, and the rows it
   left open are classified on the workers (:mod:`fme._dask.nlm`; a
   multi-output model gets the scale from a first pass instead).

``results`` and ``excluded`` are lazy Dask DataFrames (the kernel again, per
partition, when computed) with the index and columns of the pandas result.
Bootstrap inference refits in memory and evaluates each refit per partition
(:mod:`fme._dask.bootstrap`). ``by`` groups of :func:`fme.ame` are summed in
the same pass (:mod:`fme._dask.groups`). Several outputs (``target_class='all'``,
multi-output models) give a :class:`fme._dask.outputs.DaskMultiFMEResult`
with figures per class.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .._utils.guards import call_detector
from .nlm import finish, flat_scale, pending
from .quantiles import quantiles as _quantiles
from .._core.kernel import Plan, Summary, _excluded_frame, evaluate_batch, results_meta, summarise
from .._models import model_frame
from .._utils.progress import dask_progress
from ..exceptions import DataError, ParameterError
from ..extrapolation import EnvelopeDetector
from ..inference._estimates import Estimates
from ..steps import Step

__all__ = ["DEFAULT_SAMPLE_SIZE", "DaskFMEResult", "fme_dask", "envelope_frame", "reference_sample", "require_dask",
           "as_dask"]

#: Rows of the seeded sample non-envelope detectors (and ``came``'s tree) are fitted on.
DEFAULT_SAMPLE_SIZE = 1_000_000
_TREE_FAN_IN = 16


def require_dask():
    """``dask.dataframe``, or a ParameterError naming the extra to install."""
    try:
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover - the test environment has dask
        raise ParameterError("Dask data need the optional dependencies: pip install 'fme[dask]'.") from exc
    return dd


def _is_dask(obj: Any) -> bool:
    from ..effects import is_dask_collection

    return is_dask_collection(obj)


def _check_sample_size(sample_size: Any) -> int:
    if sample_size is None:
        return DEFAULT_SAMPLE_SIZE
    if isinstance(sample_size, bool) or not isinstance(sample_size, numbers.Integral) or sample_size < 1:
        raise ParameterError(f"sample_size must be a positive integer, got {sample_size!r}.")
    return int(sample_size)


def _seed(random_state: Any) -> int:
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    return int(np.random.default_rng(random_state).integers(2**31 - 1))


def as_dask(frame: Any, name: str) -> Any:
    """A Dask DataFrame as given, a pandas one as one partition."""
    dd = require_dask()
    if _is_dask(frame):
        return frame
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"`{name}` must be a pandas or Dask DataFrame, got {type(frame).__name__}.")
    return dd.from_pandas(frame, npartitions=1)


def _model_frames(model: Any, frame: Any) -> Any:
    meta = model_frame(model, frame._meta)
    if meta is frame._meta:
        return frame
    return frame.map_partitions(lambda part: model_frame(model, part), meta=meta)


def _probe(frame: Any, name: str) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "fewer rows than requested": fine for a probe
        probe = frame.head(1000, npartitions=min(frame.npartitions, 8))
    if len(probe) == 0:
        raise DataError(f"`{name}` has no rows in its first partitions; pass data with rows "
                        "(or repartition away empty partitions).")
    return probe


# ----------------------------------------------------------------- per-partition workers
def _partition_results(part: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    return evaluate_batch(plan, part, with_rows=False).results


def _partition_excluded(part: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    return evaluate_batch(plan, part, with_rows=False).excluded


def _partition_pass(part: pd.DataFrame, plan: Plan, threshold: float, groups: Any = None,
                    defer_flat: bool = False) -> tuple:
    batch = evaluate_batch(plan, part, with_rows=plan.method == "delta")
    summary = summarise(batch, plan, threshold)
    group_parts = None
    if groups is not None:
        from .groups import group_codes, group_sums

        sums, group_parts = group_sums(batch, group_codes(part, groups), groups.n_groups)
        summary = replace(summary, groups=sums)
    if plan.names is not None:  # several outputs: sorted values per output (fme._dask.outputs)
        from .outputs import sorted_outputs

        fm, nl = sorted_outputs(batch.results, plan)
        return summary, fm, nl, group_parts
    fm = np.sort(batch.results["fme"].to_numpy(dtype=float))
    fm = fm[~np.isnan(fm)]
    nl = None
    if "nlm" in batch.results.columns and defer_flat:
        nl = pending(batch)  # the flat-path test waits for the scale of the whole pass (fme._dask.nlm)
    elif "nlm" in batch.results.columns:
        nl = np.sort(batch.results["nlm"].to_numpy(dtype=float))
        nl = nl[~np.isnan(nl)]
    return summary, fm, nl, group_parts


def _spread_pass(part: pd.DataFrame, plan: Plan) -> Summary:
    return summarise(evaluate_batch(plan, part, with_rows=False), plan)


def _merge(*summaries: Summary) -> Summary:
    out = summaries[0]
    for s in summaries[1:]:
        out = out.merge(s)
    return out


def _tree_reduce(items: list) -> Any:
    from dask import delayed

    while len(items) > 1:
        items = [delayed(_merge)(*items[i:i + _TREE_FAN_IN]) for i in range(0, len(items), _TREE_FAN_IN)]
    return items[0]


def _envelope_parts(part: pd.DataFrame, numeric: list[str], categorical: list[str]) -> tuple:
    num = part[numeric].to_numpy(dtype=float)
    num = np.where(np.isfinite(num), num, np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanmin(num, axis=0) if num.shape[0] else np.full(len(numeric), np.nan)
        hi = np.nanmax(num, axis=0) if num.shape[0] else np.full(len(numeric), np.nan)
    levels = {c: set(part[c].dropna().unique().tolist()) for c in categorical}
    return lo, hi, levels


def _fit_detector(plan: Plan, reference: Any, sample_size: int, seed: int) -> dict:
    """Fit ``plan.detector`` on the reference data (see module docstring); returns what it was fitted on."""
    detector, cols = plan.detector, plan.detector_cols
    ref = reference[cols]
    if isinstance(detector, EnvelopeDetector):
        call_detector(detector, "fit", envelope_frame(ref), "fit(reference_data)")
        return {"fitted_on": "min/max reductions over all reference rows", "n_fit": None}
    sample, n_ref = reference_sample(ref, sample_size, seed)
    call_detector(detector, "fit", sample, "fit(reference_data sample)")
    return {"fitted_on": f"a seeded sample of {len(sample)} of {n_ref} reference rows", "n_fit": len(sample)}


def reference_sample(ref: Any, sample_size: int, seed: int) -> tuple[pd.DataFrame, int]:
    """All rows of the Dask ``ref`` when there are at most ``sample_size``, else a seeded sample; and its length."""
    n_ref = int(ref.shape[0].compute())
    if n_ref <= sample_size:
        return ref.compute(), n_ref
    return ref.sample(frac=min(1.0, sample_size / n_ref), random_state=seed).compute(), n_ref


def envelope_frame(ref: Any) -> pd.DataFrame:
    """A small pandas frame with the finite min/max of every numeric column and the categorical levels
    of the Dask ``ref`` (one pass): the envelope detector fitted on it equals the one fitted on ``ref``."""
    import dask
    from dask import delayed

    from .._utils.validation import is_categorical

    cols = list(ref.columns)
    meta = ref._meta
    categorical = [c for c in cols if is_categorical(meta[c])]
    numeric = [c for c in cols if c not in categorical]
    parts = dask.compute(*[delayed(_envelope_parts)(p, numeric, categorical) for p in ref.to_delayed()])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanmin(np.vstack([p[0] for p in parts]), axis=0)
        hi = np.nanmax(np.vstack([p[1] for p in parts]), axis=0)
    levels = {c: set().union(*[p[2][c] for p in parts]) for c in categorical}
    # A frame with the same bounds and levels: the detector's own fit then gives the pandas envelope.
    size = max([2] + [len(v) for v in levels.values()])
    frame = {}
    for j, c in enumerate(numeric):
        frame[c] = np.r_[lo[j], hi[j], np.full(size - 2, lo[j])]
    for c in categorical:
        vals = sorted(levels[c], key=repr) or [None]
        vals = vals + [vals[0]] * (size - len(vals))
        frame[c] = pd.Series(vals, dtype=meta[c].dtype)
    return pd.DataFrame(frame)[cols]


# ----------------------------------------------------------------- the result
@dataclass(frozen=True, eq=False)
class DaskFMEResult:
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
    detector_fit: dict = field(default_factory=dict)
    sorted_parts: dict = field(default_factory=dict, repr=False)
    output_names: tuple | None = None
    data: Any = field(default=None, repr=False)
    plan: Plan | None = field(default=None, repr=False)
    model_features: tuple[str, ...] | None = None
    bootstrap_draws: tuple | None = field(default=None, repr=False)
    groups: Any = field(default=None, repr=False)
    group_parts: list = field(default_factory=list, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

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
        return float("nan") if m is None or m.n[0] == 0 else float(self.summary_data.n_linear[0] / m.n[0])

    def _status(self, i: int) -> int:
        st = self.summary_data.status
        return 0 if st is None else int(st[i, 0])

    n_nlm_constant = property(lambda self: self._status(1))
    n_nlm_flat = property(lambda self: self._status(2))
    n_nlm_inaccurate = property(lambda self: self._status(3))

    @property
    def n_nlm_undefined(self) -> int:
        return self.n_nlm_constant + self.n_nlm_flat

    # ------------------------------------------------------------- exact quantiles (two rounds of counting)
    def _quantile(self, which: str, p: float) -> float:
        key = (which, p)
        if key not in self._cache:
            parts = self.sorted_parts.get(which)
            if not parts:
                return float("nan")
            m = self.summary_data.fme if which == "fme" else self.summary_data.nlm
            q = _quantiles(parts, int(m.n[0]), [0.25, 0.5, 0.75])
            for k, v in q.items():
                self._cache[(which, k)] = v
        return self._cache[key]

    @property
    def q25(self) -> float:
        return self._quantile("fme", 0.25)

    @property
    def q75(self) -> float:
        return self._quantile("fme", 0.75)

    @property
    def median(self) -> float:
        return self._quantile("fme", 0.5)

    @property
    def median_nlm(self) -> float:
        return self._quantile("nlm", 0.5) if self.has_nlm else float("nan")

    # ------------------------------------------------------------- inference
    @property
    def inference(self) -> str:
        return self.inference_method

    def _estimates(self) -> Estimates:
        s, n = self.summary_data, self.n
        est = np.array([self.ame])
        if self.inference_method == "delta":
            return Estimates("delta", est, grad=(s.jacobian / n)[None, :], vcov=s.vcov)
        if self.inference_method == "bootstrap":
            draws, info = self.bootstrap_draws
            return Estimates("bootstrap", est, draws=draws[None, :], ci=info["ci"])
        se = np.array([self.sd / np.sqrt(n) if n >= 2 else np.nan])
        return Estimates("sample", est, se=se, df=np.array([max(n - 1.0, 1.0)]))

    def _inference_table(self, conf_level: float | None = None) -> pd.DataFrame:
        from .._utils.validation import check_conf_level

        level = self.conf_level if conf_level is None else check_conf_level(conf_level)
        return self._estimates().table(level)

    @property
    def std_error(self) -> float:
        return float(self._inference_table()["std_error"].iloc[0])

    @property
    def p_value(self) -> float:
        return float(self._inference_table()["p_value"].iloc[0])

    def conf_int(self, conf_level: float | None = None) -> tuple[float, float]:
        t = self._inference_table(conf_level)
        return float(t["conf_low"].iloc[0]), float(t["conf_high"].iloc[0])

    def describe_steps(self) -> str:
        return ", ".join(s.describe() for s in self.steps)

    @property
    def step_dict(self) -> dict[str, Any]:
        return {s.feature: s.value for s in self.steps}

    def tidy(self, conf_level: float | None = None) -> pd.DataFrame:
        """As :meth:`FMEResult.tidy`: one row with the AME, its inference and the descriptive figures."""
        t = self._inference_table(conf_level)
        row = {"step": self.describe_steps(), "ame": self.ame, **t.iloc[0].to_dict(), "sd": self.sd,
               "q25": self.q25, "q75": self.q75, "n": self.n, "n_excluded": self.n_excluded}
        return pd.DataFrame([row])

    def summary(self) -> str:
        """Readable summary like :meth:`FMEResult.summary` (quantiles exact; from the merged summaries)."""
        c = self.summary_data.codes
        lines = [f"Forward marginal effects of {self.model_description} (Dask data)",
                 f"  step: {self.describe_steps()}", f"  rows evaluated: {self.n} of {int(c.sum())}"]
        labels = ["missing or infinite value in a stepped feature", "already at the target level", "extrapolation"]
        for k, label in enumerate(labels, start=1):
            if c[k]:
                lines.append(f"  excluded ({label}): {int(c[k])}")
        if self.detector is None:
            lines.append("  extrapolation: not checked (pass extrapolation='envelope' and reference_data)")
        else:
            lines.append(f"  extrapolation: {self.detector}, policy {self.on_extrapolation}, fitted on "
                         f"{self.detector_fit.get('fitted_on', 'the reference data')}")
        lines.append(f"  fme: AME {self.ame:.6g}  SD {self.sd:.6g}  q25 {self.q25:.6g}  median {self.median:.6g}  "
                     f"q75 {self.q75:.6g}")
        if self.has_nlm:
            method = self.nlm_method if self.nlm_nodes is None else f"{self.nlm_method}, {self.nlm_nodes} nodes"
            m = self.summary_data.nlm
            lines.append(
                f"  nlm: ANLM {self.anlm:.6g}  median {self.median_nlm:.6g}  share >= {self.nlm_linear_threshold:g} "
                f"{self.share_linear:.3g}  SD {float(m.sd()[0]):.6g}  undefined {self.n_nlm_undefined} (constant "
                f"{self.n_nlm_constant}, flat {self.n_nlm_flat})  inaccurate {self.n_nlm_inaccurate}  "
                f"(method: {method})")
        return "\n".join(lines)

    def release(self) -> None:
        """Drop the sorted values kept on the workers for the quantiles (computed ones stay cached)."""
        for which in ("fme", "nlm"):
            if self.sorted_parts.get(which):
                self._quantile(which, 0.5)
        self.sorted_parts.clear()

    def __repr__(self) -> str:
        return (f"DaskFMEResult(step={self.describe_steps()!r}, n={self.n}, excluded={self.n_excluded}, "
                f"ame={self.ame:.6g})")


# ----------------------------------------------------------------- entry point
def fme_dask(model: Any, data: Any, steps: Any, *, nlm: bool, nlm_method: str, nlm_points: Any,
             nlm_intervals: Any, nlm_tol: Any, nlm_max_level: Any, nlm_flat_tol: Any, nlm_linear_threshold: Any,
             extrapolation: Any, reference_data: Any, on_extrapolation: Any, target_class: Any, batch_size: Any,
             random_state: Any, inference: str, bootstrap: Any, conf_level: Any, sample_size: Any = None,
             progress: bool | None = None, groups: Any = None) -> DaskFMEResult:
    """:func:`fme.fme` on Dask data (see the module docstring).

    ``groups`` (a :class:`fme._dask.groups.GroupSpec`, for ``fme.ame(by=)``):
    the same pass also sums every ``by`` group (``summary_data.groups``,
    ``group_parts``; bootstrap draws per group).
    """
    import dask

    from ..effects import check_evaluated, resolve_plan
    from .._utils.validation import is_categorical

    require_dask()
    sample_size = _check_sample_size(sample_size)
    data = _model_frames(model, as_dask(data, "data"))
    reference = data if reference_data is None else _model_frames(model, as_dask(reference_data, "reference_data"))
    probe = _probe(data, "data")
    # Rules ("sd", "iqr", ...) and levels of non-categorical columns need the stepped columns in full.
    need = []
    if hasattr(steps, "items"):
        for f, v in steps.items():
            if f in probe.columns and (isinstance(v, str) and not is_categorical(probe[f])
                                       or is_categorical(probe[f])
                                       and not isinstance(probe[f].dtype, pd.CategoricalDtype)):
                need.append(f)
    rules: dict[str, str] = {}
    if need and all(f in reference.columns for f in need):
        # sd/unit rules by a moments reduction, iqr/mad by exact order statistics: no column is gathered
        from .steps import column_sd_steps

        steps, rules = column_sd_steps(steps, reference, need)
        need = [f for f in need if f not in rules]
    if need and all(f in reference.columns for f in need):
        from .steps import rule_frame

        rule_ref = rule_frame(reference, need)
    elif reference_data is None:
        rule_ref = probe
    else:
        rule_ref = _probe(reference, "reference_data")
    plan, conf_level = resolve_plan(
        model, probe, steps, rule_ref, nlm=nlm, nlm_method=nlm_method, nlm_points=nlm_points,
        nlm_intervals=nlm_intervals, nlm_tol=nlm_tol, nlm_max_level=nlm_max_level, nlm_flat_tol=nlm_flat_tol,
        nlm_linear_threshold=nlm_linear_threshold, extrapolation=extrapolation, on_extrapolation=on_extrapolation,
        target_class=target_class, batch_size=batch_size, inference=inference, bootstrap=bootstrap,
        conf_level=conf_level, random_state=random_state)
    if rules:  # the steps resolved here keep their rule's label ("x2 + 1.02 (sd)"), as on the pandas path
        plan = replace(plan, steps=tuple(replace(st, rule=rules[st.feature]) if st.feature in rules else st
                                         for st in plan.steps))
    boot_method = plan.method == "bootstrap"
    if boot_method:  # the main pass needs only the fMEs; the refits' sums come from their own passes
        plan = replace(plan, method="sample", bootstrap=None)
    plan = replace(plan, progress=False)  # per-partition bars would interleave; distributed's progress instead
    fit_info: dict = {}
    if plan.detector is not None:
        fit_info = _fit_detector(plan, reference, sample_size, _seed(random_state))
    threshold = float(nlm_linear_threshold)
    parts = data.to_delayed()
    from dask import delayed

    # The flat-path test's scale (the SD of all f(x), f(x + h)) is known at the end of the pass: single-output
    # NLMs are classified then (fme._dask.nlm); multi-output ones get it from a first pass without the NLM.
    deferred = plan.settings is not None and plan.names is None
    if plan.settings is not None and not deferred:
        first = replace(plan, settings=None, method="sample")
        spread = _tree_reduce([delayed(_spread_pass)(p, first) for p in parts]).compute().spread
        plan = replace(plan, spread=flat_scale(spread))  # one per output
    pass_plan = replace(plan, spread=np.zeros(1)) if deferred else plan
    outs = [delayed(_partition_pass, nout=4)(p, pass_plan, threshold, groups, deferred) for p in parts]
    tree = _tree_reduce([o[0] for o in outs])
    fm = [o[1] for o in outs]
    nl = [o[2] for o in outs] if plan.settings is not None else []
    gp = [o[3] for o in outs] if groups is not None else []
    persisted = dask.persist(tree, *fm, *nl, *gp)
    dask_progress(list(persisted), progress)
    summary = persisted[0].compute()
    fm_p = list(persisted[1:1 + len(fm)])
    nl_p = list(persisted[1 + len(fm):1 + len(fm) + len(nl)])
    gp_p = list(persisted[1 + len(fm) + len(nl):])
    if deferred:
        scale = float(flat_scale(summary.spread)[0])
        plan = replace(plan, spread=np.asarray(scale))
        fin = [delayed(finish, nout=2)(p, scale, plan.settings.flat_tol, threshold) for p in nl_p]
        done = dask.persist(_tree_reduce([f[0] for f in fin]), *[f[1] for f in fin])
        # the client lets go of the open rows now, so each partition's are freed as soon as they are classified
        # (not all at the end: at 10^8 rows on 2 workers that held 0.4 GiB more per worker)
        del fin
        persisted = nl_p = None
        pieces = done[0].compute()
        nl_p = list(done[1:])
        summary = replace(summary, nlm=pieces.nlm, n_linear=pieces.n_linear, status=pieces.status)
        del done

    def bounds() -> pd.DataFrame:
        cols = [s.feature for s in plan.steps if s.is_numeric and s.feature in reference.columns]
        lo, hi = dask.compute(reference[cols].min(), reference[cols].max())
        return pd.DataFrame([lo, hi])

    check_evaluated(plan, None, bounds, counts=summary.codes)
    boot = None
    if boot_method:
        from .bootstrap import bootstrap_draws

        counts = summary.codes[:1] if groups is None else summary.groups.fme.n
        boot = bootstrap_draws(model, data, plan, bootstrap, counts, groups)
    # the column dtypes of a real batch (pandas may infer str for text columns)
    probe_batch = evaluate_batch(plan, probe.iloc[:50], with_rows=False)
    meta = probe_batch.results.iloc[:0] if len(probe_batch.results) else results_meta(plan, data._meta.index)
    results = data.map_partitions(_partition_results, plan, meta=meta)
    ex_meta = _excluded_frame(np.zeros(0, dtype=np.int8), [], data._meta.index[:0])
    excluded = data.map_partitions(_partition_excluded, plan, meta=ex_meta)
    settings = plan.settings
    cls = DaskFMEResult
    if plan.names is not None:  # several outputs: figures per class (fme._dask.outputs)
        from .outputs import DaskMultiFMEResult as cls
    return cls(
        results=results, excluded=excluded, steps=plan.steps, summary_data=summary,
        model_description=plan.predictor.description,
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=threshold,
        detector=None if plan.detector is None else getattr(plan.detector, "name", type(plan.detector).__name__),
        on_extrapolation=plan.policy, inference_method="bootstrap" if boot_method else plan.method,
        conf_level=conf_level, detector_fit=fit_info, bootstrap_draws=boot,
        sorted_parts={"fme": fm_p, "nlm": nl_p}, data=data, plan=plan, groups=groups, group_parts=gp_p,
        output_names=None if plan.names is None else tuple(plan.names),
        model_features=None if plan.predictor.feature_names is None else tuple(plan.predictor.feature_names))

