"""Per-effect details for the report computed from an :class:`fme.FMEResult` (JSON-ready dicts).

* :func:`model_interval`: the AME's interval under the inference method actually used
  (delta method or bootstrap refits: model uncertainty; ``sample``: none beyond the fixed-model CI);
* :func:`interval_fields`: both intervals labelled, and the primary one (the interval the report shows)
  under ``conf_low``/``conf_high`` beside ``inference``; :func:`label_intervals` labels the effect's other
  intervals (with extrapolation points, step sizes, cAME leaves) with what they cover;
* :func:`extrapolation_causes`: which features put the flagged point (x or x + h) outside the
  reference data, so the report says where extrapolation points are *because of what*;
* :func:`effective_steps`: the distribution of the per-row steps under ``on_extrapolation='shrink'``
  (the same quantiles as :meth:`fme.FMEResult.summary`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..._utils.validation import is_categorical
from ..inputs.specs import CI_COVERS

__all__ = [
    "model_interval",
    "interval_records",
    "interval_fields",
    "label_intervals",
    "relabel_table",
    "extrapolation_causes",
    "effective_steps",
]


def _finite(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def model_interval(res: Any, conf_level: float) -> dict[str, Any]:
    """``{"inference": method, "model_ci": {...} or None}`` for one effect result (either engine).

    ``model_ci`` (std_error, p_value, conf_low, conf_high, and for bootstrap n_resamples/n_failed) is
    given only for a model-uncertainty method (delta, bootstrap); ``sample`` is the paper's
    fixed-model interval, already in ``ci_low``/``ci_high`` of the effect.
    """
    method = res.inference
    if method == "sample" or res.n < 2:
        return {"inference": method, "model_ci": None}
    lo, hi = res.conf_int(conf_level)
    out = {
        "std_error": _finite(res.std_error),
        "p_value": _finite(res.p_value),
        "conf_low": _finite(lo),
        "conf_high": _finite(hi),
        "conf_level": float(conf_level),
    }
    boot = res.bootstrap_figures() if method == "bootstrap" else None
    if boot is not None:
        out.update(boot)
    return {"inference": method, "model_ci": out}


def _covers(method: str, covariance: str | None) -> str:
    if covariance is None or method != "delta":
        return CI_COVERS[method]
    return (
        f"{CI_COVERS['delta']} scaled by its {covariance} (quasi-likelihood: the model's own covariance "
        "assumes a dispersion of 1)"
    )


def interval_records(summary: dict) -> list[dict[str, Any]]:
    """Both intervals of an effect's AME, each labelled by what it covers, the report's primary one first.

    Rows in the contract's names (``inference``, ``covers``, ``primary``, ``estimate``, ``std_error``,
    ``conf_low``, ``conf_high``, ``conf_level``): the model-uncertainty interval (delta method,
    bootstrap) when it was computed, which is then the primary one (the interval the report shows, its
    sentences, flags and plausibility check use), and the fixed-model interval over the rows
    (``inference: sample``; the effect's ``ci_low``/``ci_high``). ``tables/<effect>-ame.csv``, results.json
    (``intervals``) and the change log carry these rows, so a file never shows one interval beside the
    label of the other. A delta-method interval computed with a scaled covariance (``model_ci.covariance``,
    :func:`fme.report.analysis.model_view.dispersion_scaled`) is labelled ``delta (<covariance>)``.
    """
    rows = []
    mc = summary.get("model_ci")
    conf = summary.get("conf_level")
    if mc and mc.get("conf_low") is not None:
        method = summary["inference"]
        covariance = mc.get("covariance") if method == "delta" else None
        rows.append(
            {
                "inference": method if covariance is None else f"{method} ({covariance})",
                "covers": _covers(method, covariance),
                "primary": True,
                "estimate": summary["ame"],
                "std_error": mc.get("std_error"),
                "conf_low": mc["conf_low"],
                "conf_high": mc["conf_high"],
                "conf_level": mc.get("conf_level", conf),
            }
        )
    rows.append(
        {
            "inference": "sample",
            "covers": CI_COVERS["sample"],
            "primary": not rows,
            "estimate": summary["ame"],
            "std_error": summary.get("se"),
            "conf_low": summary.get("ci_low"),
            "conf_high": summary.get("ci_high"),
            "conf_level": conf,
        }
    )
    return rows


def interval_fields(summary: dict, covariance: str | None = None) -> dict[str, Any]:
    """The interval fields of an effect's summary in ``results.json`` (update the summary with them).

    ``intervals`` (:func:`interval_records`); the primary interval, the one the report shows, under
    ``conf_low``/``conf_high``/``std_error`` with ``covers`` beside ``inference`` and ``covariance`` (the
    name of a scaled covariance of the delta method, else None); the fixed-model interval keeps
    ``ci_low``/``ci_high``/``se``, labelled by ``ci_inference: sample`` and ``ci_covers``. With
    ``covariance`` (the model's delta-method intervals were computed with that covariance) ``model_ci`` and
    the labels say so.
    """
    if covariance is not None and summary.get("inference") == "delta" and summary.get("model_ci"):
        summary = {**summary, "model_ci": {**summary["model_ci"], "covariance": covariance}}
    records = interval_records(summary)
    first = records[0]
    mc = summary.get("model_ci")
    return {
        "model_ci": mc,
        "intervals": records,
        "conf_low": first["conf_low"],
        "conf_high": first["conf_high"],
        "std_error": first["std_error"],
        "covers": first["covers"],
        "covariance": (mc or {}).get("covariance") if first["primary"] and first["inference"] != "sample" else None,
        "ci_inference": "sample",
        "ci_covers": CI_COVERS["sample"],
    }


def _scaled(label: Any, covariance: str | None) -> Any:
    return f"delta ({covariance})" if covariance is not None and label == "delta" else label


def label_intervals(summary: dict, covariance: str | None = None) -> None:
    """Label every interval of an effect's finished summary with what it covers (in place).

    With ``covariance`` (the delta-method intervals were computed with the model's covariance scaled by its
    dispersion, :func:`fme.report.analysis.model_view.dispersion_scaled`) the AME's intervals
    (:func:`interval_fields`), each cAME leaf's and the leaf tests' ``inference`` read ``delta (<covariance>)``.
    The fixed-model intervals of the AME with extrapolation points kept (``with_eps``) and at other step sizes
    (``sensitivity``) get ``ci_inference: sample`` and ``ci_covers``.
    """
    if covariance is not None:
        summary.update(interval_fields(summary, covariance))
        part = summary.get("partition")
        if part:
            for leaf in [part.get("root") or {}, part.get("estimation_root") or {}, *part.get("leaves", [])]:
                if leaf.get("inference") == "delta":
                    leaf["inference"] = _scaled("delta", covariance)
                    leaf["covers"] = _covers("delta", covariance)
            if isinstance(part.get("tests"), dict):
                part["tests"]["inference"] = _scaled(part["tests"].get("inference"), covariance)
    fixed = {"ci_inference": "sample", "ci_covers": CI_COVERS["sample"]}
    for row in [summary.get("with_eps") or {}, *(summary.get("sensitivity") or [])]:
        if "ci_low" in row:
            row.update(fixed)


def relabel_table(frame: pd.DataFrame, covariance: str | None) -> pd.DataFrame:
    """A table's ``inference``/``covers`` columns as :func:`label_intervals` labels them (a copy when changed)."""
    if covariance is None or "inference" not in frame.columns:
        return frame
    delta = frame["inference"] == "delta"
    if not delta.any():
        return frame
    out = frame.assign(inference=frame["inference"].where(~delta, _scaled("delta", covariance)))
    if "covers" in out.columns:
        out["covers"] = out["covers"].where(~delta, _covers("delta", covariance))
    return out


def _flagged(res: Any) -> tuple[pd.Index, np.ndarray]:
    if res.on_extrapolation == "keep":
        mask = res.results["extrapolation"].to_numpy(dtype=bool)
        return res.results.index[mask], res.results["extrapolation_point"].to_numpy(dtype=str)[mask]
    ex = res.extrapolated
    return ex.index, ex["point"].to_numpy(dtype=str)


def _outside(frame: pd.DataFrame, reference: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """(n, len(cols)) bool: value outside the reference's [min, max] or a level the reference lacks."""
    out = np.zeros((len(frame), len(cols)), dtype=bool)
    for j, c in enumerate(cols):
        ref = reference[c]
        if is_categorical(ref) or is_categorical(frame[c]):
            seen = set(map(str, ref.dropna().unique()))
            out[:, j] = ~frame[c].astype(str).isin(seen).to_numpy()
        else:
            r = ref.to_numpy(dtype=float)
            r = r[np.isfinite(r)]
            v = frame[c].to_numpy(dtype=float)
            out[:, j] = (v < r.min()) | (v > r.max()) if r.size else False
    return out


def extrapolation_causes(res: Any, data: pd.DataFrame, reference: pd.DataFrame, top: int = 3) -> list[dict]:
    """Where the extrapolation points are, by the features that caused them (JSON-ready rows).

    For each flagged row, the flagged point (x, x + h or both; x + h with the nominal step) is
    compared with the reference data feature by feature. A feature outside the reference's
    [min, max] (or with an unseen level) is a *cause*; one row per cause feature gives the number
    of extrapolation points it caused and the range of their *observed* values of that feature
    (``kind='outside range'``). Points flagged although every feature is within its range (the
    detector judged the combination: hull, MCEC, CERT, isolation forest, LOF) are summarised by
    the ``top`` features whose standardised mean differs most between them and the evaluated rows
    (``kind='joint'``; ``smd`` the standardised mean difference).
    """
    idx, which = _flagged(res)
    if len(idx) == 0:
        return []
    cols = [c for c in reference.columns if c in data.columns]
    X = data.loc[idx, cols]
    moved = X.copy()
    for st in res.steps:
        if st.feature in moved.columns:
            moved[st.feature] = moved[st.feature].astype(float) + float(st.value) if st.is_numeric else st.value
    at_x = np.char.find(which.astype(str), "x+h") < 0  # "x" alone
    both = np.char.find(which.astype(str), "x and") >= 0
    out_x, out_xh = _outside(X, reference, cols), _outside(moved, reference, cols)
    cause = np.where((at_x | both)[:, None], out_x, False) | np.where((~at_x)[:, None], out_xh, False)
    rows: list[dict] = []
    order = np.argsort(-cause.sum(axis=0), kind="stable")
    for j in order:
        hit = cause[:, j]
        if not hit.any():
            continue
        c = cols[j]
        row: dict[str, Any] = {"feature": c, "kind": "outside range", "n": int(hit.sum())}
        if not is_categorical(data[c]):
            v = X[c].to_numpy(dtype=float)[hit]
            row.update(min=float(np.nanmin(v)), max=float(np.nanmax(v)))
        rows.append(row)
    joint = ~cause.any(axis=1)
    if joint.any():
        evaluated = data.loc[res.results.index, cols]
        cands = []
        for c in cols:
            if is_categorical(data[c]):
                continue
            ep = X[c].to_numpy(dtype=float)[joint]
            ev = evaluated[c].to_numpy(dtype=float)
            sd = float(np.nanstd(data[c].to_numpy(dtype=float), ddof=1)) if len(data) > 1 else 0.0
            if sd > 0 and ev.size:
                cands.append((abs(np.nanmean(ep) - np.nanmean(ev)) / sd, c, ep))
        cands.sort(key=lambda t: -t[0])
        for smd, c, ep in cands[:top]:
            rows.append(
                {
                    "feature": c,
                    "kind": "joint",
                    "n": int(joint.sum()),
                    "smd": float(smd),
                    "min": float(np.nanmin(ep)),
                    "max": float(np.nanmax(ep)),
                }
            )
        if not cands:
            rows.append({"feature": None, "kind": "joint", "n": int(joint.sum())})
    return rows


def effective_steps(res: Any) -> list[dict]:
    """Per stepped feature: quantiles of the effective step as a share of h, and how many rows shrank."""
    from ...steps import MIN_STEP_FRACTION

    out = []
    for st in res.steps:
        col = f"step_{st.feature}"
        if col not in res.results.columns:
            continue
        share = res.results[col].to_numpy(dtype=float) / float(st.value)
        q = np.quantile(share, [0.0, 0.25, 0.5, 0.75, 1.0]) if share.size else np.full(5, np.nan)
        out.append(
            {
                "feature": st.feature,
                "h": float(st.value),
                "min": _finite(q[0]),
                "q25": _finite(q[1]),
                "median": _finite(q[2]),
                "q75": _finite(q[3]),
                "max": _finite(q[4]),
                "n_shrunk": int((share < 1).sum()),
                "n": int(share.size),
                "min_fraction": float(MIN_STEP_FRACTION),
            }
        )
    return out
