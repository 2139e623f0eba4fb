"""CART partitioner for cAMEs with the same node table as :class:`fme.CTree`.

Wraps scikit-learn's ``DecisionTreeRegressor`` (squared error, the same
split objective as CTREE's split search for one response, but without the
test-based variable selection and stopping). Categorical features are
one-hot encoded; a split on an indicator column maps back to a level set of
the original feature, so rules and hyperrectangles read as with CTREE.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeRegressor

from .._utils.validation import check_data, check_real_columns, is_categorical
from ..exceptions import NotFittedError, ParameterError

__all__ = ["CartTree"]


class CartTree:
    """scikit-learn CART with a partykit-like node table (pre-order ids from 1).

    A response of several columns grows one tree on the squared error summed over the columns (scikit-learn's
    multi-output criterion).

    Parameters
    ----------
    **params
        Passed to ``DecisionTreeRegressor`` (e.g. ``min_samples_leaf``,
        ``max_depth``); ``random_state`` defaults to 0 so ties between equally
        good splits are broken reproducibly.
    """

    def __init__(self, **params: Any) -> None:
        params.setdefault("random_state", 0)
        self.params = params

    def _encode(self, X: pd.DataFrame) -> np.ndarray:
        cols = []
        for feat in self.feature_names_in_:
            col = X[feat]
            if feat in self.levels_:
                for lv in self.levels_[feat]:
                    cols.append((col == lv).to_numpy(dtype=float))
            else:
                cols.append(col.to_numpy(dtype=float))
        return np.column_stack(cols)

    def fit(self, X: pd.DataFrame, y: Any) -> CartTree:
        check_data(X, "X")
        check_real_columns(X, "X")  # as CTree: a cast to float would drop the imaginary part
        self.feature_names_in_ = list(X.columns)
        self.levels_ = {}
        for feat in X.columns:
            col = X[feat]
            if is_categorical(col) and not (isinstance(col.dtype, pd.CategoricalDtype) and col.cat.ordered):
                self.levels_[feat] = (
                    list(col.cat.categories)
                    if isinstance(col.dtype, pd.CategoricalDtype)
                    else sorted(col.dropna().unique().tolist(), key=str)
                )
            elif isinstance(col.dtype, pd.CategoricalDtype):
                raise ParameterError(f"ordered categorical {feat!r}: use method='ctree' or convert it to codes.")
        self.columns_ = [(f, lv) for f in self.feature_names_in_ for lv in self.levels_.get(f, [None])]
        try:
            self.estimator_ = DecisionTreeRegressor(**self.params).fit(self._encode(X), np.asarray(y, dtype=float))
        except TypeError as exc:
            raise ParameterError(f"invalid CART parameter: {exc}") from exc
        self._build_nodes()
        return self

    def _build_nodes(self) -> None:
        t = self.estimator_.tree_
        rows = []
        for i in range(t.node_count):  # sklearn numbers nodes in pre-order from 0
            left, right = int(t.children_left[i]), int(t.children_right[i])
            leaf = left == -1
            feat, lv = (None, None) if leaf else self.columns_[int(t.feature[i])]
            split_levels = None
            split_value = np.nan
            if not leaf and lv is not None:
                # indicator <= 0.5 (not this level) goes to child 1
                split_levels = {level: (2 if level == lv else 1) for level in self.levels_[feat]}
            elif not leaf:
                split_value = float(t.threshold[i])
            rows.append(
                {
                    "node": i + 1,
                    "parent": pd.NA,
                    "depth": 0,
                    "is_leaf": leaf,
                    "n": float(t.weighted_n_node_samples[i]),
                    # several outputs (a joint partition's fMEs): the mean of each, as CTree's node table
                    "mean": float(t.value[i].ravel()[0]) if t.n_outputs == 1 else tuple(map(float, t.value[i].ravel())),
                    "split_feature": feat,
                    "split_value": split_value,
                    "split_levels": split_levels,
                    "p_value": np.nan,
                    "statistic": np.nan,
                    "children": () if leaf else (left + 1, right + 1),
                }
            )
        nodes = pd.DataFrame(rows).set_index("node")
        for node, kids in nodes["children"].items():
            for k in kids:
                nodes.at[k, "parent"] = node
                nodes.at[k, "depth"] = nodes.at[node, "depth"] + 1
        nodes["parent"] = nodes["parent"].astype("Int64")
        self.nodes_ = nodes

    def _check(self) -> None:
        if not hasattr(self, "nodes_"):
            raise NotFittedError("CartTree is not fitted; call fit(X, y) first.")

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        """Leaf id (1-based, pre-order) of each row."""
        self._check()
        return self.estimator_.apply(self._encode(X)) + 1

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self._check()
        return self.nodes_["mean"].to_numpy()[self.apply(X) - 1]

    def _cond(self, parent: int, child: int) -> str:
        row = self.nodes_.loc[parent]
        first = row["children"][0] == child
        if isinstance(row["split_levels"], dict):
            lv = [str(k) for k, c in row["split_levels"].items() if c == (1 if first else 2)]
            return f"{row['split_feature']} in {{{', '.join(lv)}}}"
        return f"{row['split_feature']} {'<=' if first else '>'} {row['split_value']:.5g}"

    def rules(self, node: int) -> str:
        """Conjunction of the split conditions from the root to ``node``."""
        self._check()
        if node not in self.nodes_.index:
            raise ParameterError(f"unknown node id {node!r}.")
        parts, cur = [], int(node)
        while not pd.isna(self.nodes_.at[cur, "parent"]):
            par = int(self.nodes_.at[cur, "parent"])
            parts.append(self._cond(par, cur))
            cur = par
        return " & ".join(reversed(parts)) if parts else "(all)"
