"""statsmodels results objects (formula API: ``results.predict(DataFrame)``).

* predictions: ``results.predict(frame)`` with the model's offset and exposure taken into account
  (statsmodels' own ``predict(newdata)`` drops them; Stata's ``margins`` keeps them: so does fme). The
  offset/exposure of a row comes from the column ``"(exposure)"``/``"(offset)"`` that the ``exposure=``/
  ``offset=`` keywords of :func:`fme.fme` and :func:`fme.ame` add, else from the data column whose
  values (or their log) are the model's stored offset on the training rows; otherwise
  :class:`~fme.DataError` names the offset and the fix;
* delta method (not in the paper): analytic for models whose mean is mu(x'beta + offset) (OLS/WLS/GLS, GLM,
  Logit, Probit, Poisson), one design matrix per point set; central differences of
  ``results.model.predict(params, exog, offset=...)`` for the others (NegativeBinomial, ...);
* bootstrap: the same model class, formula and family refitted on ``{"data": train_frame}``;
* training levels: the formula's categorical factors (``C(x)``, string or categorical columns).
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._utils.numfmt import count
from .._utils.validation import is_dask_collection
from ..exceptions import DataError, ModelError, ParameterError
from .base import ModelAdapter, Prediction, Support, check_vcov, module_of, numerical_jacobian, register_adapter
from .formula import check_spline_bounds, factor_levels, formula_info, spline_bounds, spline_checked
from .identity import Walk
from .statsmodels_results import design_matrix, is_statsmodels_results, mean_functions, results_text

__all__ = ["StatsmodelsAdapter", "OFFSET_COLUMNS", "design_matrix", "is_statsmodels_results"]

#: The columns the ``exposure=``/``offset=`` keywords add to the data (parenthesised: never a formula name).
OFFSET_COLUMNS = {"exposure": "(exposure)", "offset": "(offset)"}


#: Rows on which the analytic mean mu(x'beta + offset) is checked against the model's own predict.
_CHECK_ROWS = 2048


@register_adapter
class StatsmodelsAdapter(ModelAdapter):
    """statsmodels results (and unfitted statsmodels models, refused by :meth:`check` with the fix)."""

    name = "statsmodels"
    priority = 10

    @classmethod
    def accepts(cls, model: Any) -> bool:
        return module_of(model).startswith("statsmodels") or is_statsmodels_results(model)

    @classmethod
    def canonical_text(cls, obj: Any, walk: Walk) -> str:
        """A fitted result by what identifies the fit (:func:`results_text`), not its pickle: two identical fits
        pickle to different bytes."""
        if module_of(obj).startswith("statsmodels") and hasattr(obj, "model") and hasattr(obj, "params"):
            return results_text(obj)
        return super().canonical_text(obj, walk)

    def check(self) -> None:
        model = self.model
        if hasattr(model, "fit") and hasattr(model, "endog") and not hasattr(model, "params"):
            raise ModelError(
                f"the model is a statsmodels {self.type_name} that has not been fitted; call .fit() first "
                "and pass its results (e.g. res = smf.ols(formula, data).fit(); fme.fme(res, ...))."
            )

    # ------------------------------------------------------------- predictions
    # ------------------------------------------------------------- multinomial models (MNLogit)
    def _outcomes(self) -> list[str] | None:
        """The outcome labels of a multinomial model (one predicted probability each), else None."""
        ynames = getattr(self.model.model, "_ynames_map", None)
        if ynames is None or np.ndim(self.model.params) != 2:
            return None
        return [str(ynames[k]) for k in range(len(ynames))]

    def _outcome_index(self) -> int:
        outcomes = self._outcomes()
        label = str(self.target_class)
        if label not in outcomes:
            raise ParameterError(
                f"target_class {self.target_class!r} is not an outcome of the {self.type_name}; "
                f"its outcomes are {outcomes}."
            )
        return outcomes.index(label)

    def _multinomial_prediction(self, outcomes: list[str]) -> Prediction:
        info = formula_info(self.model)
        rhs = None if not info or not info[0] else [str(c) for c in info[0]]
        if self.target_class is None:
            raise ParameterError(
                f"a {self.type_name} predicts one probability per outcome {outcomes}; pass "
                "target_class=<outcome> (or 'all' with fme.fme for every outcome)."
            )
        if isinstance(self.target_class, str) and self.target_class == "all":
            return Prediction(self._predict_all, rhs, outcomes, f"{self.type_name}.predict (all outcomes)")
        j = self._outcome_index()
        return Prediction(
            lambda f: self._predict_all(f)[:, j],
            rhs,
            None,
            f"{self.type_name}.predict (P(y = {outcomes[j]}))",
            outcomes[j],
        )

    def _predict_all(self, frame: pd.DataFrame) -> np.ndarray:
        self.check_bounds(frame)
        return np.asarray(spline_checked(self.model, self.model.predict, frame))

    def _multinomial_jacobian(self, frames: list[pd.DataFrame]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Probabilities of the target outcome at each frame, and the Jacobian of their stack in the
        flattened parameters (outcome by outcome, statsmodels' cov_params order), by central differences."""
        P = np.asarray(self.model.params, dtype=float)
        K, M = P.shape
        flat = P.ravel(order="F")
        vcov = self._vcov(flat.size)
        j = self._outcome_index()
        for f in frames:
            self.check_bounds(f, frames[0] if len(frames) > 1 and f is not frames[0] else None)
        designs = [design_matrix(self.model, f) for f in frames]
        D = np.vstack(designs)

        def at(p: np.ndarray) -> np.ndarray:
            return np.asarray(self.model.model.predict(p.reshape(K, M, order="F"), D), dtype=float)[:, j]

        sizes = np.cumsum([0] + [len(f) for f in frames])
        n = int(sizes[-1])
        jac = numerical_jacobian(lambda p: np.concatenate([np.zeros(n), at(p)]), flat, n)
        f = at(flat)
        return [f[a:b] for a, b in zip(sizes[:-1], sizes[1:])], jac, vcov

    def _make_prediction(self) -> Prediction:
        outcomes = self._outcomes()
        if outcomes is not None:
            return self._multinomial_prediction(outcomes)
        if self.target_class is not None:
            raise ParameterError(
                f"target_class={self.target_class!r} was given but {self.type_name} is not a "
                "classifier with predict_proba."
            )
        info = formula_info(self.model)
        rhs = None if not info or not info[0] else [str(c) for c in info[0]]
        return Prediction(self._predict_frame, rhs, None, f"{self.type_name}.predict")

    def _predict_frame(self, frame: pd.DataFrame) -> np.ndarray:
        self.check_bounds(frame)
        off = {} if (o := self.offset_values(frame)) is None else {"offset": o}
        return np.asarray(spline_checked(self.model, self.model.predict, frame, **off))

    def columns_for(self, columns: Sequence[Any]) -> list[str] | None:
        names = self.feature_names
        if names is None or not self.model_offsets():
            return names
        extra = [c for c, _ in self.offset_sources(columns).values()]
        return names + [c for c in dict.fromkeys(extra) if c not in names]

    # ------------------------------------------------------------- B-splines: bounded inputs
    def _splines(self) -> dict[str, tuple[float, float, str]]:
        if not hasattr(self, "_spline_ranges"):
            self._spline_ranges = spline_bounds(self.model)
        return self._spline_ranges

    def input_bounds(self) -> dict[str, tuple[float, float]]:
        """The boundary knots of every column that enters the formula through ``bs(column, ...)``: patsy and
        formulaic (by default) refuse to evaluate a B-spline outside them."""
        return {c: (lo, hi) for c, (lo, hi, _) in self._splines().items()}

    def check_bounds(self, frame: pd.DataFrame, base: pd.DataFrame | None = None) -> None:
        """:func:`~fme._adapters.formula.check_spline_bounds`: patsy's and formulaic's own errors name no step."""
        check_spline_bounds(self._splines(), frame, base)

    # ------------------------------------------------------------- offset and exposure
    def model_offsets(self) -> dict[str, np.ndarray]:
        """kind -> the model's stored training vector, for ``offset`` and ``exposure`` (stored as its log)."""
        m = getattr(self.model, "model", None)
        out = {}
        for kind in ("offset", "exposure"):
            v = getattr(m, kind, None)
            if v is not None and np.ndim(v) > 0:
                out[kind] = np.asarray(v, dtype=float).reshape(-1)
        return out

    def _named_offsets(self) -> dict[str, tuple[str, str]]:
        """kind -> (data column, 'log' or 'identity') whose transform equals the model's stored vector on the
        training rows (the formula frame's columns; found by value, statsmodels keeps no name)."""
        if hasattr(self, "_named"):
            return self._named
        data = getattr(self.model.model, "data", None)
        frame = getattr(data, "frame", None)
        labels = getattr(data, "row_labels", None)
        found: dict[str, tuple[str, str]] = {}
        for kind, stored in self.model_offsets().items():
            if not isinstance(frame, pd.DataFrame):
                break
            rows = frame
            if len(frame) != stored.size and labels is not None and len(labels) == stored.size:
                rows = frame.loc[labels]
            if len(rows) != stored.size:
                break
            for c in rows.columns:
                col = rows[c]
                if not pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
                    continue
                v = col.to_numpy(dtype=float)
                with np.errstate(divide="ignore", invalid="ignore"):
                    cands = [("log", np.log(v))] if kind == "exposure" else [("identity", v), ("log", np.log(v))]
                hit = next((t for t, cand in cands if np.allclose(cand, stored, rtol=1e-12, atol=1e-12)), None)
                if hit is not None:
                    found[kind] = (str(c), hit)
                    break
        self._named = found
        return found

    def offset_sources(self, columns: Sequence[Any]) -> dict[str, tuple[str, str]]:
        """kind -> (column of ``columns``, transform) giving each row's offset/exposure; :class:`~fme.DataError`
        naming the offset and the fix when the model has one that no column provides."""
        out = {}
        cols = set(map(str, columns))
        for kind in self.model_offsets():
            named = self._named_offsets().get(kind)
            if OFFSET_COLUMNS[kind] in cols:
                out[kind] = (OFFSET_COLUMNS[kind], "log" if kind == "exposure" else "identity")
            elif named is not None and named[0] in cols:
                out[kind] = named
            else:
                where = (
                    f"the training column {named[0]!r}, which the data lacks"
                    if named is not None
                    else "no column of the training data (it was passed as an array)"
                )
                raise DataError(
                    f"the {type(self.model.model).__name__} was fitted with an {kind} ({kind}=...), which comes from "
                    f"{where}, so its rows cannot be matched to the data's; statsmodels' predict would silently drop "
                    f"it (the rate scale). Pass {kind}=<column name or array of the data's rows> to fme.fme/fme.ame, "
                    f"or {kind}={1 if kind == 'exposure' else 0} for the rate per unit of {kind}."
                )
        return out

    def offset_values(self, frame: pd.DataFrame) -> np.ndarray | None:
        """Each row's total offset (offset + log exposure) as the model adds it to x'beta, or None without one."""
        if not self.model_offsets():
            return None
        total = np.zeros(len(frame))
        for kind, (col, transform) in self.offset_sources(frame.columns).items():
            v = frame[col].to_numpy(dtype=float)
            if transform == "log":
                if not (v > 0).all():
                    raise DataError(
                        f"the {kind} column {col!r} has values <= 0 or missing; an {kind} must be "
                        "positive (its log enters the linear predictor)."
                    )
                v = np.log(v)
            total = total + v
        if not np.isfinite(total).all():
            raise DataError(
                f"the model's offset/exposure has missing or non-finite values for some rows (columns "
                f"{[c for c, _ in self.offset_sources(frame.columns).values()]}); drop those rows."
            )
        return total

    def scale_note(self, columns: Sequence[Any] | None = None) -> str | None:
        if not self.model_offsets():
            return None
        try:
            src = self.offset_sources(columns if columns is not None else [])
        except DataError:
            return None
        parts = []
        for kind, (col, transform) in src.items():
            if col == OFFSET_COLUMNS[kind]:
                parts.append(f"the {kind} given by {kind}=")
            else:
                of = f"log of column {col!r}" if kind == "offset" and transform == "log" else f"column {col!r}"
                parts.append(f"each row's {kind} ({of})")
        return "predictions on the count scale at " + " and ".join(parts) + ", as Stata's margins"

    def prepare(self, data: Any, exposure: Any = None, offset: Any = None) -> Any:
        out = self._categorical_columns(data)
        for kind, value in (("exposure", exposure), ("offset", offset)):
            if value is None:
                continue
            if kind not in self.model_offsets():
                raise ParameterError(
                    f"{kind}= was given but the {type(self.model.model).__name__} was fitted without "
                    f"an {kind}; drop {kind}= (or refit with one)."
                )
            col = OFFSET_COLUMNS[kind]
            if isinstance(value, str):
                if value not in out.columns:
                    raise DataError(
                        f"{kind}={value!r} is not a column of the data; pass a column name, a number or "
                        "an array with one value per row."
                    )
                values = out[value]
            elif isinstance(value, numbers.Real) and not isinstance(value, bool):
                values = float(value)
            elif is_dask_collection(out):
                raise ParameterError(
                    f"on Dask data, {kind}= must be a column name or a number, got "
                    f"{type(value).__name__}; add the values as a column and pass its name."
                )
            else:
                values = np.asarray(value, dtype=float).reshape(-1)
                if values.size != len(out):
                    raise DataError(
                        f"{kind}= has {count(values.size, 'value')} for {count(len(out), 'row')} of data; "
                        "pass one per row "
                        "(aligned by position), a column name or a number."
                    )
            if kind == "exposure" and isinstance(values, float) and not values > 0:
                raise ParameterError(f"exposure={value!r} must be positive (its log enters the linear predictor).")
            out = out.assign(**{col: values}) if is_dask_collection(out) else _with_column(out, col, values)
        return out

    def _categorical_columns(self, data: Any) -> Any:
        """``data`` with the numeric columns the formula treats as categorical (``C(x)``) turned into pandas
        categoricals of the formula's levels (``data`` itself when nothing changes)."""
        if is_dask_collection(data):
            return data
        info = formula_info(self.model) if module_of(self.model).startswith("statsmodels") else None
        if not info or not info[1]:
            return data
        todo = {
            c: lv
            for c, lv in info[1].items()
            if c in data.columns and not isinstance(data[c].dtype, pd.CategoricalDtype)
        }
        if not todo:
            return data
        out = data.copy(deep=False)
        for c, lv in todo.items():
            unknown = (data[c].notna() & ~data[c].isin(lv)).to_numpy(dtype=bool)
            if unknown.any():
                shown = list(dict.fromkeys(data[c][unknown].tolist()))[:5]
                raise DataError(
                    f"column {c!r} is categorical in the model's formula (C({c})) with levels {lv[:10]}, but the data "
                    f"holds other values such as {shown} in {int(unknown.sum())} row(s); the model cannot predict "
                    f"them. Drop those rows or map them to one of the formula's levels."
                )
            out[c] = pd.Categorical(data[c], categories=lv)
        return out

    def training_levels(self) -> dict[str, list]:
        return {str(k): v for k, v in factor_levels(self.model).items()}

    def complete_columns(self) -> list[str]:
        """The formula's right-hand-side columns: the fit dropped incomplete rows, and its predict would drop
        them silently."""
        info = formula_info(self.model)
        return [] if not info else list(info[0])

    # ------------------------------------------------------------- covariance choices (vcov=)
    def parameter_count(self) -> int | None:
        model = self.model
        if not (module_of(model).startswith("statsmodels") and hasattr(model, "params") and hasattr(model, "model")):
            return None  # shaped like a result, but not statsmodels' own: no sandwich to ask it for
        return int(np.asarray(model.params).size)

    def robust_covariance(self, cov_type: str, cluster: Any = None) -> np.ndarray:
        """statsmodels' own sandwich: ``get_robustcov_results`` for linear models, else a refit with ``cov_type``
        from the same parameters, of which only the covariance is kept."""
        results = self.model
        cov_kwds = None if cluster is None else {"groups": self._cluster_groups(cluster)}
        if hasattr(results, "get_robustcov_results"):
            robust = results.get_robustcov_results(cov_type=cov_type, **(cov_kwds or {}))
        else:
            kwargs = {"cov_type": cov_type, "start_params": np.asarray(results.params)}
            if cov_kwds:
                kwargs["cov_kwds"] = cov_kwds
            try:
                robust = results.model.fit(disp=0, **kwargs)
            except TypeError:
                robust = results.model.fit(**kwargs)
        return np.asarray(robust.cov_params(), dtype=float)

    def _cluster_groups(self, column: Any) -> np.ndarray:
        data = getattr(self.model.model, "data", None)
        frame = getattr(data, "frame", None)
        if frame is None or column not in frame.columns:
            raise ParameterError(
                f"vcov={{'cluster': {column!r}}} needs the column in the model's training data; "
                "fit the model with the formula API on a frame that has it."
            )
        rows = getattr(data, "row_labels", None)
        groups = frame[column] if rows is None else frame.loc[rows, column]
        if groups.isna().any():
            raise ParameterError(f"the cluster column {column!r} has missing values on training rows.")
        return groups.astype("category").cat.codes.to_numpy()

    def with_covariance(self, vcov: np.ndarray) -> Any:
        """A copy of the results (its parameters unchanged) whose ``cov_params()`` returns ``vcov``."""
        if self.parameter_count() is None:
            return super().with_covariance(vcov)
        model = self.model
        inner = copy.copy(model._results) if hasattr(model, "_results") else copy.copy(model)
        inner.cov_params_default = vcov
        return type(model)(inner) if hasattr(model, "_results") else inner

    def parameter_influence(self, frame: pd.DataFrame, cluster: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Linear models: (X'WX)^{-1} x_i w_i e_i (statsmodels' HC0 terms); others: (-H)^{-1} s_i from the
        model's ``score_obs`` and observed ``hessian`` at the estimate (an M-estimator's influence)."""
        if self.parameter_count() is None or self._outcomes() is not None:
            return super().parameter_influence(frame, cluster)
        n = np.asarray(self.model.model.exog).shape[0]
        # the two parts of the variance pair up row by row: the averaged rows must be the rows the model was fitted on
        if len(frame) != n:
            raise ModelError(self._not_the_sample(len(frame)))
        self.check_estimation_rows(frame, np.arange(n))
        return self.estimation_influence(cluster)

    def _not_the_sample(self, rows: int) -> str:
        n = np.asarray(self.model.model.exog).shape[0]
        return (
            f"vcov='unconditional' averages over the model's estimation sample ({count(n, 'row')}); these {rows} rows "
            f"are not it, row for row. Pass the frame the {self.type_name} was fitted on (its complete rows, in "
            "order), or vcov=None."
        )

    def check_estimation_rows(self, frame: pd.DataFrame, positions: np.ndarray) -> None:
        exog = np.asarray(self.model.model.exog, dtype=float)
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size and (positions.min() < 0 or positions.max() >= exog.shape[0]):
            raise ModelError(self._not_the_sample(int(positions.max()) + 1))
        if not np.allclose(design_matrix(self.model, frame), exog[positions], rtol=1e-9, atol=1e-12):
            raise ModelError(self._not_the_sample(len(frame)))

    def estimation_influence(self, cluster: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        from statsmodels.regression.linear_model import RegressionModel

        res, model = self.model, getattr(self.model, "model", None)
        if self.parameter_count() is None or self._outcomes() is not None:
            return super().estimation_influence(cluster)
        if isinstance(model, RegressionModel):
            A = (np.asarray(model.wexog) * np.asarray(res.wresid)[:, None]) @ np.asarray(res.normalized_cov_params)
        elif callable(getattr(model, "score_obs", None)) and callable(getattr(model, "hessian", None)):
            params = np.asarray(res.params, dtype=float)
            A = np.asarray(model.score_obs(params), dtype=float) @ np.linalg.inv(-np.asarray(model.hessian(params)))
        else:
            return super().estimation_influence(cluster)
        return A, None if cluster is None else self._cluster_groups(cluster)

    # ------------------------------------------------------------- delta method
    def delta_support(self) -> Support:
        if callable(getattr(self.model, "cov_params", None)) and hasattr(self.model.model, "predict"):
            return Support(True)
        return Support(False, f"the {self.type_name} has no cov_params (parameter covariance)")

    def _model_predict(self, params: np.ndarray, D: np.ndarray, off: np.ndarray | None) -> np.ndarray:
        model = self.model.model
        out = model.predict(params, D) if off is None else model.predict(params, D, offset=off)
        return np.asarray(out, dtype=float).reshape(-1)

    def _vcov(self, k: int) -> np.ndarray:
        return check_vcov(np.asarray(self.model.cov_params(), dtype=float), k, type(self.model.model).__name__)

    def predict_with_jacobian(
        self, X0: pd.DataFrame, X1: pd.DataFrame
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        if self._outcomes() is not None:
            return None
        return self._predict_with_jacobian(X0, X1)

    def _predict_with_jacobian(
        self, X0: pd.DataFrame, X1: pd.DataFrame
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """f(X0), f(X1) (``results.model.predict(params, design, offset)``, what ``results.predict`` computes
        with the offset), the analytic Jacobian and the covariance; None without an analytic mean."""
        fns = mean_functions(self.model)
        if fns is None:
            return None
        mu, dmu = fns
        params = np.asarray(self.model.params, dtype=float)
        self.check_bounds(X0)
        self.check_bounds(X1, X0)
        D0, D1 = design_matrix(self.model, X0), design_matrix(self.model, X1)
        if D0.shape[1] != params.size:
            return None
        o0, o1 = self.offset_values(X0), self.offset_values(X1)
        f0, f1 = self._model_predict(params, D0, o0), self._model_predict(params, D1, o1)
        if not (np.isfinite(f0).all() and np.isfinite(f1).all()):
            return None  # let the predictor raise its PredictionError naming the rows
        vcov = self._vcov(params.size)
        eta0 = D0 @ params + (0.0 if o0 is None else o0)
        eta1 = D1 @ params + (0.0 if o1 is None else o1)
        if not np.allclose(mu(eta0), f0, rtol=1e-9, atol=1e-12):
            return None  # not mu(x'beta + offset)
        jac = dmu(eta1)[:, None] * D1 - dmu(eta0)[:, None] * D0
        return f0, f1, jac, vcov

    def level_jacobian(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """f(X) as ``results.model.predict(params, design, offset)`` and its Jacobian: analytic
        mu'(x'beta + offset) x for the means fme knows (f = mu(x'beta + offset), checked against the model's
        own predict on the first rows: one mean function for all rows, so a wrong one shows there), central
        differences otherwise."""
        if self._outcomes() is not None:
            (f,), jac, vcov = self._multinomial_jacobian([X])
            return f, jac, vcov
        params = np.asarray(self.model.params, dtype=float)
        self.check_bounds(X)
        D, off = design_matrix(self.model, X), self.offset_values(X)
        vcov = self._vcov(params.size)
        fns = mean_functions(self.model)
        if fns is not None and D.shape[1] == params.size:
            mu, dmu = fns
            eta = D @ params + (0.0 if off is None else off)
            f = mu(eta)
            k = min(len(f), _CHECK_ROWS)
            head = self._model_predict(params, D[:k], None if off is None else off[:k])
            if np.all(np.isfinite(f)) and np.allclose(f[:k], head, rtol=1e-9, atol=1e-12):
                return f, dmu(eta)[:, None] * D, vcov
        f = self._model_predict(params, D, off)
        n = len(X)
        jac = numerical_jacobian(lambda p: np.concatenate([np.zeros(n), self._model_predict(p, D, off)]), params, n)
        return f, jac, vcov

    def fme_jacobian(
        self, X0: pd.DataFrame, X1: pd.DataFrame, f0: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, str]:
        if self._outcomes() is not None:
            _, jac, vcov = self._multinomial_jacobian([X0, X1])
            n = len(X0)
            return jac[n:] - jac[:n], vcov, "numerical"
        params = np.asarray(self.model.params, dtype=float)
        vcov = self._vcov(params.size)
        self.check_bounds(X0)
        self.check_bounds(X1, X0)
        D0, D1 = design_matrix(self.model, X0), design_matrix(self.model, X1)
        o0, o1 = self.offset_values(X0), self.offset_values(X1)
        fns = mean_functions(self.model)
        if fns is not None and D0.shape[1] == params.size:
            mu, dmu = fns
            eta0 = D0 @ params + (0.0 if o0 is None else o0)
            eta1 = D1 @ params + (0.0 if o1 is None else o1)
            # the analytic mean must be what the model predicts
            if f0 is None or np.allclose(self._model_predict(params, D0, o0), f0, rtol=1e-9, atol=1e-12):
                return dmu(eta1)[:, None] * D1 - dmu(eta0)[:, None] * D0, vcov, "analytic"
        D = np.vstack([D0, D1])
        off = None if o0 is None else np.concatenate([o0, o1])
        return numerical_jacobian(lambda p: self._model_predict(p, D, off), params, len(X0)), vcov, "numerical"

    # ------------------------------------------------------------- bootstrap
    def refit_support(self) -> Support:
        model = self.model.model
        if getattr(model, "formula", None) is None:
            return Support(
                False,
                f"bootstrap refits of statsmodels results need the formula API "
                f"(smf.{type(model).__name__.lower()}(formula, data)); this result was fitted from "
                "arrays",
            )
        for attr in ("offset", "exposure"):
            if getattr(model, attr, None) is not None:
                return Support(
                    False,
                    f"refits of a {type(model).__name__} with {attr} are not supported (the "
                    f"{attr} is not a column the formula can take again)",
                )
        # the user's own weight arguments first: a GLM's `weights` is their product
        for attr in ("var_weights", "freq_weights", "weights"):
            w = getattr(model, attr, None)
            if w is not None and np.ndim(w) > 0 and not np.all(np.asarray(w) == 1):
                return Support(
                    False,
                    f"refits of a {type(model).__name__} with {attr} are not supported (the "
                    "weights are not a column the formula can take again)",
                )
        return Support(True)

    def bootstrap_training(self, spec: dict[str, Any]) -> tuple[Any, int]:
        support = self.refit_support()
        if not support:
            # the delta method needs no refit: the weights are in the fitted covariance
            raise ModelError(f"bootstrap {support.reason}; use inference='delta'.")
        return self._bootstrap_data(spec)

    def _bootstrap_data(self, spec: dict[str, Any]) -> tuple[Any, int]:
        if not isinstance(spec.get("data"), pd.DataFrame):
            raise ParameterError("bootstrap of a statsmodels result needs {'data': <training DataFrame>}.")
        return spec["data"], len(spec["data"])

    def refit(self, train: Any, idx: np.ndarray) -> Any:
        from statsmodels.discrete.discrete_model import DiscreteModel
        from statsmodels.genmod.generalized_linear_model import GLM

        model = self.model.model
        kw = {"family": model.family} if isinstance(model, GLM) else {}
        fitted = type(model).from_formula(model.formula, data=train.iloc[idx].reset_index(drop=True), **kw)
        return fitted.fit(disp=0) if isinstance(fitted, DiscreteModel) else fitted.fit()


def _with_column(frame: pd.DataFrame, col: str, values: Any) -> pd.DataFrame:
    """A shallow copy of ``frame`` with ``col`` set (the caller's frame is never modified)."""
    out = frame.copy(deep=False)
    out[col] = values.to_numpy() if isinstance(values, pd.Series) else values
    return out
