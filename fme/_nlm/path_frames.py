"""The points of the NLM's paths that :mod:`fme._nlm.budget` sends to the model (paper §5.4).

Two kinds of frames: the level-0 nodes of every row at once (:func:`node_values`, the 21 Gauss-Kronrod nodes),
and the refinement points of a round, any (row, t) pairs (:class:`PathFrames`): x + t h as one float block per
frame. Frames hold at most :data:`FRAME_CELLS` cells, because a model's ``predict`` call can cost far more than
its rows (an OpenMP region per tree).

The level-0 nodes of an all-float frame go to the model one node at a time once a call has at least
:data:`NODE_BY_NODE_ROWS` rows: one frame of the rows, its unmoved columns written once and its stepped columns
rewritten as x + t h before each node's call (about 30 cells written per row for 10 features instead of 210, and a
frame the model reads from the cache rather than from memory). Below that, and for other frames, the nodes are
stacked into one frame (:func:`fme.steps.stack_path`), fewer calls for few rows. Each point is the same
floating-point number either way (t h + x as :func:`~fme.steps.stack_path` writes it), and the frame is rewritten
only while nothing but fme refers to it (:class:`fme._utils.memory.Scratch`): a model that keeps its input keeps it
as it was handed. While the model runs a second pandas object shares the frame's block, so that a model writing
into its input writes into a copy (pandas' copy-on-write), not into the unmoved columns; without copy-on-write
(pandas 2 without the option) the nodes are stacked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._utils.memory import Scratch, copy_on_write
from .._utils.progress import progress_bar
from .._utils.threads import rows_per_thread, run_ranges
from ..steps import STACK_CELL_BUDGET, Step, all_float, column_shifts, numeric_shift, stack_path, write_path_points

__all__ = ["FRAME_CELLS", "NODE_BY_NODE_ROWS", "PathFrames", "node_values"]

#: Cells (rows x columns) of one frame sent to ``predict``: 8 x the kernel's frames (256 MB of floats), so that
#: 10^5 rows' 23 path points go in one call (a call can cost far more than its rows: an OpenMP region per tree).
FRAME_CELLS = 8 * STACK_CELL_BUDGET

#: Rows per call from which the level-0 nodes of an all-float frame go to the model one node at a time: enough
#: rows that a call's own cost (validation, an OpenMP region) stays small beside its rows'.
NODE_BY_NODE_ROWS = 32_768


class PathFrames:
    """The path geometry of a block of rows: point frames x + t h for any (row, t), one float block each."""

    def __init__(self, predictor, X: pd.DataFrame, steps: tuple[Step, ...], h, label: str):
        self.predictor, self.X, self.steps, self.h, self.label = predictor, X, steps, h, label
        n = len(X)
        self.shift = {
            s.feature: np.broadcast_to(np.asarray(numeric_shift(s, h), dtype=float), (n,))
            for s in steps
            if s.is_numeric
        }
        self.x = {f: X[f].to_numpy(dtype=float) for f in self.shift}
        self.col = {f: X.columns.get_loc(f) for f in self.shift}
        self.base = X.to_numpy(dtype=float) if all_float(X) else None
        self.chunk = max(1000, FRAME_CELLS // max(1, X.shape[1]))

    def set_chunk(self, points: int) -> None:
        self.chunk = max(1, int(points))

    def frame(self, rows: np.ndarray, t: np.ndarray) -> pd.DataFrame:
        if self.base is not None:
            # (columns, points) in C order: the frame wraps it as one float block, no copy by pandas; the points
            # gathered by ranges on several threads (NumPy's take and arithmetic release the GIL), each point
            # x_row + (t s_row), the same numbers on any number of threads
            base_t = self.base.T
            p = base_t.shape[0]
            arr = np.empty((p, rows.size))
            moved = {self.col[f]: (self.x[f], s) for f, s in self.shift.items()}

            def fill(lo: int, hi: int) -> None:
                r = rows[lo:hi]
                for j in range(p):
                    if j not in moved:
                        np.take(base_t[j], r, out=arr[j, lo:hi], mode="clip")  # valid rows: clip is a no-op
                for j, (x, s) in moved.items():
                    np.add(x[r], t[lo:hi] * s[r], out=arr[j, lo:hi])

            run_ranges(fill, rows.size, align=8, min_rows=rows_per_thread(p))
            return pd.DataFrame(arr.T, columns=self.X.columns, copy=False)
        out = self.X.take(rows)
        out.index = pd.RangeIndex(rows.size)
        for f, s in self.shift.items():
            out[f] = self.x[f][rows] + t * s[rows]
        return out

    def predict(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        C: int,
        offset: int,
        total: int,
        progress: bool | None = False,
        desc: str = "",
    ) -> np.ndarray:
        out = np.empty((rows.size, C))
        starts = range(0, rows.size, self.chunk)
        for start in progress_bar(starts, total=len(starts), progress=progress, desc=desc):  # frames of points
            sl = slice(start, start + self.chunk)
            r = rows[sl]
            v = self.predictor(
                self.frame(r, t[sl]),
                stage=f"the NLM's refinement points x + t h for the step {self.label}",
                rows=(offset + int(r.min()), offset + int(r.max()) + 1, total),
            )
            out[sl] = np.asarray(v, dtype=float).reshape(r.size, C)
        return out


def _frame_rows(X: pd.DataFrame, n_nodes: int, batch_size: int | None) -> int:
    return batch_size or max(1000, FRAME_CELLS // max(1, X.shape[1] * n_nodes))


def _node_rows(X: pd.DataFrame, n_nodes: int, batch_size: int | None) -> int:
    """Rows per call of the nodes one at a time (the points of a stacked frame of :func:`_frame_rows` rows, at
    most the block's rows), or 0 where the nodes are stacked: a frame not all float, or fewer rows per call than
    :data:`NODE_BY_NODE_ROWS`."""
    rows = min(len(X), _frame_rows(X, n_nodes, batch_size) * n_nodes)
    # the unmoved columns outlive a call: only pandas' copy-on-write keeps a model's writes into its input off them
    return rows if all_float(X) and rows >= NODE_BY_NODE_ROWS and copy_on_write() else 0


def node_values(predictor, X, steps, h, ts, batch_size, progress, offset, total, label, room=None):
    """Predictions at x + t h for every t in ``ts``, shape (ts.size, n, C), and the model's own output ndim.

    ``room``: a 1-D float array for the predictions, reused block after block by the caller (the returned array
    then shares it, when it is large enough). An all-float frame is written into memory of :mod:`fme._utils.memory`,
    the same for every frame of the call while the model keeps no reference to the last one (each frame is written
    in full before its predict call)."""
    n = len(X)
    stage = f"the NLM nodes x + t h for the step {label}"
    desc = "NLM Gauss-Kronrod, 21 nodes"
    per_call = _node_rows(X, ts.size, batch_size)
    if per_call:
        return _one_node_at_a_time(predictor, X, steps, h, ts, per_call, progress, offset, total, stage, desc, room)
    size = _frame_rows(X, ts.size, batch_size)
    V, ndim = None, 1
    scratch = Scratch() if all_float(X) else None
    mem = None
    bstarts = range(0, n, size)
    for start in progress_bar(bstarts, total=len(bstarts), progress=progress, desc=desc):
        sl = slice(start, min(n, start + size))
        hb = None if h is None else {f: v[sl] for f, v in h.items()}
        if scratch is not None and mem is None:
            mem = scratch.take(X.shape[1] * ts.size * min(n, size))
        frame = stack_path(X.iloc[sl], steps, ts, hb, mem)
        got = np.asarray(predictor(frame, stage=stage, rows=(offset + start, offset + sl.stop, total)), dtype=float)
        del frame
        ndim = got.ndim
        got = got.reshape(ts.size, sl.stop - start, -1)
        if V is None:
            V = _values_room(room, (ts.size, n, got.shape[2]))
        _copy_rows(V[:, sl], got)
        del got  # copied into V
        if scratch is not None and scratch.shared(views=1):
            # the model kept its input (or a view of it): the next frame is written into fresh memory
            scratch, mem = Scratch(), None
    if scratch is not None:
        del mem
        scratch.give_back()
    return V, ndim


def _copy_rows(dst: np.ndarray, got: np.ndarray) -> None:
    """``dst[:] = got`` of (nodes, rows, outputs) arrays, row ranges on several threads."""
    per_row = got.shape[0] * got.shape[2]
    run_ranges(lambda lo, hi: np.copyto(dst[:, lo:hi], got[:, lo:hi]), got.shape[1], 8, rows_per_thread(per_row))


def _values_room(room: np.ndarray | None, shape: tuple[int, int, int]) -> np.ndarray:
    cells = shape[0] * shape[1] * shape[2]
    return room[:cells].reshape(shape) if room is not None and room.size >= cells else np.empty(shape)


def _one_node_at_a_time(predictor, X, steps, h, ts, per_call, progress, offset, total, stage, desc, room):
    """:func:`node_values` of an all-float ``X``, node by node: per chunk of ``per_call`` rows one frame (columns x
    rows, pandas' block layout), its unmoved columns written once and its stepped ones as t h + x before each node's
    call; in fresh memory again after a call whose model kept a reference to the frame."""
    n = len(X)
    base_all = X.to_numpy(dtype=float).T
    shifts_all = column_shifts(X, steps, h, n)
    V, ndim = None, 1
    starts = range(0, n, per_call)
    for start in progress_bar(starts, total=len(starts), progress=progress, desc=desc):
        stop = min(n, start + per_call)
        m = stop - start
        base = base_all[:, start:stop]
        shifts = {j: [s[start:stop] for s in ss] for j, ss in shifts_all.items()}
        scratch = Scratch()
        mem = _frame_memory(scratch, base, shifts)
        for k, t in enumerate(ts):
            _write_moved(mem, base, shifts, float(t))
            frame = pd.DataFrame(mem.T, columns=X.columns, copy=False)
            # a second pandas reference to the block while the model runs: a model writing into its input then
            # writes into a copy (copy-on-write), not into the unmoved columns the next nodes reuse
            guard = frame.copy(deep=False)
            got = np.asarray(predictor(frame, stage=stage, rows=(offset + start, offset + stop, total)), dtype=float)
            del frame, guard
            ndim = got.ndim
            if V is None:
                V = _values_room(room, (ts.size, n, got.size // max(1, m)))
            V[k, start:stop] = got.reshape(m, -1)
            del got  # copied into V
            if k + 1 < ts.size and scratch.shared(views=1):
                # the model kept its input (or a view of it): the next node is written into fresh memory
                scratch = Scratch()
                mem = _frame_memory(scratch, base, shifts)
        del mem
        scratch.give_back()
    return V, ndim


def _frame_memory(scratch: Scratch, base: np.ndarray, shifts: dict[int, list[np.ndarray]]) -> np.ndarray:
    """A (columns, rows) float frame of ``base``'s shape in ``scratch``'s memory, its unmoved columns written
    (row ranges on several threads)."""
    p, m = base.shape
    mem = scratch.take(p * m).reshape(p, m)

    def fill(lo: int, hi: int) -> None:
        for j in range(p):
            if j not in shifts:
                mem[j, lo:hi] = base[j, lo:hi]

    run_ranges(fill, m, align=8, min_rows=rows_per_thread(p))
    return mem


def _write_moved(mem: np.ndarray, base: np.ndarray, shifts: dict[int, list[np.ndarray]], t: float) -> None:
    """The stepped columns of ``mem`` at ``t``: t h + x, as :func:`fme.steps.stack_path` writes each node's."""

    def fill(lo: int, hi: int) -> None:
        for j, ss in shifts.items():
            write_path_points(mem[j, lo:hi], base[j, lo:hi], [s[lo:hi] for s in ss], t)

    run_ranges(fill, mem.shape[1], align=8, min_rows=rows_per_thread(len(shifts)))
