"""Extrapolation-risk detectors MCEC and CERT (Hooker; paper Appendix "Model Extrapolation").

Both estimate R(x) = U(x) / (U(x) + P(x)), the probability that x came from a
uniform distribution over the reference box rather than from the data (paper
Eq. extrapolation_risk), and flag R(x) > threshold: MCEC with a classifier
against a Monte-Carlo uniform background, CERT with a tree whose background
counts are the expected uniform counts of its boxes (Eq. cert_hypervolume).
Registered as ``"mcec"`` and ``"cert"``.
"""

from __future__ import annotations

import numbers
from abc import abstractmethod
from typing import Any

import numpy as np
import pandas as pd

from .._utils.validation import check_random_state
from ..exceptions import ParameterError
from ._base import register_detector
from ._encoded import EncodedDetector, check_fraction, check_int, draw_seed

__all__ = ["MCECDetector", "CERTDetector"]


# ----------------------------------------------------------------- MCEC
class _RiskDetector(EncodedDetector):
    """Detectors with an estimated risk R(x) = U / (U + P) in [0, 1] (paper eq. extrapolation_risk),
    flagging R(x) > threshold."""

    threshold: float

    @abstractmethod
    def _risk(self, pts: pd.DataFrame) -> np.ndarray:
        """R(x) for points without missing values or unseen levels."""

    def _numeric_flags(self, pts: pd.DataFrame, usable: np.ndarray) -> np.ndarray:
        return self._risk(pts) > self.threshold

    def score(self, points: pd.DataFrame) -> np.ndarray:
        """R(x) in [0, 1] (1 outside the box or for an unseen level; NaN with missing values)."""
        pts = self._check_fitted(points)
        basic, _ = self.encoding_.basic_reasons(pts)
        out = np.full(len(pts), np.nan)
        ok = ~basic
        if ok.any():
            out[ok] = self._risk(pts.iloc[np.flatnonzero(ok)])
        unseen = np.zeros(len(pts), dtype=bool)
        for m in self.encoding_.unseen(pts).values():
            unseen |= m
        out[unseen & ~np.isnan(self.encoding_.standardise(pts)).any(axis=1)] = 1.0
        return out


@register_detector
class MCECDetector(_RiskDetector):
    """Monte-Carlo extrapolation classification (Hooker; paper Appendix, Eq. extrapolation_risk).

    The reference rows (label "data") are augmented with ``n_background``
    points drawn uniformly over the reference box (label "background"); a
    classifier then estimates R(x) = U(x) / (U(x) + P(x)), the probability
    that x came from the uniform rather than the data distribution. A point
    is flagged when R(x) > ``threshold`` (the paper's rule: 0.5). Points
    outside the reference box get R = 1 (paper).

    With unequal class sizes the classifier's probability p estimates
    n_b U / (n_b U + n P); it is converted to R by re-weighting the classes
    (R = (p/n_b) / (p/n_b + (1 - p)/n)), which is p itself when n_b = n.

    Numeric features are standardised; categorical features enter as one-hot
    indicators of the reference levels and the background draws their levels
    uniformly among those levels; an unseen level is flagged.

    Parameters
    ----------
    threshold : float in (0, 1), default=0.5
        Flag when R(x) > threshold.
    n_background : int, optional
        Uniform background points (default: as many as reference rows).
    classifier : scikit-learn classifier, optional
        Cloned and fitted on the augmented data; needs ``predict_proba``.
        Default ``RandomForestClassifier(n_estimators=100, min_samples_leaf=5)``.
        Its ``random_state`` is set from ``random_state`` when it has one.
    random_state : None, int or numpy Generator
        Seeds the background sample and the classifier (None: seed 0); the detector is
        deterministic given it.
    """

    name = "mcec"
    supports_categorical = True

    def __init__(
        self,
        threshold: float = 0.5,
        n_background: int | None = None,
        classifier: Any = None,
        random_state: Any = None,
    ) -> None:
        self.threshold = check_fraction(threshold, "threshold", 0.0, 1.0)
        self.n_background = None if n_background is None else check_int(n_background, "n_background", 1)
        if classifier is not None and not (hasattr(classifier, "fit") and hasattr(classifier, "predict_proba")):
            raise ParameterError(
                f"classifier must be a scikit-learn classifier with fit and predict_proba, got {classifier!r}."
            )
        self.classifier = classifier
        self.random_state = random_state

    def __repr__(self) -> str:
        return f"MCECDetector(threshold={self.threshold!r})"

    def _fit_encoded(self, reference: pd.DataFrame) -> None:
        from sklearn.base import clone
        from sklearn.ensemble import RandomForestClassifier

        rng = check_random_state(self.random_state)
        enc = self.encoding_
        n = len(reference)
        nb = n if self.n_background is None else self.n_background
        bg = {c: rng.uniform(enc.low[j], enc.high[j], nb) for j, c in enumerate(enc.numeric)}
        for c in enc.categorical:
            levels = np.asarray(enc.levels[c], dtype=object)
            bg[c] = levels[rng.integers(0, levels.size, nb)]
        background = pd.DataFrame(bg)
        # Background values are already standardised: undo so one_hot() treats both alike.
        for j, c in enumerate(enc.numeric):
            background[c] = background[c] * enc.sd[j] + enc.mean[j]
        X = np.vstack([enc.one_hot(reference), enc.one_hot(background)])
        y = np.r_[np.zeros(n, dtype=int), np.ones(nb, dtype=int)]
        if self.classifier is None:
            clf = RandomForestClassifier(n_estimators=100, min_samples_leaf=5, random_state=draw_seed(rng))
        else:
            clf = clone(self.classifier)
            if "random_state" in clf.get_params():
                clf.set_params(random_state=draw_seed(rng))
        clf.fit(X, y)
        self.classifier_ = clf
        self._bg_col = int(np.flatnonzero(np.asarray(clf.classes_) == 1)[0])
        self.n_reference_, self.n_background_ = n, nb

    def _risk(self, pts: pd.DataFrame) -> np.ndarray:
        enc = self.encoding_
        p = self.classifier_.predict_proba(enc.one_hot(pts))[:, self._bg_col]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = p / self.n_background_
            r = u / (u + (1.0 - p) / self.n_reference_)
        r = np.where(np.isnan(r), p, r)
        return np.where(enc.outside_box(enc.standardise(pts)), 1.0, r)

    def _reason(self, pts: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        r = self._risk(pts)
        box = self.encoding_.outside_box(self.encoding_.standardise(pts))
        return np.array(
            [
                "MCEC R(x)=1 (outside the reference range)" if b else f"MCEC R(x)={v:.2f} > {self.threshold:g}"
                for v, b in zip(r, box)
            ],
            dtype=object,
        )


# ----------------------------------------------------------------- CERT
@register_detector
class CERTDetector(_RiskDetector):
    """Confidence and extrapolation representation tree (Hooker; paper Appendix, Eq. cert_hypervolume).

    A classification tree is grown on the reference data alone. Instead of a
    Monte-Carlo background sample, the background count of every box is its
    *expected* uniform count: the box's share of the reference box's
    hypervolume times ``n_background`` (default: the number of reference
    rows). Splits are chosen greedily by the weighted Gini impurity of
    (data count, expected uniform count) on each side, at midpoints between
    consecutive distinct data values of one numeric feature (standardised),
    or, when no such split lowers the impurity by ``min_gain``, at the middle
    of the node's widest side (see ``min_gain``), with at least ``min_leaf`` (data + expected uniform) weight per
    child and depth at most ``max_depth``. A leaf's R = uniform / (uniform + data); a
    point is flagged when its leaf has R > ``threshold`` (0.5: more expected
    uniform points than data), and points outside the reference box get R = 1.

    Only numeric features form the tree; categorical features are checked
    like the envelope (an unseen level is flagged). The tree is
    deterministic (no randomness).

    Parameters
    ----------
    threshold : float in (0, 1), default=0.5
    n_background : int, optional
        Total expected uniform count of the root box (default: reference rows).
    min_leaf : float, default=5
        Minimum data + expected-uniform weight in each child.
    max_depth : int, default=12
    min_gain : float, default=0.05
        A Gini split must lower the node's impurity by this share; otherwise
        the node's widest side is halved instead. Greedy Gini splits alone
        cannot find a diagonal band (every axis split leaves the data/volume
        ratio unchanged on both sides); halving looks one level deeper.
    purity : float, default=0.05
        Nodes whose Gini impurity is at most this are not split (their R is
        already near 0 or 1).
    """

    name = "cert"
    supports_categorical = True

    def __init__(
        self,
        threshold: float = 0.5,
        n_background: int | None = None,
        min_leaf: float = 5.0,
        max_depth: int = 12,
        min_gain: float = 0.05,
        purity: float = 0.05,
        random_state: Any = None,
    ) -> None:
        self.threshold = check_fraction(threshold, "threshold", 0.0, 1.0)
        self.n_background = None if n_background is None else check_int(n_background, "n_background", 1)
        self.min_gain = check_fraction(min_gain, "min_gain", 0.0, 1.0)
        self.purity = check_fraction(purity, "purity", 0.0, 0.5)
        if isinstance(min_leaf, bool) or not isinstance(min_leaf, numbers.Real) or not min_leaf > 0:
            raise ParameterError(f"min_leaf must be a positive number, got {min_leaf!r}.")
        self.min_leaf = float(min_leaf)
        self.max_depth = check_int(max_depth, "max_depth", 0)
        self.random_state = random_state  # accepted for a uniform interface; the tree is deterministic

    def __repr__(self) -> str:
        return f"CERTDetector(threshold={self.threshold!r}, max_depth={self.max_depth})"

    @staticmethod
    def _gini(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        tot = a + b
        with np.errstate(divide="ignore", invalid="ignore"):
            g = 1.0 - (a / tot) ** 2 - (b / tot) ** 2
        return np.where(tot > 0, g * tot, 0.0)  # weighted by the child's total count

    def _fit_encoded(self, reference: pd.DataFrame) -> None:
        enc = self.encoding_
        Z = enc.z_reference
        d = Z.shape[1]
        nb = float(len(reference) if self.n_background is None else self.n_background)
        lo0, hi0 = enc.low.copy(), enc.high.copy()
        # Nodes: feature, threshold, left, right (-1 for leaves), R at leaves.
        self.feature_, self.threshold_, self.left_, self.right_, self.risk_ = [], [], [], [], []

        def new_node() -> int:
            for lst, v in (
                (self.feature_, -1),
                (self.threshold_, np.nan),
                (self.left_, -1),
                (self.right_, -1),
                (self.risk_, np.nan),
            ):
                lst.append(v)
            return len(self.feature_) - 1

        # Iterative growth (stack) to avoid recursion limits.
        root = new_node()
        stack = [(root, np.arange(len(Z)), lo0, hi0, nb, 0)]
        while stack:
            node, rows, lo, hi, n_u, depth = stack.pop()
            n_d = float(rows.size)
            self.risk_[node] = n_u / (n_u + n_d) if n_u + n_d > 0 else 1.0
            if depth >= self.max_depth or d == 0 or n_d == 0:
                continue
            parent = float(self._gini(np.array(n_d), np.array(n_u)))
            if parent <= self.purity * (n_d + n_u):
                continue  # (nearly) pure: R is clear, splitting further only adds noise
            best = (parent, -1, np.nan)
            for j in range(d):
                if hi[j] <= lo[j]:
                    continue
                v = np.sort(Z[rows, j])
                cuts_at = np.flatnonzero(v[1:] > v[:-1])
                if cuts_at.size == 0:
                    continue
                s = 0.5 * (v[cuts_at] + v[cuts_at + 1])
                dl = cuts_at + 1.0
                ul = n_u * (s - lo[j]) / (hi[j] - lo[j])
                dr, ur = n_d - dl, n_u - ul
                imp = self._gini(dl, ul) + self._gini(dr, ur)
                ok = (dl + ul >= self.min_leaf) & (dr + ur >= self.min_leaf)
                if not ok.any():
                    continue
                imp = np.where(ok, imp, np.inf)
                k = int(np.argmin(imp))
                if imp[k] < best[0]:
                    best = (imp[k], j, s[k])
            _, j, s = best
            if j < 0 or parent - best[0] < self.min_gain * parent:
                # No axis split separates data from volume (e.g. a diagonal band: every
                # marginal looks uniform, an XOR-like case greedy trees cannot see), so
                # look one level deeper: halve the node's widest side (standardised units).
                widths = hi - lo
                j = int(np.argmax(widths))
                s = 0.5 * (lo[j] + hi[j])
                n_left = float((Z[rows, j] <= s).sum())
                if widths[j] <= 0 or min(n_left + 0.5 * n_u, n_d - n_left + 0.5 * n_u) < self.min_leaf:
                    continue
            frac = (s - lo[j]) / (hi[j] - lo[j])
            left, right = new_node(), new_node()
            self.feature_[node], self.threshold_[node] = j, s
            self.left_[node], self.right_[node] = left, right
            go_left = Z[rows, j] <= s
            hi_l, lo_r = hi.copy(), lo.copy()
            hi_l[j], lo_r[j] = s, s
            stack.append((left, rows[go_left], lo, hi_l, n_u * frac, depth + 1))
            stack.append((right, rows[~go_left], lo_r, hi, n_u * (1.0 - frac), depth + 1))
        self.feature_ = np.asarray(self.feature_)
        self.threshold_ = np.asarray(self.threshold_, dtype=float)
        self.left_, self.right_ = np.asarray(self.left_), np.asarray(self.right_)
        self.risk_ = np.asarray(self.risk_, dtype=float)
        self.n_leaves_ = int((self.feature_ < 0).sum())

    def _risk(self, pts: pd.DataFrame) -> np.ndarray:
        enc = self.encoding_
        z = enc.standardise(pts)
        node = np.zeros(len(z), dtype=int)
        for _ in range(self.max_depth + 1):  # vectorised descent, one level per pass
            internal = self.feature_[node] >= 0
            if not internal.any():
                break
            i = np.flatnonzero(internal)
            f = self.feature_[node[i]]
            go_left = z[i, f] <= self.threshold_[node[i]]
            node[i] = np.where(go_left, self.left_[node[i]], self.right_[node[i]])
        return np.where(enc.outside_box(z), 1.0, self.risk_[node])

    def _reason(self, pts: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        r = self._risk(pts)
        return np.array([f"CERT leaf R(x)={v:.2f} > {self.threshold:g}" for v in r], dtype=object)
