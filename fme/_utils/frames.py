"""How fme's result tables print: the estimate and its interval first, within the display width.

A table of estimates (:func:`fme.ame`, the ``avg_*`` verbs, :func:`fme.hypotheses`, a cAME partition's
``leaves``) has a dozen columns or more. Printed by pandas at its default width (``display.width``, 80
characters) the middle ones hide behind ``...``, and those are where the estimate, its standard error and
its interval stand. :class:`ReadableFrame` changes the printed view only: its repr and ``to_string`` show
the label columns, then the estimate, ``conf_low``, ``conf_high``, ``std_error`` and ``p_value``, then the
rest; the frame's own columns keep their order (``list(t.columns)``, ``t.iloc``, ``t.to_csv()``).

When the columns do not fit the width, the repr keeps those that do, the label and estimate columns always,
and names the others in a line at the end instead of eliding them with ``...``.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

import pandas as pd

from .numfmt import count

__all__ = ["ReadableFrame", "ESTIMATE_COLUMNS", "LEAD_COLUMNS", "display_order"]

#: Names of the estimate column, by table: :func:`fme.ame`, the other verbs and hypotheses, cAME leaves.
ESTIMATE_COLUMNS = ("ame", "estimate", "came")
#: The columns printed right after the estimate, in this order, when a table has them.
LEAD_COLUMNS = ("conf_low", "conf_high", "std_error", "p_value")


def display_order(columns: list[Any]) -> list[Any]:
    """The order in which a table of estimates prints ``columns``.

    The labels (every column before the estimate: step, term, ``by`` columns, level, class, hypothesis,
    node ...), then the estimate and :data:`LEAD_COLUMNS`, then the rest in their own order. A table without
    an estimate column (:data:`ESTIMATE_COLUMNS`) keeps its order.
    """
    first = next((i for i, c in enumerate(columns) if isinstance(c, str) and c in ESTIMATE_COLUMNS), None)
    if first is None:
        return list(columns)
    head = [*columns[:first], columns[first]]
    head += [c for c in LEAD_COLUMNS if c in columns and c not in head]
    return head + [c for c in columns if c not in head]


def _widest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


class ReadableFrame(pd.DataFrame):
    """A DataFrame that prints its estimate and interval first (:func:`display_order`) and fits the width.

    Only the printed view changes; see the module's description.
    """

    @property
    def _constructor(self) -> type[ReadableFrame]:
        return ReadableFrame

    def _display_view(self) -> pd.DataFrame:
        """A plain frame of the columns in :func:`display_order` (labels repeated: as they are)."""
        order = display_order(list(self.columns))
        if not self.columns.is_unique or order == list(self.columns):
            return pd.DataFrame(self)
        return pd.DataFrame(self).iloc[:, [self.columns.get_loc(c) for c in order]]

    def to_string(self, *args: Any, **kwargs: Any) -> Any:
        """As :meth:`pandas.DataFrame.to_string`, with the columns in :func:`display_order` unless ``columns=``
        names them."""
        if len(args) >= 2 or kwargs.get("columns") is not None:
            return pd.DataFrame(self).to_string(*args, **kwargs)
        return self._display_view().to_string(*args, **kwargs)

    def __repr__(self) -> str:
        from pandas.io.formats.format import get_dataframe_repr_params

        if self._info_repr() or not self.columns.is_unique:  # pandas' own view: by option, or ambiguous labels
            return super().__repr__()
        params = get_dataframe_repr_params()
        view = self._display_view()
        max_cols = params["max_cols"]
        # pandas fits a terminal's width when display.max_columns is 0, else it wraps at display.width
        width = shutil.get_terminal_size().columns if max_cols == 0 else params["line_width"]
        unwrapped = {**params, "max_cols": None, "line_width": None}

        def fits(frame: pd.DataFrame) -> bool:
            return width is None or _widest_line(frame.to_string(**unwrapped)) <= width

        if (view.shape[1] <= max_cols) if max_cols else fits(view):
            return view.to_string(**params)
        keep = _lead_count(list(view.columns))  # the labels, the estimate and its interval: always shown
        empty: list[Any] = []
        if not fits(view.iloc[:, :keep]):
            # a label column with no value at all (a numeric step's level) makes room for the interval
            labels = list(view.columns[: keep - 1 - sum(c in view.columns for c in LEAD_COLUMNS)])
            empty = [c for c in labels if view[c].isna().all()]
            view, keep = view.drop(columns=empty), keep - len(empty)
        limit = max_cols if max_cols else view.shape[1]
        shown = next((k for k in range(min(limit, view.shape[1]), keep, -1) if fits(view.iloc[:, :k])), keep)
        text = view.iloc[:, :shown].to_string(
            **{**params, "max_cols": None, "line_width": width, "show_dimensions": False}
        )
        hidden = [f"{c} (empty)" for c in empty] + [str(c) for c in view.columns[shown:]]
        note = f"[{count(len(view), 'row')} x {count(len(self.columns), 'column')}]" + (
            f" not shown: {', '.join(hidden)}" if hidden else ""
        )
        return text + "\n\n" + "\n".join(textwrap.wrap(note, width=width or 80, break_on_hyphens=False))


def _lead_count(columns: list[Any]) -> int:
    """How many columns of :func:`display_order` are labels, the estimate and :data:`LEAD_COLUMNS`."""
    order = display_order(columns)
    first = next((i for i, c in enumerate(order) if isinstance(c, str) and c in ESTIMATE_COLUMNS), None)
    if first is None:
        return min(len(order), 1)
    return first + 1 + sum(1 for c in LEAD_COLUMNS if c in columns)
