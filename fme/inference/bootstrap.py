"""Bootstrap refits for the model uncertainty of fMEs (see :mod:`fme.inference`).

Each resample b draws n_train training rows with replacement (its own seed,
spawned from ``random_state`` by :class:`numpy.random.SeedSequence`, so the
numbers do not depend on ``n_jobs``), refits the model and predicts the
evaluation points and the stepped points in one call; only the n fMEs are
kept (never the refitted model), written into an n x B matrix (RAM up to
``memory_limit``, else a temporary memory-mapped file), or, when the averages
are known in advance (``ame``), reduced at once to the group averages. Refits that
raise are counted, their messages kept, and reported by a warning; fewer
than two successful refits is an error.

``bootstrap`` specification (a dict):

* scikit-learn estimators and pipelines: ``{"X": X_train, "y": y_train}`` (pandas
  ``X_train`` and ``y_train`` pair by index label, any order, the same labels; else by position);
  each refit is ``sklearn.base.clone(model).fit(X[idx], y[idx])``.
* statsmodels formula results: ``{"data": train_frame}``; each refit uses the
  same model class, formula and family.
* common keys: ``n_resamples`` (200), ``random_state`` (None: fresh entropy,
  recorded in the result), ``n_jobs`` (None: sequential; joblib semantics),
  ``ci`` (``"percentile"`` or ``"normal"``), ``progress`` (None: a tqdm bar
  when stderr is a terminal, unless ``FME_PROGRESS=0``), ``memory_limit`` (bytes
  of RAM for the n x B per-row draws, default 256 MiB; larger draws go to a
  temporary memory-mapped file with the same float64 numbers),
  ``keep_nonconverged`` (False: a refit that did not converge, a scikit-learn or
  statsmodels ``ConvergenceWarning`` during its fit or statsmodels'
  ``mle_retvals["converged"]`` False, is counted as failed and left out; True:
  kept in the draws, still counted), ``backend`` (``"auto"``, ``"threads"``,
  ``"processes"``; see below), ``cache`` (a :class:`~fme.inference.RefitCache`: the refitted models are
  kept there, and a later call on the same model, training data and seed predicts with them instead of
  refitting; :mod:`fme.inference.refit_cache`).

Failures: ``n_failed`` counts the refits left out (errors, and non-converged
ones unless kept), ``n_nonconverged`` the refits that did not converge; both
are reported by a :class:`~fme.exceptions.BootstrapWarning` and in
``fme.ame(...).bootstrap``. A percentile interval whose bounds rest on
fewer than 5 refits beyond each (fewer than 200 at 95%) gets a warning too.

Parallel refits (``n_jobs`` > 1): :mod:`fme.inference.execution`. ``info["execution"]`` says
what ran; ``info["kept"]`` which resamples (positions in the seed order) the draws' columns are.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast, overload

import numpy as np
import pandas as pd

from .._adapters import ModelAdapter, adapt
from .._adapters.predictor import make_predictor
from .._utils.validation import align_rows
from .._utils.warn import warn_caller
from ..exceptions import BootstrapWarning, ModelError, ParameterError
from .estimates import BOOTSTRAP_CIS, Estimates, RowInference, alloc_draws, group_matrix
from .execution import convergence_notes, run_refits
from .refit_cache import RefitCache

__all__ = ["check_bootstrap", "bootstrap_rows", "refit_setup", "refit_one", "RefitTally", "check_refits"]

_KEYS = {
    "X",
    "y",
    "data",
    "n_resamples",
    "random_state",
    "n_jobs",
    "ci",
    "progress",
    "memory_limit",
    "keep_nonconverged",
    "backend",
    "cache",
}
BACKENDS = ("auto", "threads", "processes")
MEMORY_LIMIT = 256 * 2**20


def check_bootstrap(spec: Any, model: Any) -> dict[str, Any]:
    """Validate a ``bootstrap`` specification against the model; returns a normalised copy."""
    if not isinstance(spec, Mapping):
        raise ParameterError(
            "inference='bootstrap' needs bootstrap={'X': X_train, 'y': y_train, ...} (scikit-learn) or "
            f"{{'data': train_frame, ...}} (statsmodels formula results); got {type(spec).__name__}."
        )
    unknown = set(spec) - _KEYS
    if unknown:
        raise ParameterError(f"unknown bootstrap key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}.")
    out = {
        "n_resamples": 200,
        "random_state": None,
        "n_jobs": None,
        "ci": "percentile",
        "progress": None,
        "memory_limit": MEMORY_LIMIT,
        "keep_nonconverged": False,
        "backend": "auto",
    }
    out.update(spec)
    lim = out["memory_limit"]
    if isinstance(lim, bool) or not isinstance(lim, numbers.Integral) or lim < 0:
        raise ParameterError(f"bootstrap memory_limit must be a number of bytes >= 0, got {lim!r}.")
    b = out["n_resamples"]
    if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 2:
        raise ParameterError(f"bootstrap n_resamples must be an integer >= 2, got {b!r}.")
    rs = out["random_state"]
    if rs is not None and (isinstance(rs, bool) or not isinstance(rs, numbers.Integral) or rs < 0):
        raise ParameterError(f"bootstrap random_state must be a non-negative integer or None, got {rs!r}.")
    nj = out["n_jobs"]
    if nj is not None and (isinstance(nj, bool) or not isinstance(nj, numbers.Integral) or nj == 0):
        raise ParameterError(f"bootstrap n_jobs must be None or a non-zero integer (-1: all cores), got {nj!r}.")
    if out["progress"] is not None and not isinstance(out["progress"], (bool, np.bool_)):
        raise ParameterError(
            f"bootstrap progress must be True, False or None (a bar when stderr is a terminal), "
            f"got {out['progress']!r}."
        )
    if not isinstance(out["keep_nonconverged"], (bool, np.bool_)):
        raise ParameterError(f"bootstrap keep_nonconverged must be True or False, got {out['keep_nonconverged']!r}.")
    if out["backend"] not in BACKENDS:
        raise ParameterError(f"bootstrap backend must be one of {BACKENDS}, got {out['backend']!r}.")
    if out.get("cache") is not None and not isinstance(out["cache"], RefitCache):
        raise ParameterError(f"bootstrap cache must be a fme.inference.RefitCache, got {type(out['cache']).__name__}.")
    if out["ci"] not in BOOTSTRAP_CIS:
        raise ParameterError(f"bootstrap ci must be one of {BOOTSTRAP_CIS}, got {out['ci']!r}.")
    # the backend's refit recipe: its checks of the training data (X, y or data) and its refit
    adapter = adapt(model, None)
    adapter.bootstrap_training(out)
    if "X" in out and "y" in out:
        # pandas training X and y pair by index label, as the levels of an effect pair theirs
        out["y"] = align_rows(out["X"], out["y"], "bootstrap X", "bootstrap y")
    out["kind"] = adapter.name
    if out["random_state"] is None:
        out["random_state"] = int(np.random.SeedSequence().entropy % (2**63))
    return out


def refit_setup(model: Any, spec: dict[str, Any]) -> tuple[ModelAdapter, Any, int]:
    """(the model's adapter, its training data, the number of training rows) for the refits of ``spec``."""
    adapter = adapt(model, None)
    train, n_train = adapter.bootstrap_training(spec)
    return adapter, train, n_train


def refit_on(adapter: ModelAdapter, train: Any, idx: np.ndarray) -> Any:
    """The model refitted on the training rows ``idx`` by its adapter's recipe (clone + fit, formula refit)."""
    return adapter.refit(train, idx)


def _fit_checked(adapter: ModelAdapter, train: Any, idx: np.ndarray) -> tuple[Any, str | None]:
    """One refit and, if it did not converge, why (a ConvergenceWarning during the fit, or statsmodels'
    ``mle_retvals['converged']`` False); None if it converged."""
    with convergence_notes() as notes:
        fitted = refit_on(adapter, train, idx)
    note = notes[0] if notes else None
    retvals = getattr(fitted, "mle_retvals", None)
    if note is None and isinstance(retvals, Mapping) and retvals.get("converged") is False:
        note = "not converged: mle_retvals['converged'] is False"
    return fitted, note


def refit_one(
    seed: np.random.SeedSequence, adapter: ModelAdapter, train: Any, n_train: int
) -> tuple[Any, str | None, str | None]:
    """(refitted model or None, error or None, non-convergence note or None) of the resample of ``seed``."""
    idx = np.random.default_rng(seed).integers(0, n_train, n_train)
    try:
        fitted, note = _fit_checked(adapter, train, idx)
    except Exception as exc:  # a failed refit is counted and reported, never silently dropped
        return None, f"{type(exc).__name__}: {exc}", None
    return fitted, None, note


def _fmes_of(
    fitted: Any, err: str | None, note: str | None, frame: pd.DataFrame, n: int, target_class: Any
) -> tuple[np.ndarray | None, str | None, str | None]:
    """fMEs of one refitted model: predictions of [X0; X1] differenced; (None, message, None) if the refit or
    its prediction failed; the third item says why the refit did not converge (None if it did)."""
    if err is not None:
        return None, err, None
    try:
        # a fresh frame per refit: a predict that modifies its input cannot leak into the next refit
        pred = make_predictor(fitted, target_class)(frame.copy(deep=False), "bootstrap refit")
    except Exception as exc:  # a failed refit is counted and reported, never silently dropped
        return None, f"{type(exc).__name__}: {exc}", None
    return pred[n:] - pred[:n], None, note


def _fmes_split(
    fitted: Any,
    err: str | None,
    note: str | None,
    frame: pd.DataFrame,
    n: int,
    target_class: Any,
    base: np.ndarray | None = None,
) -> tuple[np.ndarray | None, str | None, str | None, np.ndarray | None]:
    """As :func:`_fmes_of` with X0 and X1 predicted by separate calls, and f(X0) returned (or taken from
    ``base``): the calls sharing a :class:`RefitCache` predict the evaluation points once per refit, and the
    first call's draws equal the later ones' bit for bit."""
    if err is not None:
        return None, err, None, None
    try:
        predict = make_predictor(fitted, target_class)
        if base is None:
            base = predict(frame.iloc[:n].copy(deep=False), "bootstrap refit")
        stepped = predict(frame.iloc[n:].copy(deep=False), "bootstrap refit")
    except Exception as exc:  # a failed refit is counted and reported, never silently dropped
        return None, f"{type(exc).__name__}: {exc}", None, None
    return stepped - base, None, note, base


def _one_resample(
    seed: np.random.SeedSequence,
    adapter: ModelAdapter,
    train: Any,
    n_train: int,
    frame: pd.DataFrame,
    n: int,
    target_class: Any,
) -> tuple[np.ndarray | None, str | None, str | None]:
    """fMEs of one refit (:func:`_fmes_of` of the model refitted on the resample of ``seed``)."""
    return _fmes_of(*refit_one(seed, adapter, train, n_train), frame, n, target_class)


def _one_resample_kept(
    seed: np.random.SeedSequence,
    adapter: ModelAdapter,
    train: Any,
    n_train: int,
    frame: pd.DataFrame,
    n: int,
    target_class: Any,
) -> tuple[np.ndarray | None, str | None, str | None, np.ndarray | None, tuple[Any, str | None, str | None]]:
    """:func:`_fmes_split` of one refit, and the refit itself (model, error, note) for a :class:`RefitCache`."""
    refit = refit_one(seed, adapter, train, n_train)
    return (*_fmes_split(*refit, frame, n, target_class), refit)


def _refit_results(
    model: Any,
    spec: dict[str, Any],
    seeds: list[np.random.SeedSequence],
    args: tuple[Any, ...],
    execution: dict[str, Any],
) -> Iterator[tuple[np.ndarray | None, str | None, str | None]]:
    """(fMEs, error, note) of every resample in seed order: from the refits a ``spec["cache"]`` kept for this
    model and these resamples (only predicting), else by refitting (:func:`run_refits`), keeping them there."""
    cache: RefitCache | None = spec.get("cache")
    entry = None if cache is None else cache.entry(model, spec)
    adapter, train, n_train, frame, n, target_class = args
    B = len(seeds)
    if entry is None or not entry.keeping:
        yield from run_refits(
            _one_resample, seeds, args, n_jobs=spec["n_jobs"], backend=spec["backend"], model=model, execution=execution
        )
        return
    cache = cast(RefitCache, cache)  # entry came from it
    points = cache.points_key(frame.iloc[:n], target_class)
    if entry.complete(B):
        execution.update({"mode": "cached", "workers": 1, "reused": B})
        for b in range(B):
            fitted, err, note = entry.results[b]
            cache.reused += fitted is not None
            fmes, err, note, base = _fmes_split(fitted, err, note, frame, n, target_class, entry.base.get((points, b)))
            cache.keep_base(entry, points, b, base)
            yield fmes, err, note
        return
    refit: tuple[Any, str | None, str | None]  # (model, error, note), as refit_one gives it
    for b, (fmes, err, note, base, refit) in enumerate(
        run_refits(
            _one_resample_kept,
            seeds,
            args,
            n_jobs=spec["n_jobs"],
            backend=spec["backend"],
            model=model,
            execution=execution,
        )
    ):
        cache.keep(entry, b, *refit, B)
        cache.keep_base(entry, points, b, base)
        yield fmes, err, note


class RefitTally:
    """Which refits' results are kept, and the counts and distinct messages of the others."""

    def __init__(self, keep_nonconverged: bool) -> None:
        self.keep_nonconverged = bool(keep_nonconverged)
        self.errors: list[str] = []
        self.n_nonconverged = 0
        self.first_note: str | None = None

    def keep(self, err: str | None, note: str | None) -> bool:
        """True if the refit's result goes into the draws (``err``: its error; ``note``: non-convergence)."""
        if err is None and note is not None:
            self.n_nonconverged += 1
            self.first_note = self.first_note or note
            if self.keep_nonconverged:
                return True
            err = note
        if err is None:
            return True
        if err not in self.errors and len(self.errors) < 5:
            self.errors.append(err)
        return False


class _DrawStore:
    """Where the successful refits' results go, column by column, as they arrive.

    ``groupings is None``: the n x B per-row draws, in RAM up to ``memory_limit`` bytes, else in a
    temporary file (a memory map: the same float64 numbers, read by the OS in pages as averages need
    them). With ``groupings`` (codes, n_groups) per set: only the group averages of each refit,
    sum(n_groups) x B, computed when the refit's fMEs arrive (the n fMEs are then dropped).
    """

    def __init__(
        self, sizes: list[int], B: int, groupings: Sequence[tuple[np.ndarray, int]] | None, memory_limit: int
    ) -> None:
        self.sizes, self.B, self.n_ok = sizes, B, 0
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        if groupings is None:
            self.W = None
            # n x B per-row draws; with groupings, one G x B array per set
            self.draws: np.ndarray | list[np.ndarray] = alloc_draws(int(self.bounds[-1]), B, memory_limit)
        else:
            self.W = [group_matrix(g[0], g[1], g[2] if len(g) > 2 else None) for g in groupings]
            self.draws = [np.empty((g[1], B)) for g in groupings]

    def add(self, fmes: np.ndarray) -> None:
        j = self.n_ok
        if self.W is None:
            cast(np.ndarray, self.draws)[:, j] = fmes
        else:
            for s, W in enumerate(self.W):
                # column j of W @ draws, the same float64 sums as averaging the stored n x B draws
                cast(list[np.ndarray], self.draws)[s][:, j] = W @ fmes[self.bounds[s] : self.bounds[s + 1]]
        self.n_ok += 1

    def finish(self) -> list[np.ndarray]:
        """The draws of each set, the successful refits' columns only (contiguous, no full copy)."""
        k = self.n_ok
        if self.W is not None:
            return [np.ascontiguousarray(d[:, :k]) for d in cast(list[np.ndarray], self.draws)]
        draws = _compact(cast(np.ndarray, self.draws), k)
        return [draws[a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:])]


def _compact(draws: np.ndarray, k: int) -> np.ndarray:
    """The first k columns of a C-contiguous n x B array as a contiguous n x k view of the same buffer,
    moved in place in row batches (never a second n x B array)."""
    n, B = draws.shape
    if k == B:
        return draws
    flat = draws.reshape(-1)
    step = max(1, (1 << 20) // max(B, 1))
    for a in range(0, n, step):
        b = min(n, a + step)
        block = np.array(draws[a:b, :k])  # read before the write below can reach these rows
        flat[a * k : b * k] = block.reshape(-1)
    return flat[: n * k].reshape(n, k)


@overload
def bootstrap_rows(
    model: Any,
    pairs: Sequence[tuple[pd.DataFrame, pd.DataFrame]],
    values: Sequence[np.ndarray],
    spec: dict[str, Any],
    target_class: Any = None,
    groupings: None = None,
) -> list[RowInference]: ...


@overload
def bootstrap_rows(
    model: Any,
    pairs: Sequence[tuple[pd.DataFrame, pd.DataFrame]],
    values: Sequence[np.ndarray],
    spec: dict[str, Any],
    target_class: Any = None,
    *,
    groupings: Sequence[tuple[np.ndarray, int]],
) -> list[Estimates]: ...


def bootstrap_rows(
    model: Any,
    pairs: Sequence[tuple[pd.DataFrame, pd.DataFrame]],
    values: Sequence[np.ndarray],
    spec: dict[str, Any],
    target_class: Any = None,
    groupings: Sequence[tuple[np.ndarray, int]] | None = None,
) -> list[RowInference] | list[Estimates]:
    """Bootstrap ingredients for several sets of fMEs, all from the same refits.

    Parameters
    ----------
    model : fitted scikit-learn estimator/pipeline or statsmodels formula result
    pairs : sequence of (X0, X1)
        Evaluation points and stepped points per set (one set per AME row).
    values : sequence of ndarray
        The fitted model's fMEs per set.
    spec : dict
        From :func:`check_bootstrap`.
    target_class : label, optional
        For classifiers, as in :func:`fme.fme`.
    groupings : sequence of (codes, n_groups), optional
        When the averages are known in advance (``ame``'s overall or ``by`` rows): per set, the group
        of each row (-1: unused). Only the group averages of each refit are kept.

    Returns
    -------
    list of RowInference, or list of Estimates with ``groupings``
        ``method='bootstrap'``, one per set: the n_i x B_ok per-row draws, or the
        :meth:`RowInference.average` of them (the same numbers) for the given groups.

    Notes
    -----
    Memory: per-row draws take 8 n B bytes (n = all sets' rows, B = n_resamples). Up to
    ``spec['memory_limit']`` bytes they are held in RAM, beyond that in a temporary file mapped into
    memory (deleted with the result). With ``groupings`` only 8 B sum(n_groups) bytes are kept. Each
    refit in flight also holds its predictions for the 2 n stacked points.
    """
    from .._utils.progress import progress_bar

    adapter, train, n_train = refit_setup(model, spec)
    sizes = [len(x0) for x0, _ in pairs]
    n = int(sum(sizes))
    frame = pd.concat([x0 for x0, _ in pairs] + [x1 for _, x1 in pairs], ignore_index=True)
    B = int(spec["n_resamples"])
    seeds = np.random.SeedSequence(spec["random_state"]).spawn(B)
    store = _DrawStore(sizes, B, groupings, int(spec["memory_limit"]))
    tally = RefitTally(spec["keep_nonconverged"])
    execution: dict[str, Any] = {}
    results = _refit_results(model, spec, seeds, (adapter, train, n_train, frame, n, target_class), execution)
    # a bar on a terminal only, off with progress=False or FME_PROGRESS=0 (fme._utils.progress)
    kept = []  # which resamples (positions in the seed order) the draws' columns are: pairs two models' refits
    for b, (fmes, err, note) in enumerate(
        progress_bar(results, total=B, desc="bootstrap refits", progress=spec["progress"], leave=True)
    ):
        if tally.keep(err, note):
            store.add(fmes)
            kept.append(b)
    n_ok = store.n_ok
    n_failed = check_refits(B, n_ok, tally)
    errors = tuple(tally.errors)
    info = {
        "n_resamples": B,
        "random_state": spec["random_state"],
        "n_ok": n_ok,
        "n_nonconverged": tally.n_nonconverged,
        "memory_limit": int(spec["memory_limit"]),
        "execution": execution,
        "kept": np.asarray(kept, dtype=np.int64),
    }
    draws = store.finish()
    if groupings is not None:
        return [
            Estimates(
                "bootstrap",
                group_matrix(g[0], g[1], g[2] if len(g) > 2 else None) @ np.asarray(v, dtype=float),
                draws=d,
                ci=spec["ci"],
                n_failed=n_failed,
                errors=errors,
                n_nonconverged=tally.n_nonconverged,
            )
            for g, v, d in zip(groupings, values, draws)
        ]
    return [
        RowInference(
            "bootstrap",
            np.asarray(v, dtype=float),
            draws=d,
            ci=spec["ci"],
            n_failed=n_failed,
            errors=errors,
            info=info,
            n_nonconverged=tally.n_nonconverged,
        )
        for v, d in zip(values, draws)
    ]


def check_refits(n_resamples: int, n_ok: int, tally: RefitTally) -> int:
    """The number of failed refits (non-converged ones included unless kept); an error when fewer than two
    are left, else a :class:`BootstrapWarning` with the counts and the first message."""
    n_failed = n_resamples - n_ok
    errors, nc = tally.errors, tally.n_nonconverged
    if n_ok < 2:
        raise ModelError(
            f"{n_failed} of {n_resamples} bootstrap refits failed (first: "
            f"{errors[0] if errors else '?'}); check the training data passed in bootstrap=."
        )
    if n_failed:
        why = ""
        if nc and not tally.keep_nonconverged:
            why = (
                f", {nc} of them because the fit did not converge (pass bootstrap={{..., 'keep_nonconverged': "
                "True} to keep those)"
            )
        warn_caller(
            f"{n_failed} of {n_resamples} bootstrap refits failed and are left out{why} (first: "
            f"{errors[0] if errors else 'prediction failed'}); the intervals use the {n_ok} remaining "
            "refits.",
            BootstrapWarning,
        )
    elif nc:
        warn_caller(
            f"{nc} of {n_resamples} bootstrap refits did not converge and are kept (keep_nonconverged="
            f"True; first: {tally.first_note}).",
            BootstrapWarning,
        )
    return n_failed
