"""Conditional inference trees (CTREE) reproducing R's ``partykit::ctree``.

This is a clean-room implementation of the documented behaviour of partykit's
``ctree`` (Hothorn, Hornik & Zeileis, 2006, "Unbiased recursive partitioning: a
conditional inference framework", JCGS 15(3)), written from the project's
CTREE specification ``ctree-spec.md`` (sections cited as §n). No partykit or libcoin
code was used. For a numeric response it grows the same trees as partykit 1.2-16
(node ids, split variables, exact split values, factor partitions, p-values).
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from .._utils.numfmt import count
from .._utils.validation import check_random_state, check_real_columns
from ..exceptions import DataError, FeatureError, NotFittedError, ParameterError
from . import ctree_multi as M
from . import ctree_stats as S
from .ctree_text import node_rules, tree_text

__all__ = ["CTree"]

_TESTTYPES = {"bonferroni": "bonferroni", "univariate": "univariate", "teststatistic": "teststatistic"}
_STATS = ("quadratic", "maximum")


@functools.cache
def _blas_controller() -> Any:
    """threadpoolctl's controller, made once: it scans the loaded libraries (~10 ms), which
    would dominate refitting many small trees, as :func:`fme.partition_stability` does."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        return None
    return ThreadpoolController()


def _single_thread_blas():
    """Context limiting BLAS to one thread (no-op when threadpoolctl is unavailable)."""
    controller = _blas_controller()
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")


class CTree:
    """Conditional inference tree for a numeric response (partykit-compatible).

    Variable selection uses permutation tests of independence between each
    covariate and the response (§2-§3), Šidák-adjusted across covariates ("Bonferroni"
    in partykit, §4.1); a node is split only if the smallest adjusted p-value is
    below ``alpha``. The split point maximises a two-sample statistic (§5), which
    for a single numeric response is CART's variance reduction.

    Parameters
    ----------
    alpha : float, default 0.05
        Significance level; ``mincriterion`` defaults to ``1 - alpha``.
    mincriterion : float, optional
        Value the node criterion must exceed: 1 - p (Bonferroni/Univariate) or the
        test statistic (Teststatistic; compared on the log scale, §3.2).
    minsplit : float, default 20
        Minimum weight sum of a node to attempt a split (§6.1).
    minbucket : float, default 7
        Minimum weight sum per child; non-integer values are truncated after
        ``max(minbucket, ceil(minprob * W_node))`` as partykit does (§5).
    minprob : float, default 0.01
        Minimum proportion of the node weight per child (§5).
    maxdepth : int, optional
        Maximum depth (root = 0); None = unlimited.
    testtype : {"bonferroni", "univariate", "teststatistic"}
        Multiplicity handling (§4.1); partykit's capitalised spellings are accepted.
    teststat, splitstat : {"quadratic", "maximum"}
        Statistics for variable selection and for the split search (§3.1, §5.1).
        With ``teststat="maximum"`` the p-value of an unordered factor (PQ > 1) is
        computed by randomised quasi-Monte Carlo (scipy's multivariate normal CDF),
        so, as in partykit, it is random; it is seeded from ``random_state``.
    intersplit : bool, default False
        Place numeric breaks midway to the next unique training value (§5.2).
    majority : bool, default False
        Route rows with a missing split variable (or a factor level absent from the
        node) to the child with more training rows (ties: child 1, the left one).
        Otherwise they go to a random child with probability proportional to the
        training row counts (§6.2), drawn from ``random_state``.
    splittry : int, default 2
        Number of significant variables tried when the best one has no admissible split.
    random_state : int, numpy Generator or None
        Seed for random routing of missing values (fit and predict) and maximum-type
        p-values (None: seed 0, so that a fit is reproducible; a Generator for draws of its own).

    Attributes
    ----------
    nodes_ : pandas.DataFrame
        One row per node, indexed by pre-order node id (root 1): parent, depth,
        is_leaf, n (weight sum), n_obs (row count), mean (weighted mean of y),
        err (weighted sum of squares), split_feature, split_value (numeric: x <=
        value goes to child 1; ordered factor: 1-based index of the last level
        going to child 1, among the training levels), split_levels (unordered
        factor: level -> 1/2 or None for levels absent from the node), p_value (the
        selected variable's adjusted p-value; NaN when no test ran and, as in
        partykit, with testtype "teststatistic"), statistic, children.
    criteria_ : pandas.DataFrame
        Per node and tested variable: statistic, p_value (adjusted), criterion
        (log(1 - p_adj) or log statistic, tie-adjusted as in §4.2).
    leaves_ : numpy.ndarray
        Ids of the terminal nodes.

    Notes
    -----
    * Missing covariate values are left out of that variable's test and split
      search (§6.2). Rows with a missing response must be dropped before ``fit``.
    * Absolute tolerances (1.49e-8) decide whether a variance is zero, exactly as
      in partykit; a response on a tiny scale (|y| ~ 1e-7) therefore yields a root-only
      tree (§9.1). Rescale the response if that is not wanted.
    * An unordered factor with more than 30 non-empty levels in a node raises
      :class:`~fme.exceptions.ParameterError` (partykit errors too); merge levels.
      Factors with 17-30 non-empty levels use the ordering-by-means search, which
      finds the same statistic but may choose another partition on exact ties.
    """

    def __init__(
        self,
        alpha: float = 0.05,
        mincriterion: float | None = None,
        minsplit: float = 20,
        minbucket: float = 7,
        minprob: float = 0.01,
        maxdepth: int | None = None,
        testtype: str = "bonferroni",
        teststat: str = "quadratic",
        splitstat: str = "quadratic",
        intersplit: bool = False,
        majority: bool = False,
        splittry: int = 2,
        random_state: Any = None,
    ) -> None:
        self.alpha = alpha
        self.mincriterion = mincriterion
        self.minsplit = minsplit
        self.minbucket = minbucket
        self.minprob = minprob
        self.maxdepth = maxdepth
        self.testtype = testtype
        self.teststat = teststat
        self.splitstat = splitstat
        self.intersplit = intersplit
        self.majority = majority
        self.splittry = splittry
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        if not isinstance(self.alpha, (int, float)) or not 0.0 < float(self.alpha) < 1.0:
            raise ParameterError(f"alpha must be in (0, 1), got {self.alpha!r}.")
        tt = str(self.testtype).lower()
        if tt not in _TESTTYPES:
            raise ParameterError(
                f"Unknown testtype {self.testtype!r}; use 'bonferroni', 'univariate' or 'teststatistic'."
            )
        self._testtype = tt
        for nm in ("teststat", "splitstat"):
            if str(getattr(self, nm)).lower() not in _STATS:
                raise ParameterError(f"Unknown {nm} {getattr(self, nm)!r}; use 'quadratic' or 'maximum'.")
        for nm in ("minsplit", "minbucket", "minprob"):
            v = getattr(self, nm)
            if not isinstance(v, (int, float, np.number)) or not np.isfinite(v) or v < 0:
                raise ParameterError(f"{nm} must be a non-negative number, got {v!r}.")
        if self.maxdepth is not None and (not isinstance(self.maxdepth, (int, np.integer)) or self.maxdepth < 0):
            raise ParameterError(f"maxdepth must be a non-negative integer or None, got {self.maxdepth!r}.")
        if not isinstance(self.splittry, (int, np.integer)) or self.splittry < 1:
            raise ParameterError(f"splittry must be a positive integer, got {self.splittry!r}.")
        mc = 1.0 - float(self.alpha) if self.mincriterion is None else float(self.mincriterion)
        if tt != "teststatistic" and not 0.0 < mc <= 1.0:
            raise ParameterError(f"mincriterion must be in (0, 1] for testtype {self.testtype!r}, got {mc!r}.")
        if tt == "teststatistic" and not mc > 0.0:
            raise ParameterError(f"mincriterion must be positive with testtype 'teststatistic', got {mc!r}.")
        self._logmincrit = math.log(mc)
        check_random_state(self.random_state)

    @staticmethod
    def _check_X(X: Any) -> pd.DataFrame:
        if not isinstance(X, pd.DataFrame):
            raise DataError(f"X must be a pandas DataFrame, got {type(X).__name__}.")
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise DataError(f"X is empty (shape {X.shape}); CTree needs rows and covariate columns.")
        check_real_columns(X, "X")
        return X

    # --------------------------------------------------------------------- fit
    def fit(self, X: pd.DataFrame, y: Any, sample_weight: Any = None) -> CTree:
        """Grow the tree.

        Parameters
        ----------
        X : pandas.DataFrame
            Covariates (numeric, bool, str/object, ordered or unordered Categorical;
            NaN/None = missing).
        y : array-like of shape (n,) or (n, Q)
            Numeric response (e.g. fMEs); must be finite. Q > 1 columns (e.g. several effects' fMEs) grow one
            tree on the multivariate response (§1-§5 with the Kronecker covariance: :mod:`fme._trees.ctree_multi`);
            the node table's ``mean`` is then a tuple of Q column means and ``err`` the squared errors summed
            over the columns.
        sample_weight : array-like of shape (n,), optional
            Non-negative case weights (partykit's ``weights``); zero-weight rows stay
            in the nodes but contribute nothing to the statistics (§9.9).

        Returns
        -------
        CTree
            The fitted estimator.
        """
        self._check_params()
        X = self._check_X(X)
        yv = S.response(y)
        if yv.shape[0] != X.shape[0]:
            raise DataError(f"y has {count(yv.shape[0], 'value')} but X has {count(X.shape[0], 'row')}.")
        if not np.isfinite(yv).all():
            raise DataError(
                f"y has {int((~np.isfinite(yv)).sum())} missing or non-finite values; rows with a "
                "missing response must be dropped before fitting."
            )
        if sample_weight is None:
            w = np.ones(len(yv))
        else:
            w = S.as_float(sample_weight, "sample_weight", "non-negative case weights")
            if w.shape[0] != len(yv):
                raise DataError(f"sample_weight has {count(w.shape[0], 'value')} but X has {count(len(yv), 'row')}.")
            if not np.isfinite(w).all() or (w < 0).any():
                raise DataError("sample_weight must be finite and non-negative.")
        self.feature_names_in_ = np.array([str(c) for c in X.columns], dtype=object)
        self.n_features_in_ = X.shape[1]
        covs, Z, R, F = S.encode_fit(X)
        self._covs = covs
        self._rng = check_random_state(self.random_state)
        # The per-node products are small matrix-vector products; multi-threaded BLAS
        # only adds synchronisation (4x slower on a busy 2-core machine), so use one thread.
        with _single_thread_blas():
            self._grow(covs, Z, R, F, yv, w)
        return self

    def _grow(self, covs, Z, R, F, y, w) -> None:
        maximum_t = str(self.teststat).lower() == "maximum"
        maximum_s = str(self.splitstat).lower() == "maximum"
        # position of each covariate in the numeric / factor blocks
        slot, ni, fi = [], 0, 0
        for cv in covs:
            if cv.kind == S.FACTOR:
                slot.append(fi)
                fi += 1
            else:
                slot.append(ni)
                ni += 1
        num_idx = [j for j, cv in enumerate(covs) if cv.kind != S.FACTOR]
        fac_idx = [j for j, cv in enumerate(covs) if cv.kind == S.FACTOR]
        nan_cols = np.array([covs[j].has_nan for j in num_idx], dtype=bool)
        names = [cv.name for cv in covs]
        maxdepth = np.inf if self.maxdepth is None else self.maxdepth

        nodes: list[dict] = []
        crit_rows: list[tuple] = []
        train_leaf = np.zeros(len(y), dtype=np.int64)
        # explicit stack of (row indices, depth, parent id); child 1 is pushed last so that
        # its whole subtree is numbered before child 2: partykit's pre-order ids (§6.1)
        stack: list[tuple[np.ndarray, int, int | None]] = [(np.arange(len(y)), 0, None)]
        while stack:
            idx, depth, parent = stack.pop()
            nid = len(nodes) + 1
            yt, wt = y[idx], w[idx]
            W = float(wt.sum())
            if yt.ndim == 1:
                mean: Any = float(wt @ yt / W) if W > 0 else float("nan")
                err = float(wt @ (yt - mean) ** 2) if W > 0 else float("nan")
            else:  # several response columns: the mean per column, the squared errors summed over them
                centre = wt @ yt / W if W > 0 else np.full(yt.shape[1], np.nan)
                mean, err = tuple(float(v) for v in centre), float((wt @ (yt - centre) ** 2).sum())
            rec = dict(
                id=nid,
                parent=parent,
                depth=depth,
                n=W,
                n_obs=len(idx),
                mean=mean,
                err=err,
                split_feature=None,
                split_value=np.nan,
                split_levels=None,
                p_value=np.nan,
                statistic=np.nan,
                children=(),
                _split=None,
            )
            nodes.append(rec)
            if parent is not None:
                nodes[parent - 1]["children"] += (nid,)
            split = None
            if depth < maxdepth and W >= self.minsplit:
                split = self._node(
                    idx,
                    yt,
                    wt,
                    W,
                    covs,
                    Z,
                    R,
                    F,
                    slot,
                    num_idx,
                    fac_idx,
                    nan_cols,
                    names,
                    maximum_t,
                    maximum_s,
                    rec,
                    crit_rows,
                    nid,
                )
            if split is None:
                train_leaf[idx] = nid
                continue
            child = self._route_train(split, idx, Z, F, slot, covs)
            rec["_split"] = split
            j = split["var"]
            rec["split_feature"] = names[j]
            if covs[j].kind == S.FACTOR:
                rec["split_levels"] = {lv: (int(c) if c > 0 else None) for lv, c in zip(covs[j].levels, split["map"])}
            else:
                rec["split_value"] = float(split["break"])
            stack.append((idx[child == 2], depth + 1, nid))
            stack.append((idx[child == 1], depth + 1, nid))

        self._train_leaf = train_leaf
        df = pd.DataFrame(nodes).set_index("id")
        df.index.name = "node"
        self._splits = {int(i): s for i, s in df["_split"].items() if s is not None}
        df = df.drop(columns="_split")
        df["parent"] = df["parent"].astype("Int64")
        df["is_leaf"] = df["children"].map(len) == 0
        # object dtype keeps None for leaves (pandas would infer a string dtype with NaN)
        df["split_feature"] = pd.Series([r["split_feature"] for r in nodes], index=df.index, dtype=object)
        cols = [
            "parent",
            "depth",
            "is_leaf",
            "n",
            "n_obs",
            "mean",
            "err",
            "split_feature",
            "split_value",
            "split_levels",
            "p_value",
            "statistic",
            "children",
        ]
        self.nodes_ = df[cols]
        self.criteria_ = pd.DataFrame(crit_rows, columns=["node", "variable", "statistic", "p_value", "criterion"])
        self.leaves_ = self.nodes_.index[self.nodes_["is_leaf"]].to_numpy()

    def _node(
        self,
        idx,
        yt,
        wt,
        W,
        covs,
        Z,
        R,
        F,
        slot,
        num_idx,
        fac_idx,
        nan_cols,
        names,
        maximum_t,
        maximum_s,
        rec,
        crit_rows,
        nid,
    ):
        """Tests, selection and split search in one node (§3.4, §4, §5)."""
        p = len(covs)
        stat = np.full(p, np.nan)
        log1mp = np.full(p, np.nan)
        # a response of several columns (Q > 1): the Kronecker-covariance kernels of the same names
        K: Any = S if yt.ndim == 1 else M
        if num_idx:
            Zt = np.take(Z, idx, axis=0)
            if yt.ndim == 1:
                c, dfs, corrs = S.numeric_tests(Zt, yt, wt, nan_cols, maximum_t), None, None
            else:
                c, dfs, corrs = M.numeric_tests(Zt, yt, wt, nan_cols, maximum_t)
            stat[num_idx] = c
            ok = ~np.isnan(c)
            if self._testtype != "teststatistic" and ok.any():
                if maximum_t:
                    log1mp[np.array(num_idx)[ok]] = [
                        S.norm_max_log1mp(c[k], None if corrs is None else corrs[k], self._rng)
                        for k in np.flatnonzero(ok)
                    ]
                else:
                    log1mp[np.array(num_idx)[ok]] = S.chi2_log1mp(c[ok], np.ones(ok.sum()) if dfs is None else dfs[ok])
        for j in fac_idx:
            codes = F[slot[j]][idx]
            c, df, corr = K.factor_test(codes, len(covs[j].levels), yt, wt, maximum_t)
            if np.isnan(c):
                continue
            stat[j] = c
            if self._testtype != "teststatistic":
                log1mp[j] = S.norm_max_log1mp(c, corr, self._rng) if maximum_t else float(S.chi2_log1mp(c, df))
        tested = ~np.isnan(stat)
        if not tested.any():
            return None  # terminal node without test information (§4.2)
        m = int(tested.sum())
        with np.errstate(divide="ignore"):
            if self._testtype == "teststatistic":
                crit = np.log(np.maximum(stat, S.EPS))
                padj = np.full(p, np.nan)
            else:
                mult = m if self._testtype == "bonferroni" else 1
                crit = mult * log1mp  # Šidák: log(1 - p_adj) = m log(1 - p)  (§4.1)
                padj = -np.expm1(crit)
        crit = np.where(tested, crit, -np.inf)
        mx = crit.max()
        tied = tested & (np.abs(crit - mx) < S.TIE_EPS)
        if tied.sum() > 1:
            # underflowed p-values: larger statistic wins (§4.2); positions count the response first
            pos = np.flatnonzero(tied) + 2
            crit[tied] += rankdata(stat[tied]) / (1000.0 * pos.sum())
        for j in np.flatnonzero(tested):
            crit_rows.append((nid, names[j], stat[j], padj[j], crit[j]))
        order = sorted(np.flatnonzero(tested), key=lambda j: (crit[j], j), reverse=True)
        top = order[0]
        rec["p_value"] = float(padj[top])
        rec["statistic"] = float(stat[top])
        cand = [j for j in order if crit[j] > self._logmincrit][: self.splittry]
        if not cand:
            return None
        # libcoin truncates the effective minimum bucket to an integer (§5)
        mb = int(max(float(self.minbucket), math.ceil(self.minprob * W)))
        for j in cand:
            cv = covs[j]
            if cv.kind == S.FACTOR:
                cmap = K.split_factor(F[slot[j]][idx], len(cv.levels), yt, wt, mb, maximum_s, cv.name)
                if cmap is not None:
                    return {"var": j, "map": cmap}
            else:
                u = K.split_ordered(R[slot[j]][idx], len(cv.uniq), yt, wt, mb, maximum_s)
                if u is not None:
                    brk = cv.uniq[u]
                    if self.intersplit and cv.kind == S.NUMERIC and u + 1 < len(cv.uniq):
                        brk = (brk + cv.uniq[u + 1]) / 2.0
                    return {"var": j, "break": float(brk)}
        return None

    # ----------------------------------------------------------------- routing
    @staticmethod
    def _kids(split: dict, x: np.ndarray) -> np.ndarray:
        """Child (1/2) per row for an encoded column; 0 = missing/absent level."""
        if "map" in split:
            cm = split["map"]
            out = np.zeros(len(x), dtype=np.int64)
            ok = x >= 0
            out[ok] = cm[x[ok]]
            return out
        with np.errstate(invalid="ignore"):
            return np.where(np.isnan(x), 0, np.where(x <= split["break"], 1, 2))

    def _route_missing(self, kid: np.ndarray, split: dict, rng: np.random.Generator) -> np.ndarray:
        miss = kid == 0
        if miss.any():
            prob = split["prob"]
            if self.majority:
                kid[miss] = 1 if prob[0] >= prob[1] else 2
            else:
                kid[miss] = rng.choice([1, 2], size=int(miss.sum()), p=prob)
        return kid

    def _route_train(self, split, idx, Z, F, slot, covs):
        j = split["var"]
        x = F[slot[j]][idx] if covs[j].kind == S.FACTOR else Z[idx, slot[j]]
        kid = self._kids(split, x)
        # unweighted row counts of the non-missing rows, zero weights included (§6.2)
        cnt = np.array([(kid == 1).sum(), (kid == 2).sum()], dtype=float)
        split["prob"] = cnt / cnt.sum()
        return self._route_missing(kid, split, self._rng)

    # ------------------------------------------------------------- prediction
    def _check_fitted(self) -> None:
        if not hasattr(self, "nodes_"):
            raise NotFittedError("This CTree is not fitted yet; call fit(X, y) first.")

    def _encode_predict(self, X: Any) -> dict[int, np.ndarray]:
        X = self._check_X(X)
        missing = [c for c in self.feature_names_in_ if c not in set(map(str, X.columns))]
        if missing:
            raise FeatureError(f"X lacks the column(s) {missing} used at fit time.")
        cols = {str(c): c for c in X.columns}
        used = {s["var"] for s in self._splits.values()}
        return {j: S.encode_column(self._covs[j], X[cols[self._covs[j].name]]) for j in used}

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        """Terminal node id of each row of ``X``.

        Rows with a missing split variable or a factor level not seen in the node
        follow the missing-value rule (majority or seeded random, §6.3).
        """
        self._check_fitted()
        enc = self._encode_predict(X)
        n = len(X)
        out = np.ones(n, dtype=np.int64)
        rng = check_random_state(self.random_state)
        todo = [(1, np.arange(n))]
        while todo:
            nid, rows = todo.pop()
            split = self._splits.get(nid)
            if split is None or rows.size == 0:
                out[rows] = nid
                continue
            kid = self._route_missing(self._kids(split, enc[split["var"]][rows]), split, rng)
            c1, c2 = self.nodes_.at[nid, "children"]
            todo.append((c1, rows[kid == 1]))
            todo.append((c2, rows[kid == 2]))
        return out

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Weighted mean training response of the leaf each row falls into."""
        leaf = self.apply(X)
        return self.nodes_["mean"].to_numpy()[leaf - 1]

    # ---------------------------------------------------------------- display
    def rules(self, node: int) -> str:
        """Conjunction of split conditions leading from the root to ``node``.

        E.g. ``"lstat <= 11.38 & rm <= 6.433"`` or ``"g in {centre, east}"``;
        the root gives ``"(all)"``.
        """
        self._check_fitted()
        if node not in self.nodes_.index:
            raise ParameterError(f"Unknown node id {node!r}; valid ids are 1..{len(self.nodes_)}.")
        return node_rules(self.nodes_, self._splits, self._covs, node)

    def to_text(self) -> str:
        """partykit-like print of the fitted tree."""
        self._check_fitted()
        return tree_text(self.nodes_, self._splits, self._covs)

    def __str__(self) -> str:
        if not hasattr(self, "nodes_"):
            return "CTree (not fitted)"
        return self.to_text()

    def __repr__(self) -> str:
        return (
            f"CTree(alpha={self.alpha!r}, minbucket={self.minbucket!r}, testtype={self.testtype!r}, "
            f"majority={self.majority!r})"
        )
