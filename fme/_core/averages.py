"""Averages of per-row values with their uncertainty: the machinery the margins vocabulary shares.

:func:`fme.avg_predictions`, :func:`fme.avg_slopes` and :func:`fme.avg_comparisons` average per-row values
(predictions, derivatives, comparisons) over the rows or ``by`` groups, weighted or not. A front door describes
its quantity by a :class:`RowQuantity`:

* ``rows(piece, refit, method) -> (values (n, c), jacobian (n, c, k) or None, vcov or None)``: the per-row
  values under the fitted model (``refit`` None) or a refitted one of a piece of data (the whole frame in
  memory, one chunk on Dask), with their Jacobians in the model's parameters for ``method='delta'``;
* ``finish(means (G, c), mean_jacobian (G, c, k) or None) -> (estimate (G,), gradient (G, k) or None)``: the
  quantity as a function of the groups' means (None: the mean of the one column; the ``...avg`` comparison
  scales: a function of the means of f(x + h) and f(x)).

The groups' means and mean Jacobians are sums (:class:`~fme._core.summary.RowSums`), so the in-memory path
and the Dask engine (:mod:`fme._dask.vocab`, per chunk, merged) give the same estimates up to rounding. The
uncertainty: the delta method (the gradient of ``finish`` times the mean Jacobian), the bootstrap (``finish``
of each refit's means, :func:`refit_draws`: the refits of :mod:`fme.inference.bootstrap`, evaluated on
the same rows), or the spread over the rows with the model held fixed (``sample``; per-row forms only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import sparse

from ..inference.bootstrap import RefitTally, check_bootstrap, check_refits, refit_setup
from ..inference.estimates import INFERENCE_COLUMNS, Estimates
from ..inference.refit_chunks import chunk_refits
from ..inference.table import EstimatesTable
from ..inference.unconditional import Unconditional, deviations_of, empirical_part

__all__ = [
    "spread_values",
    "RowQuantity",
    "estimates_of",
    "refit_draws",
    "bootstrap_of",
    "model_values",
    "draws_of_means",
    "delta_table",
    "average_table",
    "prediction_table",
    "unconditional_of",
    "REFIT_CHUNK",
]

#: Refitted models held at once (evaluated together, then dropped).
REFIT_CHUNK = 50


@dataclass(frozen=True, eq=False)
class RowQuantity:
    """A quantity averaged over rows (module docstring): its per-row values and its function of the means."""

    rows: Callable[..., tuple[Any, ...]]
    finish: Callable[..., tuple[Any, ...]] | None = None
    #: ``vcov='unconditional'``: the parameters' per-row influence the delta estimates add the rows' sampling to
    #: (:class:`~fme.inference.unconditional.Unconditional`), else None.
    unconditional: Unconditional | None = None

    def of_means(self, means: np.ndarray, mean_jacobian: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """(estimates, gradients (one row each) or None) from the groups' means; without ``finish``, the mean of
        each column over each group, column after column (G * c estimates: the table's rows in order)."""
        if self.finish is None:
            grad = (
                None if mean_jacobian is None else mean_jacobian.transpose(1, 0, 2).reshape(-1, mean_jacobian.shape[2])
            )
            return means.T.reshape(-1), grad
        return self.finish(means, mean_jacobian)


def spread_values(quantity: RowQuantity, values: np.ndarray) -> np.ndarray:
    """The columns whose spread the fixed-model interval reads: the rows' values, and for a function of two
    means (``quantity.finish``) also their sum, whose spread gives the two columns' co-spread (the moments keep
    each column's own: q(a + b) = q(a) + 2 q(a, b) + q(b))."""
    if quantity.finish is None:
        return values
    v = np.asarray(values, dtype=float)
    return np.column_stack([v, v[:, 0] + v[:, 1]])


def estimates_of(quantity: RowQuantity, sums: Any, method: str) -> Estimates:
    """The groups' estimates with their delta-method or fixed-model uncertainty, from the rows' sums. A function
    g of two means (``quantity.finish``) with the model held fixed: the linearisation's standard error, the
    weighted mean's of d1 f1 + d0 f0 with d = the gradient of g at the means (the rows' sums carry the column
    of :func:`spread_values`)."""
    if method == "delta":
        est, grad = quantity.of_means(sums.means, sums.mean_jacobian())
        return Estimates("delta", est, grad=grad, vcov=sums.vcov)
    m = sums.moments
    if quantity.finish is not None:
        groups = m.mean.shape[0]
        est, d = quantity.of_means(m.mean[:, :2], np.broadcast_to(np.eye(2), (groups, 2, 2)))
        q11, q00, qsum = m.q[:, 0], m.q[:, 1], m.q[:, 2]
        q10 = (qsum - q11 - q00) / 2.0
        q = d[:, 0] ** 2 * q11 + 2.0 * d[:, 0] * d[:, 1] * q10 + d[:, 1] ** 2 * q00
        n = m.n.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(n >= 2, np.sqrt(np.maximum(n / (n - 1.0) * q, 0.0)) / m.w, np.nan)
        return Estimates("sample", np.asarray(est, dtype=float), se=se, df=np.maximum(n - 1.0, 1.0))
    c = m.mean.shape[1]
    return Estimates("sample", m.mean.T.reshape(-1), se=m.se().T.reshape(-1), df=np.tile(np.maximum(m.n - 1.0, 1.0), c))


def unconditional_of(
    quantity: RowQuantity,
    est: Estimates,
    values: np.ndarray,
    means: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray | None,
    positions: np.ndarray,
    n_rows: int,
) -> Estimates:
    """The delta estimates ``est`` of ``quantity`` with the sampling of the rows added
    (:mod:`fme.inference.unconditional`): the rows at ``positions`` of the model's estimation sample (``n_rows``
    rows), their values (n, c), the groups' means (G, c). A function g of two means (``quantity.finish``)
    linearises: its rows' part is d1 (f1_i - mean1) + d0 (f0_i - mean0), d the gradient of g at the means."""
    unconditional = cast(Unconditional, quantity.unconditional)
    v = np.asarray(values, dtype=float).reshape(len(codes), -1)
    G = means.shape[0]

    def part(j: int) -> sparse.csr_matrix:
        return empirical_part(deviations_of(v[:, j], means[:, j], codes), codes, G, positions, n_rows, weights)

    if quantity.finish is None:
        rows = sparse.vstack([part(j) for j in range(v.shape[1])]).tocsr()
    else:
        d = np.asarray(quantity.of_means(means[:, :2], np.broadcast_to(np.eye(2), (G, 2, 2)))[1], dtype=float)
        rows = (sparse.diags(d[:, 0]) @ part(0) + sparse.diags(d[:, 1]) @ part(1)).tocsr()
    return unconditional.combine([(est, rows)])[0]


def model_values(
    quantity: RowQuantity, piece: Any, models: Sequence[Any], errors: list[str] | None = None
) -> np.ndarray:
    """The per-row values of each model side by side (n, c * len(models)); a model whose prediction fails
    gives NaN columns (that refit is then left out and counted as failed, as in :mod:`fme.inference.bootstrap`),
    its message appended to ``errors`` when given."""
    cols: list[np.ndarray | None] = []
    for model in models:
        try:
            v = np.asarray(quantity.rows(piece, model, "sample")[0], dtype=float)
            cols.append(v.reshape(v.shape[0], -1))
        except Exception as exc:  # noqa: BLE001 - a failed refit prediction: counted, never silently dropped
            cols.append(None)
            if errors is not None:
                errors.append(f"{type(exc).__name__}: {exc}")
    shape = next((c.shape for c in cols if c is not None), None)
    if shape is None:  # every refit failed here: the fitted model's values give the shape of the NaN columns
        v = np.asarray(quantity.rows(piece, None, "sample")[0], dtype=float)
        shape = v.reshape(v.shape[0], -1).shape
    return np.hstack([np.full(shape, np.nan) if c is None else c for c in cols])


def refit_draws(
    model: Any,
    spec: dict[str, Any],
    evaluate: Callable[[list[Any]], np.ndarray],
    defined: np.ndarray | None = None,
    errors: list[str] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Bootstrap draws of estimates: ``evaluate(models) -> (m, len(models))`` for each chunk of successful
    refits (:data:`REFIT_CHUNK` at a time: the same seeds, refit function and convergence checks as every
    bootstrap of fme); a column with a NaN where the fitted model's estimate is ``defined`` is a refit whose
    prediction failed (``errors``: the messages ``evaluate`` collected). Returns the (m, B_ok) draws and the
    refits' record (``n_resamples``, ``n_failed``, ``n_nonconverged``, ``errors``, ``ci``)."""
    from .._utils.progress import progress_bar

    adapter, train, n_train = refit_setup(model, spec)
    B = int(spec["n_resamples"])
    seeds = np.random.SeedSequence(spec["random_state"]).spawn(B)
    tally = RefitTally(spec["keep_nonconverged"])
    execution: dict[str, Any] = {}
    columns: list[np.ndarray] = []
    starts = range(0, B, REFIT_CHUNK)
    for start in progress_bar(starts, total=len(starts), desc="bootstrap refits (chunks)", progress=spec["progress"]):
        fits = chunk_refits(
            model, spec, seeds[start : start + REFIT_CHUNK], start, B, (adapter, train, n_train), execution
        )
        models = [m for (m, err, note) in fits if tally.keep(err, note)]
        if models:
            columns.append(np.asarray(evaluate(models), dtype=float).reshape(-1, len(models)))
        del fits, models
    draws = np.hstack(columns) if columns else np.empty((0, 0))
    # an estimate the fitted model leaves undefined (a ratio of an empty group's zeros) is undefined per refit too
    must = np.ones(draws.shape[0], dtype=bool) if defined is None else np.asarray(defined, dtype=bool)
    ok = np.all(np.isfinite(draws[must]), axis=0) if draws.size else np.zeros(draws.shape[1], dtype=bool)
    messages = list(errors or []) + ["the prediction of a refitted model failed"]
    for _ in range(int((~ok).sum())):
        tally.keep(messages[0], None)
    n_failed = check_refits(B, int(ok.sum()), tally)
    info = {
        "n_resamples": B,
        "n_failed": n_failed,
        "n_nonconverged": tally.n_nonconverged,
        "errors": tuple(tally.errors),
        "ci": spec["ci"],
        "random_state": spec["random_state"],
        "execution": execution,
    }
    return draws[:, ok], info


def bootstrap_of(estimate: np.ndarray, draws: np.ndarray, info: dict[str, Any]) -> Estimates:
    """:class:`Estimates` of the bootstrap from the fitted model's estimates and the refits' draws."""
    return Estimates(
        "bootstrap",
        np.asarray(estimate, dtype=float),
        draws=draws,
        ci=info["ci"],
        n_failed=info["n_failed"],
        errors=info["errors"],
        n_nonconverged=info["n_nonconverged"],
    )


def draws_of_means(quantity: RowQuantity, means: np.ndarray, n_models: int) -> np.ndarray:
    """(G, n_models) estimates from the groups' means of ``n_models`` models' values side by side (G, c * M)."""
    G = means.shape[0]
    per = means.reshape(G, n_models, -1)
    return np.column_stack([quantity.of_means(per[:, b, :], None)[0] for b in range(n_models)])


def delta_table(est: Estimates, t_df: float | None, label: str, conf_level: float) -> tuple[Estimates, pd.DataFrame]:
    """``est`` with t degrees of freedom (delta method, when ``df=`` asked for them) and its table, whose
    ``inference`` column names the covariance used (``delta (HC3)``)."""
    if t_df is not None and est.method == "delta":
        est = replace(est, df=np.full(est.estimate.size, t_df))
    table = est.table(conf_level)
    if est.method == "delta":
        table["inference"] = label
    return est, table


def average_table(
    est: Estimates,
    keys: pd.DataFrame,
    counts: np.ndarray,
    t_df: float | None,
    label: str,
    conf_level: float,
    head: dict[str, Any] | None = None,
) -> EstimatesTable:
    """The table of averaged estimates: ``head`` columns, the ``by`` keys, ``estimate``, the inference columns and
    ``n``: an :class:`~fme.EstimatesTable` keeping the joint uncertainty (for :func:`fme.hypotheses`) and the
    bootstrap's record."""
    est, table = delta_table(est, t_df, label, conf_level)
    m = est.estimate.size
    out = pd.concat(
        [
            pd.DataFrame({k: [v] * m for k, v in (head or {}).items()}),
            keys.reset_index(drop=True),
            pd.DataFrame({"estimate": est.estimate}),
            table,
            pd.DataFrame({"n": counts}),
        ],
        axis=1,
    )
    out = EstimatesTable.from_frame(out, est, conf_level=conf_level)
    if est.method == "bootstrap":
        out.bootstrap = {
            "n_resamples": int(cast(np.ndarray, est.draws).shape[1] + est.n_failed),
            "n_failed": est.n_failed,
            "n_nonconverged": est.n_nonconverged,
            "errors": list(est.errors),
        }
    return out


def prediction_table(
    piece: Any,
    method: str,
    quantity: RowQuantity,
    model: Any,
    bootstrap: Any,
    label: str,
    conf_level: float,
    index: pd.Index | None = None,
) -> pd.DataFrame:
    """The per-row table of :func:`fme.predictions` for an in-memory piece of the model's frame (the whole frame,
    or one Dask chunk): ``estimate`` and the inference columns, indexed like ``piece`` (or by ``index``: a piece
    of :func:`fme.comparisons`, the evaluated rows' point sets)."""
    values, jac, V = quantity.rows(piece, None, method)
    f = values[:, 0]
    if method == "delta":
        table = Estimates("delta", f, grad=jac[:, 0, :], vcov=V).table(conf_level)
        table["inference"] = label
    elif method == "bootstrap":
        errors: list[str] = []
        draws, info = refit_draws(
            model,
            check_bootstrap(bootstrap, model),
            lambda models: model_values(quantity, piece, models, errors),
            np.isfinite(f),
            errors,
        )
        table = bootstrap_of(f, draws, info).table(conf_level)
    else:
        table = pd.DataFrame({c: np.nan for c in INFERENCE_COLUMNS}, index=range(len(f)))
        table["inference"] = "none"
    return pd.concat([pd.DataFrame({"estimate": f}), table], axis=1).set_axis(piece.index if index is None else index)
