"""Joint regions: one partition in which several effects are homogeneous at once (paper §5.5, extended).

:func:`fme.came` given a list of effects grows one tree on the matrix of their fMEs (:func:`grow_joint`;
CTREE's multivariate response or CART's summed squared error) and returns a :class:`JointPartitionResult`:
every leaf's figures per effect, each in its own unit, the leaf differences per effect with one multiplicity
adjustment across all, and how much of each effect's heterogeneity the regions explain (the decomposition of
Herbinger, Wright, Nagler, Bischl & Casalicchio, JMLR 2024, "Decomposing global feature effects based on
feature interactions", GADGET). The per-effect figures are those of one-effect partitions sharing the tree
(:attr:`JointPartitionResult.parts`), so both engines fill them as they fill :func:`fme.came`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import integrate, optimize, stats

from .._core.results import FMEResult
from .._utils.frames import ReadableFrame
from .._utils.numfmt import count, fmt_level
from .._utils.validation import check_conf_level
from ..exceptions import FMEError, ParameterError
from ..inference.wald import MULTCOMP, adjust_pvalues
from .grow import evaluated_features, grow_tree
from .partition import LeafTests, PartitionResult
from .settings import TreeSettings
from .unified import NcfUnavailable, unified_interval

__all__ = ["JointPartitionResult", "effect_labels", "grow_joint", "heterogeneity_row"]

HETEROGENEITY_COLUMNS = [
    "effect",
    "n",
    "n_leaves",
    "variance",
    "within_variance",
    "between_variance",
    "share_explained",
    "share_ci_low",
    "share_ci_high",
    "statistic",
    "df1",
    "df2",
    "p_value",
    "interval",
    "note",
]

#: Above this df1 F (about the noncentrality's estimate) the exact unified interval is not computed (its
#: Poisson sums grow as sqrt(lambda)): the equal-tailed one is reported, the lower bound then being tens of SDs
#: or more from 0, where the two differ by less than 1e-4 in the share.
LAMBDA_EXACT_MAX = 5e4
UNIFIED = "unified (Feldman-Cousins)"
EQUAL_TAILED = "equal-tailed (large-noncentrality approximation)"


def effect_labels(effects: list[Any]) -> list[str]:
    """Each effect's step label (``describe_steps``); a label given twice gets ``#k`` (its position, from 1)."""
    labels = [e.describe_steps() for e in effects]
    return [f"{lab} #{k + 1}" if labels.count(lab) > 1 else lab for k, lab in enumerate(labels)]


def grow_joint(effects: list[FMEResult], settings: TreeSettings) -> JointPartitionResult:
    """One tree grown on the fMEs of every effect in ``effects`` (same evaluated rows, validated by
    :func:`fme.came`), column q the q-th effect's, and its figures per effect (:class:`JointPartitionResult`)."""
    X_all = evaluated_features(effects[0], list(settings.features))
    Y = np.column_stack([e.results["fme"].to_numpy(dtype=float) for e in effects])
    tree, leaf_all, leaf_set, grow_rows, notes = grow_tree(X_all, Y, effects[0].results.index, settings)
    parts = [
        PartitionResult(
            e,
            tree,
            X_all,
            list(leaf_set),
            leaf_all,
            settings.conf_level,
            settings.method,
            list(notes),
            dict(settings.params),
            estimate_rows=~grow_rows if settings.honest else None,
            seed=settings.seed,
        )
        for e in effects
    ]
    return JointPartitionResult(parts)


def _ncf_cdf_normal(f_value: float, df1: float, df2: float, nc: float) -> float:
    """P(F <= f) of the noncentral F with the numerator's noncentral chi-square replaced by its normal
    approximation N(df1 + nc, 2 (df1 + 2 nc)), averaged over the denominator's chi-square(df2) by quadrature.

    scipy's noncentral F CDF is NaN in parts of its far range (a huge noncentrality, as for regions that
    separate the fMEs exactly); there nc is large and the approximation close."""
    sd = np.sqrt(2.0 * (df1 + 2.0 * nc))
    lo, hi = stats.chi2.ppf([1e-13, 1.0 - 1e-13], df2)

    def at(w: float) -> float:
        return float(stats.norm.cdf((f_value * df1 * w / df2 - df1 - nc) / sd) * stats.chi2.pdf(w, df2))

    return float(min(1.0, max(0.0, integrate.quad(at, lo, hi, limit=200, epsabs=1e-14)[0])))


def _equal_tailed(f_value: float, df1: float, df2: float, n: float, alpha: float) -> tuple[float, float]:
    """Equal-tailed bounds of eta^2 = lambda / (lambda + n): the noncentral F's CDF inverted in lambda at
    1 - alpha/2 and alpha/2 (Steiger 2004, Psychol. Methods 9), with :func:`_ncf_cdf_normal` where scipy's CDF is
    NaN. Used only where the unified interval is not computed (a huge noncentrality)."""
    if df1 * f_value > 1e12 * max(df2, 1.0):
        # regions that separate the fMEs to rounding: the numerator's noncentral chi-square, of relative SD under
        # 1e-6 times the denominator's, is its mean df1 + lambda, so lambda = df1 F chi2(df2) / df2 - df1
        # (relative error under 1e-6 in lambda, far below rounding in the share)
        q = stats.chi2.ppf([alpha / 2.0, 1.0 - alpha / 2.0], df2) / df2
        lam_lo, lam_hi = (np.maximum(df1 * f_value * q - df1, 0.0)).tolist()
        return lam_lo / (lam_lo + n), lam_hi / (lam_hi + n)

    def cdf(nc: float) -> float:
        value = float(stats.ncf.cdf(f_value, df1, df2, nc))
        return _ncf_cdf_normal(f_value, df1, df2, nc) if np.isnan(value) else value

    def bound(target: float) -> float:
        # P(F <= f | lambda) falls in lambda; 0 when even lambda = 0 leaves it below the target
        if not stats.f.cdf(f_value, df1, df2) > target:
            return 0.0
        hi = max(10.0, f_value * df1 * 2.0)
        while cdf(hi) > target and hi < 1e300:
            hi *= 2.0
        lam = optimize.brentq(lambda nc: cdf(nc) - target, 0.0, hi, xtol=1e-10, rtol=1e-13)
        return float(lam) / (float(lam) + n)

    return bound(1.0 - alpha / 2.0), bound(alpha / 2.0)


def _eta_squared(f_value: float, df1: float, df2: float, n: float, conf_level: float) -> tuple[float, float, str]:
    """Bounds of the explained share eta^2 = lambda / (lambda + n) and the interval's kind: the unified
    (Feldman-Cousins) interval of the noncentrality (:func:`unified_interval`), or the equal-tailed one where
    the noncentrality is beyond :data:`LAMBDA_EXACT_MAX` or scipy's noncentral F fails."""
    if df1 * f_value <= LAMBDA_EXACT_MAX:
        try:
            iv = unified_interval(f_value, df1, df2, conf_level)
        except (NcfUnavailable, ValueError, RuntimeError):
            pass
        else:
            return iv.lambda_low / (iv.lambda_low + n), iv.lambda_high / (iv.lambda_high + n), UNIFIED
    lo, hi = _equal_tailed(f_value, df1, df2, n, 1.0 - conf_level)
    return lo, hi, EQUAL_TAILED


def heterogeneity_row(leaves: pd.DataFrame, root: pd.Series, conf_level: float) -> dict[str, Any]:
    """The GADGET decomposition of one effect's fMEs over the estimation rows from its leaves' counts and SDs
    (both engines' leaves hold them): see :meth:`JointPartitionResult.heterogeneity`."""
    n_leaf = leaves["n"].to_numpy(dtype=float)
    sd_leaf = leaves["sd_fme"].to_numpy(dtype=float)
    n, sd = float(root["n"]), float(root["sd_fme"])
    filled = n_leaf > 0
    k = int(filled.sum())
    ss_within = float(np.sum(np.where(n_leaf >= 2, (n_leaf - 1.0) * np.nan_to_num(sd_leaf) ** 2, 0.0)))
    ss_total = (n - 1.0) * sd**2 if n >= 2 else float("nan")
    out = {"n": int(n), "n_leaves": k, "variance": ss_total / n if n else np.nan, "within_variance": ss_within / n}
    out["between_variance"] = out["variance"] - out["within_variance"]
    # within <= total up to rounding: the share is kept in [0, 1] (an effect constant up to rounding gives 0)
    share = float(np.clip(1.0 - ss_within / ss_total, 0.0, 1.0)) if ss_total > 0 else float("nan")
    df1, df2 = k - 1.0, n - k
    f_value = p_value = lo = hi = float("nan")
    kind = note = ""
    if not ss_total > 0:
        note = "the fMEs do not vary: there is no heterogeneity to explain (share undefined)"
    elif ss_within <= 0 and k >= 2:
        note = (
            "every region's fMEs are constant (within-region variance 0): the regions explain all of the "
            "heterogeneity (share 1), the F statistic is infinite and the F test and the share's interval are "
            "degenerate (not computed)"
        )
    elif np.isfinite(share) and df1 >= 1 and df2 >= 1:
        f_value = ((ss_total - ss_within) / df1) / (ss_within / df2)
        p_value = float(stats.f.sf(f_value, df1, df2))
        lo, hi, kind = _eta_squared(f_value, df1, df2, n, conf_level)
        if kind == EQUAL_TAILED:
            note = (
                "the noncentrality is huge (the regions separate the fMEs almost exactly): equal-tailed interval, "
                "within about 1e-4 of the unified one"
            )
    return {
        **out,
        "share_explained": share,
        "share_ci_low": lo,
        "share_ci_high": hi,
        "statistic": f_value,
        "df1": df1,
        "df2": df2,
        "p_value": p_value,
        "interval": kind,
        "note": note,
    }


def _long(frames: list[pd.DataFrame], labels: list[str]) -> pd.DataFrame:
    """The frames stacked, each with an ``effect`` column (its label) after ``node`` when there is one."""
    out = []
    for frame, label in zip(frames, labels):
        f = pd.DataFrame(frame).copy()
        f.insert(list(f.columns).index("node") + 1 if "node" in f.columns else 0, "effect", label)
        out.append(f)
    return pd.concat(out, ignore_index=True)


class JointPartitionResult(PartitionResult):
    """One partition for several effects, returned by :func:`fme.came` given a list of effects.

    The tree and its subspaces (``tree``, ``leaf_ids``, ``leaf_of_row``, ``nodes``, ``rule``, ``describe``,
    the honest split: ``honest``, ``grown_on``, ``estimated_on``) are shared; the figures are per effect.

    Attributes
    ----------
    leaves : DataFrame
        One row per (leaf, effect), leaf-major: ``node``, ``effect`` (the effect's step label), then the columns
        of a one-effect partition's leaves (n, came, sd_fme, the intervals, cANLM, rule ...), each effect in its
        own unit.
    root, estimation_root : DataFrame
        One row per effect: the figures of all evaluated rows, and of the rows that estimate the leaves.
    parts : list of PartitionResult
        Per effect, the one-effect partition with the shared tree (its ``leaves``, ``test()``, ``plot()``).
    effect_labels : list of str
    effects_list : list
        The effects, in the order given.
    """

    def __init__(self, parts: list[PartitionResult]) -> None:
        first = parts[0]
        # the shared tree, subspaces, honest split and rows: those of the first effect's partition
        self.__dict__.update(first.__dict__)
        self.parts = parts
        self.effects_list = [p.effects if p.dask_effects is None else p.dask_effects for p in parts]
        self.effect_labels = effect_labels(self.effects_list)
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the joint tables from :attr:`parts` (an engine that filled the parts' figures calls it)."""
        labels = self.effect_labels
        leaves = _long([p.leaves for p in self.parts], labels)
        order = np.lexsort((np.repeat(np.arange(len(self.parts)), len(self.leaf_ids)), leaves["node"].to_numpy()))
        self.leaves = ReadableFrame(leaves.iloc[order].reset_index(drop=True))
        self.root = _long([p.root.to_frame().T for p in self.parts], labels)
        self.estimation_root = _long([p.estimation_root.to_frame().T for p in self.parts], labels)
        self.notes = list(self.parts[0].notes)

    # ----------------------------------------------------------------- tables
    def test(
        self, hypothesis: str = "pairwise", multcomp: str | None = "holm", conf_level: float | None = None
    ) -> LeafTests:
        """Differences between leaf cAMEs per effect, with one multiplicity adjustment across all effects' tests.

        Parameters
        ----------
        hypothesis : {'pairwise', 'reference'}, default='pairwise'
        multcomp : {'holm', 'bonferroni', 'fdr_bh'} or None, default='holm'
            Applied once to the family of every effect's differences (column ``p_value_adj``).
        conf_level : float, optional

        Returns
        -------
        LeafTests
            One row per (effect, difference): ``effect`` and the columns of
            :meth:`PartitionResult.test`; ``global_test`` maps each effect's label to its Wald test that all its
            leaf cAMEs are equal (not adjusted); ``left_out`` and ``honest`` as for one effect.
        """
        if multcomp is not None and multcomp not in MULTCOMP:
            raise ParameterError(f"multcomp must be one of {MULTCOMP} or None, got {multcomp!r}.")
        tables = [p.test(hypothesis, multcomp=None, conf_level=conf_level) for p in self.parts]
        frame = pd.concat(
            [pd.DataFrame(t).assign(effect=lab) for t, lab in zip(tables, self.effect_labels)], ignore_index=True
        )
        frame = frame[["effect"] + [c for c in frame.columns if c != "effect"]]
        if multcomp is not None:
            frame["p_value_adj"] = adjust_pvalues(frame["p_value"].to_numpy(dtype=float), multcomp)
            frame["multcomp"] = multcomp
        out = LeafTests(frame)
        out.global_test = {lab: t.global_test for t, lab in zip(tables, self.effect_labels)}  # type: ignore[assignment]
        out.left_out = tables[0].left_out
        out.honest = self.honest
        return out

    def heterogeneity(self, conf_level: float | None = None) -> pd.DataFrame:
        """How much of each effect's heterogeneity the regions explain (the GADGET decomposition).

        Over the rows that estimate the leaves (of an honest partition: rows the tree never saw), the variance
        of an effect's fMEs splits into the variance within the regions and between them:
        ``variance = within_variance + between_variance`` (divisor n) and ``share_explained = 1 -
        within_variance / variance`` (kept in [0, 1] against rounding), the share of the fMEs' variance that the
        regions explain (Herbinger et al. 2024 use the same split of the loss of a feature effect into its
        within-region part).

        The interval is that of the population share eta^2 from the one-way ANOVA of the fMEs on the regions:
        the F statistic (``statistic``/``df1``/``df2``; ``p_value`` its test that the regions explain nothing)
        is noncentral F with noncentrality lambda >= 0 and eta^2 = lambda / (lambda + n) (Steiger 2004,
        Psychol. Methods 9). The interval of lambda is the unified one of Feldman & Cousins (1998, Phys. Rev. D
        57, 3873): a Neyman belt whose acceptance regions are ordered by the likelihood ratio p(F | lambda) /
        p(F | lambda_best(F)) (``fme._trees.unified.unified_interval``), so it covers every true share,
        0 included, with probability ``conf_level``, and its lower bound is above 0 exactly when the F test
        rejects at alpha = 1 - conf_level (an equal-tailed interval would cover a true 0 with probability
        1 - alpha/2). Its upper bound is above 0 even where F is near 0. ``interval`` names the kind:
        ``'unified (Feldman-Cousins)'``, or, where df1 F (about the noncentrality's estimate) exceeds 5e4
        (regions that separate the fMEs almost exactly, a lower bound tens of SDs or more from 0) or the
        computation fails,
        ``'equal-tailed (large-noncentrality approximation)'``, the noncentral F inverted at alpha/2 and
        1 - alpha/2 (a normal approximation of its numerator where scipy's CDF is NaN): there the two
        intervals differ by less than 1e-4 in the share (``tests/_trees/test_unified.py``), and ``note`` says so.

        Its assumptions: the regions are fixed (true of an honest partition's estimation rows; with
        ``honest=False`` the tree chose them on the same rows, and the share and its interval are biased
        upwards), the rows independent, and the fMEs within a region about normal with one variance (with many
        rows a moderate departure matters little). The fMEs are those of the fitted model: the uncertainty of
        the model's parameters is not in it.

        Degenerate cases, with NaN statistic, p-value and bounds and a ``note``: fMEs that do not vary (share
        NaN: nothing to explain) and regions within which every fME is constant (within-region variance exactly
        0: share 1, F infinite). One region: NaN test and bounds (nothing to test).

        Parameters
        ----------
        conf_level : float, optional
            Default: the partition's.

        Returns
        -------
        DataFrame
            One row per effect: ``effect``, ``n``, ``n_leaves``, ``variance``, ``within_variance``,
            ``between_variance`` (in the effect's unit squared), ``share_explained``, ``share_ci_low``,
            ``share_ci_high``, ``statistic``, ``df1``, ``df2``, ``p_value``, ``interval`` (the interval's
            kind; empty where there is none) and ``note`` (why a figure is missing or approximate; empty if
            none).
        """
        conf = self.conf_level if conf_level is None else check_conf_level(conf_level)
        rows = [
            {"effect": lab, **heterogeneity_row(p.leaves, p.estimation_root, conf)}
            for p, lab in zip(self.parts, self.effect_labels)
        ]
        return pd.DataFrame(rows, columns=HETEROGENEITY_COLUMNS)

    def joint_estimates(self) -> tuple:
        """Not defined for several effects: pass one effect's partition (``part.parts[k]``) to
        :func:`fme.hypotheses`."""
        raise FMEError(
            "a joint partition holds several effects' leaf cAMEs; pass one of them, part.parts[k], to fme.hypotheses."
        )

    def predict(self, new_rows: pd.DataFrame) -> pd.DataFrame:
        """:meth:`PartitionResult.predict` per effect, stacked: one row per (new row, effect) with ``effect``;
        the new rows' index labels repeat once per effect."""
        return pd.concat(
            [p.predict(new_rows).assign(effect=lab) for p, lab in zip(self.parts, self.effect_labels)], axis=0
        )

    # ----------------------------------------------------------------- display
    def summary(self) -> str:
        """Readable table: per leaf its rule, then one line per effect; then each effect's explained share."""
        lines = [
            f"Joint cAMEs of {count(len(self.parts), 'effect')} ({self.method}, {fmt_level(self.conf_level)} CIs): "
            + "; ".join(self.effect_labels)
        ]
        for node in self.leaf_ids:
            sub = self.leaves[self.leaves["node"] == node]
            lines.append(f"  [{int(node)}] {sub['rule'].iloc[0]}: n = {int(sub['n'].iloc[0])}")
            for _, r in sub.iterrows():
                lines.append(
                    f"      {r['effect']}: cAME = {r['came']:.4g} [{r['came_ci_low']:.4g}, {r['came_ci_high']:.4g}],"
                    f" SD = {r['sd_fme']:.3g}"
                )
        if len(self.leaf_ids) > 1:
            het = self.heterogeneity()
            for _, r in het.iterrows():
                kind = f" ({r['interval']} interval)" if r["interval"] else ""
                note = f"; {r['note']}" if r["note"] else ""
                lines.append(
                    f"  share explained, {r['effect']}: {r['share_explained']:.3g} "
                    f"[{r['share_ci_low']:.3g}, {r['share_ci_high']:.3g}]{kind}{note}"
                )
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(f"  {self.honesty}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"JointPartitionResult(method={self.method!r}, n_effects={len(self.parts)}, "
            f"n_leaves={len(self.leaf_ids)}, n={int(self.parts[0].root['n'])})"
        )

    def plot(self, **kwargs: Any) -> Any:
        """Draw the tree with one line per effect (cAME and CI) in each leaf's box
        (:class:`fme.plotting.JointPartitionDisplay`)."""
        from ..plotting import JointPartitionDisplay

        return JointPartitionDisplay.from_partition(self, **kwargs)
