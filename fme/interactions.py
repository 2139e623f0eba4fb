"""Interactions of two steps: the per-row second difference of the prediction (issue 27 item 3).

For steps ``a`` and ``b`` (each one or several features, numeric or categorical, as in :func:`fme.fme`)

    I(x) = f(x + h_a + h_b) - f(x + h_a) - f(x + h_b) + f(x) = fME_b(x + h_a) - fME_b(x),

the change of b's forward marginal effect (paper §3.2) when a moves too: zero for every row of a model
additive in the two, so it is the finite-difference analogue of a cross partial. Its average over the
rows gets the uncertainty of :mod:`fme.inference` (delta: the difference of the two fMEs' Jacobian rows;
bootstrap: the same refits for both fMEs; sample: the spread over the rows with the model held fixed),
and ``share_above_tol`` says how many rows interact by more than ``tol``. Four point sets are predicted
in one batched call; no row is predicted on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ._adapters import model_frame
from ._utils.guards import call_detector, check_flags
from ._utils.validation import check_conf_level, check_data, is_dask_collection
from .exceptions import DataError, ParameterError, StepError
from .extrapolation import make_detector
from .inference._estimates import INFERENCE_COLUMNS, sample_inference
from .inference._methods import compute_rows, resolve_method
from .inference.table import EstimatesTable
from .predictors import make_predictor
from .steps import apply_steps, parse_steps, stepped_rows
from ._dask.interactions import interaction_dask

__all__ = ["interaction"]


def _has_rules(*specs: Mapping[str, Any]) -> bool:
    """Whether a step is a rule such as 'sd' (resolved from the reference rows, here the first rows)."""
    return any(isinstance(v, str) for spec in specs for v in dict(spec).values())


def _vcov_of(model: Any) -> np.ndarray:
    """The parameter covariance of a model that supports the delta method."""
    if callable(getattr(model, "cov_params", None)):
        return np.asarray(model.cov_params(), dtype=float)
    return np.asarray(model.get_vcov(), dtype=float)


def interaction(model: Any, data: pd.DataFrame, steps_a: Mapping[str, Any], steps_b: Mapping[str, Any], *,
                inference: str = "auto", bootstrap: Mapping[str, Any] | None = None, conf_level: float = 0.95,
                tol: float | None = None, target_class: Any = None, extrapolation: Any = None,
                reference_data: pd.DataFrame | None = None, random_state: Any = None) -> pd.DataFrame:
    """The average interaction of two steps, with its uncertainty (see the module docstring).

    Parameters
    ----------
    model, data, target_class, inference, bootstrap, conf_level, extrapolation, reference_data, random_state :
        As in :func:`fme.fme`. With a detector, a row is left out when any of x, x + h_a, x + h_b and
        x + h_a + h_b is an extrapolation point.
    steps_a, steps_b : dict
        Two step specifications on disjoint features.
    tol : float, optional
        Rows with |I(x)| > ``tol`` count in ``share_above_tol`` (default: 1e-8 times the largest |f|).

    Returns
    -------
    EstimatesTable
        One row: ``steps_a``, ``steps_b``, ``estimate`` (the average interaction), ``std_error``,
        ``statistic``, ``p_value``, ``conf_low``, ``conf_high``, ``inference``, ``sd``, ``n``,
        ``n_excluded``, ``tol``, ``share_above_tol``. ``attrs["values"]``: the per-row interactions
        (indexed like ``data``); the frame works with :func:`fme.hypotheses` (e.g. ``equivalence=``).
    """
    on_dask = is_dask_collection(data)
    if not on_dask:
        check_data(data)
    data = model_frame(model, data._meta if on_dask else data) if not on_dask else data
    conf_level = check_conf_level(conf_level)
    predictor = make_predictor(model, target_class)
    if predictor.output_names is not None:
        raise ParameterError("fme.interaction works on one output; pass one class (target_class=<label>).")
    method = resolve_method(inference, model, bootstrap)
    if on_dask:
        if method == "bootstrap" or extrapolation is not None:
            raise ParameterError("fme.interaction on Dask data takes inference='delta' or 'sample' without a "
                                 "detector; compute bootstrap or extrapolation checks on a pandas sample.")
        if _has_rules(steps_a, steps_b):
            raise ParameterError("step rules such as 'sd' need all rows; on Dask data give numeric steps (e.g. the "
                                 "SD computed with data[feature].std().compute()) or levels.")
        probe = model_frame(model, data.head(1000, npartitions=min(data.npartitions, 8)))
        sa = parse_steps(probe, steps_a)
        sb = parse_steps(probe, steps_b)
        shared = sorted({s.feature for s in sa} & {s.feature for s in sb})
        if shared:
            raise StepError(f"steps_a and steps_b share the feature(s) {shared}; an interaction needs two steps "
                            "on different features.")
        vcov = _vcov_of(model) if method == "delta" else None
        got = interaction_dask(model, data, sa, sb, method=method, conf_level=conf_level, tol=tol,
                               target_class=target_class, vcov=vcov)
        t = got["table"]
        out = pd.DataFrame([{"steps_a": ", ".join(s.describe() for s in sa),
                             "steps_b": ", ".join(s.describe() for s in sb), "estimate": got["estimate"],
                             **{c: t[c] for c in INFERENCE_COLUMNS}, "sd": got["sd"], "n": got["n"],
                             "n_excluded": got["n_rows"] - got["n"], "tol": got["tol"],
                             "share_above_tol": got["share_above_tol"]}])
        return EstimatesTable.from_frame(out, got["est"], conf_level=conf_level)
    reference = data if reference_data is None else model_frame(model, check_data(reference_data, "reference_data"))
    sa = parse_steps(data, steps_a, rule_data=reference)
    sb = parse_steps(data, steps_b, rule_data=reference)
    shared = sorted({s.feature for s in sa} & {s.feature for s in sb})
    if shared:
        raise StepError(f"steps_a and steps_b share the feature(s) {shared}; an interaction needs two steps on "
                        "different features.")
    if tol is not None and (isinstance(tol, bool) or not np.isfinite(tol) or tol < 0):
        raise ParameterError(f"tol must be a non-negative number, got {tol!r}.")
    X = predictor.select(data)
    # rows whose stepped features are missing, or already at a categorical step's level, have no fME there
    keep = stepped_rows(data, (*sa, *sb))
    Xa, Xb = apply_steps(X, sa), apply_steps(X, sb)
    Xab = apply_steps(Xa, sb)
    if extrapolation is not None:
        detector = make_detector(extrapolation, random_state)
        cols = list(X.columns)
        call_detector(detector, "fit", reference[cols], "fit(reference_data)")
        for name, pts in (("x", X), ("x + h_a", Xa), ("x + h_b", Xb), ("x + h_a + h_b", Xab)):
            keep &= ~check_flags(call_detector(detector, "flag", pts[cols], f"flag({name})"), len(pts), detector)
    if not keep.any():
        raise DataError("no row can be evaluated: every row has a missing stepped value, is already at a "
                        "categorical step's level or is an extrapolation point; check the steps.")
    rows = np.flatnonzero(keep)
    X, Xa, Xb, Xab = (frame.iloc[rows] for frame in (X, Xa, Xb, Xab))
    n = rows.size
    f = predictor(pd.concat([X, Xa, Xb, Xab], ignore_index=True), stage="f(x), f(x + h_a), f(x + h_b), f(x + h_a + h_b)")
    f0, fa, fb, fab = f[:n], f[n:2 * n], f[2 * n:3 * n], f[3 * n:]
    values = fab - fa - fb + f0
    if method == "sample":
        inf = sample_inference(values)
    else:
        # both fMEs of b from the same parameters / the same refits: their difference keeps its uncertainty
        at_a, at_x = compute_rows(method, model, [(Xa, Xab), (X, Xb)], [fab - fa, fb - f0],
                                  bootstrap=bootstrap, target_class=target_class)
        if method == "delta":
            inf = replace(at_a, values=values, jacobian=at_a.jacobian - at_x.jacobian)
        else:
            inf = replace(at_a, values=values, draws=np.asarray(at_a.draws) - np.asarray(at_x.draws))
    est = inf.average()
    table = est.table(conf_level).iloc[0].to_dict()
    scale = float(np.max(np.abs(f))) if f.size else 0.0
    tol_used = 1e-8 * scale if tol is None else float(tol)
    out = pd.DataFrame([{"steps_a": ", ".join(s.describe() for s in sa),
                         "steps_b": ", ".join(s.describe() for s in sb), "estimate": float(values.mean()),
                         **{c: table[c] for c in INFERENCE_COLUMNS},
                         "sd": float(values.std(ddof=1)) if n > 1 else np.nan, "n": int(n),
                         "n_excluded": int(len(data) - n), "tol": tol_used,
                         "share_above_tol": float(np.mean(np.abs(values) > tol_used))}])
    out.attrs["values"] = pd.Series(values, index=data.index[rows], name="interaction")
    return EstimatesTable.from_frame(out, est, conf_level=conf_level)
