"""The result of :func:`fme.came`: subspaces, their cAMEs and tables (paper §5.5).

:class:`PartitionResult` holds a grown tree reduced to its subspaces and, per
subspace, the conditional AME and ANLM with their SDs, coefficients of
variation and t-based confidence intervals

    mean +- t(1 - alpha/2, n - 1) * SD / sqrt(n),

the cAME's uncertainty under the effects' inference method, the
hyperrectangle of each subspace (paper Table 3) and its readable rule. It
is built by :func:`fme.conditional.came` (which grows and reduces the tree) and
re-exported there; this module knows the result, not how trees are grown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from .._core.results import FMEResult
from .._utils.frames import ReadableFrame
from .._utils.numfmt import fmt_level
from .._utils.stats import describe, median
from .._utils.validation import check_conf_level, check_data, is_categorical
from ..exceptions import FeatureError, ParameterError
from ..inference.estimates import INFERENCE_COLUMNS, sample_inference
from ..inference.wald import MULTCOMP, contrast_matrix, contrast_table, wald_test
from .args import string_columns
from .subspaces import (
    describe_subspace,
    reduced_nodes,
    rows_in,
    subspace_bounds,
    subspace_counts,
    subspace_lookup,
    subspace_rule,
)

#: ``subspace_counts`` (:mod:`fme._trees.subspaces`) is re-exported for the Dask engine.
__all__ = ["PartitionResult", "LeafTests", "subspace_counts"]

LEAF_COLUMNS = ["node", "n", "came", "sd_fme", "cov_fme", "came_ci_low", "came_ci_high"]
NLM_COLUMNS = ["canlm", "sd_nlm", "cov_nlm", "canlm_ci_low", "canlm_ci_high", "n_nlm", "median_nlm", "share_linear"]
#: The readable rule of :attr:`PartitionResult.estimation_root`: every leaf (of its estimation rows).
ESTIMATION_RULE = "(all leaves)"


def estimation_columns(has_nlm: bool) -> list[str]:
    """Columns of :attr:`PartitionResult.estimation_root`: a leaf's, but the NLMs' median (on Dask data it would
    take one more pass over every estimation row) and ``n_grown``."""
    return (
        LEAF_COLUMNS + INFERENCE_COLUMNS + ([c for c in NLM_COLUMNS if c != "median_nlm"] if has_nlm else []) + ["rule"]
    )


def estimation_root(figures: dict[str, Any] | pd.Series, has_nlm: bool) -> pd.Series:
    """:attr:`PartitionResult.estimation_root` from the estimation rows' figures (of a partition that is not
    honest: the root's)."""
    return pd.Series({**dict(figures), "node": 1, "rule": ESTIMATION_RULE})[estimation_columns(has_nlm)]


def _figures(
    fmes: np.ndarray, nlms: np.ndarray | None, conf_level: float, linear_threshold: float = 0.9
) -> dict[str, float]:
    d = describe(fmes, conf_level)
    row = {
        "n": int(d["n"]),
        "came": d["mean"],
        "sd_fme": d["sd"],
        "cov_fme": d["cov"],
        "came_ci_low": d["ci_low"],
        "came_ci_high": d["ci_high"],
    }
    if nlms is not None:
        # ignores undefined (NaN) NLMs and counts the rest; the t-interval of the mean is
        # truncated at 1, the NLM's upper bound (paper §5.4: NLM <= 1)
        e = describe(nlms, conf_level, upper=1.0)
        ok = nlms[~np.isnan(nlms)]
        row.update(
            canlm=e["mean"],
            sd_nlm=e["sd"],
            cov_nlm=e["cov"],
            canlm_ci_low=e["ci_low"],
            canlm_ci_high=e["ci_high"],
            n_nlm=int(e["n"]),
            median_nlm=median(ok),
            share_linear=float(np.mean(ok >= linear_threshold)) if ok.size else np.nan,
        )
    return row


class LeafTests(pd.DataFrame):
    """The differences between leaf cAMEs of :meth:`PartitionResult.test`: a DataFrame, one row per difference,
    with the global test and the leaves it leaves out as typed attributes (paper §5.5).

    Attributes
    ----------
    global_test : dict
        The Wald test that all tested leaf cAMEs are equal: ``statistic``, chi-squared ``df``, ``p_value``.
    left_out : list of int
        The leaves of fewer than 2 rows (estimation rows when honest), which have no interval and enter no
        difference and no global test.
    honest : bool
        Whether the partition is honest (its leaves estimated on rows the tree never saw).

    Notes
    -----
    The attributes ride along where pandas keeps the frame's class: ``copy``, column and row selection
    (``t[["hypothesis", "p_value_adj"]]``, ``t.loc[mask]``, ``head``), ``sort_values``, ``reset_index``,
    ``round`` and pickling. A frame computed anew (``merge``, ``pd.concat``, ``pd.DataFrame(t)``) has none
    (``global_test`` and ``left_out`` None): read them from the table :meth:`PartitionResult.test` returned.
    """

    _metadata = ["global_test", "left_out", "honest"]
    global_test: dict[str, float] | None = None
    left_out: list[int] | None = None
    honest: bool = False

    @property
    def _constructor(self) -> type[LeafTests]:
        return LeafTests


class PartitionResult:
    """Subspaces with their cAMEs, returned by :func:`fme.came`.

    Attributes
    ----------
    leaves : DataFrame
        One row per subspace in node order: node, n, came, sd_fme, cov_fme,
        came_ci_low, came_ci_high (the fixed-model t interval of §5.5),
        the cAME's std_error, statistic, p_value, conf_low, conf_high and
        ``inference`` under the effects' method (:mod:`fme.inference`: delta
        or bootstrap from the same per-row ingredients, or ``sample``, then
        equal to the §5.5 interval), (with NLMs) canlm, sd_nlm, cov_nlm,
        canlm_ci_low, canlm_ci_high (t-interval of the mean truncated at 1,
        the NLM's upper bound), n_nlm, median_nlm, share_linear (share of
        NLMs >= the result's ``nlm_linear_threshold``), and the readable ``rule``.
        What its intervals cover (honest or not) is :attr:`honesty`.
    honest : bool
        Whether the leaves are estimated on rows the tree never saw; :attr:`honesty` says it in a sentence.
    root : Series
        The same figures for all evaluated rows (the global AME).
    estimation_root : Series
        A leaf's figures (:func:`estimation_columns`: not the NLMs' median) over the rows that estimate the leaves:
        of an honest partition those only (the leaves' counts add up to its ``n``), else every evaluated row
        (then equal to ``root``). An honest partition's figures show it in place of ``root``, so that each
        figure counts one set of rows.
    tree : CTree or CartTree
        The fitted tree (before any reduction by ``n_partitions``/``max_sd``).
    leaf_ids : list of int
        Node ids of the subspaces (after reduction).
    leaf_of_row : Series
        Subspace (node id) of each evaluated row, indexed like ``effects.results``.
    effects : FMEResult
    features : list of str
        Partitioning variables.
    conf_level : float
    notes : list of str
        Remarks such as "single node: fewer rows than minsplit".
    params : dict
        The arguments of :func:`fme.came` that grew and reduced the tree, as given
        (``features``, ``n_partitions``, ``max_sd``, ``standardize`` and the
        tree parameters), so the same partition can be refitted on other rows.
    sample_rows : int
        The number of rows the tree was grown on: on Dask data fme's seeded
        sample of at most ``sample_size`` growing rows
        (:data:`fme.effects.DASK_SAMPLE_SIZE` by default), in memory every
        growing row.
    grown_on_sample : bool
        Whether those rows are a sample of the growing rows (Dask data with more
        growing rows than ``sample_size``).
    dask_effects : DaskFMEResult or None
        Dask data: the effects of all rows, whose figures the subspaces' are
        (``effects`` then holds the sampled rows the tree was grown on); None in
        memory.
    """

    def __init__(
        self,
        effects: FMEResult,
        tree: Any,
        X: pd.DataFrame,
        leaf_ids: list[int],
        tree_leaf: np.ndarray,
        conf_level: float,
        method: str,
        notes: list[str],
        params: dict[str, Any] | None = None,
        estimate_rows: np.ndarray | None = None,
        seed: int | None = None,
    ) -> None:
        self.params = dict(params or {})
        #: Honest cAMEs: the tree was grown on some rows and every leaf figure comes from the others.
        self.honest = estimate_rows is not None
        self.seed = seed
        est_rows = np.ones(len(X), dtype=bool) if estimate_rows is None else np.asarray(estimate_rows, dtype=bool)
        #: Index labels of the rows that grew the tree and of those that estimate its leaves (the same rows
        #: unless honest).
        self.grown_on = X.index if not self.honest else X.index[~est_rows]
        self.estimated_on = X.index[est_rows]
        self._est_rows = est_rows
        #: (rows that grew the tree, evaluated rows, rows that estimate the leaves)
        self._split_counts = (len(self.grown_on), len(X), len(self.estimated_on))
        #: With ``came(..., n_splits=k)``: one row per honest split, and their summary (else None).
        self.splits: pd.DataFrame | None = None
        self.split_summary: dict[str, Any] | None = None
        #: Observed (min, max) per numeric feature over all rows of the data, when ``effects.data`` holds only
        #: some of them (cAMEs of Dask data); else the ranges come from ``effects.data``.
        self.data_ranges: dict[str, tuple[float, float]] = {}
        self.effects = effects
        self.tree = tree
        self.features = list(X.columns)
        self.leaf_ids = leaf_ids
        self._subspace = subspace_lookup(tree, leaf_ids)
        self._tree_leaf = tree_leaf  # leaf of the grown tree per evaluated row
        self.leaf_of_row = pd.Series(self._subspace[tree_leaf], index=X.index, name="node")
        self.conf_level = conf_level
        self.method = method
        self.notes = notes
        self._X = X
        fmes = effects.results["fme"].to_numpy(dtype=float)
        nlms = effects.results["nlm"].to_numpy(dtype=float) if effects.has_nlm else None
        rows = []
        lin = getattr(effects, "nlm_linear_threshold", 0.9)
        node_of_row = self.leaf_of_row.to_numpy()
        # Uncertainty of each cAME from the effects' per-row ingredients (no new predictions).
        inf = effects.inference_rows if effects.inference_rows is not None else sample_inference(fmes)
        # each row's position in leaf_ids (every row's node is one of them)
        ids = np.asarray(leaf_ids)
        order = np.argsort(ids, kind="stable")
        codes = order[np.searchsorted(ids, node_of_row, sorter=order)].astype(np.int64)
        # honest: the rows that grew the tree take no part in the leaves' figures (code -1: unused)
        self._leaf_estimates = inf.average(np.where(est_rows, codes, -1), len(leaf_ids))
        # a leaf of fewer than 2 estimation rows has no spread to estimate from: no interval, no test
        leaf_records = self._leaf_estimates.records(
            conf_level, undefined=np.bincount(codes[est_rows], minlength=len(leaf_ids)) < 2
        )
        for j, node in enumerate(leaf_ids):
            mask = (node_of_row == node) & est_rows
            row = {
                "node": node,
                **_figures(fmes[mask], None if nlms is None else nlms[mask], conf_level, lin),
                **leaf_records[j],
            }
            if self.honest:
                row["n_grown"] = int(((node_of_row == node) & ~est_rows).sum())
            row["rule"] = self.rule(node)
            rows.append(row)
        cols = (
            LEAF_COLUMNS
            + (["n_grown"] if self.honest else [])
            + INFERENCE_COLUMNS
            + (NLM_COLUMNS if nlms is not None else [])
            + ["rule"]
        )
        # printed with each cAME and its interval first (the frame keeps its columns in this order)
        self.leaves = ReadableFrame(rows, columns=cols)
        root = {
            "node": 1,
            **_figures(fmes, nlms, conf_level, lin),
            **inf.average().records(conf_level)[0],
            "rule": "(all)",
        }
        self.root = pd.Series(root)[[c for c in cols if c != "n_grown"]]
        # the root's cAME over the estimation rows only: with the leaves' counts and panels, a figure of an honest
        # partition then counts one set of rows (of a partition that is not honest: the root's figures)
        self.estimation_root = estimation_root(self.root, nlms is not None)
        if self.honest:
            est_record = inf.average(np.where(est_rows, 0, -1), 1).records(
                conf_level, undefined=np.array([est_rows.sum() < 2])
            )[0]
            self.estimation_root = estimation_root(
                {
                    **_figures(fmes[est_rows], None if nlms is None else nlms[est_rows], conf_level, lin),
                    **est_record,
                },
                nlms is not None,
            )
        #: Dask data only (else None): the fME (``fme``) and subspace (``node``) of the rows that estimate the
        #: leaves, or of a seeded sample of them, indexed by row label, for figures; in memory they are
        #: ``effects.results`` at :attr:`estimated_on`.
        self.estimation_sample: pd.DataFrame | None = None
        self.sample_rows = len(self.grown_on)
        self.grown_on_sample = False
        self.dask_effects: Any = None
        # Dask data: counts every chunk's extrapolation points per subspace (set by the Dask engine, which
        # alone can run the kernel on the chunks again); None: ``effects`` holds every row
        self._count_extrapolation: Callable[[PartitionResult], dict[int, int]] | None = None

    @property
    def honesty(self) -> str:
        """What the leaf intervals and tests cover, in one sentence."""
        if self.honest:
            grown, total, est = self._split_counts
            return (
                f"honest: the tree was grown on {grown} of the {total} evaluated rows (chosen by a seeded "
                f"hash of their index labels, seed {self.seed}) and every leaf figure comes from the other "
                f"{est}, so the intervals and tests hold for the leaves the tree chose."
            )
        return (
            "not honest: the tree was grown and its leaves estimated on the same rows, so the leaf intervals "
            "and tests are not adjusted for the tree's choice of splits (too narrow); came(..., honest=True) "
            "estimates them on rows the tree never saw."
        )

    @property
    def row_counts(self) -> dict[str, int]:
        """How many rows grew the tree, were evaluated and estimate the leaves, as :attr:`honesty` states them.

        Returns
        -------
        dict
            ``grown``: the rows that grew the tree (an honest partition: every row of the growing part; on Dask
            data otherwise the sample it grew on, :attr:`sample_rows`); ``evaluated``: every evaluated row;
            ``estimated``: the rows the leaves' figures come from (all evaluated rows unless honest). On Dask
            data the counts are over all rows, as the leaves' figures are.
        """
        grown, evaluated, estimated = self._split_counts
        return {"grown": int(grown), "evaluated": int(evaluated), "estimated": int(estimated)}

    def test(
        self, hypothesis: str = "pairwise", multcomp: str | None = "holm", conf_level: float | None = None
    ) -> LeafTests:
        """Differences between leaf cAMEs with their uncertainty, and a global test that all are equal.

        Parameters
        ----------
        hypothesis : {'pairwise', 'reference'}, default='pairwise'
            Every difference "[j] - [i]" of two leaves (later minus earlier in node order), or every leaf
            minus the first.
        multcomp : {'holm', 'bonferroni', 'fdr_bh'} or None, default='holm'
            Adjustment of the p-values over the family of differences (column ``p_value_adj``).
        conf_level : float, optional
            Default: the partition's.

        Returns
        -------
        LeafTests
            One row per difference: ``hypothesis``, ``estimate``, ``std_error``, ``statistic``,
            ``p_value``, ``conf_low``, ``conf_high``, ``inference`` (the effects' method, from the same
            per-row ingredients as the leaves: honest rows only when the partition is honest), and
            ``p_value_adj``/``multcomp``, ``note`` (why a difference's test is not one, else ``""``). Its
            attributes: ``global_test``, the Wald test that all leaf cAMEs are equal (``statistic``, chi-squared
            ``df``, ``p_value``, ``note``); when it is not a test the statistic and p-value are NaN and ``note``
            says why (:func:`fme.inference.wald.validity_note`): under the delta method, contrasts that fix every
            parameter direction the cAMEs depend on (a log link, where every cAME scales with exp(b0), with
            at least as many leaves minus one as parameters), or a standard error at rounding level (a model
            whose fMEs do not vary, under ``sample``); ``honest``; ``left_out``, the leaves of fewer than 2 rows
            (estimation rows when honest), which have no interval and enter no
            difference and no global test.
        """
        if multcomp is not None and multcomp not in MULTCOMP:
            raise ParameterError(f"multcomp must be one of {MULTCOMP} or None, got {multcomp!r}.")
        conf = self.conf_level if conf_level is None else check_conf_level(conf_level)
        if len(self.leaf_ids) < 2:
            raise ParameterError("the partition has a single subspace; there is no difference to test.")
        keep = np.flatnonzero(self.leaves["n"].to_numpy() >= 2)
        if len(keep) < 2:
            raise ParameterError(
                "fewer than 2 subspaces have 2 or more rows to estimate their cAME from; there is "
                "no difference to test."
            )
        ids = [self.leaf_ids[k] for k in keep]
        est = self._leaf_estimates.take(keep)
        L, pairs = contrast_matrix(len(ids), hypothesis)
        labels = [f"[{ids[j]}] - [{ids[i]}]" for i, j in pairs]
        out = LeafTests(contrast_table(est, L, labels, conf, multcomp))
        ref, _ = contrast_matrix(len(ids), "reference")
        out.global_test = wald_test(est, ref)
        # leaves of fewer than 2 estimation rows have no interval and enter no difference
        out.left_out = [self.leaf_ids[k] for k in np.flatnonzero(self.leaves["n"].to_numpy() < 2)]
        out.honest = self.honest
        return out

    def joint_estimates(self) -> tuple:
        """For :func:`fme.hypotheses`: (the leaf cAMEs' estimates, row labels, undefined mask, confidence level),
        as :meth:`fme.EstimatesTable.joint_estimates` gives them."""
        return (
            self._leaf_estimates,
            [f"b{k + 1}" for k in range(len(self.leaf_ids))],
            self.leaves["std_error"].isna().to_numpy(),
            self.conf_level,
        )

    @property
    def nodes(self) -> pd.DataFrame:
        """Node table of the tree as reduced to the subspaces: the subspaces are
        its leaves (their subtrees dropped); same columns as ``tree.nodes_``."""
        return reduced_nodes(self.tree.nodes_, self.leaf_ids)

    @property
    def root_split(self) -> str | None:
        """Feature of the first split of the (reduced) tree; None for a single subspace."""
        nodes = self.nodes
        return None if nodes.at[1, "is_leaf"] else str(nodes.at[1, "split_feature"])

    # ------------------------------------------------------------ subspaces
    def describe(self, node: int) -> pd.DataFrame:
        """The subspace of ``node`` as a hyperrectangle (paper Table 3).

        Returns
        -------
        DataFrame
            One row per partitioning variable: ``kind``, ``low``/``high``
            (numeric: the subspace bounds, the global observed range where
            unrestricted, over all rows of the data, including rows left out
            as extrapolation; ``low_open`` says whether ``low`` is excluded),
            ``levels`` (categorical), ``range`` (readable), ``restricted``
            (whether a split on the path limits the feature), and the observed
            ``min``/``max`` of the subspace's rows.
        """
        inside = rows_in(self.tree.nodes_, node, self._tree_leaf)
        bounds = subspace_bounds(self.tree.nodes_, node, self.leaf_ids)
        return describe_subspace(self.features, bounds, self.effects.data, self._X, inside, self.data_ranges)

    def rule(self, node: int) -> str:
        """Compact rule of a subspace: one condition per restricted feature,
        e.g. ``"lstat <= 11.38 & rm <= 6.433"`` or ``"2.9 < x <= 4.1"``; bounds with 6 significant
        digits (:func:`fme._utils.numfmt.fmt_bound`, as the tree's edge labels)."""
        return subspace_rule(subspace_bounds(self.tree.nodes_, node, self.leaf_ids), self._X)

    def predict(self, new_rows: pd.DataFrame) -> pd.DataFrame:
        """Subspace, cAME and CI (and cANLM) for hypothetical observations.

        ``outside_observed`` flags rows outside the observed data of their
        subspace (a numeric value outside the rows' [min, max] there, or an
        unseen level): the cAME is then an extrapolation of the tree (paper
        §5.5, last paragraph); ``outside_features`` names the culprits.
        """
        check_data(new_rows, "new_rows")
        missing = [f for f in self.features if f not in map(str, new_rows.columns)]
        if missing:
            raise FeatureError(f"new_rows lack the partitioning feature(s) {missing}.")
        Xn = string_columns(new_rows, "new_rows")[self.features]
        node = self._subspace[np.asarray(self.tree.apply(Xn), dtype=int)]
        stats = self.leaves.set_index("node")
        cols = [c for c in stats.columns if c != "rule"]
        out = stats.loc[node, cols].set_index(new_rows.index)
        out.insert(0, "node", node)
        culprits = np.full(len(Xn), "", dtype=object)
        for leaf in np.unique(node):
            rows = node == leaf
            obs = self._X[self.leaf_of_row.to_numpy() == leaf]
            for feat in self.features:
                col, new = obs[feat], Xn.loc[rows, feat]
                if is_categorical(col):
                    bad = ~new.isin(set(col.dropna().unique().tolist())).to_numpy()
                else:
                    v = new.to_numpy(dtype=float)
                    bad = (v < np.nanmin(col.to_numpy(dtype=float))) | (v > np.nanmax(col.to_numpy(dtype=float)))
                idx = np.flatnonzero(rows)[bad]
                culprits[idx] = np.where(culprits[idx] == "", feat, culprits[idx] + ", " + feat)
        out["outside_observed"] = culprits != ""
        out["outside_features"] = culprits
        return out

    def extrapolation_counts(self) -> pd.Series | None:
        """Per subspace: the extrapolation points of the data whose features fall into its hyperrectangle.

        A subspace's cAME averages the fMEs of its evaluated rows only; rows left out as extrapolation points
        (``effects.excluded`` with ``reason_type`` ``"extrapolation"``) have none. Dropped down the tree, they
        show where the cAME holds for fewer rows than its hyperrectangle covers (paper §5.5, Table 3). Both
        engines count every row of the data, with equal numbers: in memory from ``effects``, on Dask data in
        one pass over the chunks (the kernel runs again on each chunk and only the counts come back), although
        the tree was grown on a sample.

        Returns
        -------
        Series or None
            ``n_extrapolation`` (int) per subspace, indexed by ``node`` in :attr:`leaf_ids` order; None when the
            effects were not checked for extrapolation. A point with a missing partitioning value falls into no
            subspace and is not counted.
        """
        effects = self.effects if self.dask_effects is None else self.dask_effects
        if effects.detector is None:
            return None
        if self._count_extrapolation is not None:
            counts = self._count_extrapolation(self)
        else:
            ex = effects.excluded
            points = ex.index[ex["reason_type"].to_numpy() == "extrapolation"] if len(ex) else ex.index[:0]
            counts = subspace_counts(self.tree, self._subspace, effects.data.loc[points, self.features])
        return pd.Series(
            [int(counts.get(int(node), 0)) for node in self.leaf_ids],
            index=pd.Index([int(node) for node in self.leaf_ids], name="node"),
            name="n_extrapolation",
            dtype=int,
        )

    # ------------------------------------------------------------ display
    def summary(self) -> str:
        """Readable table of the subspaces with the global figures first."""

        def fmt(r: pd.Series) -> str:
            txt = (
                f"n = {int(r['n'])}, cAME = {r['came']:.4g} [{r['came_ci_low']:.4g}, {r['came_ci_high']:.4g}], "
                f"CoV = {r['cov_fme']:.3g}"
            )
            if "canlm" in r.index:
                txt += f", cANLM = {r['canlm']:.3g} [{r['canlm_ci_low']:.3g}, {r['canlm_ci_high']:.3g}]"
            return txt

        lines = [
            f"cAMEs of {self.effects.describe_steps()} ({self.method}, {fmt_level(self.conf_level)} CIs)",
            f"  all rows: {fmt(self.root)}",
        ]
        if self.honest:  # the rows the leaves partition: their n add up to it
            lines.append(f"  estimation rows: {fmt(self.estimation_root)}")
        for _, r in self.leaves.iterrows():
            lines.append(f"  [{int(r['node'])}] {r['rule']}: {fmt(r)}")
        lines += [f"  note: {n}" for n in self.notes]
        bad = int(getattr(self.effects, "n_nlm_inaccurate", 0) or 0)
        if bad and "canlm" in self.root.index:  # their NLMs are kept: the cANLMs include them
            lines.append(
                f"  note: the cANLMs include {bad} row(s) whose NLM is inaccurate (error estimate above "
                "nlm_tol after nlm_budget; see results['nlm_error'])"
            )
        lines.append(f"  {self.honesty}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"PartitionResult(method={self.method!r}, n_leaves={len(self.leaf_ids)}, n={int(self.root['n'])})"

    def plot(self, **kwargs: Any) -> Any:
        """Draw the tree with per-leaf fME histograms (see :class:`fme.plotting.PartitionDisplay`)."""
        from ..plotting import PartitionDisplay

        return PartitionDisplay.from_partition(self, **kwargs)
