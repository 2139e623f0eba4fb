"""The points of the NLM's paths that :mod:`fme._nlm.budget` sends to the model (paper §5.4).

Two kinds of frames: the level-0 nodes of every row at once (:func:`node_values`, the 21 Gauss-Kronrod nodes
stacked by :func:`fme.steps.stack_path`), and the refinement points of a round, any (row, t) pairs
(:class:`PathFrames`): x + t h as one float block per frame. Frames hold at most :data:`FRAME_CELLS` cells,
because a model's ``predict`` call can cost far more than its rows (an OpenMP region per tree).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._utils.progress import progress_bar
from .._utils.threads import rows_per_thread, run_ranges
from ..steps import STACK_CELL_BUDGET, Step, all_float, numeric_shift, stack_path

__all__ = ["FRAME_CELLS", "PathFrames", "node_buffer", "node_values"]

#: Cells (rows x columns) of one frame sent to ``predict``: 8 x the kernel's frames (256 MB of floats), so that
#: 10^5 rows' 23 path points go in one call (a call can cost far more than its rows: an OpenMP region per tree).
FRAME_CELLS = 8 * STACK_CELL_BUDGET


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
            # (columns, points) in C order: the frame wraps it as one float block, no copy by pandas
            arr = self.base.T[:, rows]
            for f, s in self.shift.items():
                arr[self.col[f]] = self.x[f][rows] + t * s[rows]
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


def node_buffer(
    X: pd.DataFrame, rows: int, batch_size: int | None, outputs: int, n_nodes: int = 21
) -> dict[str, np.ndarray | None]:
    """Buffers for :func:`node_values` on blocks of at most ``rows`` rows of ``X``: ``"frames"`` for its frames
    (None unless every column is float: :func:`fme.steps.stack_path` builds other frames column by column) and
    ``"values"`` for its predictions (``outputs`` per point). Reused block after block: fresh memory of this size is
    paged in once per call (on a virtual machine a fresh page can cost far more than writing it)."""
    frames = None
    if rows and all_float(X):
        frames = np.empty(X.shape[1] * n_nodes * min(rows, _frame_rows(X, n_nodes, batch_size)))
    return {"frames": frames, "values": np.empty(n_nodes * rows * outputs)}


def node_values(predictor, X, steps, h, ts, batch_size, progress, offset, total, label, buffer=None):
    """Predictions at x + t h for every t in ``ts``, shape (ts.size, n, C), and the model's own output ndim.

    ``buffer``: :func:`node_buffer`'s memory, for every frame (reused frame after frame: each frame is written in
    full before its predict call) and for the predictions (the returned array then shares it)."""
    n = len(X)
    size = _frame_rows(X, ts.size, batch_size)
    V, ndim = None, 1
    bstarts = range(0, n, size)
    desc = "NLM Gauss-Kronrod, 21 nodes"
    for start in progress_bar(bstarts, total=len(bstarts), progress=progress, desc=desc):
        sl = slice(start, min(n, start + size))
        hb = None if h is None else {f: v[sl] for f, v in h.items()}
        got = np.asarray(
            predictor(
                stack_path(X.iloc[sl], steps, ts, hb, None if buffer is None else buffer["frames"]),
                stage=f"the NLM nodes x + t h for the step {label}",
                rows=(offset + start, offset + sl.stop, total),
            ),
            dtype=float,
        )
        ndim = got.ndim
        got = got.reshape(ts.size, sl.stop - start, -1)
        if V is None:
            shape = (ts.size, n, got.shape[2])
            room = None if buffer is None else buffer["values"]
            cells = shape[0] * shape[1] * shape[2]
            V = room[:cells].reshape(shape) if room is not None and room.size >= cells else np.empty(shape)
        dst = V[:, sl]
        per_row = ts.size * got.shape[2]
        run_ranges(lambda lo, hi: np.copyto(dst[:, lo:hi], got[:, lo:hi]), len(got[0]), 8, rows_per_thread(per_row))
    return V, ndim
