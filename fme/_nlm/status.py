"""The status of every NLM in one compiled pass: ``ok``, ``constant``, ``flat`` or ``inaccurate`` (paper §5.4).

:func:`fme._nlm.evaluate.classify` states the rules; this module applies them row by row, where NumPy took a
dozen passes over fresh arrays of every row (about 5 ms of the 10 ms a default NLM of 10^6 rows spent
classifying: benchmarks/README.md, "Seventh pass"). Every comparison is NumPy's (the same products, NaN
comparing false), so the statuses and NLMs are the same: tests/_nlm/test_status.py checks them against the
rules written in NumPy. The predictions' spread (the relative flat-path test's scale) is computed by NumPy,
beside the NLM's own work (:func:`prediction_spread`).
"""

from __future__ import annotations

import numpy as np

from .._utils.jit import njit

__all__ = ["CONSTANT", "FLAT", "INACCURATE", "NLM_STATUS", "OK", "prediction_spread", "statuses"]

#: Values of the ``nlm_status`` column.
NLM_STATUS = ("ok", "constant", "flat", "inaccurate")
#: The status codes: indices into :data:`NLM_STATUS`.
OK, CONSTANT, FLAT, INACCURATE = range(len(NLM_STATUS))


def prediction_spread(f0: np.ndarray, f1: np.ndarray) -> np.ndarray:
    """The SD of all predictions f(x) and f(x + h) (per output): the scale of the relative flat-path test."""
    with np.errstate(over="ignore", invalid="ignore"):  # |f| near float max: spread inf, nothing is flat
        return np.std(np.concatenate([f0, f1]), axis=0)


def statuses(
    nlm: np.ndarray,
    sd: np.ndarray,
    scale: np.ndarray | None,
    ulps: float,
    limit: np.ndarray | None,
    err: np.ndarray | None,
    tol: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(NLMs with flat paths NaN, int8 status codes), shaped like ``nlm`` (rows, or rows x outputs).

    A row is ``constant`` where its NLM is NaN; else ``flat`` where ``sd <= ulps * scale`` (``scale`` given) or
    ``sd <= limit`` (``limit``: one bound per output, given); else ``inaccurate`` where ``err`` is given and not
    ``<= tol``; else ``ok``."""
    shape = nlm.shape
    k = 1 if nlm.ndim == 1 else shape[1]

    def rows(a: np.ndarray | None) -> np.ndarray:
        if a is None:
            return np.empty((0, k))
        return np.ascontiguousarray(np.asarray(a, dtype=float).reshape(-1, k))

    bound = np.empty(0) if limit is None else np.ascontiguousarray(np.broadcast_to(limit, (k,)), dtype=float)
    out = np.empty((nlm.size // k if k else 0, k))
    status = np.empty(out.shape, dtype=np.int8)
    _statuses(rows(nlm), rows(sd), rows(scale), float(ulps), bound, rows(err), float(tol), out, status)
    return out.reshape(shape), status.reshape(shape)


@njit(nogil=True)
def _statuses(
    nlm: np.ndarray,
    sd: np.ndarray,
    scale: np.ndarray,
    ulps: float,
    limit: np.ndarray,
    err: np.ndarray,
    tol: float,
    out: np.ndarray,
    status: np.ndarray,
) -> None:  # pragma: no cover - compiled (tests/_nlm/test_status.py checks it against the rules in NumPy)
    """The rules of :func:`statuses` row by row; an empty ``scale``, ``limit`` or ``err`` is not given."""
    by_scale, by_limit, by_err = scale.shape[0] > 0, limit.shape[0] > 0, err.shape[0] > 0
    for i in range(nlm.shape[0]):
        for j in range(nlm.shape[1]):
            v = nlm[i, j]
            if np.isnan(v):
                status[i, j] = CONSTANT
                out[i, j] = v
                continue
            s = sd[i, j]
            if (by_scale and s <= ulps * scale[i, j]) or (by_limit and s <= limit[j]):
                status[i, j] = FLAT
                out[i, j] = np.nan
                continue
            status[i, j] = INACCURATE if by_err and not err[i, j] <= tol else OK
            out[i, j] = v
