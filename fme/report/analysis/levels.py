"""The three levels of one effect for ``results.json``: the fitted model's, the learner's and the data's.

The effect's own AME (paper §3.2) is about the fitted model. An effect that asks for them adds

* ``learner``: :func:`fme.learner_ame`, the AME of the model's learning algorithm retrained on ``n_train``
  rows, in expectation over training sets (seeded splits of the training data, Nadeau-Bengio corrected
  standard error; Molnar et al. 2023's learner level);
* ``data_level``: :func:`fme.dgp_ame`, the change of the outcome's regression function E[Y | X] under the
  same forward step, by a cross-fitted one-step estimator, with its positivity diagnostics, and the
  model's own AME on the same training rows (the DGP level).

Both use the effect's resolved step (a rule such as ``sd`` is the number the model-level AME used) and the
training data the config names (``train_data``; features and the target column). A level that cannot be
computed for this model (a learner that cannot be refitted, an outcome with more than two classes) is
recorded with its reason and shown as "not run"; the build goes on, the report says why.
"""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd

import fme

from ..inputs.config import EffectConfig
from ..inputs.specs import make_detector
from .effect_parts import json_num

__all__ = ["LearnerShare", "level_summaries"]


class LearnerShare:
    """One :func:`fme.learner_ame` call for all variants of an effect (its categorical levels).

    The learner is refitted on the same seeded splits for every level, so one call with the list of the
    variants' steps fits each split once and gives every level's row, equal to a call of its own (the same
    splits, fits and test rows; the standard errors to rounding, as the diagonal of one covariance matrix):
    ``repeats + 1`` fits instead of ``k * (repeats + 1)`` for ``k`` levels.
    A call that fails fails for every variant, each then "not run" with the reason.
    """

    def __init__(self, steps: list[dict]) -> None:
        self.steps = [dict(s) for s in steps]
        self._table: pd.DataFrame | None = None
        self._warnings: list[str] = []
        self._error: fme.FMEError | None = None

    def row(self, steps: dict, compute: Any) -> tuple[pd.DataFrame, list[str]]:
        """The learner table's row of the variant of ``steps`` and the call's warnings; ``compute(step_list)``
        makes the one call (the first variant's). Steps of no variant here: a call of their own."""
        if steps not in self.steps:
            return compute(steps)
        if self._table is None and self._error is None:
            try:
                self._table, self._warnings = compute(self.steps)
            except fme.FMEError as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        return self._table.iloc[[self.steps.index(steps)]], self._warnings


def _row(table: pd.DataFrame, keys: tuple[str, ...]) -> dict[str, Any]:
    r = table.iloc[0]
    return {k: json_num(r[k]) for k in keys if k in table.columns}


def _outcome(train: pd.DataFrame, target: str) -> tuple[pd.DataFrame, pd.Series]:
    return train.drop(columns=[target]), train[target]


def _learner(
    model: Any,
    eff: EffectConfig,
    steps: dict,
    train: pd.DataFrame,
    target: str,
    target_class: Any,
    seed: int,
    conf: float,
    share: LearnerShare | None = None,
) -> dict[str, Any]:
    spec = eff.learner
    X, y = _outcome(train, target)
    kwargs: dict[str, Any] = {} if target_class is None else {"target_class": target_class}

    def compute(step_arg: Any) -> tuple[pd.DataFrame, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", fme.LearnerWarning)
            table = fme.learner_ame(
                model,
                X,
                y,
                step_arg,
                repeats=int(spec["repeats"]),
                test_size=spec["test_size"],
                conf_level=conf,
                random_state=seed,
                n_jobs=spec.get("n_jobs"),
                **kwargs,
            )
        return table, sorted({str(w.message) for w in caught if issubclass(w.category, fme.LearnerWarning)})

    table, caught = compute(steps) if share is None else share.row(steps, compute)
    out = _row(
        table,
        (
            "ame",
            "std_error",
            "p_value",
            "conf_low",
            "conf_high",
            "inference",
            "ame_full",
            "repeats",
            "n_splits",
            "n_failed",
            "n_train",
            "n_test",
        ),
    )
    out.update(
        test_size=float(spec["test_size"]),
        conf_level=conf,
        n_rows=len(X),
        errors=[str(e) for e in table.learner.errors][:3],
        n_nonconverged=int(table.learner.n_nonconverged),
        warnings=list(caught),
    )
    return out


def _data_level(
    model: Any,
    eff: EffectConfig,
    steps: dict,
    det_spec: dict,
    train: pd.DataFrame,
    target: str,
    target_class: Any,
    seed: int,
    conf: float,
) -> dict[str, Any]:
    X, y = _outcome(train, target)
    detector = None if det_spec["method"] == "none" else make_detector(det_spec, seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", fme.PositivityWarning)
        table = fme.dgp_ame(
            X,
            y,
            steps,
            folds=int(eff.data_level["folds"]),
            conf_level=conf,
            random_state=seed,
            model=model,
            target_class=target_class,
            extrapolation=detector,
        )
    out = _row(
        table,
        (
            "ame",
            "std_error",
            "p_value",
            "conf_low",
            "conf_high",
            "inference",
            "plug_in",
            "correction",
            "ess",
            "ess_share",
            "max_weight",
            "p99_weight",
            "propensity_min",
            "propensity_max",
            "share_extrapolated",
            "positivity",
            "n",
            "model_ame",
            "note",
        ),
    )
    out.update(
        folds=int(eff.data_level["folds"]),
        conf_level=conf,
        n_rows=len(X),
        detector=None if detector is None else det_spec["method"],
        warnings=sorted({str(w.message) for w in caught if issubclass(w.category, fme.PositivityWarning)}),
    )
    return out


def level_summaries(
    model: Any,
    eff: EffectConfig,
    summary: dict,
    trains: dict[str, pd.DataFrame | None],
    target: str,
    target_class: Any,
    seed: int,
    share: LearnerShare | None = None,
) -> dict[str, Any] | None:
    """The learner- and data-level records of one effect variant (None when it asks for neither).

    Parameters
    ----------
    model : fitted model
        The report's model: cloned and refitted on the splits (learner level); its own AME on the
        training rows beside the data-level estimate.
    eff : EffectConfig
        The effect variant (its ``learner`` and ``data_level`` settings, its detector).
    summary : dict
        The variant's summary (:func:`fme.report.analysis.effect.effect_summary`): the resolved steps.
    trains : dict
        ``{"learner": frame, "data_level": frame}``: the loaded training data (features and ``target``).
    target, target_class, seed
        The config's target column, the explained class (classifiers) and seed.
    share : LearnerShare, optional
        The shared learner call of the effect's variants (its categorical levels).

    Returns
    -------
    dict or None
        ``{"learner": {...} or None, "data": {...} or None}``; a level that could not be computed holds
        ``{"error": reason}``.
    """
    if not (eff.learner or eff.data_level):
        return None
    steps = {f: summary["steps"][f] for f in summary["features"]}
    conf = float(summary["conf_level"])
    out: dict[str, Any] = {"learner": None, "data": None}
    if eff.learner:
        try:
            out["learner"] = _learner(model, eff, steps, trains["learner"], target, target_class, seed, conf, share)
        except fme.FMEError as exc:  # the learner cannot be refitted here: the report says why
            out["learner"] = {"error": str(exc)}
    if eff.data_level:
        try:
            out["data"] = _data_level(
                model, eff, steps, summary["detector_spec"], trains["data_level"], target, target_class, seed, conf
            )
        except fme.FMEError as exc:
            out["data"] = {"error": str(exc)}
    return out
