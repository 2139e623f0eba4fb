"""The error-controlled NLM of any model at a bounded cost (paper §5.4, eq. of the NLM).

Every row starts with the 21-node Gauss-Kronrod rule on [0, 1] (its embedded 10-node Gauss rule on
the same nodes gives the error estimate), i.e. 23 predictions with f(x) and f(x + h). Then one
budget, ``budget`` predictions per evaluated row on average for the whole call (default 34: the
Gauss-Kronrod pair plus 11 per row for refinement), is spent greedily, in rounds, on the largest
error contributions of the rows whose estimate is still above ``tol``. Each row takes one of two
routes, chosen from its 23 values (``nlm_route``):

* ``quadrature``: adaptive subdivision as in QUADPACK, with jumps located. The three integrals of
  the NLM (int (f - f(x)), int (f - f(x) - c)^2 with a fixed centre c, the level-0 mean, and
  int (f - secant)^2) are sums over sub-intervals, each with its Kronrod and Gauss value and its
  two end values (f(x) and f(x + h) at level 0); NLM = 1 - N / (S2 - (S1 - c)^2). The row's
  estimate is max(|NLM_K - NLM_G|, sum of the sub-intervals' first-order contributions
  |dN_i - NLM' dD_i| / D), where each contribution also holds what a jump between two of the
  sub-interval's 23 points could do (:func:`fme._nlm.budget_routes.hidden_jumps`), plus the
  rounding of the sums. The Kronrod-Gauss difference alone is no bound on a path with a jump: a
  jump near a sub-interval's centre splits both rules' weights alike (f = 2 x1 + sin(x2) +
  3 (x3 > 0.5) + x1 x4 had rows with nlm_status "ok", nlm_error 1e-16 and true errors of 1e-4),
  and a jump between the last node and t = 1 is seen by no node (true errors up to 13). Cutting a
  sub-interval costs 43 predictions (21 nodes on each part and the value at the cut): at its
  midpoint (at most ``2**max_level`` sub-intervals per row), or, when hidden jumps make at least
  half of its contribution, inside the gap of its largest jump, which shrinks the part around the
  jump by the gap's share (about 1/27) per cut, down to a width of :data:`_MIN_WIDTH`. A row may
  cut several sub-intervals per round (those above nlm_tol / its sub-intervals).
* ``jumps``: the path's values tie exactly between neighbouring nodes (a wrapped tree model,
  any piecewise-constant predictor). Neighbours with equal values are taken as one constant
  segment; neighbours with different values bracket a jump, placed at the bracket's midpoint.
  The integrals are then closed forms over constant segments (as :mod:`fme._nlm.exact`). Probing
  a bracket cuts it; a probe equal to one end settles that part (a sum of trees along a straight
  path visits each tree's leaf once, so equal values at two points mean no jump between them but
  for an exact coincidence), a probe equal to neither end shows that the bracket held two jumps
  or more. The reported error is a bound
  (:func:`fme._nlm.budget_routes.jump_state` derives it) on the change of the NLM when every
  open bracket's jump moves anywhere inside it and, on a *dense* row, every open bracket also
  hides an excursion of at most H, the row's mean |jump| over its open brackets. Dense: more
  than :data:`_SPARSE_JUMPS` of the row's 22 level-0 intervals hold jumps, a constant piece between
  two brackets is shorter than the widest bracket (:func:`_dense`), or a probe found a third
  value. The excursion term is needed: a wrapped 100-tree
  HistGradientBoosting model has about 42 jumps per path (two-feature step), and the earlier
  bound (one jump per bracket) was below the true error on 0.2% and 0.8% of its rows at budgets
  60 and 120 (up to 13x: brackets where two opposite jumps nearly cancel, so that the ends
  agree while the path leaves them); with it, no row of 3000 at budgets 34-240 (largest
  error / bound 0.40) nor of 10^5 at budgets 34 and 60. It is an
  assumption, not a guarantee: no sampling bounds a black box, and a narrow excursion between
  two tied points is invisible to any sampling. Cost: the bound is 5-7x the one-jump bound;
  the mean error itself fell (the excursion term spreads the probes over wide brackets whose
  ends nearly agree).

A path with a jump in every level-0 interval ties nowhere among its 23 values and starts on the
quadrature route, where the Kronrod estimate of a staircase is no bound (4 of 10^5 rows of the
wrapped boosting model had errors above it). So a quadrature row's first bisection comes before any
bracket when the budget binds, and when exact ties appear between neighbouring nodes of its halves
the row moves to the jump route with all 66 values (a later cut does not move it).

Rounds: at most :data:`_MAX_ROUNDS` (:data:`_BINDING_ROUNDS` when the budget cannot give every
open bracket one probe at the start: then most rows stay above ``nlm_tol`` whatever the split, and
a predict call can be dear), each one stacked prediction (in frames of at most
:data:`~fme._nlm.path_frames.FRAME_CELLS` cells, :mod:`fme._nlm.path_frames`), because a model's ``predict`` call
can cost far more than its rows (an OpenMP region per tree). f(x) and f(x + h) come from the caller's own
predictions, never from the stacked path: a model's last bits can depend on a row's place in the frame it predicts (BLAS
kernels, SIMD tails), and a row's fME must not depend on the NLM or the batching. Round i of
R spends at most what is left / (R - i). When that covers
every candidate, each active quadrature row cuts its worst sub-intervals and every bracket of an
active jump row gets k probes ((k + 1)-section, 1 <= k <= :data:`~fme._nlm.allocation.MAX_PROBES`): as many as
would bring its contribution to nlm_tol / (brackets of its row) in the rounds left at the same k,
scaled down to the round's share; otherwise the candidates are taken greedily by error per prediction (a bracket's
contribution halves for 1 prediction; a sub-interval's mostly disappears for 43).

Which rows are refined depends on the other rows of the call when the budget binds (the worst ones
are); rows are processed in blocks of :data:`_BLOCK_ROWS` (each with its own share), which bounds the
memory whatever the number of rows. A Dask partition is its own call.

The rounds' bookkeeping (per-row sums over millions of brackets, cutting brackets at their probes) runs
compiled (:mod:`fme._nlm.bracket_kernel`): what is left beside the model's ``predict`` is about 1 s per 10^5
rows at the default budget on a wrapped boosting model (benchmarks/README.md). Level 0 (each row's level, centre,
route, Gauss-Kronrod sums and hidden jumps from its 21 node values) is one compiled pass over the predictions, and
so is the quadrature route's state (:mod:`fme._nlm.level0_kernel`); the level-0 nodes of many rows of an
all-float frame go to the model one node at a time, in one frame whose stepped columns alone are rewritten
(:mod:`fme._nlm.path_frames`), and their predictions live in one buffer per call, kept from call to call
(:mod:`fme._utils.memory`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._utils.memory import Scratch
from .._utils.progress import progress_bar
from .._utils.threads import thread_count
from ..nlm import CONSTANT_ULPS
from ..steps import Step
from .allocation import QUAD_COST, allocate
from .blocks import WG, WK, Block, BlockWork, U, start_level0
from .bracket_kernel import bracket_rowsums, gk_sums, level_seen, row_argmax, segment_rowsums, split_brackets
from .budget_routes import hidden_jumps, jump_state
from .level0_kernel import quad_state
from .path_frames import PathFrames, node_values

__all__ = ["DEFAULT_BUDGET", "BASE_COST", "ROUTES", "BudgetNLM", "budget_nlm"]

#: Default ``nlm_budget``: predictions per evaluated row on average, f(x) and f(x + h) included.
DEFAULT_BUDGET = 34.0
#: f(x), f(x + h) and the 21 Gauss-Kronrod nodes: the least budget (no refinement).
BASE_COST = 23
#: Values of ``nlm_route``.
ROUTES = ("quadrature", "jumps")
#: Refinement rounds (each one stacked prediction; a model's predict call can cost far more than its rows).
_MAX_ROUNDS = 12
#: Rounds when the budget cannot even give every open bracket one probe at the start (wrapped boosting): each
#: round is a predict call (on a loaded 2-core machine about 1 s beyond its rows for 100 trees); 3 rounds instead
#: of 4 cost 5% in mean error on the benchmark's model (2 rounds: 24%).
_BINDING_ROUNDS = 3
#: Brackets narrower than this (in t) are not bisected further.
_MIN_WIDTH = 2.0**-40
_BLOCK_ROWS = 262_144
#: A jump row with more open level-0 brackets than this is *dense* (its brackets may hide further jumps): a
#: single tree's path has a few jumps; with "more than half of the 22 intervals", 2 of 10^5 rows of the wrapped
#: 100-tree boosting model at budget 60 (at most 11 open brackets, no third value found) had errors 5% above the bound.
_SPARSE_JUMPS = 4


@dataclass
class BudgetNLM:
    """Per row (and output): ``nlm``, ``sd`` (SD of f along the path), ``err`` (the error estimate or
    bound), ``scale`` (|f(x)| + max |f - f(x)| over the values seen); per row: ``route`` (index into
    :data:`ROUTES`), ``intervals`` (quadrature sub-intervals; 0 on the jump route); ``predictions``:
    predictions made on the path (f(x) and f(x + h) counted only when computed here); ``f0``, ``f1``:
    f(x) and f(x + h) (computed here, as t = 0 and t = 1 of the path, when they were not given)."""

    nlm: np.ndarray
    sd: np.ndarray
    err: np.ndarray
    scale: np.ndarray
    route: np.ndarray
    intervals: np.ndarray
    predictions: int


def budget_nlm(
    predictor,
    X: pd.DataFrame,
    steps: tuple[Step, ...],
    h,
    f0: np.ndarray | None,
    f1: np.ndarray | None,
    tol: float,
    budget: float = DEFAULT_BUDGET,
    max_level: int = 5,
    batch_size: int | None = None,
    progress: bool | None = False,
) -> BudgetNLM:
    """Error-controlled NLMs of every row of ``X`` within ``budget`` predictions per row (paper §5.4).

    Parameters
    ----------
    predictor : fme._adapters.predictor.Predictor
        The model, called with frames of path points (``stage`` and ``rows`` enrich its errors).
    X : DataFrame
        The rows to evaluate; ``steps`` their step and ``h`` the per-row effective steps or None.
    f0, f1 : ndarray of shape (n,) or (n, C)
        f(x) and f(x + h).
    tol, budget, max_level : float, float, int
        ``nlm_tol``, ``nlm_budget`` (predictions per row on average, f(x) and f(x + h) included) and the
        deepest bisection of a quadrature sub-interval.
    batch_size : int, optional
        Rows per stacked frame of the level-0 nodes (default: frames of about
        :data:`~fme._nlm.path_frames.FRAME_CELLS` cells).

    Returns
    -------
    BudgetNLM
        See the module docstring for the routes, the estimates and the bound.
    """
    n = len(X)
    C = int(np.prod(np.shape(f0)[1:], dtype=int))
    if n == 0:
        z = np.empty((0,) if np.ndim(f0) == 1 else (0, C))
        return BudgetNLM(z, z, z, z, np.empty(0, dtype=np.int8), np.empty(0, dtype=np.int64), 0)
    starts = range(0, n, _BLOCK_ROWS)
    # the result's arrays, each block writing its rows (no per-block arrays to concatenate)
    out = BudgetNLM(
        nlm=np.empty((n, C)),
        sd=np.empty((n, C)),
        err=np.empty((n, C)),
        scale=np.empty((n, C)),
        route=np.empty(n, dtype=np.int8),
        intervals=np.empty(n, dtype=np.int64),
        predictions=0,
    )
    # the 21 nodes' predictions and level 0's other arrays in memory kept from call to call, paged in at most once
    # per call: one set, or two taken in turn where a block's level 0 runs on the spare cores beside the next
    # block's predictions (several blocks and a core to spare; the model's calls stay on this thread)
    spare = thread_count() - 1
    beside = len(starts) > 1 and spare > 0
    sets = 2 if beside else 1
    scratch = Scratch()
    room_cells = (BASE_COST - 2) * min(n, _BLOCK_ROWS) * C
    rooms = scratch.take(sets * room_cells).reshape(sets, room_cells)
    works = [BlockWork(min(n, _BLOCK_ROWS), C) for _ in range(sets)]
    label = ", ".join(s.describe() for s in steps)
    inner = progress if len(starts) == 1 else False
    f0_rows, f1_rows = np.asarray(f0, dtype=float).reshape(n, -1), np.asarray(f1, dtype=float).reshape(n, -1)
    pending = None
    for i, start in enumerate(
        progress_bar(
            starts,
            total=len(starts),
            progress=progress if len(starts) > 1 else False,
            desc="NLM Gauss-Kronrod with a budget, blocks of rows",
        )
    ):
        sl = slice(start, min(n, start + _BLOCK_ROWS))
        hb = None if h is None else {k: np.broadcast_to(np.asarray(v, dtype=float), (n,))[sl] for k, v in h.items()}
        block = Block(
            X=X.iloc[sl],
            h=hb,
            f0=f0_rows[sl],
            F=f1_rows[sl] - f0_rows[sl],
            offset=start,
            out=BudgetNLM(**{k: getattr(out, k)[sl] for k in _ROW_KEYS}, predictions=0),
            work=works[i % sets],
        )
        # level 0: the Gauss-Kronrod nodes of every row (the model, on this thread)
        block.V = node_values(predictor, block.X, steps, hb, U, batch_size, inner, start, n, label, rooms[i % sets])[0]
        if not beside:  # its level 0 on every thread, then refined: the next block writes the same memory
            block.level0 = start_level0(block, 0)
            out.predictions += _refine(block, predictor, steps, tol, budget, max_level, batch_size, inner, n, label)
            continue
        if pending is not None:
            pending.level0()  # the block before's level 0: its last chunks shared, its threads ended
        # this block's level 0 on the spare cores while this thread refines the block before (its model calls) and
        # then predicts the next block's nodes; the last block's, shared once this thread comes to wait for it
        block.level0 = start_level0(block, spare)
        if pending is not None:
            out.predictions += _refine(pending, predictor, steps, tol, budget, max_level, batch_size, inner, n, label)
        pending = block
    if pending is not None:
        out.predictions += _refine(pending, predictor, steps, tol, budget, max_level, batch_size, inner, n, label)
    del pending, rooms, block
    scratch.give_back()  # if no result refers to it
    for work in works:
        work.close()
    if np.ndim(f0) == 1:  # one output: the shape of the given f(x)
        for k in ("nlm", "sd", "err", "scale"):
            setattr(out, k, getattr(out, k)[:, 0])
    return out


def _full(V, f0, F, rows):
    """The 23 values of ``rows`` at level 0 relative to f(x) (t = 0, the 21 nodes, t = 1): (23, rows, C)."""
    z = np.zeros((1, rows.size, F.shape[1]))
    return np.concatenate([z, V[:, rows] - f0[rows][None], F[rows][None]])


#: The per-row arrays of a :class:`BudgetNLM`.
_ROW_KEYS = ("nlm", "sd", "err", "scale", "route", "intervals")


def _refine(block, predictor, steps, tol, budget, max_level, batch_size, progress, total, label):
    """The budgeted NLM of ``block`` from its level 0, refined within its budget, written into its views of the
    result's arrays (``block.out``). Returns the predictions made on its paths."""
    X, h, f0, F, V, offset, out = block.X, block.h, block.f0, block.F, block.V, block.offset, block.out
    n, C = len(X), f0.shape[1]
    paths = PathFrames(predictor, X, steps, h, label)
    if batch_size:  # a refinement frame as large as a batch of the 21 nodes
        paths.set_chunk(batch_size * 21)
    u, wk, wg = U, WK, WG
    k = u.size
    scale, c, jumps, K0, G0, P0, cut0, iso0 = block.level0()
    route = out.route
    route[:] = jumps
    # ------------------------------------------------ quadrature route: one interval per row
    qrows = np.flatnonzero(~jumps)
    every = qrows.size == n  # every row on the quadrature route: the level-0 arrays are taken as they are
    pick = (lambda x: x) if every else (lambda x: x[qrows])
    Q = {
        "r": qrows,
        "a": np.zeros(qrows.size),
        "b": np.ones(qrows.size),
        "depth": np.zeros(qrows.size, np.int64),
        "va": np.zeros((qrows.size, C)),
        "vb": F[qrows],
        "K": pick(K0),
        "G": pick(G0),
        "P": pick(P0),
        "cut": pick(cut0),
        "iso": pick(iso0),
    }
    del K0, G0, P0, cut0, iso0
    # ------------------------------------------------ jump route: settled segments and open brackets
    jrows = np.flatnonzero(jumps)
    tfull = np.r_[0.0, u, 1.0]
    settled, B, tj = _pieces(tfull, _full(V, f0, F, jrows), jrows, c, F, n)
    # per-row sums of the open brackets with their jumps at the midpoints: kept up to date as brackets are cut
    # (the rounds' states), recomputed from scratch for the result
    B["sums"] = _open_sums(B, c, F, n)
    # dense rows: more than _SPARSE_JUMPS open level-0 brackets, or a probe found a third value inside a
    # bracket; their open brackets may hide further jumps
    dense = np.zeros(n, dtype=bool)
    dense[jrows] = _dense(tfull, tj)
    # the quadrature rows' level-0 values (V) stay at hand: a path with a jump in every level-0 interval ties
    # nowhere there, but its first bisection's 43 values show it (then it moves to the jump route with all 66
    # values)
    made = 0
    left = max(0.0, (float(budget) - BASE_COST) * n)
    rounds = _MAX_ROUNDS
    fresh = None  # the state of round 0 while nothing is predicted: then it is the result's state
    for rnd in range(_MAX_ROUNDS):
        if rnd >= rounds or left < 1:
            break
        # round 0 writes the result's own arrays (its state is the result's when nothing is refined)
        first = block.work.state(n, out.nlm, out.err) if rnd == 0 else None
        nlm, err, qe, be, D = _state(n, C, c, F, scale, jumps, Q, settled, B, dense, into=first)
        fresh = nlm, err, D
        active = np.any(err > tol, axis=1)
        qworst, qcand = _worst_intervals(Q, active, max_level, tol)
        bcand = np.flatnonzero(active[B["r"]] & (B["b"] - B["a"] > _MIN_WIDTH))
        cost_all = QUAD_COST * qcand.size + bcand.size
        if cost_all == 0:
            break
        if rnd == 0 and QUAD_COST * qworst.size + bcand.size > left:
            # the budget cannot give every open bracket one probe: the rows will mostly stay above nlm_tol,
            # and further rounds would only bisect the few worst brackets again; fewer, larger rounds
            rounds = _BINDING_ROUNDS
        qpick, bpick, kk = allocate(
            left / (rounds - rnd),
            left,
            rounds - rnd,
            qcand,
            bcand,
            qe,
            be,
            B["r"],
            n,
            tol,
            (Q["a"][qcand] == 0.0) & (Q["b"][qcand] == 1.0),
        )
        if qpick.size + bpick.size == 0:
            break
        # one stacked prediction for the round: 2 x 21 nodes and the cut per sub-interval, kk points per bracket
        fresh = None
        qa_p, qb_p = Q["a"][qpick], Q["b"][qpick]
        qm = _cut_points(Q, qpick, max_level)
        halves_a, halves_b = np.r_[qa_p, qm], np.r_[qm, qb_p]
        hrows = np.r_[Q["r"][qpick], Q["r"][qpick]]
        tq = np.r_[(halves_a[None, :] + np.outer(u, halves_b - halves_a)).ravel(), qm]
        rq = np.r_[np.tile(hrows, k), Q["r"][qpick]]
        grp = np.repeat(np.arange(bpick.size), kk)  # probe j = 1..k of bracket i at a + j (b - a) / (k + 1)
        j = np.arange(grp.size) - (np.cumsum(kk) - kk)[grp] + 1
        a_p, b_p = B["a"][bpick], B["b"][bpick]
        tb = a_p[grp] + j / (kk[grp] + 1.0) * (b_p - a_p)[grp]
        rows_all = np.r_[rq, B["r"][bpick][grp]]
        vals = (
            paths.predict(
                rows_all, np.r_[tq, tb], C, offset, total, progress=progress, desc=f"NLM refinement, round {rnd + 1}"
            )
            - f0[rows_all]
        )
        made += rows_all.size
        left -= rows_all.size
        level_seen(scale, rows_all, vals, f0)  # the path's level seen so far
        if qpick.size:
            p = qpick.size
            Vq = vals[: k * 2 * p].reshape(k, hrows.size, C)
            vm = vals[k * 2 * p : rq.size]
            whole = (qa_p == 0.0) & (qb_p == 1.0) & (qm == 0.5)  # first bisections
            _split_intervals(Q, qpick, halves_a, halves_b, hrows, Vq, vm, u, wk, wg, c, F, scale)
            tie = np.all(Vq[1:] == Vq[:-1], axis=2)
            conv = np.flatnonzero(whole & (tie[:, :p].any(axis=0) | tie[:, p:].any(axis=0)))
            if conv.size:
                rows_c = hrows[conv]
                t_all = np.r_[tfull, 0.5 * u, 0.5, 0.5 + 0.5 * u]
                order = np.argsort(t_all, kind="stable")
                v_all = np.concatenate([_full(V, f0, F, rows_c), Vq[:, conv], vm[None, conv], Vq[:, p + conv]])[order]
                done, Bc, tc = _pieces(t_all[order], v_all, rows_c, c, F, n)
                settled += done
                Bc["sums"] = _open_sums(Bc, c, F, n)
                for key, v in Bc.items():
                    B[key] = B[key] + v if key == "sums" else np.concatenate([B[key], v])
                dense[rows_c] = _dense(t_all[order], tc)
                jumps[rows_c] = True
                route[rows_c] = 1
                keepq = ~np.isin(Q["r"], rows_c)
                for key in _QKEYS:
                    Q[key] = Q[key][keepq]
        if bpick.size:  # cut the brackets at their probes (compiled; updates B, settled and dense in place)
            split_brackets(B, bpick, kk, tb, vals[rq.size :], c, F, settled, dense)
    if fresh is None or made:
        B["sums"] = _open_sums(B, c, F, n)
        nlm, err, qe, be, D = _state(n, C, c, F, scale, jumps, Q, settled, B, dense, shares=False)
    else:  # nothing refined: the state of level 0 read the sums as computed from scratch, it is the result's
        nlm, err, D = fresh
    for dst, src in ((out.nlm, nlm), (out.err, err)):
        if src is not dst:  # the state of a later round, or of rows on the jump route
            dst[:] = src
    np.sqrt(np.maximum(D, 0.0, out=out.sd), out=out.sd)
    out.intervals[:] = np.bincount(Q["r"], minlength=n)
    return made + k * n


#: Per sub-interval arrays of the quadrature route.
_QKEYS = ("r", "a", "b", "depth", "K", "G", "va", "vb", "P", "cut", "iso")


def _at_jump(Q, max_level, pick=slice(None)):
    """The sub-intervals to cut inside a jump's gap: hidden jumps make at least half of their contribution (their
    Kronrod-Gauss difference does not see a jump) and the jump is isolated or bisection has reached
    ``max_level``; while wider than :data:`_MIN_WIDTH`."""
    jumpy = np.isfinite(Q["cut"][pick]) & (Q["ej"][pick] >= 0.5 * Q["e"][pick])
    return jumpy & (Q["iso"][pick] | (Q["depth"][pick] >= max_level)) & (Q["b"][pick] - Q["a"][pick] > _MIN_WIDTH)


def _cuttable(Q, max_level):
    """Sub-intervals that may be cut: by bisection up to ``max_level``, or inside a jump's gap."""
    return _at_jump(Q, max_level) | (Q["depth"] < max_level)


def _cut_points(Q, pick, max_level):
    """Where to cut the picked sub-intervals: inside a jump's gap (:func:`_at_jump`), else at the midpoint
    (QUADPACK's bisection)."""
    return np.where(_at_jump(Q, max_level, pick), Q["cut"][pick], 0.5 * (Q["a"][pick] + Q["b"][pick]))


def _worst_intervals(Q, active, max_level, tol):
    """The sub-interval with the largest contribution of every active quadrature row, if it may be cut; and
    the candidates of the round: those and every other cuttable sub-interval of an active row whose
    contribution exceeds nlm_tol / (the row's sub-intervals), which a path with several jumps needs (one cut
    per row and round would leave all but 12 of its jumps inside their sub-intervals whatever the budget)."""
    qr = Q["r"]
    if not qr.size or not active.any():  # nothing to cut (smooth paths within nlm_tol at level 0)
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    ok = _cuttable(Q, max_level) & active[qr]
    worst = row_argmax(qr, Q["e"], active.size)  # rows ascending; the first sub-interval among equal ones
    worst = worst[ok[worst]]
    count = np.bincount(qr, minlength=active.size)
    more = ok & (Q["e"] > tol / count[qr])
    more[worst] = True
    return worst, np.flatnonzero(more)


def _pieces(t, vals, rows, c, F, n):
    """Rows whose path values ``vals`` (P, m, C) are known at the sorted points ``t`` (P,), the same for all
    ``rows`` (m,): per-row sums (n, 3, C) of the constant segments (tied neighbours), the open brackets (the
    other neighbours) and the ties (P - 1, m)."""
    tied = np.all(vals[1:] == vals[:-1], axis=2)
    pi, pj = np.nonzero(tied)
    rr = rows[pj]
    settled = segment_rowsums(rr, t[:-1][pi], t[1:][pi], vals[pi, pj], c, F, n)
    # brackets row by row (a row's brackets adjacent): the rounds' cuts then read and update their rows' sums
    # in memory order
    bj, bi = np.nonzero(~tied.T)
    B = {"r": rows[bj], "a": t[:-1][bi], "b": t[1:][bi], "l": vals[bi, bj], "rt": vals[bi + 1, bj]}
    return settled, B, tied


def _dense(t: np.ndarray, tied: np.ndarray) -> np.ndarray:
    """Rows (columns of ``tied`` (P - 1, m), the ties between neighbours at the points ``t``) whose open brackets
    may hide further jumps: more than :data:`_SPARSE_JUMPS` of them, or a constant piece between two brackets
    shorter than the widest bracket (pieces that short fit inside a bracket: a wrapped KNeighborsRegressor
    had two jumps 0.026 apart in one bracket of 0.065, the path leaving both its ends, 1.1x the one-jump bound)."""
    w = np.diff(t)
    opened = ~tied
    widest = np.where(opened, w[:, None], 0.0).max(axis=0)
    run = np.zeros(tied.shape[1])
    after_open = np.zeros(tied.shape[1], dtype=bool)
    shortest = np.full(tied.shape[1], np.inf)
    for i in range(tied.shape[0]):  # the P - 1 intervals, element-wise over the rows
        ends = opened[i] & after_open & (run > 0)
        shortest[ends] = np.minimum(shortest[ends], run[ends])
        run = np.where(opened[i], 0.0, run + w[i])
        after_open |= opened[i]
    return (opened.sum(axis=0) > _SPARSE_JUMPS) | (shortest < widest)


def _split_intervals(Q, qpick, halves_a, halves_b, hrows, Vq, vm, u, wk, wg, c, F, scale):
    """Replace each picked sub-interval by its left part and append the right parts (21 nodes each; ``vm`` the
    values at the cuts). A bisection deepens both parts by one level; a cut at a jump does not (the part
    around the jump shrinks by the gap's share, about 1/27, and the cut is bounded by its width instead)."""
    hK, hG = gk_sums(Vq, u, wk, wg, halves_a, halves_b, c[hrows], F[hrows])
    p = qpick.size
    va = np.concatenate([Q["va"][qpick], vm])
    vb = np.concatenate([vm, Q["vb"][qpick]])
    hP, hcut, hiso = hidden_jumps(
        np.concatenate([va[None], Vq, vb[None]]), halves_a, halves_b, c[hrows], F[hrows], scale[hrows]
    )
    bisected = halves_b[:p] == 0.5 * (Q["a"][qpick] + Q["b"][qpick])
    Q["depth"][qpick] += bisected
    new = {
        "r": hrows[p:],
        "a": halves_a[p:],
        "b": halves_b[p:],
        "depth": Q["depth"][qpick],
        "K": hK[p:],
        "G": hG[p:],
        "va": va[p:],
        "vb": vb[p:],
        "P": hP[p:],
        "cut": hcut[p:],
        "iso": hiso[p:],
    }
    for key, v in (
        ("a", halves_a),
        ("b", halves_b),
        ("K", hK),
        ("G", hG),
        ("va", va),
        ("vb", vb),
        ("P", hP),
        ("cut", hcut),
        ("iso", hiso),
    ):
        Q[key][qpick] = v[:p]
    for key in _QKEYS:
        Q[key] = np.concatenate([Q[key], new[key]])


def _open_sums(B, c, F, n):
    """Per-row (S1, S2, N) of the open brackets ``B`` with their jumps at the midpoints, (n, 3, C)."""
    return bracket_rowsums(B["r"], B["a"], B["b"], B["l"], B["rt"], c, F, np.zeros((n, 3, c.shape[1])))


def _state(n, C, c, F, scale, jumps, Q, settled, B, dense, shares=True, into=None):
    """Per row NLM, error (n, C) and D; per sub-interval (``Q["e"]``) and per bracket error contributions.
    ``into``: the arrays ``(nlm, err, D, qe, qh)`` the quadrature state is written into when the sub-intervals
    are the rows themselves (:class:`~fme._nlm.blocks.BlockWork`)."""
    be = np.zeros(B["r"].size)
    if Q["r"].size and not jumps.any():
        # every row on the quadrature route (smooth paths): the kernel's per-row arrays are the state as they are,
        # without three masked gathers and scatters over every row
        nlm, err, D, qe, Q["ej"] = quad_state(n, c, scale, Q["r"], Q["K"], Q["G"], Q["P"], CONSTANT_ULPS, out=into)
        Q["e"] = qe
        return nlm, err, qe, be, D
    nlm = np.full((n, C), np.nan)
    err = np.zeros((n, C))
    D = np.zeros((n, C))
    qe = np.zeros(Q["r"].size)
    Q["ej"] = np.zeros(Q["r"].size)
    if Q["r"].size:
        v, e, d, qe, Q["ej"] = quad_state(n, c, scale, Q["r"], Q["K"], Q["G"], Q["P"], CONSTANT_ULPS)
        rows = ~jumps
        nlm[rows], err[rows], D[rows] = v[rows], e[rows], d[rows]
    if jumps.any():
        v, e, d, be = jump_state(
            n, c, F, scale, settled + B["sums"], B["r"], B["a"], B["b"], B["l"], B["rt"], dense, shares
        )
        nlm[jumps], err[jumps], D[jumps] = v[jumps], e[jumps], d[jumps]
    Q["e"] = qe
    return nlm, err, qe, be, D
