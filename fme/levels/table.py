"""The tables of the learner- and data-level AMEs: :func:`fme.ame`'s columns from estimates and their joint
covariance.

Both levels end with an estimate per table row and a covariance matrix of those estimates (the corrected
covariance over training splits; the covariance of the influence terms over the rows), which is the
delta method's form with the identity as gradient: :class:`~fme.inference.Estimates` carries it, so that
:func:`fme.hypotheses` works on the table as on :func:`fme.ame`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..inference import EstimatesTable
from ..inference.estimates import INFERENCE_COLUMNS, Estimates

__all__ = ["LABEL_COLUMNS", "TABLE_COLUMNS", "level_table"]

#: The columns that name a row, as in :func:`fme.ame`'s table (``by`` columns follow them).
LABEL_COLUMNS = ["feature", "step", "level", "reference"]
#: The columns of every level table besides the ``by`` columns and its own extra columns.
TABLE_COLUMNS = [*LABEL_COLUMNS, "ame", *INFERENCE_COLUMNS]


def level_table(
    labels: pd.DataFrame,
    estimate: np.ndarray,
    vcov: np.ndarray,
    *,
    df: float | None,
    conf_level: float,
    inference: str,
    covers: str,
    extra: dict[str, Any] | None = None,
    table_class: type[EstimatesTable] = EstimatesTable,
) -> EstimatesTable:
    """The table of ``estimate`` (m,) with covariance ``vcov`` (m, m): ``labels`` (m rows: the row's
    name, :data:`LABEL_COLUMNS` and any ``by`` columns), ``ame``, the inference columns (t quantiles with
    ``df`` degrees of freedom, else normal), ``inference`` and ``covers`` as given, then ``extra``
    columns (each a scalar or m values). An :class:`~fme.EstimatesTable` (of ``table_class``, a subclass
    with more attributes): :func:`fme.hypotheses` reads the joint covariance."""
    estimate = np.asarray(estimate, dtype=float)
    m = estimate.size
    est = Estimates(
        "delta",
        estimate,
        grad=np.eye(m),
        vcov=np.asarray(vcov, dtype=float).reshape(m, m),
        df=None if df is None else np.full(m, float(df)),
    )
    table = est.table(conf_level)
    table["inference"], table["covers"] = inference, covers
    extra_frame = pd.DataFrame(
        {k: (list(v) if np.ndim(v) else [v] * m) for k, v in (extra or {}).items()}, index=range(m)
    )
    out = pd.concat([labels.reset_index(drop=True), pd.DataFrame({"ame": estimate}), table, extra_frame], axis=1)
    return table_class.from_frame(out, est, conf_level=conf_level)
