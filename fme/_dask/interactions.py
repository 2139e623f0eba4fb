"""fme.interaction on Dask data: the per-row second difference summed chunk by chunk.

Each chunk predicts its four point sets in one call and keeps, on its worker, the second differences; the
client merges per-chunk sums: the count, Chan's moments (:class:`~fme._core.summary.Moments`), the largest
|f| (the tolerance's scale) and, for the delta method, the sum of the second differences' Jacobian rows.
A second small round counts the rows above the tolerance. The figures equal the pandas path's to rounding.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters.predictor import make_predictor
from .._core.summary import Moments
from ..exceptions import DataError
from ..inference.estimates import Estimates
from ..inference.methods import compute_rows
from ..steps import Step, apply_steps, stepped_rows
from .common import as_dask, model_frames, require_dask

__all__ = ["interaction"]

_FAN_IN = 16


def _chunk(
    part: pd.DataFrame, model: Any, sa: tuple[Step, ...], sb: tuple[Step, ...], target_class: Any, with_jac: bool
) -> tuple[int, Moments | None, float, np.ndarray | None, np.ndarray]:
    """(rows, Moments, max |f|, Jacobian sum or None, the chunk's second differences)."""
    predictor = make_predictor(model, target_class)
    keep = stepped_rows(part, (*sa, *sb))
    X = predictor.select(part).iloc[np.flatnonzero(keep)]
    n = len(X)
    if n == 0:
        return 0, None, 0.0, None, np.empty(0)
    Xa, Xb = apply_steps(X, sa), apply_steps(X, sb)
    Xab = apply_steps(Xa, sb)
    f = predictor(pd.concat([X, Xa, Xb, Xab], ignore_index=True), stage="interaction points")
    f0, fa, fb, fab = f[:n], f[n : 2 * n], f[2 * n : 3 * n], f[3 * n :]
    v = fab - fa - fb + f0
    jac = None
    if with_jac:
        at_a, at_x = compute_rows("delta", model, [(Xa, Xab), (X, Xb)], [fab - fa, fb - f0], target_class=target_class)
        jac = (cast(np.ndarray, at_a.jacobian) - cast(np.ndarray, at_x.jacobian)).sum(axis=0)
    return n, Moments.of(v), float(np.max(np.abs(f))), jac, v


def _merge(*parts: tuple[Any, ...]) -> tuple[int, Moments | None, float, np.ndarray | None, None]:
    n, m, mx, jac = 0, None, 0.0, None
    for pn, pm, pmx, pj, _ in parts:
        if pn == 0:
            continue
        n, mx = n + pn, max(mx, pmx)
        m = pm if m is None else m.merge(pm)
        jac = pj if jac is None else (None if pj is None else jac + pj)
    return n, m, mx, jac, None


def _above(part: tuple[Any, ...], tol: float) -> int:
    return int(np.sum(np.abs(part[4]) > tol))


def _vcov_of(model: Any) -> np.ndarray:
    """The parameter covariance of a model that supports the delta method."""
    if callable(getattr(model, "cov_params", None)):
        return np.asarray(model.cov_params(), dtype=float)
    return np.asarray(model.get_vcov(), dtype=float)


def interaction(
    model: Any,
    data: Any,
    sa: tuple[Step, ...],
    sb: tuple[Step, ...],
    *,
    method: str,
    conf_level: float,
    tol: Any,
    target_class: Any,
    bootstrap: Any = None,
    detector: Any = None,
    reference: Any = None,
) -> dict[str, Any]:
    """The interaction's figures on Dask data, as :func:`fme._local.interactions.interaction` gives them in memory
    but for the per-row values; ``method`` is 'delta' or 'sample' (the front door refuses the bootstrap and a
    detector here: ``bootstrap``, ``detector`` and ``reference`` are None)."""
    from dask.base import compute, persist
    from dask.delayed import delayed

    cast(Any, require_dask)()  # require_dask is not annotated yet (fme._dask.common)
    data = model_frames(model, as_dask(data, "data"))
    with_jac = method == "delta"
    chunks = [delayed(_chunk)(p, model, sa, sb, target_class, with_jac) for p in data.to_delayed()]
    outs = list(persist(*chunks))  # type: ignore[no-untyped-call]  # dask's persist is untyped
    items = outs
    while len(items) > 1:
        items = [delayed(_merge)(*items[i : i + _FAN_IN]) for i in range(0, len(items), _FAN_IN)]
    n, m, mx, jac, _ = delayed(_merge)(*items).compute()
    if n == 0:
        raise DataError(
            "no row can be evaluated: every row has a missing stepped value or is already at a "
            "categorical step's level; check the steps."
        )
    mean = float(m.mean[0])
    sd = float(m.sd()[0]) if n > 1 else float("nan")
    if with_jac:
        est = Estimates("delta", np.array([mean]), grad=(jac / n)[None, :], vcov=_vcov_of(model))
    else:
        est = Estimates(
            "sample",
            np.array([mean]),
            se=np.array([sd / np.sqrt(n) if n > 1 else np.nan]),
            df=np.array([max(n - 1.0, 1.0)]),
        )
    tol_used = 1e-8 * mx if tol is None else float(tol)
    above = sum(compute(*[delayed(_above)(o, tol_used) for o in outs]))  # type: ignore[no-untyped-call]  # dask: untyped
    return {
        "estimate": mean,
        "estimates": est,
        "table": est.records(conf_level)[0],
        "sd": sd,
        "n": int(n),
        "tol": tol_used,
        "share_above_tol": above / n,
        "n_rows": int(data.shape[0].compute()),
        "values": None,
    }
