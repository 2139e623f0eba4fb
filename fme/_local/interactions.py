"""Interactions of two steps in memory: the per-row second difference of the prediction (the Dask mirror:
:mod:`fme._dask.interactions`).

I(x) = f(x + h_a + h_b) - f(x + h_a) - f(x + h_b) + f(x) = fME_b(x + h_a) - fME_b(x) (paper §3.2 defines the
fME); four point sets predicted in one batched call, the average's uncertainty from :mod:`fme.inference`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters.predictor import make_predictor
from ..exceptions import DataError
from ..extrapolation.guards import call_detector, check_flags
from ..inference.estimates import sample_inference
from ..inference.methods import compute_rows
from ..steps import Step, apply_steps, stepped_rows

__all__ = ["interaction"]


def interaction(
    model: Any,
    data: pd.DataFrame,
    sa: tuple[Step, ...],
    sb: tuple[Step, ...],
    *,
    method: str,
    conf_level: float,
    tol: Any,
    target_class: Any,
    bootstrap: Any = None,
    detector: Any = None,
    reference: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The interaction's figures on the model's frame ``data`` (parsed steps ``sa``, ``sb``; ``detector``
    unfitted, fitted here on ``reference``): the average, its uncertainty (``estimates``, ``table``), the
    spread, the counts, the tolerance used and the share of rows above it, and the per-row values."""
    predictor = make_predictor(model, target_class)
    X = predictor.select(data)
    # rows whose stepped features are missing, or already at a categorical step's level, have no fME there
    keep = stepped_rows(data, (*sa, *sb))
    Xa, Xb = apply_steps(X, sa), apply_steps(X, sb)
    Xab = apply_steps(Xa, sb)
    if detector is not None:
        cols = list(X.columns)
        call_detector(detector, "fit", cast(pd.DataFrame, reference)[cols], "fit(reference_data)")  # given with it
        for name, pts in (("x", X), ("x + h_a", Xa), ("x + h_b", Xb), ("x + h_a + h_b", Xab)):
            keep &= ~check_flags(call_detector(detector, "flag", pts[cols], f"flag({name})"), len(pts), detector)
    if not keep.any():
        raise DataError(
            "no row can be evaluated: every row has a missing stepped value, is already at a "
            "categorical step's level or is an extrapolation point; check the steps."
        )
    rows = np.flatnonzero(keep)
    X, Xa, Xb, Xab = (frame.iloc[rows] for frame in (X, Xa, Xb, Xab))
    n = rows.size
    f = predictor(
        pd.concat([X, Xa, Xb, Xab], ignore_index=True), stage="f(x), f(x + h_a), f(x + h_b), f(x + h_a + h_b)"
    )
    f0, fa, fb, fab = f[:n], f[n : 2 * n], f[2 * n : 3 * n], f[3 * n :]
    values = fab - fa - fb + f0
    if method == "sample":
        inf = sample_inference(values)
    else:
        # both fMEs of b from the same parameters / the same refits: their difference keeps its uncertainty
        at_a, at_x = compute_rows(
            method, model, [(Xa, Xab), (X, Xb)], [fab - fa, fb - f0], bootstrap=bootstrap, target_class=target_class
        )
        if method == "delta":
            inf = replace(
                at_a, values=values, jacobian=cast(np.ndarray, at_a.jacobian) - cast(np.ndarray, at_x.jacobian)
            )  # delta: set
        else:
            inf = replace(at_a, values=values, draws=np.asarray(at_a.draws) - np.asarray(at_x.draws))
    est = inf.average()
    scale = float(np.max(np.abs(f))) if f.size else 0.0
    tol_used = 1e-8 * scale if tol is None else float(tol)
    return {
        "estimate": float(values.mean()),
        "estimates": est,
        "table": est.records(conf_level)[0],
        "sd": float(values.std(ddof=1)) if n > 1 else np.nan,
        "n": int(n),
        "tol": tol_used,
        "share_above_tol": float(np.mean(np.abs(values) > tol_used)),
        "n_rows": len(data),
        "values": pd.Series(values, index=data.index[rows], name="interaction"),
    }
