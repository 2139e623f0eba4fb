"""The whole model before the configured effects: a ranked AME of every feature, a feature dictionary,
the model's fit on test data (regression or, for classifiers, probability-scale metrics), and the
covariance its delta-method intervals use (:func:`dispersion_scaled`: an overdispersed Poisson or binomial
GLM's covariance times its Pearson dispersion).

Run inside the analysis notebook; returns JSON-ready dicts for ``results.json``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

import fme

from ..._utils.validation import is_categorical
from ...effects import feature_sd
from ...models import auxiliary_inputs, dispersion_scaled_copy, formula_categoricals, glm_dispersion, scaled_dispersion
from ..inputs.config import ReportConfig, config_error
from ..inputs.specs import FLAG_DEFAULTS, bootstrap_kwargs, dispersion_covariance, make_detector, scales_dispersion

__all__ = [
    "model_features",
    "feature_dictionary",
    "feature_overview",
    "model_fit",
    "glm_dispersion",
    "dispersion_scaled",
    "dispersion_threshold",
]


def dispersion_threshold(cfg: ReportConfig) -> float:
    """The config's ``flags.dispersion`` (its default when the config object carries no flags)."""
    return float((cfg.flags or {}).get("dispersion", FLAG_DEFAULTS["dispersion"]))


def dispersion_scaled(model: Any, threshold: float) -> tuple[Any, str | None]:
    """The model whose delta-method intervals the report computes, and the name of their covariance.

    A statsmodels Poisson or binomial model (GLM, or discrete Poisson/Logit/Probit) with the non-robust
    covariance assumes a dispersion of 1. When its Pearson dispersion phi = chi2 / df_resid
    (:func:`glm_dispersion`) exceeds ``threshold`` (the config's ``flags.dispersion``), the report uses the
    quasi-likelihood covariance phi V, the covariance statsmodels' GLM ``fit(scale='X2')`` states for the same
    parameters: every delta-method standard error is sqrt(phi) times the model's (sqrt(g' phi V g)), so every
    interval, direction word, contract, change-log comparison and cAME interval that reads it agrees with the
    overdispersion the report warns of.

    Returns
    -------
    (model, covariance)
        A copy of the results object with that covariance (parameters and predictions unchanged; the
        caller's object is not modified) and its name (``"Pearson dispersion 13.48"``), or the model itself
        and None when nothing is scaled. A copy made here is returned as it is.
    """
    if scaled_dispersion(model) is not None:  # the report's own copy, scaled already
        return model, dispersion_covariance({"dispersion": scaled_dispersion(model)})
    d = glm_dispersion(model)
    if not scales_dispersion(d, threshold):
        return model, None
    return dispersion_scaled_copy(model, d["dispersion"]), dispersion_covariance(d)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def prediction_columns(model: Any, columns: list[str]) -> list[dict[str, str]]:
    """The columns of the data that every prediction reads beside the model's features, with their role
    (:func:`fme.models.auxiliary_inputs`): each row's value enters its prediction as observed, so such a column
    is no feature to step and the report says how it is used."""
    return [{"column": c, "role": r} for c, r in auxiliary_inputs(model, columns).items()]


def model_features(model: Any, features: pd.DataFrame) -> list[str]:
    """The model's inputs (``feature_names_in_`` when it records them), else every column of ``features``."""
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return [str(c) for c in features.columns]
    return [str(c) for c in names if str(c) in set(map(str, features.columns))]


def feature_dictionary(model: Any, features: pd.DataFrame, cfg: ReportConfig) -> list[dict]:
    """One row per model feature: type, unit, description, observed range or levels, SD (data)."""
    from ..._utils.validation import is_dask_collection

    if is_dask_collection(features):
        return _dask_dictionary(model, features, cfg)
    rows = []
    coded = formula_categoricals(model)
    for f in model_features(model, features):
        col = features[f]
        row: dict[str, Any] = {
            "feature": f,
            "unit": cfg.units.get(f, ""),
            "description": cfg.descriptions.get(f, ""),
            "n_missing": int(col.isna().sum()),
        }
        if is_categorical(col) or f in coded:
            row.update(_categorical_entry(f, col.dropna().unique(), coded))
        else:
            v = col.to_numpy(dtype=float)
            v = v[np.isfinite(v)]
            row.update(
                type="numeric",
                min=_num(v.min()) if v.size else None,
                max=_num(v.max()) if v.size else None,
                sd=_num(v.std(ddof=1)) if v.size > 1 else None,
            )
        rows.append(row)
    return rows


def _categorical_entry(feature: str, values: Any, coded: dict[str, str]) -> dict[str, Any]:
    """The dictionary cells of a categorical feature, the same in both engines: its levels in one order (by
    type, then value: 2 before 10) and, for a ``C()`` column, the formula's encoding and reference level."""
    levels = [str(x) for x in sorted(values, key=lambda x: (str(type(x)), x))]
    out: dict[str, Any] = {"type": "categorical", "levels": levels}
    if feature in coded:
        out["encoding"] = f"{coded[feature]}, reference level {levels[0]}" if levels else coded[feature]
    return out


def _dask_dictionary(model: Any, features: Any, cfg: ReportConfig) -> list[dict]:
    """:func:`feature_dictionary` of a Dask frame: counts, min/max and SD by reductions over all rows."""
    import dask

    from .checks import levels_of

    names = model_features(model, features)
    coded = formula_categoricals(model)
    numeric = [f for f in names if not is_categorical(features[f]) and f not in coded]
    num = features[numeric].astype(float)
    finite = num.where(num.abs() < np.inf)  # the pandas dictionary drops infinite values, like NaN
    # SD from merged moments (Chan et al.), not Dask's sum-of-squares variance: no cancellation at large means
    spread = feature_sd(features, numeric)
    missing, lo, hi = dask.compute(features[names].isna().sum(), finite.min(), finite.max())
    count = dict(zip(numeric, spread["n"]))
    sd = dict(zip(numeric, spread["sd"]))
    rows = []
    for f in names:
        row: dict[str, Any] = {
            "feature": f,
            "unit": cfg.units.get(f, ""),
            "description": cfg.descriptions.get(f, ""),
            "n_missing": int(missing[f]),
        }
        if f not in numeric:
            row.update(_categorical_entry(f, levels_of(features, f), coded))
        else:
            k = int(count[f])
            row.update(
                type="numeric",
                min=_num(lo[f]) if k else None,
                max=_num(hi[f]) if k else None,
                sd=_num(sd[f]) if k > 1 else None,
            )
        rows.append(row)
    return rows


def _level(features: pd.DataFrame, feature: str, level: Any) -> Any:
    """The data's own level for the ``level`` cell of ``fme.ame`` (a float column when mixed with NaN)."""
    if level is None or (isinstance(level, float) and math.isnan(level)):
        return None
    from ..._utils.validation import is_dask_collection
    from .checks import levels_of

    values = levels_of(features, feature) if is_dask_collection(features) else pd.unique(features[feature].dropna())
    for u in values:
        if u == level or str(u) == str(level):
            return u.item() if hasattr(u, "item") else u
    return level.item() if hasattr(level, "item") else level


def _rows(table: pd.DataFrame, conf_level: float, features: pd.DataFrame) -> list[dict]:
    out = []
    for _, r in table.iterrows():  # one row per feature (or level): a handful
        level = _level(features, str(r["feature"]), r.get("level"))
        out.append(
            {
                "feature": str(r["feature"]),
                "step": _num(r.get("step")) if pd.notna(r.get("step")) else None,
                "level": level,
                "ame": _num(r["ame"]),
                "std_error": _num(r["std_error"]),
                "conf_low": _num(r["conf_low"]),
                "conf_high": _num(r["conf_high"]),
                "inference": str(r["inference"]),
                "n": int(r["n"]),
                "n_excluded": int(r["n_excluded"]),
                "conf_level": conf_level,
                "error": None,
            }
        )
    return out


def feature_overview(
    model: Any,
    features: pd.DataFrame,
    reference: pd.DataFrame,
    cfg: ReportConfig,
    target_class: Any,
    train: pd.DataFrame | None = None,
) -> dict | None:
    """AME of every model feature for one unit or SD step (categorical: each level), ranked by |AME|.

    Uses ``fme.ame`` once for all features (one bootstrap run shared by all of them); a feature
    whose AME cannot be computed (e.g. every step leaves the data) is kept in the table with the
    reason instead of its numbers. ``cfg.overview`` gives the step and the detector.
    """
    spec = cfg.overview
    if spec is False:
        return None
    model, covariance = dispersion_scaled(model, dispersion_threshold(cfg))
    aux = prediction_columns(model, [str(c) for c in features.columns])
    # an exposure or offset column enters every prediction as observed: it is not stepped
    names = [f for f in model_features(model, features) if f not in {a["column"] for a in aux}]
    # C() columns of a statsmodels formula are categorical in the model: switch them to each level
    coded = [f for f in formula_categoricals(model) if f in names and not is_categorical(features[f])]
    if coded and not hasattr(features, "npartitions"):
        features = features.assign(**{f: features[f].astype("category") for f in coded})
        reference = reference.assign(**{f: reference[f].astype("category") for f in coded if f in reference})
    steps = {f: (None if is_categorical(features[f]) else ("sd" if spec["step"] == "sd" else 1)) for f in names}
    conf = float(cfg.conf_level)
    seed = int(cfg.seed)
    inference = bootstrap_kwargs(cfg.inference, train, cfg.target, seed)
    det = spec["extrapolation"]

    def run(sub: dict) -> pd.DataFrame:
        kw: dict[str, Any] = {"reference_data": reference, "random_state": seed, "target_class": target_class}
        if det["method"] != "none":
            kw.update(extrapolation=make_detector(det, seed))
        table = fme.ame(model, features, sub, conf_level=conf, **inference, **kw)
        if covariance is not None:  # the delta rows computed with the scaled covariance say so
            table["inference"] = table["inference"].where(table["inference"] != "delta", f"delta ({covariance})")
        return table

    try:
        rows = _rows(run(steps), conf, features)
    except fme.FMEError:  # one feature fails (e.g. all rows extrapolate): compute the others one by one
        rows = []
        for f, h in steps.items():
            try:
                rows.extend(_rows(run({f: h}), conf, features))
            except fme.FMEError as exc:
                rows.append(
                    {
                        "feature": f,
                        "step": None,
                        "level": None,
                        "ame": None,
                        "std_error": None,
                        "conf_low": None,
                        "conf_high": None,
                        "inference": None,
                        "n": 0,
                        "n_excluded": None,
                        "conf_level": conf,
                        "error": " ".join(str(exc).split()),
                    }
                )
    except Exception as exc:  # noqa: BLE001 - model failures: one line naming the overview key
        from ..inputs.validate import analysis_error

        raise analysis_error(cfg, ("overview",), exc) from exc
    rows.sort(key=lambda r: (r["ame"] is None, -abs(r["ame"] or 0.0), r["feature"]))
    return {"step": spec["step"], "detector": det, "rows": rows, "prediction_columns": aux}


def _class_codes(y: pd.Series, classes: list) -> np.ndarray:
    """Position of each label in ``classes`` (-1 when unknown); labels match by value, then by text."""
    by_value = {c: k for k, c in enumerate(classes)}
    by_text = {str(c): k for k, c in enumerate(classes)}
    labels = pd.Series(y.to_numpy(dtype=object))
    codes = labels.map(by_value)
    miss = codes.isna().to_numpy()
    codes[miss] = labels[miss].astype(str).map(by_text)
    return codes.fillna(-1).to_numpy(dtype=int)


def model_fit(
    model: Any, test: pd.DataFrame | None, target: str, target_class: Any = None, cfg: ReportConfig | None = None
) -> dict | None:
    """Fit on configured test data (None without test data or without the target column).

    Regressors: RMSE and R². Classifiers (``target_class`` given): on the probability scale, the
    AUC of ``target_class`` against the rest, the Brier score of its probability and the log loss
    of all classes (``sklearn.metrics``); labels may be strings or numbers and are matched to
    ``classes_``. An unknown label is a ConfigError at ``test_data``.
    """
    if test is None or target not in test.columns:
        return None
    X = test.drop(columns=target)
    if target_class is None:
        y = test[target].to_numpy(dtype=float)
        pred = np.asarray(model.predict(X), dtype=float)
        rmse = float(np.sqrt(np.mean((y - pred) ** 2)))
        r2 = float(1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))
        return {"kind": "regression", "n": int(len(y)), "rmse": rmse, "r2": r2}
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    classes = list(np.asarray(model.classes_).tolist())
    codes = _class_codes(test[target], classes)
    if (codes < 0).any():
        bad = test[target].iloc[int(np.flatnonzero(codes < 0)[0])]
        msg = (
            f"test label {bad!r} in column {target!r} is not a class of the model; its classes are "
            f"{', '.join(map(repr, classes))}"
        )
        if cfg is None:
            raise ValueError(msg)
        raise config_error(cfg, ("test_data",), msg)
    k = next(i for i, c in enumerate(classes) if c == target_class or str(c) == str(target_class))
    proba = np.asarray(model.predict_proba(X), dtype=float)
    y_bin = (codes == k).astype(int)
    auc = float(roc_auc_score(y_bin, proba[:, k])) if 0 < y_bin.sum() < len(y_bin) else None
    return {
        "kind": "classification",
        "n": int(len(codes)),
        "target_class": target_class,
        "n_classes": len(classes),
        "n_target": int(y_bin.sum()),
        "auc": auc,
        "brier": float(brier_score_loss(y_bin, proba[:, k])),
        "log_loss": float(log_loss(codes, proba, labels=list(range(len(classes))))),
    }
