"""Check the config against the loaded data and model, inside the analysis (stage 1), before any effect.

:mod:`fme.report.inputs.validate` checks what needs only the files; this module checks what needs the
loaded data and the fitted model:

* :func:`check_against_data`: every stepped feature, level and partition feature exists in the data, step
  rules resolve, and a classifier's ``model.target_class`` is one of its classes (required for more than
  two classes);
* :func:`check_train_data`: bootstrap training data of the evaluation data's column kinds, and one refit
  that succeeds (and predicts the evaluation rows), before the first of many refits;
* :func:`all_extrapolation_error`: the diagnosis when a detector flags x itself for almost every row, or when
  the convex hull is so degenerate (many dimensions, few rows) that the rows themselves lie outside the hull of
  the others.

Every problem is a :class:`~fme.report.inputs.config.ConfigError` with ``<config>:<line>: <key>: <problem>``.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import fme

from ..._utils.numfmt import count
from ..._utils.validation import is_categorical
from ...exceptions import FMEError
from ...models import class_name, feature_names, refit_support
from ..inputs.config import ConfigError, EffectConfig, ReportConfig, config_error
from ..inputs.config_errors import key_text
from ..inputs.validate import names_text as _names

__all__ = [
    "check_against_data",
    "check_train_data",
    "refit_columns",
    "model_classes",
    "resolve_target_class",
    "levels_of",
    "all_extrapolation_error",
]


def model_classes(model: Any) -> list | None:
    """The class labels of a classifier with ``predict_proba`` (None for a regressor)."""
    classes = getattr(model, "classes_", None)
    if classes is None or not hasattr(model, "predict_proba"):
        return None
    return list(np.asarray(classes).tolist())


def resolve_target_class(cfg: ReportConfig, model: Any) -> Any:
    """The class whose probability the report explains: ``model.target_class`` or, for binary, ``classes_[1]``.

    Returns None for a regressor. Raises :class:`ConfigError` for an unknown class, a class given for a
    regressor, or a multi-class model without ``model.target_class``.
    """
    classes = model_classes(model)
    given = cfg.model.get("target_class")
    if classes is None:
        if given is not None:
            raise config_error(
                cfg,
                ("model", "target_class"),
                f"the model ({class_name(model)}) is not a classifier with predict_proba; remove target_class",
            )
        return None
    if given is None:
        if len(classes) != 2:
            raise config_error(
                cfg,
                ("model",),
                f"the model has {count(len(classes), 'class', 'classes')} ({_names(classes)}); "
                "set model.target_class to the class whose probability to explain",
            )
        return classes[1]
    for c in classes:
        if c == given or str(c) == str(given):
            return c
    raise config_error(
        cfg, ("model", "target_class"), f"{given!r} is not a class of the model; its classes are {_names(classes)}"
    )


def levels_of(data: pd.DataFrame, feature: str) -> list:
    """Levels of a categorical column (categories in order, else sorted distinct values)."""
    col = data[feature]
    if isinstance(col.dtype, pd.CategoricalDtype) and getattr(col.cat, "known", True):  # known: Dask only
        return list(col.cat.categories)
    values = col.dropna().unique()
    if hasattr(values, "compute"):  # a Dask column: only its distinct values come back
        values = values.compute()
    if isinstance(col.dtype, pd.CategoricalDtype):
        return list(values.cat.categories)
    return sorted(values.tolist(), key=str)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_)) and bool(a) == bool(b))
    return a == b or str(a) == str(b)


def _head(frame: Any) -> pd.DataFrame:
    from ..._utils.validation import is_dask_collection

    if not is_dask_collection(frame):
        return frame
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "fewer rows than requested": fine here
        return frame.head(1000, npartitions=min(frame.npartitions, 8))


def _check_step(
    cfg: ReportConfig, i: int, feature: str, value: Any, data: pd.DataFrame, reference: pd.DataFrame
) -> None:
    from ...steps import parse_steps

    key = ("effects", i, "steps", feature)
    if feature not in data.columns:
        raise config_error(
            cfg, key, f"unknown feature {feature!r}; the data's features are {_names(list(data.columns))}"
        )
    if is_categorical(data[feature]):
        if not isinstance(value, (list, str)) and not isinstance(data[feature].dtype, pd.CategoricalDtype):
            _check_numbers_as_text(cfg, data, feature)
        levels = levels_of(data, feature)
        if feature in reference.columns and not isinstance(data[feature].dtype, pd.CategoricalDtype):
            levels += [lv for lv in levels_of(reference, feature) if not any(_same(lv, k) for k in levels)]
        wanted = [] if value == "all" else (list(value) if isinstance(value, list) else [value])
        for lv in wanted:
            if not any(_same(lv, k) for k in levels):
                raise config_error(
                    cfg, key, f"unknown level {lv!r} of feature {feature!r}; its levels are {_names(levels)}"
                )
        return
    if isinstance(value, list) or value == "all":
        raise config_error(
            cfg, key, f"feature {feature!r} is numeric: give a number or a rule such as sd, not a list of levels"
        )
    try:  # the spec's form only: a Dask frame's first rows stand in (rules are resolved over all rows later)
        parse_steps(_head(data), {feature: value}, rule_data=_head(reference))
    except FMEError as exc:
        raise config_error(cfg, key, str(exc)) from None


def _data_key(cfg: ReportConfig) -> tuple:
    """The config key the evaluation data come from (``data.path``, or ``data`` for a bundled dataset)."""
    return ("data", "path") if "path" in (cfg.data or {}) else ("data",)


def _check_model_columns(cfg: ReportConfig, model: Any, data: Any) -> None:
    """Every column the model reads must be in the data: else the error names ``data.path`` and the columns."""
    try:
        names = feature_names(model)
    except Exception:  # noqa: BLE001 - a model the adapters cannot read says so when it predicts
        names = None
    if not names:
        return
    missing = [str(f) for f in names if str(f) not in set(map(str, data.columns))]
    if missing:
        where = (cfg.data or {}).get("path", "the data")
        raise config_error(
            cfg,
            _data_key(cfg),
            (
                f"{where} lacks the model's input column(s) {_names(missing)}; the model reads "
                f"{_names(list(map(str, names)))}. Add the column(s) to {where}, or set data: path: to a file that has "
                "every input of the model"
            ),
        )


def _check_numbers_as_text(cfg: ReportConfig, data: Any, feature: str) -> None:
    """A numeric step on a column stored as text whose values are mostly numbers: the file stores numbers as text
    (a decimal comma, a unit or a stray word in some rows). The error names ``data.path``, the column and the
    values that are not numbers, not an 'unknown level'."""
    col = _head(data)[feature].dropna().astype(str)
    if col.empty:
        return
    parsed = pd.to_numeric(col.str.strip(), errors="coerce")
    if (
        parsed.notna().mean() < 0.5
        and pd.to_numeric(col.str.replace(",", ".", regex=False).str.strip(), errors="coerce").notna().mean() < 0.5
    ):
        return
    bad = sorted(set(col[parsed.isna()].tolist()))[:5]
    where = (cfg.data or {}).get("path", "the data")
    what = f"its values {_names(bad)} are not numbers" if bad else "its numbers are stored as quoted text"
    raise config_error(
        cfg,
        _data_key(cfg),
        (
            f"column {feature!r} of {where} is text, although a numeric step is asked for it and most of its values "
            f"are numbers; {what}. Write the column as plain numbers in {where} (a '.' as decimal point, no units or "
            "words, empty for missing), or give a level of the column as the step if it is categorical"
        ),
    )


def check_against_data(cfg: ReportConfig, model: Any, data: pd.DataFrame, reference: pd.DataFrame) -> Any:
    """Check every effect of ``cfg`` against the data and the model before any effect is computed.

    Parameters
    ----------
    cfg : ReportConfig
        A config from :func:`~fme.report.inputs.config.load_config`.
    model : object
        The fitted model.
    data, reference : DataFrame
        Features the effects are computed on and the reference (training) features.

    Returns
    -------
    object
        The resolved target class (None for a regressor).

    Raises
    ------
    ConfigError
        Naming the config line and key of the first problem.
    """
    target_class = resolve_target_class(cfg, model)
    _check_model_columns(cfg, model, data)
    model_features = getattr(model, "feature_names_in_", None)
    for i, eff in enumerate(cfg.effects):
        for feature, value in eff.steps.items():
            _check_step(cfg, i, feature, value, data, reference)
            if model_features is not None and feature not in set(map(str, model_features)):
                raise config_error(
                    cfg,
                    ("effects", i, "steps", feature),
                    f"feature {feature!r} is in the data but not an input of the model; its "
                    f"inputs are {_names(list(map(str, model_features)))}",
                )
        part = eff.partition
        if isinstance(part, Mapping):
            for j, f in enumerate(part.get("features") or []):
                if f not in data.columns:
                    raise config_error(
                        cfg,
                        ("effects", i, "partition", "features", j),
                        f"unknown partition feature {f!r}; the data's features are {_names(list(data.columns))}",
                    )
            minbucket = part.get("minbucket")
            if isinstance(minbucket, numbers.Real) and minbucket > len(data):
                raise config_error(
                    cfg,
                    ("effects", i, "partition", "minbucket"),
                    f"{minbucket} is more than the {count(len(data), 'row')} of the data; lower it",
                )
    for j, f in enumerate((cfg.joint_regions or {}).get("features") or []):  # the joint tree's, likewise
        if f not in data.columns:
            raise config_error(
                cfg,
                ("joint_regions", "features", j),
                f"unknown partition feature {f!r}; the data's features are {_names(list(data.columns))}",
            )
    for f in cfg.units:
        if f not in data.columns and f != cfg.target:
            raise config_error(
                cfg, ("units", f), f"unknown feature {f!r}; the data's features are {_names(list(data.columns))}"
            )
    return target_class


def _kind(col: pd.Series) -> str:
    if isinstance(col.dtype, pd.CategoricalDtype):
        return "categorical"
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        return "numeric"
    return "text"


def refit_columns(model: Any, train: pd.DataFrame, target: str) -> list | None:
    """The columns of ``train`` the bootstrap refits of ``model`` fit on: those the model reads (its
    ``feature_names_in_``, its formula's columns), in the training data's order; None (every column but the
    target) for a model that does not name its inputs, or when the training data lack one of them.

    A model fitted on some of the training data's columns is refitted on those only: refitted on all of them,
    each refit would expect columns the model, and so the evaluation rows it is given, never had.
    """
    try:
        names = feature_names(model)
    except Exception:  # noqa: BLE001 - a model the adapters do not name: its refits take every column
        return None
    if not names:
        return None
    wanted = {str(c) for c in names}
    cols = [c for c in train.columns if c != target and str(c) in wanted]
    return cols if len(cols) == len(wanted) else None


def _missing_inputs(model: Any, train: pd.DataFrame, target: str) -> list[str]:
    """The columns ``model`` reads that ``train`` lacks (none for a model that does not name its inputs)."""
    try:
        names = feature_names(model) or []
    except Exception:  # noqa: BLE001 - a model the adapters do not name: nothing to check here
        return []
    have = {str(c) for c in train.columns if c != target}
    return [str(c) for c in names if str(c) not in have]


def check_train_data(
    cfg: ReportConfig, key: tuple, model: Any, train: pd.DataFrame, data: Any, model_key: tuple | None = None
) -> None:
    """Fail before the first bootstrap refit, naming ``<key>.train_data``, the column and the fix.

    Every feature column of the training data must have the kind (numeric, categorical, text) of the same
    column in the evaluation data: a CSV turns a pandas categorical or a number with a stray string into text,
    and each of 200 refits then failed alike, reported at the effect's ``steps`` line. One exception: a column
    categorical in the training data and text in the evaluation data (training Parquet, evaluation CSV) is
    what the fitted model itself reads when it predicts the evaluation rows (it was fitted on the categorical
    and reads their text as its levels), so its refits read it alike; the probe refit below predicts some
    evaluation rows to show it. Then one refit of the model on all training rows, as the bootstrap refits it;
    its error is raised at ``<key>.train_data``, naming the training data's text columns a text value of the
    error belongs to. The probe refit, on the columns the model reads (:func:`refit_columns`), then predicts
    the evaluation rows, as every refit will: a refit that fits but cannot predict fails here, not 200 times.

    ``model_key`` is the config key of the model when it is not the report's ``model`` (``("challenger",)``):
    the problems of its refits name that key, and the training data by ``<key>.train_data``.
    """
    from ...inference.bootstrap import refit_on, refit_setup

    target = cfg.target
    where = key + ("train_data",)
    who, blame = ("the model", where) if model_key is None else (f"the {model_key[-1]} model", model_key)
    # the training data as the message names them: by their key, unless the message is at that key already
    source = "these training data" if blame == where else f"the training data of {key_text(where)}"
    support = refit_support(model)
    if not support:  # the model itself cannot be refitted: no training data would help, so none is blamed
        raise config_error(
            cfg, key + ("method",), f"bootstrap {support.reason}; set method: delta (it needs no refit) or sample"
        )
    dtypes = getattr(data, "dtypes", None)
    as_levels = []  # categorical for training, text for evaluation: read as levels, checked by the probe
    for c in train.columns:
        if c == target or dtypes is None or c not in dtypes.index:
            continue
        want = _kind(data._meta[c]) if hasattr(data, "_meta") else _kind(data[c])
        got = _kind(train[c])
        if want == "text" and got == "categorical":
            as_levels.append(c)
            continue
        if want != got:
            fix = (
                "store the training data as Parquet (it keeps the dtype) or have the model's entry point cast "
                "the column"
                if want == "categorical"
                else f"correct the non-numeric values (e.g. {_names(_bad_numbers(train[c]), 3)}) in the file"
                if want == "numeric"
                else "give the column the evaluation data's type"
            )
            raise config_error(
                cfg,
                where,
                f"column {c!r} is {got} in the training data but {want} in the "
                f"evaluation data ({train[c].dtype} vs {data[c].dtype}); every "
                f"bootstrap refit would fail: {fix}",
            )
    statsmodels = hasattr(model, "model") and hasattr(model, "params")
    missing = [] if statsmodels else _missing_inputs(model, train, target)
    if missing:  # a formula's refit reads the training frame itself; an estimator's reads the columns it names
        raise config_error(
            cfg,
            blame,
            f"{source} lack {_names(missing)}, which {who} reads (it was fitted on "
            f"{_names([str(c) for c in feature_names(model) or []])}); every bootstrap refit would fail: add "
            f"the column{'s' if len(missing) > 1 else ''} to the training data file",
        )
    cols = refit_columns(model, train, target)
    X = train.drop(columns=[target]) if cols is None else train[cols]
    spec = {"data": train} if statsmodels else {"X": X, "y": train[target]}
    try:
        # the model's adapter refits it as the bootstrap will (its own checks of the training data first)
        adapter, payload, n_train = refit_setup(model, spec)
        fitted = refit_on(adapter, payload, np.arange(n_train))
    except Exception as exc:  # noqa: BLE001 - the first refit fails: all would; one line naming the key
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise config_error(
            cfg,
            where,
            f"refitting the model on the training data fails ({type(exc).__name__}: "
            f"{text}); every bootstrap refit would fail. "
            f"{_text_columns_hint(train, target, text)}",
        ) from None
    if as_levels:  # the same prediction, its failure blamed on the columns read as levels
        _check_refit_reads_levels(cfg, where, model, fitted, data, as_levels)
    else:
        _check_refit_predicts(cfg, blame, who, source, model, fitted, data)


def _check_refit_predicts(
    cfg: ReportConfig, blame: tuple, who: str, source: str, model: Any, fitted: Any, data: Any
) -> None:
    """The probe refit predicts some evaluation rows as every bootstrap refit will; if it cannot, every refit
    would fail: one error at ``blame`` (the model's key, or ``<key>.train_data``), in config words. One batched
    prediction of the evaluation rows (of Dask data, its first rows): a level the training data lack may be in
    any row, and every refit predicts them all."""
    try:
        fme.predictions(fitted, _head(data), inference="sample", target_class=resolve_target_class(cfg, model))
    except Exception as exc:  # noqa: BLE001 - one line naming the key and what to change
        cause = exc.__cause__ or exc  # the model's own error, not the library's wrapping of it (API advice)
        text = " ".join(str(cause).split()) or type(cause).__name__
        raise config_error(
            cfg,
            blame,
            f"{who} refitted on {source} cannot predict the evaluation rows of "
            f"data ({type(cause).__name__}: {text}); every bootstrap refit would fail: give the training data "
            f"the columns {who} was fitted on, with the types and levels of data",
        ) from None


def _text_columns_hint(train: pd.DataFrame, target: str, error: str) -> str:
    """What to check after a failed probe refit: the text columns of the training data whose value the error
    quotes (a CSV keeps no categorical dtype), else every text column, else the columns and types."""
    text_cols = [c for c in train.columns if c != target and _kind(train[c]) == "text"]
    quoted = [
        c
        for c in text_cols
        if any(f"'{v}'" in error or f'"{v}"' in error for v in train[c].dropna().astype(str).unique()[:1000])
    ]
    named = quoted or text_cols
    if not named:
        return "Check the columns and types of the training data against the data the model was fitted on"
    cols = ", ".join(repr(c) for c in named)
    are = "is" if len(named) == 1 else "are"
    return (
        f"Column{'s' if len(named) > 1 else ''} {cols} of the training data {are} text (e.g. "
        f"{_names(sorted(map(str, train[named[0]].dropna().unique()))[:3], 3)}), which the model cannot fit: "
        "store the training data as Parquet with the column's categorical dtype (a CSV keeps none), or have "
        "the model's entry point cast it, as the model was fitted"
    )


def _check_refit_reads_levels(
    cfg: ReportConfig, where: tuple, model: Any, fitted: Any, data: Any, columns: list
) -> None:
    """The probe refit predicts some evaluation rows whose ``columns`` are text where the training data have
    them categorical (as the fitted model reads them); if it cannot, every refit would fail: name the column."""
    head = _head(data).iloc[:50]
    target_class = resolve_target_class(cfg, model)
    try:
        fme.predictions(fitted, head, inference="sample", target_class=target_class)
    except Exception as exc:  # noqa: BLE001 - one line naming the key and the column
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise config_error(
            cfg,
            where,
            f"column {columns[0]!r} is categorical in the training data but text in the "
            f"evaluation data, and the model refitted on the training data cannot "
            f"predict the evaluation rows ({type(exc).__name__}: {text}); every "
            "bootstrap refit would fail: give the column the same type in both",
        ) from None


def _bad_numbers(col: pd.Series) -> list:
    """Values of a text column that are not numbers (for the fix of :func:`check_train_data`)."""
    values = col.dropna().astype(str)
    bad = values[pd.to_numeric(values, errors="coerce").isna()]
    return sorted(set(bad))[:3]


def all_extrapolation_error(
    cfg: ReportConfig, eff: EffectConfig, data: Any, reference: Any, seed: int
) -> ConfigError | None:
    """When every row is an extrapolation point because the detector flags x itself (the hull in many
    dimensions: each row lies outside the convex hull of the reference data), or because the hull is
    degenerate (x inside, but most reference rows lie outside the hull of the others, so every step leaves
    it), a :class:`ConfigError` at ``effects[i].extrapolation`` saying so and how to fix it; None otherwise
    (then the step is the problem and the library's message stands)."""
    from ..inputs.specs import make_detector

    if hasattr(data, "npartitions") or eff.extrapolation["method"] == "none":
        return None
    cols = [c for c in reference.columns if c in data.columns]
    try:
        detector = make_detector(eff.extrapolation, seed).fit(reference[cols])
        flagged = np.asarray(detector.flag(data[cols]), dtype=bool)
    except Exception:  # noqa: BLE001 - the diagnosis must not hide the original error
        return None
    method = eff.extrapolation["method"]
    i = eff.index
    key = ("effects", i, "extrapolation") if "extrapolation" in eff.given else ("effects", i, "steps")
    if flagged.size and flagged.mean() < 0.5:
        return _degenerate_hull_error(cfg, key, detector, len(cols), len(reference))
    if flagged.size == 0:
        return None
    return config_error(
        cfg,
        key,
        (
            f"every row is an extrapolation point because x itself lies outside the {method} detector's region: "
            f"{int(flagged.sum()):,} of {flagged.size:,} evaluated rows are flagged before any step, in "
            f"{len(cols)} dimensions with {len(reference):,} reference rows (in high dimension almost every point lies "
            "outside the convex hull of the others). Set extrapolation: envelope (per-feature ranges) or a detector "
            "that scales, e.g. {method: mcec} or {method: lof}, or give more reference rows (reference_data)"
        ),
    )


def _degenerate_hull_error(
    cfg: ReportConfig, key: tuple, detector: Any, n_dims: int, n_reference: int
) -> ConfigError | None:
    """The hull detector's diagnosis when x is mostly inside but every step left: its ``boundary_share_`` (the
    share of reference rows outside the hull of the others) says the hull is degenerate, so any step leaves it.
    None for other detectors or a hull that is not degenerate (the library's message stands)."""
    share = getattr(detector, "boundary_share_", None)
    if share is None or share < 0.5:
        return None
    return config_error(
        cfg,
        key,
        (
            f"every row is an extrapolation point because the convex hull is degenerate: in {n_dims} dimensions with "
            f"{n_reference:,} reference rows about {share:.0%} of the rows themselves lie outside the hull of the "
            "others (on its boundary), so any step of any row leaves the hull. Set extrapolation: envelope "
            "(per-feature ranges) or a detector that scales, e.g. {method: mcec} or {method: lof}, check fewer "
            "features (reference_data with the stepped ones), or give more reference rows"
        ),
    )
