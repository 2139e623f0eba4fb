"""Any model as ``f(DataFrame) -> ndarray``: :class:`Predictor` over the model's adapter (:mod:`fme._adapters`).

Supported (one adapter module per backend, chosen by capability or module name; no hard dependency):

* scikit-learn estimators and Pipelines (raw feature columns go in; the
  pipeline does its own encoding). Classifiers give the probability of
  ``target_class``.
* statsmodels results objects (formula API: ``predict(DataFrame)``).
* raw ``xgboost.Booster`` (predicts on a ``DMatrix``) and ``lightgbm.Booster``.
* any object with ``predict(DataFrame)``.
* a plain callable ``f(DataFrame) -> array``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._utils.memory import held_elsewhere
from .._utils.numfmt import count
from .._utils.threads import finite_sum
from .._utils.validation import check_feature_names
from ..exceptions import DataError, FMEError, ParameterError, PredictionError
from . import ModelAdapter, adapt

__all__ = ["Predictor", "make_predictor", "named_predictor"]


class Predictor:
    """A model wrapped as ``f(frame) -> ndarray`` with validated output.

    Parameters
    ----------
    func : callable
        Maps a DataFrame to predictions.
    feature_names : sequence of str or None
        Columns the model was fitted on, when the model says so
        (``feature_names_in_``); those columns, in that order, are passed.
    output_names : sequence of str or None
        Names of the output columns for multi-output predictions
        (``target_class='all'``); None for a single output.
    description : str
        Readable description for summaries and reports.
    adapter : ModelAdapter or None
        The model's adapter (:mod:`fme._adapters`) when made by :func:`make_predictor`; it may ask for
        auxiliary columns (an offset) beside ``feature_names``.
    """

    def __init__(
        self,
        func: Callable[[pd.DataFrame], Any],
        feature_names: Sequence[str] | None = None,
        output_names: Sequence[str] | None = None,
        description: str = "model",
        adapter: ModelAdapter | None = None,
    ) -> None:
        self.func = func
        self.feature_names = None if feature_names is None else [str(c) for c in feature_names]
        self.output_names = None if output_names is None else list(output_names)
        self.description = description
        self.adapter = adapter
        self.n_calls = 0
        self.n_rows = 0
        #: What the model is called with, for the message of a failing call.
        self.accepts = "a DataFrame of the data's columns and dtypes"

    @property
    def explained_class(self) -> str | None:
        """The class whose probability the single output is (a classifier's ``target_class``, by default the
        second of ``classes_`` as scikit-learn's binary metrics take it); None for other models and for one
        output per class."""
        return None if self.adapter is None else self.adapter.prediction().explained_class

    @property
    def n_outputs(self) -> int:
        return 1 if self.output_names is None else len(self.output_names)

    def select(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The columns the model needs, in its order (all columns if unknown)."""
        if self.feature_names is None:
            return frame
        missing = [c for c in self.feature_names if c not in frame.columns]
        if missing:
            raise DataError(
                f"the data lacks feature(s) {missing} that the model was fitted on; "
                f"pass a DataFrame with all of {self.feature_names}."
            )
        cols = self.feature_names if self.adapter is None else self.adapter.columns_for(frame.columns)
        if list(frame.columns) == cols:
            return frame
        return frame[cols]

    def _where(self, stage: str | None, rows: tuple[int, int, int] | None) -> str:
        where = f" at {stage}" if stage else ""
        if rows is not None:
            start, stop, total = rows
            where += (
                f" (rows {start}-{stop - 1} of {total})" if (start, stop) != (0, total) else f" ({count(total, 'row')})"
            )
        return where

    def __call__(
        self,
        frame: pd.DataFrame,
        stage: str | None = None,
        rows: tuple[int, int, int] | None = None,
        check: bool = True,
    ) -> np.ndarray:
        """Predict and validate: length, shape, numeric and finite.

        ``stage`` (e.g. ``"f(x + h)"``) and ``rows`` (``(start, stop, n)`` of the batch) only
        enrich error messages. An exception of the model is re-raised as
        :class:`~fme.PredictionError`, chained from the original. ``check=False`` leaves out the finiteness
        check, for a caller that checks the predictions in a pass of its own and then calls :meth:`check`
        with the same stage and rows when that pass finds a value not finite (the fMEs' subtraction:
        :func:`fme._utils.threads.finite_difference`).
        """
        n = len(frame)
        try:
            raw = self.func(frame)
        except FMEError as exc:
            # an adapter's own check already names the culprit and the fix: its class stays, the stage is added
            raise type(exc)(f"{exc} (raised{self._where(stage, rows)})") from exc
        except Exception as exc:
            raise PredictionError(
                f"{self.description} raised {type(exc).__name__}{self._where(stage, rows)}: {exc}. "
                f"Check that the model accepts {self.accepts}."
            ) from exc
        self.n_calls += 1
        self.n_rows += n
        if isinstance(raw, (pd.Series, pd.DataFrame)):
            raw = raw.to_numpy()
        try:
            out = np.asarray(raw, dtype=float)
        except (TypeError, ValueError) as exc:
            raise PredictionError(
                f"{self.description} returned non-numeric predictions ({np.asarray(raw).dtype}); "
                "for classifiers fme uses predict_proba, so pass a fitted classifier or a callable returning numbers."
            ) from exc
        del raw  # the model's object, if it was not a float array: its reference would count below
        if out.ndim == 0 or out.shape[0] != n:
            got = "a scalar" if out.ndim == 0 else f"{count(out.shape[0], 'prediction')}"
            raise PredictionError(
                f"{self.description} returned {got} for {count(n, 'row')}; it must return one prediction per row."
            )
        if self.output_names is None:
            if out.ndim == 2 and out.shape[1] == 1:
                out = out[:, 0]
            if out.ndim != 1:
                raise PredictionError(
                    f"{self.description} returned an array of shape {out.shape}; fme needs one number per row. "
                    "For a multi-output model wrap it in a callable returning one column, or for a classifier "
                    "pass target_class."
                )
        elif out.shape != (n, len(self.output_names)):
            raise PredictionError(
                f"{self.description} returned shape {out.shape}, expected ({n}, {len(self.output_names)})."
            )
        if held_elsewhere(out):
            # the model keeps its predictions (a buffer it writes again at its next call) or they are a view of its
            # input: fme's own copy, so that no later call changes the predictions fme holds
            out = out.copy()
        if check:
            self.check(out, stage, rows)
        return out

    def check(self, out: np.ndarray, stage: str | None = None, rows: tuple[int, int, int] | None = None) -> None:
        """Raise :class:`~fme.PredictionError` (``non_finite`` set) when a prediction in ``out`` (what this
        predictor returned for ``stage`` and ``rows``) is NaN or infinite."""
        # One summing pass settles the usual all-finite case: the sum is non-finite only if
        # some prediction is (or the total overflows, which the element-wise check then clears).
        if not finite_sum(out) and (bad := ~np.isfinite(out)).any():
            bad_rows = np.flatnonzero(bad.reshape(out.shape[0], -1).any(axis=1))
            err = PredictionError(
                f"{self.description} returned {bad_rows.size} non-finite prediction(s){self._where(stage, rows)} "
                f"(first at stacked row {bad_rows[0]}); check the model for NaN inputs or, "
                "when f(x) is finite, overflow from a step too large (use a smaller step)."
            )
            err.non_finite = True
            raise err


def make_predictor(model: Any, target_class: Any = None) -> Predictor:
    """Wrap ``model`` as a :class:`Predictor`.

    The model's backend is recognised once, by :func:`fme._adapters.adapt` (one adapter module per
    backend: scikit-learn, statsmodels, LightGBM, XGBoost, plain objects and callables); the adapter
    is kept as ``Predictor.adapter`` for the delta method, the bootstrap and the exact NLM.

    Parameters
    ----------
    model : estimator, statsmodels results, object with ``predict`` or callable
    target_class : label or 'all', optional
        For classifiers with ``predict_proba``: the class whose probability is
        the prediction. Default for binary classifiers: the positive class
        (``classes_[1]``); required for multi-class (or ``'all'`` for one
        output per class).
    """
    if isinstance(model, Predictor):
        return model
    adapter = adapt(model, target_class)
    func, feature_names, output_names, description, _ = adapter.prediction()
    return Predictor(func, feature_names, output_names, description, adapter=adapter)


def named_predictor(model: Any, target_class: Any = None, feature_names: Any = None) -> Predictor:
    """A front door's :class:`Predictor` of ``model``: :func:`make_predictor`, with the model's inputs named.

    A model that knows its inputs' names (``feature_names_in_``, a formula) is passed those columns in its own
    order and ``feature_names`` must be None or the same names. A model fitted on an array takes its inputs by
    position: a frame's columns in another order would be read as other features, silently. It needs
    ``feature_names`` (the data's columns that are its inputs, in its order).

    Raises
    ------
    DataError
        A model fitted on an array without ``feature_names``, or ``feature_names`` of the wrong length.
    ParameterError
        ``feature_names`` that is not a list of distinct column labels, or that contradicts the model's own names.
    """
    predictor = make_predictor(model, target_class)
    adapter = predictor.adapter
    if adapter is None:
        return predictor
    n = adapter.unnamed_inputs()
    if feature_names is None:
        if n is not None:
            raise DataError(
                f"the {adapter.type_name} was fitted on an array: it takes its {count(n, 'input')} (n_features_in_ = "
                f"{n}) by "
                "position, so a data frame's columns would be read in the frame's order, whatever they are. Name "
                f"them in the model's order: feature_names=[...] ({n} column labels of the data), or fit the model "
                "on a DataFrame."
            )
        return predictor
    names = [str(c) for c in check_feature_names(feature_names, "the model's inputs in its order")]
    if n is None:
        own = predictor.feature_names
        if own is not None and own != names:
            raise ParameterError(
                f"feature_names={names} contradicts the {adapter.type_name}'s own input names "
                f"{own}; leave feature_names out (the model's names are used)."
            )
        if own is None:
            adapter.name_inputs(names)
            predictor.feature_names = names
        return predictor
    if len(names) != n:
        raise DataError(
            f"feature_names names {count(len(names), 'column')} but the {adapter.type_name} takes "
            f"n_features_in_ = {count(n, 'input')}; name each input once, in the model's order."
        )
    adapter.name_inputs(names, as_array=True)
    predictor.func, predictor.feature_names = adapter.prediction().func, names
    return predictor
