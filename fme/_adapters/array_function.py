"""A model given as a plain function of an array of the array API standard (NumPy, CuPy, PyTorch, ...).

fme's NLM bookkeeping chooses the points of each path on the host: any (row, t) pairs, x_row + t h (paper §5.4,
the path gamma(t)). The array route hands its kernels a frame of those pairs only, two numbers per point
(:data:`ROW`, :data:`T`), and :class:`ArrayPredictor` builds the points themselves in the data's namespace on the
data's device (one gather of the rows, then the stepped columns moved by t h), calls the model on that array and
brings only its predictions back to the host. f(x) and f(x + h) need no frame: :class:`Pairs` names their rows
by a slice (or their positions) and one t. The stepping is the DataFrame route's, operation for operation
(x + t h, the product first; x itself at t = 0), so the points are the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from .._utils.arrays import to_host
from .._utils.threads import MIN_CELLS_PER_THREAD, beside, rows_per_thread, run_ranges
from .predictor import Predictor

__all__ = ["ROW", "T", "is_array_function", "ArrayPredictor", "Pairs"]

#: The columns of the frames the array route's kernels predict: a row's position in the data and t on its path.
ROW, T = "row", "t"


def is_array_function(model: Any) -> bool:
    """True for a plain callable (no ``predict``/``predict_proba``): it is called with the data's own arrays."""
    if isinstance(model, Predictor) or not callable(model):
        return False
    return not any(callable(getattr(model, m, None)) for m in ("predict", "predict_proba"))


def _writeable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy where it is read-only (a frame's column under copy-on-write): PyTorch warns on every
    tensor made from a read-only NumPy array, since it cannot protect it from writes."""
    return a if a.flags.writeable else a.copy()


class _PathPoints:
    """``f(frame of (row, t)) -> host predictions``: the points x_row + t h built and predicted on the device."""

    def __init__(
        self, model: Callable[[Any], Any], values: Any, xp: Any, device: Any, columns: Sequence[int], shifts: Any
    ) -> None:
        self.model, self.values, self.xp, self.device = model, values, xp, device
        self.columns = [int(j) for j in columns]
        self.shifts = [float(s) for s in shifts]
        self.row_shift = None
        p = int(values.shape[1])
        if self.columns:
            # the steps as one row of the array's width, for namespaces whose arrays cannot be written in place
            full = np.zeros(p)
            full[self.columns] = self.shifts
            self.row_shift = xp.asarray(full, dtype=values.dtype, device=device)

    def points(self, rows: np.ndarray | slice, t: np.ndarray | float) -> Any:
        """x_row + t h in the data's namespace on its device: a fresh array (the model may write into it)."""
        if isinstance(self.values, np.ndarray):
            return self._numpy_points(rows, t)
        import array_api_compat

        xp = self.xp
        if isinstance(rows, slice):  # consecutive rows: copied on the device, no indices sent
            out = xp.asarray(self.values[rows, :], copy=True)
        else:
            out = xp.take(self.values, xp.asarray(_writeable(rows), device=self.device), axis=0)
        if isinstance(t, float):
            if t == 0.0:  # x itself, as the DataFrame route passes it
                return out
            tt: Any = t
        else:
            tt = xp.asarray(_writeable(t), dtype=self.values.dtype, device=self.device)
        if array_api_compat.is_writeable_array(out):
            for j, s in zip(self.columns, self.shifts):
                out[:, j] = out[:, j] + tt * s
            return out
        scaled = tt * self.row_shift if isinstance(t, float) else tt[:, None] * self.row_shift[None, :]
        return out + scaled

    def _numpy_points(self, rows: np.ndarray | slice, t: np.ndarray | float) -> np.ndarray:
        """:meth:`points` of a NumPy array, the same numbers: the rows gathered and their stepped columns moved by
        ranges of points on several threads (NumPy's copies and arithmetic release the GIL)."""
        values = self.values
        at: slice | np.ndarray
        if isinstance(rows, slice):
            start, stop, step = rows.indices(values.shape[0])
            at = slice(start, stop) if step == 1 else np.arange(start, stop, step)
        else:
            at = np.asarray(rows, dtype=np.intp)
        if isinstance(at, slice):  # the layout NumPy's copy of the rows keeps (order "K": a Fortran array's too)
            out = np.empty_like(values[at], order="K")
        else:  # np.take's: C order
            out = np.empty((at.shape[0], values.shape[1]), dtype=values.dtype)
        m = out.shape[0]
        moved = not (isinstance(t, float) and t == 0.0)
        tt = t if isinstance(t, float) else np.asarray(t, dtype=values.dtype)

        def fill(lo: int, hi: int) -> None:
            if isinstance(at, slice):
                np.copyto(out[lo:hi], values[at.start + lo : at.start + hi])  # at.start: an int, from indices()
            else:
                np.take(values, at[lo:hi], axis=0, out=out[lo:hi], mode="clip")  # valid rows: no-op clip, unbuffered
            if moved:
                part = tt if isinstance(tt, float) else tt[lo:hi]
                for j, s in zip(self.columns, self.shifts):
                    out[lo:hi, j] = out[lo:hi, j] + part * s

        run_ranges(fill, m, align=8, min_rows=rows_per_thread(values.shape[1]))
        return out

    def __call__(self, frame: pd.DataFrame | Pairs) -> np.ndarray:
        if isinstance(frame, Pairs):
            if frame.points is not None:  # written beforehand (beside the model's previous call)
                return to_host(self.model(frame.points))
            return to_host(self.model(self.points(frame.rows, frame.t)))
        rows = frame[ROW].to_numpy(dtype=np.int64)
        t = frame[T].to_numpy(dtype=float)
        return to_host(self.model(self.points(rows, t)))


@dataclass(frozen=True)
class Pairs:
    """Points x_row + t h named without a frame: ``rows`` (positions, or a slice of consecutive rows) and one
    ``t`` for all of them; what the array route's fMEs send (t = 0: f(x), t = 1: f(x + h))."""

    rows: np.ndarray | slice
    t: float
    #: The points themselves when they are already written (:meth:`ArrayPredictor.points_beside`).
    points: Any = None

    def __len__(self) -> int:
        if isinstance(self.rows, slice):
            return int(self.rows.stop - self.rows.start)
        return int(self.rows.size)


class ArrayPredictor(Predictor):
    """The :class:`Predictor` of the array route: called with a frame of (:data:`ROW`, :data:`T`) pairs (or
    :class:`Pairs`), it predicts the model at x_row + t h, built in the data's namespace on its device (see the
    module docstring), and validates the host predictions as any predictor does.

    Parameters
    ----------
    model : callable
        ``model(array) -> array``, called with 2-D arrays of the data's library, dtype and device.
    values : array
        The data (rows x features).
    xp, device : module, object
        The data's namespace and device.
    columns, shifts : sequences
        The stepped columns' positions and their steps h.
    description : str
        The model's description.
    library : str
        The array library's name, for messages.
    """

    def __init__(
        self,
        model: Callable[[Any], Any],
        values: Any,
        xp: Any,
        device: Any,
        columns: Sequence[int],
        shifts: Sequence[float],
        description: str,
        library: str,
    ) -> None:
        super().__init__(_PathPoints(model, values, xp, device, columns, shifts), None, None, description)
        self.accepts = f"a 2-D {library} array of the data's columns (in feature_names order) on the data's device"

    def __call__(
        self,
        frame: pd.DataFrame | Pairs,
        stage: str | None = None,
        rows: tuple[int, int, int] | None = None,
        check: bool = True,
    ) -> np.ndarray:
        """Predict the points of ``frame`` (a frame of (row, t) pairs or :class:`Pairs`) and validate."""
        return super().__call__(frame, stage, rows, check)  # type: ignore[arg-type]  # Predictor reads len() only

    def points_beside(self, pairs: Pairs) -> Callable[[], Pairs]:
        """``pairs`` with their points written on a helper thread from now on, for a caller that predicts other
        points meanwhile: the returned function waits for them. Only for a NumPy array (host memory; a device
        array's points are the device's own work, queued with the model's), and only large ones; otherwise the
        points are written when predicted. The source is the data itself, which the model never receives (each
        call gets a fresh array), so no model's writes can reach it."""
        points = cast(_PathPoints, self.func)
        big = isinstance(points.values, np.ndarray) and len(pairs) * points.values.shape[1] >= 2 * MIN_CELLS_PER_THREAD
        if not big:
            return lambda: pairs
        written = beside(lambda: points.points(pairs.rows, pairs.t))
        return lambda: Pairs(pairs.rows, pairs.t, written())
