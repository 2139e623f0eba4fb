"""Where a cAME holds: each subspace's evaluated range and its extrapolation points.

A subspace of :func:`fme.came` is a hyperrectangle (paper §5.5, Table 3): unrestricted features span the
whole data's range. Its cAME, however, averages only the fMEs of the *evaluated* rows inside it; rows left
out as extrapolation points have no fME. The evaluated range (observed min/max of the evaluated rows per
feature) is where the cAME was estimated; outside it the cAME is an extrapolation of the tree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["leaf_support"]


def leaf_support(part) -> pd.DataFrame:
    """Per subspace: extrapolation points inside its hyperrectangle and its evaluated ranges.

    Parameters
    ----------
    part : PartitionResult
        The result of :func:`fme.came`.

    Returns
    -------
    DataFrame
        One row per subspace (``node``, in ``part.leaf_ids`` order) with ``n_extrapolation`` (rows left out
        as extrapolation points whose features fall into the subspace, found by dropping them down the
        tree; ``None`` when the effects were not checked for extrapolation), ``n_unassigned`` (extrapolation
        points the tree cannot place, e.g. a missing partitioning value) and, per numeric partitioning
        feature ``f``, ``f:eval_min`` and ``f:eval_max``.
    """
    eff = part.effects
    checked = eff.detector is not None
    counts = {node: 0 for node in part.leaf_ids}
    unassigned = 0
    if checked and len(eff.excluded):
        ep_index = eff.excluded.index[eff.excluded["reason_type"].to_numpy() == "extrapolation"]
        X = eff.data.loc[ep_index, part.features]
        ok = X.notna().all(axis=1).to_numpy()
        unassigned = int((~ok).sum())
        if ok.any():
            leaf = part._subspace[np.asarray(part.tree.apply(X[ok]), dtype=int)]
            nodes, n = np.unique(leaf, return_counts=True)
            counts.update({int(a): int(b) for a, b in zip(nodes, n)})
    rows = []
    for node in part.leaf_ids:
        box = part.describe(node)
        row = {"node": int(node), "n_extrapolation": counts[node] if checked else None,
               "n_unassigned": unassigned if checked else None}
        for feat, b in box.iterrows():
            if b["kind"] == "numeric":
                row[f"{feat}:eval_min"] = float(b["min"])
                row[f"{feat}:eval_max"] = float(b["max"])
        rows.append(row)
    return pd.DataFrame(rows)
