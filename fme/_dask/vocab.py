"""The margins vocabulary on Dask data: averages of per-row values summed chunk by chunk (the in-memory mirror:
:mod:`fme._local.vocab`).

:func:`fme.avg_predictions`, :func:`fme.avg_slopes` and :func:`fme.avg_comparisons` describe their quantity
by a :class:`~fme._core.averages.RowQuantity` (per-row values and Jacobians of a piece of data, and the
quantity as a function of the groups' means). On Dask data every chunk returns the
:class:`~fme._core.summary.RowSums` of its rows (per ``by`` group: weighted means, the spread, the Jacobian
sums), the chunks' sums are tree-reduced, and the estimates follow as in memory
(:func:`fme._core.averages.estimates_of`): equal to the pandas ones up to rounding. Comparisons need the rows
:func:`fme.fme` evaluates (its exclusions and extrapolation policy): their sums ride on the kernel's pass
(:func:`fme._dask.effects.fme`, ``extra=``). The bootstrap refits the model in memory, as everywhere in
fme, and evaluates :data:`~fme._core.averages.REFIT_CHUNK` refits per pass over the chunks.
:func:`predictions` maps the per-row table over the chunks lazily. With ``vcov='unconditional'`` each chunk also
returns its rows' values and positions in the estimation sample (checked against it:
:class:`~fme.inference.unconditional.SampledRows`), and the rows' sampling is added as in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters import adapt
from .._core.averages import (
    RowQuantity,
    bootstrap_of,
    draws_of_means,
    estimates_of,
    model_values,
    prediction_table,
    refit_draws,
    spread_values,
    unconditional_of,
)
from .._core.plan import Plan
from .._core.summary import RowSums
from ..exceptions import DataError, ModelError
from ..inference.bootstrap import check_bootstrap
from ..inference.estimates import INFERENCE_COLUMNS, Estimates
from ..inference.unconditional import SampledRows, Unconditional
from ..steps import apply_steps
from .common import POSITION, as_dask, model_frames, with_positions
from .groups import GroupSpec, check_weights_dask, group_codes, group_keys

__all__ = ["average", "comparisons", "predictions", "column_range"]


#: The adapter's check of a chunk's rows against the estimation sample (``vcov='unconditional'``).
Check = Callable[[pd.DataFrame, np.ndarray], None]


def _groups(data: Any, by: list[str]) -> GroupSpec | None:
    """The ``by`` groups of the Dask ``data`` (:mod:`fme._core.groups`: the pandas path's order), None without."""
    return group_keys(data, list(by)) if by else None


def _keys(groups: GroupSpec | None) -> pd.DataFrame:
    return pd.DataFrame(index=[0]) if groups is None else groups.keys


def column_range(data: Any, column: str) -> float:
    """max - min of a numeric column over all rows (NaN ignored), one reduction."""
    from dask.base import compute

    lo, hi = compute(data[column].min(), data[column].max())  # type: ignore[no-untyped-call]  # dask: untyped
    return float(hi) - float(lo)


def _codes(part: pd.DataFrame, groups: GroupSpec | None) -> np.ndarray:
    return np.zeros(len(part), dtype=np.int64) if groups is None else group_codes(part, groups)


def _merge_all(*items: Any) -> Any:
    """Merge the chunks' sums; a chunk without rows gives None."""
    out = None
    for item in items:
        out = item if out is None else out if item is None else out.merge(item)
    return out


def _tree(items: list[Any]) -> Any:
    from dask.delayed import delayed

    while len(items) > 1:
        items = [delayed(_merge_all)(*items[i : i + 16]) for i in range(0, len(items), 16)]
    return items[0]


def _row_weights(part: pd.DataFrame, weights: str | None) -> np.ndarray | None:
    return None if weights is None else part[weights].to_numpy(dtype=float)


@dataclass(frozen=True, eq=False)
class _WithRows:
    """A chunk's sums and, for ``vcov='unconditional'``, its rows' values (:class:`SampledRows`), merged together."""

    sums: RowSums | None
    rows: SampledRows

    def merge(self, other: _WithRows | None) -> _WithRows:
        if other is None:
            return self
        sums = other.sums if self.sums is None else self.sums if other.sums is None else self.sums.merge(other.sums)
        return _WithRows(sums, self.rows.merge(other.rows))


def _with_rows(
    check: Check | None,
    sums: RowSums | None,
    frame: pd.DataFrame,
    positions: np.ndarray,
    values: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray | None,
    n_rows: int,
) -> RowSums | _WithRows | None:
    """``sums``, with the evaluated rows' values beside them under ``vcov='unconditional'`` (``check``: the
    adapter's check of the rows against the estimation sample; None otherwise)."""
    if check is None:
        return sums
    return _WithRows(sums, SampledRows.of(check, frame, positions, values, codes, weights, n_rows))


def _for_chunks(model: Any, quantity: RowQuantity) -> tuple[RowQuantity, Check | None]:
    """The quantity the chunks' tasks take (without the estimation sample's n x k influence, which only the
    client needs) and, under ``vcov='unconditional'``, the check of each chunk's rows."""
    if quantity.unconditional is None:
        return quantity, None
    return replace(quantity, unconditional=None), adapt(model).check_estimation_rows


def _unconditional(quantity: RowQuantity, est: Estimates, merged: Any) -> Estimates:
    """The delta estimates with the rows' sampling added from the rows the chunks sent back, as in memory."""
    unconditional = cast(Unconditional, quantity.unconditional)
    rows = cast(_WithRows, merged).rows
    unconditional.check_count(rows.n_rows)
    means = cast(RowSums, merged.sums).means
    return unconditional_of(quantity, est, rows.values, means, rows.codes, rows.weights, rows.positions, rows.n_rows)


def _chunk_sums(
    part: pd.DataFrame,
    quantity: RowQuantity,
    method: str,
    groups: GroupSpec | None,
    n_groups: int,
    spread: bool = True,
    weights: str | None = None,
    check: Check | None = None,
) -> RowSums | _WithRows | None:
    if len(part) == 0:
        return None
    values, jac, vcov = quantity.rows(part, None, method)
    values = spread_values(quantity, values) if spread else values
    codes, w = _codes(part, groups), _row_weights(part, weights)
    sums = RowSums.of(values, jac, codes, n_groups, w, vcov, spread)
    positions = part[POSITION].to_numpy() if check is not None else np.empty(0)
    return _with_rows(check, sums, part, positions, values, codes, w, len(part))


def _chunk_refits(
    part: pd.DataFrame,
    quantity: RowQuantity,
    models: list[Any],
    groups: GroupSpec | None,
    n_groups: int,
    weights: str | None = None,
) -> RowSums | None:
    if len(part) == 0:
        return None
    return RowSums.of(
        model_values(quantity, part, models),
        None,
        _codes(part, groups),
        n_groups,
        _row_weights(part, weights),
        spread=False,
    )


def average(
    model: Any, data: Any, quantity: RowQuantity, method: str, by: list[str], bootstrap: Any, weights: str | None = None
) -> tuple[Estimates, np.ndarray, pd.DataFrame]:
    """The ``by`` groups' estimates of ``quantity`` over all rows of the Dask ``data``, the groups' row counts
    and their keys (``weights``: a column of ``data``).

    ``quantity.rows(chunk, None, method)`` evaluates the fitted model (``None``: the one the quantity was
    built with) on a chunk of the model's frame; ``rows(chunk, refit, 'sample')`` a refitted one."""
    from dask.base import compute
    from dask.delayed import delayed

    data = model_frames(model, as_dask(data, "data"))
    groups = _groups(data, by)
    if weights is not None:
        check_weights_dask(data, weights)
    n_groups = 1 if groups is None else groups.n_groups
    if quantity.unconditional is not None:
        data = with_positions(data)
    parts = data.to_delayed()
    base = "delta" if method == "delta" else "sample"
    spread = method == "sample"  # the spread over the rows only for the fixed-model interval
    light, check = _for_chunks(model, quantity)
    merged = _tree([delayed(_chunk_sums)(p, light, base, groups, n_groups, spread, weights, check) for p in parts])
    merged = merged.compute()
    sums = merged.sums if isinstance(merged, _WithRows) else merged
    if sums is None:
        raise DataError("`data` has no rows; pass a Dask DataFrame with rows.")
    counts = sums.moments.n.copy()
    if method != "bootstrap":
        est = estimates_of(quantity, sums, method)
        if method == "delta" and quantity.unconditional is not None:
            est = _unconditional(quantity, est, merged)
        return est, counts, _keys(groups)
    spec = check_bootstrap(bootstrap, model)

    def evaluate(models: list[Any]) -> np.ndarray:
        tasks = [delayed(_chunk_refits)(p, quantity, models, groups, n_groups, weights) for p in parts]
        merged = compute(_tree(tasks))[0]  # type: ignore[no-untyped-call]  # dask's compute is untyped
        return draws_of_means(quantity, merged.means, len(models))

    estimate = quantity.of_means(sums.means, None)[0]
    draws, info = refit_draws(model, spec, evaluate, np.isfinite(estimate))
    return bootstrap_of(estimate, draws, info), counts, _keys(groups)


# ----------------------------------------------------------------- comparisons: on the rows fme evaluates
def _stepped(part: pd.DataFrame, batch: Any, plan: Any) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray, np.ndarray]:
    """(X0, X1, f(X0), f(X1)) of a chunk's evaluated rows, as :func:`fme._core.results.stepped_frames`."""
    X0 = plan.predictor.select(part).iloc[batch.cand]
    h = None
    if any(f"step_{s.feature}" in batch.results.columns for s in plan.steps):
        h = {s.feature: batch.results[f"step_{s.feature}"].to_numpy(dtype=float) for s in plan.steps}
    return X0, apply_steps(X0, plan.steps, h), batch.f0, batch.f1


def _comparison_hook(
    part: pd.DataFrame,
    batch: Any,
    plan: Any,
    quantity: RowQuantity,
    method: str,
    groups: GroupSpec | None,
    n_groups: int,
    spread: bool = True,
    weights: str | None = None,
    check: Check | None = None,
) -> RowSums | _WithRows | None:
    if batch.cand.size == 0:
        if check is None:
            return None
        # no evaluated row, but the chunk's rows count in the estimation sample
        none = np.empty(0, dtype=np.int64)
        w0 = None if weights is None else np.empty(0)
        return _with_rows(check, None, part.iloc[:0], none, np.empty((0, 1)), none, w0, len(part))
    values, jac, vcov = quantity.rows(_stepped(part, batch, plan), None, method)
    values = spread_values(quantity, values) if spread else values
    w = None if weights is None else part[weights].to_numpy(dtype=float)[batch.cand]
    codes = _codes(part, groups)[batch.cand]
    sums = RowSums.of(values, jac, codes, n_groups, w, vcov, spread)
    if check is None:
        return sums
    rows = part.iloc[batch.cand]
    return _with_rows(check, sums, rows, rows[POSITION].to_numpy(), values, codes, w, len(part))


def _comparison_refits(
    part: pd.DataFrame,
    plan: Any,
    quantity: RowQuantity,
    models: list[Any],
    groups: GroupSpec | None,
    n_groups: int,
    weights: str | None = None,
) -> RowSums | None:
    from .._core.kernel import evaluate_batch

    batch = evaluate_batch(plan, part, with_rows=False)
    if batch.cand.size == 0:
        return None
    piece = _stepped(part, batch, plan)
    w = None if weights is None else part[weights].to_numpy(dtype=float)[batch.cand]
    return RowSums.of(
        model_values(quantity, piece, models), None, _codes(part, groups)[batch.cand], n_groups, w, spread=False
    )


def comparisons(
    plan: Plan,
    data: Any,
    reference: Any,
    steps: Any,
    quantity: RowQuantity,
    method: str,
    by: list[str],
    bootstrap: Any,
    weights: str | None = None,
) -> tuple[Estimates, np.ndarray, pd.DataFrame, str]:
    """The ``by`` groups' comparisons on the rows :func:`fme.fme` evaluates on the Dask ``data`` (one pass of the
    kernel, the comparison's sums beside the fMEs; ``plan`` resolved by the front door), their row counts, keys
    and the steps' description (``weights``: a column of ``data``, checked)."""
    from dask.base import compute
    from dask.delayed import delayed

    from .effects import fme

    groups = _groups(data, by)
    n_groups = 1 if groups is None else groups.n_groups
    base = "delta" if method == "delta" else "sample"
    model = plan.model
    light, check = _for_chunks(model, quantity)
    hook = partial(
        _comparison_hook,
        quantity=light,
        method=base,
        groups=groups,
        n_groups=n_groups,
        spread=method == "sample",
        weights=weights,
        check=check,
    )
    if quantity.unconditional is not None:
        data = with_positions(data)
    res = fme(plan, data, reference, steps, extra=hook)  # the plan computes fMEs only ("sample")
    merged = res.summary_data.extra
    # the pass evaluated rows (fme raises otherwise): the sums are there
    sums = cast(RowSums, merged.sums if isinstance(merged, _WithRows) else merged)
    counts = sums.moments.n.copy()
    description = res.describe_steps()
    if method != "bootstrap":
        res.release()
        est = estimates_of(quantity, sums, method)
        if method == "delta" and quantity.unconditional is not None:
            est = _unconditional(quantity, est, merged)
        return est, counts, _keys(groups), description
    spec = check_bootstrap(bootstrap, model)
    parts, plan = res.data.to_delayed(), cast(Plan, res.plan)  # set on Dask effects
    res.release()

    def evaluate(models: list[Any]) -> np.ndarray:
        tasks = [delayed(_comparison_refits)(p, plan, quantity, models, groups, n_groups, weights) for p in parts]
        merged = compute(_tree(tasks))[0]  # type: ignore[no-untyped-call]  # dask's compute is untyped
        return draws_of_means(quantity, merged.means, len(models))

    estimate = quantity.of_means(sums.means, None)[0]
    draws, info = refit_draws(model, spec, evaluate, np.isfinite(estimate))
    return bootstrap_of(estimate, draws, info), counts, _keys(groups), description


# ----------------------------------------------------------------- predictions: one row each, lazily
def _kept_refits(model: Any, spec: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The successful refits of the bootstrap ``spec`` (the seeds, refit function and convergence rules of every
    bootstrap of fme) and their record; their predictions are made later, per chunk."""
    models: list[Any] = []

    def keep(fitted: list[Any]) -> np.ndarray:
        models.extend(fitted)
        return np.zeros((1, len(fitted)))

    _, info = refit_draws(model, spec, keep)
    return models, info


def _refits_table(
    piece: pd.DataFrame, quantity: RowQuantity, models: list[Any], info: dict[str, Any], conf_level: float
) -> pd.DataFrame:
    """The per-row table under the bootstrap from refits fitted beforehand (a Dask chunk). A refit whose
    prediction fails here is an error: on pandas data it would be left out of every row, which one chunk cannot
    do for the others."""
    f = np.asarray(quantity.rows(piece, None, "sample")[0], dtype=float).reshape(len(piece), -1)[:, 0]
    errors: list[str] = []
    draws = model_values(quantity, piece, models, errors)
    bad = ~np.all(np.isfinite(draws[np.isfinite(f)]), axis=0)
    if bad.any():
        raise ModelError(
            f"the prediction of {int(bad.sum())} of {len(models)} refitted models failed on a chunk of the "
            f"Dask data ({errors[0] if errors else 'a non-finite prediction'}); compute the predictions "
            "of these rows on a pandas frame, where such refits are left out and counted."
        )
    table = bootstrap_of(f, draws, info).table(conf_level)
    return pd.concat([pd.DataFrame({"estimate": f}), table], axis=1).set_axis(piece.index)


def predictions(
    model: Any, data: Any, quantity: RowQuantity, method: str, bootstrap: Any, label: str, conf_level: float
) -> Any:
    """The prediction of every row of the Dask ``data`` with its uncertainty: a lazy Dask DataFrame, each chunk's
    table computed when asked for (under the bootstrap the refits are fitted once, here, and every chunk's task
    gets them: a chunk that refitted would repeat all B fits)."""
    data = model_frames(model, as_dask(data, "data"))
    if method == "bootstrap":
        models, info = _kept_refits(model, check_bootstrap(bootstrap, model))
        table = partial(_refits_table, quantity=quantity, models=models, info=info, conf_level=conf_level)
    else:
        table = partial(
            prediction_table,
            method=method,
            quantity=quantity,
            model=model,
            bootstrap=bootstrap,
            label=label,
            conf_level=conf_level,
        )
    meta = pd.DataFrame(
        {
            "estimate": pd.Series(dtype=float),
            **{c: pd.Series(dtype=object if c in ("inference", "covers") else float) for c in INFERENCE_COLUMNS},
        },
        index=data._meta.index[:0],
    )
    return data.map_partitions(lambda part: table(part) if len(part) else meta, meta=meta)
