"""The resolved plan of an fME computation: what a front door validated, for any engine.

A front door (:func:`fme.fme`, :func:`fme.ame`, ...) gathers its keyword arguments into one
:class:`FMEOptions` record, checks the data once and resolves everything that does not depend on the
steps into a :class:`Plan` (:func:`front_plan`, :func:`resolve_plan`: the predictor, the inference
method, the unfitted detector and its columns, the columns that must be complete, the model's levels);
each step specification (the one of :func:`fme.fme`, each row of an :func:`fme.ame` table) is then
derived from it by :meth:`Plan.with_steps` (parsed steps, the NLM's method, the checks that depend on
the steps). The engines (in memory, :mod:`fme._local.effects`; Dask, :mod:`fme._dask.effects`) take
the plan and never validate again.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._adapters.array_function import is_array_function
from .._adapters.predictor import Predictor, make_predictor, named_predictor
from .._nlm.evaluate import NLMSettings, resolve_method
from .._utils.arrays import is_array
from .._utils.validation import check_conf_level, check_dask_offsets, check_data, is_dask_collection
from ..exceptions import ExtrapolationError, FeatureError, ParameterError, StepError
from ..extrapolation import make_detector
from ..inference.methods import resolve_method as resolve_inference
from ..nlm import QuadratureRule
from ..steps import Step, check_training_levels, parse_steps
from .arrays import check_array_data, refuse_dask_arrays

__all__ = [
    "Plan",
    "FMEOptions",
    "AMEOptions",
    "Planned",
    "front_plan",
    "resolve_plan",
    "check_batch_size",
    "ON_EXTRAPOLATION",
    "ARRAY_VERBS",
]

ON_EXTRAPOLATION = ("exclude", "keep", "shrink")
#: The front doors that take data as an array of the array API standard (with ``feature_names``).
ARRAY_VERBS = ("fme.fme", "fme.ame")
#: Options the array route of a plain function does not take: (option, its default, what to do instead).
_ARRAY_REFUSED = (
    ("extrapolation", None, "the detectors read DataFrames: pass a DataFrame"),
    ("on_extrapolation", None, "it needs a detector: pass a DataFrame"),
    ("reference_data", None, "step rules read the array itself: pass fme.step_size(train_frame, feature) as h"),
    ("target_class", None, "a plain function has one output"),
    ("bootstrap", None, "refits need training frames: pass a DataFrame"),
    ("exposure", None, "pass a DataFrame"),
    ("offset", None, "pass a DataFrame"),
    ("sample_size", None, "it applies to Dask data"),
)


@dataclass(frozen=True)
class FMEOptions:
    """The keyword arguments of :func:`fme.fme`, with its defaults, as one record (see the module docstring).

    :meth:`from_kwargs` builds one from a mapping and names an unknown key. The record is what the front door
    was given; :func:`resolve_plan` validates it (the :class:`Plan` keeps it as ``options``).
    """

    nlm: bool = False
    nlm_method: str = "auto"
    nlm_points: Any = None
    nlm_intervals: Any = None
    nlm_tol: Any = None
    nlm_max_level: Any = None
    nlm_budget: Any = None
    nlm_flat_tol: Any = None
    nlm_linear_threshold: Any = 0.9
    extrapolation: Any = None
    reference_data: Any = None
    on_extrapolation: Any = None
    target_class: Any = None
    batch_size: Any = None
    random_state: Any = None
    inference: str = "auto"
    bootstrap: Any = None
    conf_level: Any = 0.95
    sample_size: Any = None
    progress: Any = None
    exposure: Any = None
    offset: Any = None
    feature_names: Any = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any], caller: str = "fme.fme") -> FMEOptions:
        """The record of ``kwargs``; a ParameterError names a key :func:`fme.fme` does not take."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ParameterError(
                f"{caller}() got unknown keyword argument(s) {unknown}; the keywords passed on to "
                f"fme.fme are {sorted(names)}."
            )
        return cls(**kwargs)

    def replace(self, **changes: Any) -> FMEOptions:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, eq=False)
class AMEOptions:
    """What :func:`fme.ame` resolved about its table, beside the :class:`Plan` of its fMEs (paper §3.2): both
    engines' ``ame`` take it as one record.

    ``method`` is the inference method (the plan computes the fMEs of a bootstrap table without refits: one set
    of refits serves every row); ``by_cols`` the checked ``by`` columns; ``hypothesis`` None or ``'pairwise'``
    (other hypotheses are tests on the finished table); ``columns`` the table's columns; ``t_df`` the delta
    method's t degrees of freedom (``df=``); ``delta_label`` the ``inference`` column's name of the delta
    method's covariance (``vcov=``); ``wts`` the rows' weights (pandas: one per row; Dask: a column name);
    ``unconditional`` the parameters' per-row influence when ``vcov='unconditional'``
    (:class:`~fme.inference.unconditional.Unconditional`; in memory and on Dask data), else None.
    """

    method: str
    by_cols: tuple[Any, ...]
    by_missing: str
    hypothesis: Any
    bootstrap: Any
    conf_level: float
    categorical: str
    columns: tuple[str, ...]
    t_df: float | None = None
    delta_label: str = "delta"
    wts: Any = None
    unconditional: Any = None


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything a front door resolved up front; the same for every batch.

    :func:`resolve_plan` gives the plan without steps (``steps == ()``); :meth:`with_steps` derives the plan of
    one step specification from it. ``detector`` is unfitted until the engine fits it on the reference data
    (once for every step specification of a call); ``spread`` (one value per output) fixes the scale of the
    flat-path test, None to take it from the batch.
    """

    model: Any
    predictor: Predictor
    steps: tuple[Step, ...]
    settings: NLMSettings | None
    batch_size: int | None
    method: str
    target_class: Any = None
    bootstrap: Any = None
    detector: Any = None
    detector_cols: list[str] | None = None
    policy: str | None = None
    spread: np.ndarray | None = None
    progress: bool | None = None
    #: Model inputs whose missing values leave a row out (code 4, "incomplete"): a statsmodels formula
    #: model's right-hand-side columns, as its fit leaves incomplete rows out (Stata's e(sample)); the
    #: stepped features are not among them (:meth:`with_steps`).
    complete_cols: tuple[Any, ...] = ()
    #: ((column, its levels as the fitted model states them), ...): a row at another level of such a column is
    #: left out (code 5, "unknown_level"); the model cannot represent it (most encoders predict it silently
    #: as "unknown").
    known_levels: tuple[tuple[Any, tuple[Any, ...]], ...] = ()
    #: The level of ``conf_int()`` and ``tidy()`` by default (checked).
    conf_level: float = 0.95
    #: The options the plan was resolved from (:class:`FMEOptions`), less the data they were given
    #: (``reference_data``, ``bootstrap``: they travel beside the plan, or in ``bootstrap``, never inside a plan
    #: that Dask ships to its workers): the NLM's settings are resolved per step specification from them, and the
    #: engines read ``sample_size``, ``exposure``/``offset``, ``progress``, ``nlm_linear_threshold``.
    options: FMEOptions = FMEOptions()
    #: Every model input whose missing values leave a row out, stepped or not (``complete_cols`` less the steps).
    required_cols: tuple[Any, ...] = ()

    @property
    def rule(self) -> QuadratureRule | None:
        return None if self.settings is None else self.settings.rule

    @property
    def names(self) -> list[str] | None:
        return self.predictor.output_names

    def with_steps(self, data: pd.DataFrame, steps: Mapping[str, Any], reference: pd.DataFrame) -> Plan:
        """The plan of the step specification ``steps`` (paper §3.2, §5.1-5.2), validated against ``data`` (any
        rows with the real columns and dtypes) and ``reference`` (the rows step rules such as ``"sd"`` are
        computed from): the parsed steps, the NLM's method for them (§5.4) and the checks that depend on them.

        Raises
        ------
        StepError, FeatureError, ParameterError
            A step the model cannot take (an unseen level, not an input of the model, a categorical step with
            the NLM or with ``on_extrapolation='shrink'``).
        """
        parsed = parse_steps(data, steps, rule_data=reference)
        check_training_levels(parsed, dict(self.known_levels))
        names = self.predictor.feature_names
        if names is not None:
            unused = [s.feature for s in parsed if s.feature not in names]
            if unused:
                raise FeatureError(
                    f"feature(s) {unused} are not inputs of the model (it was fitted on {names}); "
                    "their fME would be 0 by construction."
                )
        settings = None
        options = self.options
        if options.nlm:
            categorical = [s.feature for s in parsed if not s.is_numeric]
            if categorical:
                raise StepError(
                    f"the NLM is defined along a numeric path only; feature(s) {categorical} have categorical "
                    "steps. Use nlm=False for categorical or mixed steps."
                )
            columns = list(self.predictor.select(data.iloc[:0]).columns)
            settings = resolve_method(
                None if isinstance(self.model, Predictor) else self.model,
                options.nlm_method,
                options.nlm_points,
                options.nlm_intervals,
                parsed,
                columns,
                options.nlm_tol,
                options.nlm_max_level,
                options.nlm_flat_tol,
                target_class=self.target_class,
                budget=options.nlm_budget,
            )
        if self.policy == "shrink" and any(not s.is_numeric for s in parsed):
            raise StepError(
                "on_extrapolation='shrink' is not defined for categorical steps (a level cannot be "
                "shrunk); use 'exclude' or 'keep'."
            )
        stepped = {s.feature for s in parsed}
        return dataclasses.replace(
            self,
            steps=parsed,
            settings=settings,
            complete_cols=tuple(c for c in self.required_cols if c not in stepped),
        )


# ----------------------------------------------------------------- helpers
def check_batch_size(batch_size: Any) -> int | None:
    if batch_size is None:
        return None
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ParameterError(f"batch_size must be a positive integer or None, got {batch_size!r}.")
    return int(batch_size)


def _detector_columns(predictor: Predictor, data: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    cols = predictor.feature_names if predictor.feature_names is not None else [c for c in data.columns]
    missing = [c for c in cols if c not in reference.columns]
    if missing:
        raise ExtrapolationError(
            f"reference_data lacks the model feature(s) {missing}; pass the training data with all of {cols}."
        )
    return list(cols)


def resolve_plan(model: Any, data: pd.DataFrame, reference: pd.DataFrame, options: FMEOptions) -> Plan:
    """Validate ``options`` against the model and the columns and dtypes of ``data`` and ``reference`` (any rows
    of them: a Dask frame's empty ``_meta`` is enough); the :class:`Plan` without steps (derive a step
    specification's with :meth:`Plan.with_steps`) and with an unfitted detector.

    Raises
    ------
    ParameterError, ExtrapolationError, ModelError
        An option out of range or inconsistent with another, a reference without the model's features, a model
        that cannot predict as asked.
    """
    conf_level = check_conf_level(options.conf_level)
    predictor = named_predictor(model, options.target_class, options.feature_names)
    method = resolve_inference(options.inference, model, options.bootstrap, predictor.output_names is not None)
    nlm_values = (
        options.nlm_points,
        options.nlm_intervals,
        options.nlm_tol,
        options.nlm_max_level,
        options.nlm_flat_tol,
        options.nlm_budget,
    )
    if not options.nlm and any(v is not None for v in nlm_values):
        raise ParameterError(
            "nlm_points/nlm_intervals/nlm_tol/nlm_max_level/nlm_budget/nlm_flat_tol were given but "
            "nlm=False; pass nlm=True."
        )
    threshold = options.nlm_linear_threshold
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, numbers.Real)
        or not np.isfinite(cast(float, threshold))
        or cast(float, threshold) > 1
    ):  # a Real: compared as a float
        raise ParameterError(f"nlm_linear_threshold must be a finite number <= 1, got {threshold!r}.")
    batch_size = check_batch_size(options.batch_size)
    on_extrapolation, extrapolation = options.on_extrapolation, options.extrapolation
    if on_extrapolation is not None and on_extrapolation not in ON_EXTRAPOLATION:
        raise ParameterError(f"on_extrapolation must be one of {ON_EXTRAPOLATION}, got {on_extrapolation!r}.")
    if on_extrapolation is not None and extrapolation is None:
        raise ParameterError(
            "on_extrapolation was given without a detector; pass extrapolation='envelope' (or another)."
        )
    policy = None if extrapolation is None else (on_extrapolation or "exclude")
    detector = cols = None
    if extrapolation is not None:
        detector = make_detector(extrapolation, options.random_state)
        cols = _detector_columns(predictor, data, reference)
    adapter = predictor.adapter
    # the model's own statements about its inputs (formula columns, encoders' levels): the adapter's to know
    required = () if adapter is None else tuple(c for c in adapter.complete_columns() if c in data.columns)
    stated = {} if adapter is None else adapter.training_levels()
    known = tuple((c, tuple(v)) for c, v in stated.items() if c in data.columns)
    return Plan(
        model=model,
        predictor=predictor,
        steps=(),
        settings=None,
        batch_size=batch_size,
        method=method,
        target_class=options.target_class,
        bootstrap=options.bootstrap,
        detector=detector,
        detector_cols=cols,
        policy=policy,
        progress=options.progress,
        complete_cols=required,
        known_levels=known,
        conf_level=conf_level,
        options=options.replace(reference_data=None, bootstrap=None),
        required_cols=required,
    )


@dataclass(frozen=True, eq=False)
class Planned:
    """What a front door hands an engine: the data and reference rows and the :class:`Plan` resolved on them.

    pandas data: ``data`` and ``reference`` are checked and as the model reads them (:func:`fme._adapters.model_frame`:
    ``C(x)`` columns, ``exposure=``/``offset=`` columns); ``reference`` is ``data`` when no ``reference_data`` was
    given. Dask data (or reference data): both as given (the Dask engine reads them chunk by chunk), the plan
    resolved on their empty frames. ``frame`` is the model's frame of ``data`` (on Dask: of its ``_meta``), for the
    front door's own checks (``by`` columns, weights).
    """

    data: Any
    reference: Any
    frame: pd.DataFrame
    plan: Plan
    on_dask: bool
    #: ``data`` is an :class:`~fme._core.arrays.ArrayData` (a plain function of an array; ``reference`` None and
    #: ``frame`` without rows): the array route, :mod:`fme._local.arrays`.
    on_arrays: bool = False


def _schema(model: Any, data: Any, name: str, exposure: Any = None, offset: Any = None) -> pd.DataFrame:
    """The model's frame of a Dask collection's empty ``_meta`` (or of a pandas frame given beside one)."""
    if is_dask_collection(data):
        check_dask_offsets(exposure, offset)
        return model_frame(model, data._meta, exposure=exposure, offset=offset)
    return model_frame(model, check_data(data, name), exposure=exposure, offset=offset)


def _named_frame(arrays: Any) -> pd.DataFrame:
    """The array on the host as a frame whose columns are the labels as strings: an estimator's inputs are
    named by strings (as :func:`fme._adapters.predictor.named_predictor` reads them)."""
    host = arrays.host_frame()
    host.columns = pd.Index([str(c) for c in host.columns])
    return host


def _array_plan(model: Any, data: Any, options: FMEOptions, verb: str | None) -> Planned:
    """The plan of data given as an array of the array API standard (:func:`front_plan`)."""
    if verb not in ARRAY_VERBS:
        raise ParameterError(
            f"{verb or 'this function'} takes a pandas (or Dask) DataFrame, not an array; of fme's functions only "
            f"{' and '.join(ARRAY_VERBS)} take arrays of the array API standard (with feature_names=). Pass "
            "pd.DataFrame(numpy_array, columns=[...])."
        )
    reference_data = options.reference_data
    if not is_array(data):
        raise ParameterError(
            f"{verb}: reference_data is an array but data is not; pass both as DataFrames (or both as arrays "
            "with feature_names=)."
        )
    arrays = check_array_data(data, options.feature_names)
    if not is_array_function(model):
        # estimators, statsmodels results, objects with predict read DataFrames: the arrays are converted once on
        # the host (a CPU array that exports DLPack without a copy) and the DataFrame route runs
        ref = None
        if reference_data is not None:
            ref = (
                _named_frame(check_array_data(reference_data, options.feature_names, "reference_data"))
                if is_array(reference_data)
                else reference_data
            )
        # feature_names named the array's columns: a model that names its own inputs selects them by name
        own = make_predictor(model, options.target_class).feature_names
        names = None if own is not None else [str(c) for c in arrays.feature_names]
        return front_plan(model, _named_frame(arrays), options.replace(reference_data=ref, feature_names=names), verb)
    given = [(name, why) for name, default, why in _ARRAY_REFUSED if getattr(options, name) is not default]
    if given:
        raise ParameterError(
            f"{verb} on an array with a plain function as the model does not take "
            + "; ".join(f"{name}= ({why})" for name, why in given)
            + ". Leave them out, or pass the data as a DataFrame: pd.DataFrame(numpy_array, columns=feature_names)."
        )
    if options.inference in ("delta", "bootstrap"):
        raise ParameterError(
            f"{verb} on an array with a plain function as the model has inference='sample' only (a function has "
            f"no parameter covariance and no refits), got inference={options.inference!r}."
        )
    frame = arrays.empty_frame()
    # feature_names named the array's columns, all of which the function receives: not a selection of inputs
    plan = resolve_plan(model, frame, frame, options.replace(feature_names=None))
    return Planned(arrays, None, frame, plan, False, on_arrays=True)


def front_plan(model: Any, data: Any, options: FMEOptions, verb: str | None = None) -> Planned:
    """A front door's one validation of ``data``, ``options.reference_data`` and ``options`` (see :class:`Planned`):
    :func:`fme._utils.validation.check_data` and :func:`fme._adapters.model_frame` once per frame, then
    :func:`resolve_plan` once.

    ``verb`` names the front door (``"fme.fme"``): those of :data:`ARRAY_VERBS` also take ``data`` as an array of
    the array API standard with ``feature_names`` (a plain function of an array gets the array route,
    ``Planned.on_arrays``; any other model reads the array converted to a DataFrame on the host); the others
    refuse arrays with a :class:`~fme.exceptions.ParameterError`."""
    reference_data = options.reference_data
    refuse_dask_arrays(data, reference_data, verb)
    if is_array(data) or is_array(reference_data):
        return _array_plan(model, data, options, verb)
    if is_dask_collection(data) or is_dask_collection(reference_data):
        frame = _schema(model, data, "data", options.exposure, options.offset)
        ref = frame if reference_data is None else _schema(model, reference_data, "reference_data")
        return Planned(data, reference_data, frame, resolve_plan(model, frame, ref, options), True)
    if options.sample_size is not None:
        raise ParameterError(
            "sample_size applies to Dask data only (the sample the detectors are fitted on); "
            "a pandas frame is used whole."
        )
    frame = model_frame(model, check_data(data), exposure=options.exposure, offset=options.offset)
    reference = frame if reference_data is None else model_frame(model, check_data(reference_data, "reference_data"))
    return Planned(frame, reference, frame, resolve_plan(model, frame, reference, options), False)
