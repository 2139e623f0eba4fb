"""Extrapolation detectors beyond the envelope (paper Appendix "Model Extrapolation").

Registered in :data:`fme.extrapolation.DETECTORS` under the names ``"hull"``,
``"mcec"``, ``"cert"``, ``"isolation_forest"`` and ``"lof"``. All of them
share the conventions of :class:`fme.extrapolation.ExtrapolationDetector`:
``fit(reference) -> self``, ``flag(points) -> bool array``, ``score`` (larger
= more extrapolated) and ``explain`` (a reason per flagged point).

Conventions shared by every detector here:

* Numeric features are standardised with the reference mean and SD (SD 0 ->
  1) before any geometry, so that features on different scales weigh alike
  and the linear programs stay well conditioned.
* The reference data must have no missing value in the columns used
  (:class:`~fme.exceptions.ExtrapolationError` otherwise); a *point* with a
  missing value is flagged ("missing value in <feature>"), because no
  detector can place it.
* A categorical level the reference data lacks is always flagged, as in the
  envelope.
"""

from __future__ import annotations

import numbers
from abc import abstractmethod
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import linprog, nnls
from scipy.spatial import ConvexHull, QhullError, cKDTree

from ._validation import check_random_state, is_categorical
from .exceptions import ExtrapolationError, ParameterError
from .extrapolation import ExtrapolationDetector

__all__ = [
    "ConvexHullDetector",
    "MCECDetector",
    "CERTDetector",
    "IsolationForestDetector",
    "LOFDetector",
]


# ----------------------------------------------------------------- helpers
def _check_fraction(value: Any, name: str, low: float, high: float, *, closed_high: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = low < float(value) < high or (closed_high and float(value) == high)
    if not ok:
        right = "]" if closed_high else ")"
        raise ParameterError(f"{name} must be a number in ({low:g}, {high:g}{right}, got {value!r}.")
    return float(value)


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _seed(rng: np.random.Generator) -> int:
    """An int seed for scikit-learn estimators, drawn from the detector's generator."""
    return int(rng.integers(0, 2**31 - 1))


def _join(parts: list[np.ndarray], n: int) -> np.ndarray:
    out = np.full(n, "", dtype=object)
    for p in parts:
        sep = np.where((out != "") & (p != ""), "; ", "")
        out = out + sep + p
    return out


class _Encoding:
    """Standardised numeric columns and reference levels of categorical ones.

    Parameters
    ----------
    reference : DataFrame
        The reference (training) data.
    """

    def __init__(self, reference: pd.DataFrame) -> None:
        self.numeric = [c for c in reference.columns if not is_categorical(reference[c])]
        self.categorical = [c for c in reference.columns if is_categorical(reference[c])]
        for c in self.numeric:
            if not pd.api.types.is_numeric_dtype(reference[c].dtype):
                raise ExtrapolationError(f"reference column {c!r} has dtype {reference[c].dtype}; expected numbers.")
        num = reference[self.numeric].to_numpy(dtype=float)
        bad = [c for j, c in enumerate(self.numeric) if np.isnan(num[:, j]).any()]
        bad += [c for c in self.categorical if reference[c].isna().any()]
        if bad:
            raise ExtrapolationError(
                f"reference_data has missing values in {bad}; detectors need complete reference rows "
                "(drop or impute them first)."
            )
        if not np.isfinite(num).all():
            raise ExtrapolationError("reference_data has infinite values in numeric columns.")
        self.mean = num.mean(axis=0) if num.size else np.empty(0)
        sd = num.std(axis=0) if num.size else np.empty(0)
        self.sd = np.where(sd > 0, sd, 1.0)
        self.levels = {c: list(pd.unique(reference[c])) for c in self.categorical}
        self.z_reference = self.standardise(reference)
        self.low = self.z_reference.min(axis=0) if num.size else np.empty(0)
        self.high = self.z_reference.max(axis=0) if num.size else np.empty(0)

    def standardise(self, frame: pd.DataFrame) -> np.ndarray:
        return (frame[self.numeric].to_numpy(dtype=float) - self.mean) / self.sd

    def unseen(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Per categorical column, True where the level is not in the reference data."""
        return {c: ~frame[c].isin(self.levels[c]).to_numpy() & frame[c].notna().to_numpy() for c in self.categorical}

    def missing(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        return {c: frame[c].isna().to_numpy() for c in self.numeric + self.categorical}

    def one_hot(self, frame: pd.DataFrame) -> np.ndarray:
        """Standardised numeric columns followed by 0/1 indicators of the reference levels."""
        blocks = [self.standardise(frame)]
        for c in self.categorical:
            col = frame[c].to_numpy(dtype=object)
            blocks.append(np.column_stack([col == lv for lv in self.levels[c]]).astype(float))
        return np.hstack(blocks) if blocks else np.empty((len(frame), 0))

    def outside_box(self, z: np.ndarray, tol: float = 0.0) -> np.ndarray:
        if z.shape[1] == 0:
            return np.zeros(len(z), dtype=bool)
        with np.errstate(invalid="ignore"):
            return ((z < self.low - tol) | (z > self.high + tol)).any(axis=1)

    def basic_reasons(self, frame: pd.DataFrame) -> tuple[np.ndarray, list[np.ndarray]]:
        """Rows with a missing value or an unseen level, and the reasons for them."""
        n = len(frame)
        hit = np.zeros(n, dtype=bool)
        parts = []
        for c, m in self.missing(frame).items():
            hit |= m
            parts.append(np.where(m, f"missing value in {c}", ""))
        for c, m in self.unseen(frame).items():
            hit |= m
            parts.append(np.where(m, f"{c} level not in reference data", ""))
        return hit, parts


class _EncodedDetector(ExtrapolationDetector):
    """Shared fit/flag plumbing: encode, then a numeric test on complete, seen rows."""

    def _fit(self, reference: pd.DataFrame) -> None:
        self.encoding_ = _Encoding(reference)
        self._fit_encoded(reference)

    @abstractmethod
    def _fit_encoded(self, reference: pd.DataFrame) -> None:
        """Fit on the reference data once it is encoded."""

    @abstractmethod
    def _numeric_flags(self, pts: pd.DataFrame, usable: np.ndarray) -> np.ndarray:
        """Flags for points without missing values or unseen levels."""

    def flag(self, points: pd.DataFrame) -> np.ndarray:
        """Boolean array, True where a point is an extrapolation point."""
        pts = self._check_fitted(points)
        basic, _ = self.encoding_.basic_reasons(pts)
        out = basic.copy()
        usable = ~basic
        if usable.any():
            out[usable] = self._numeric_flags(pts.iloc[np.flatnonzero(usable)], usable)
        return out

    @abstractmethod
    def _reason(self, pts: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        """Reason per point (only read where flagged)."""

    def explain(self, points: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        """Reason per point (empty string where not flagged)."""
        pts = self._check_fitted(points)
        flagged = np.asarray(flagged, dtype=bool)
        basic, parts = self.encoding_.basic_reasons(pts)
        out = _join(parts, len(pts))
        rest = flagged & ~basic
        if rest.any():
            out[rest] = self._reason(pts.iloc[np.flatnonzero(rest)], rest)
        out[~flagged] = ""
        return out


# ----------------------------------------------------------------- convex hull
class ConvexHullDetector(_EncodedDetector):
    """Outside the convex hull of the reference data (King & Zeng).

    Paper, Appendix "Model Extrapolation": King and Zeng define extrapolation
    as predicting outside the convex hull of the training data. A point p is
    inside iff there are weights lambda >= 0 with sum(lambda) = 1 and
    X^T lambda = p, a linear-programming feasibility problem.

    The hull is taken over the *numeric* features, standardised with the
    reference mean and SD. Categorical features are not part of the hull
    (one-hot indicators would make every mixture of levels "inside", which is
    meaningless); they are checked like the envelope: a level the reference
    data lacks is flagged.

    How membership is decided (exact up to ``tol``; the fast paths only ever
    decide cases they can certify):

    * one numeric feature: the hull is the interval [min, max];
    * up to ``qhull_max_dim`` numeric features: the facets of
      ``scipy.spatial.ConvexHull`` (Qhull), tested for all points at once;
    * more features, or data on a lower-dimensional subspace (Qhull fails):
      points outside the reference box or beyond the reference's support
      along a bank of directions (random ones, the direction from the
      centroid, the direction from the nearest reference row) are outside;
      points inside the hull of a few extreme reference rows (Qhull of at
      most ``n_inner`` rows) are inside; every remaining point is decided by
      a cutting-plane linear program solved with
      ``scipy.optimize.linprog(method="highs")``: maximise a.p - b subject to
      a.x_i <= b for a growing subset of reference rows and |a_k| <= 1. Its
      optimum is the L1 distance of p from the hull of the subset; a positive
      optimum whose hyperplane a.x <= b holds for *all* reference rows
      certifies "outside" (and that hyperplane is reused for the other
      points), otherwise the violating rows join the subset and the LP is
      solved again.

    Parameters
    ----------
    tol : float, default=1e-7
        Points within ``tol`` (standardised units) of the hull count as
        inside, so that reference rows themselves are never flagged.
    qhull_max_dim : int, default=6
        Largest number of numeric features for which the Qhull facets are used
        (Qhull's facet count grows quickly with the dimension).
    n_directions : int, default=256
        Size of the random direction bank (high-dimensional path).
    n_inner : int, default=30
        Rows whose hull serves as the inner test (high-dimensional path; 0
        disables it).
    random_state : None, int or numpy Generator
        Seeds the direction bank; results do not depend on it (every decision
        is certified), only the running time does.

    Attributes
    ----------
    n_lp_ : int
        Linear programs solved by the last :meth:`flag` call.
    """

    name = "hull"
    supports_categorical = True

    def __init__(
        self,
        tol: float = 1e-7,
        qhull_max_dim: int = 6,
        n_directions: int = 256,
        n_inner: int = 30,
        random_state: Any = None,
    ) -> None:
        self.tol = _check_fraction(tol, "tol", 0.0, 1.0)
        self.qhull_max_dim = _check_int(qhull_max_dim, "qhull_max_dim", 1)
        self.n_directions = _check_int(n_directions, "n_directions", 0)
        self.n_inner = _check_int(n_inner, "n_inner", 0)
        self.random_state = random_state

    def __repr__(self) -> str:
        return f"ConvexHullDetector(tol={self.tol!r})"

    def _fit_encoded(self, reference: pd.DataFrame) -> None:
        rng = check_random_state(self.random_state)
        Z = self.encoding_.z_reference
        d = Z.shape[1]
        self.equations_ = None
        self.mode_ = "categorical only" if d == 0 else ("interval" if d == 1 else "lp")
        if 2 <= d <= self.qhull_max_dim:
            try:
                hull = ConvexHull(Z)
            except (QhullError, ValueError):
                hull = None  # flat or too few rows: the LP path handles lower-dimensional hulls
            if hull is not None:
                self.equations_ = hull.equations
                self.vertices_ = Z[hull.vertices]
                self.mode_ = "qhull"
        if self.mode_ != "lp":
            return
        # Direction bank and the reference's support function along it (exact: max over all rows).
        U = rng.standard_normal((self.n_directions, d))
        U = np.vstack([np.eye(d), -np.eye(d), U])
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        proj = Z @ U.T
        self._bank = U
        self._bank_support = proj.max(axis=0)
        arg = proj.argmax(axis=0)
        idx, counts = np.unique(arg, return_counts=True)
        # Rows extreme in many directions are hull vertices; start every LP from them.
        self._active = idx[np.argsort(-counts, kind="stable")]
        self._centre = Z.mean(axis=0)
        self._tree = cKDTree(Z)
        self._inner = None
        k = min(self.n_inner, self._active.size)
        if k > d:
            try:
                self._inner = ConvexHull(Z[self._active[:k]]).equations
            except (QhullError, ValueError):
                self._inner = None
        self._cuts = np.empty((0, d + 1))

    # -- numeric membership ----------------------------------------------------
    def _support_gap(self, z: np.ndarray, U: np.ndarray) -> np.ndarray:
        """p.u - max_i x_i.u for one direction u per point (chunked over points)."""
        Z = self.encoding_.z_reference
        gap = np.empty(len(z))
        for s in range(0, len(z), 2048):
            u = U[s : s + 2048]
            gap[s : s + 2048] = np.einsum("ij,ij->i", z[s : s + 2048], u) - (Z @ u.T).max(axis=0)
        return gap

    def _lp_point(self, p: np.ndarray) -> tuple[bool, float]:
        """Cutting-plane LP for one point: (outside, L1 distance from the hull)."""
        Z = self.encoding_.z_reference
        d = Z.shape[1]
        active = self._active
        bounds = [(-1.0, 1.0)] * d + [(None, None)]
        c = np.r_[-p, 1.0]
        while True:
            S = Z[active]
            res = linprog(c, A_ub=np.hstack([S, -np.ones((len(S), 1))]), b_ub=np.zeros(len(S)),
                          bounds=bounds, method="highs")
            self.n_lp_ += 1
            if res.status != 0:  # pragma: no cover - the LP is always feasible (a = 0) and bounded
                raise ExtrapolationError(f"convex hull LP failed: {res.message}")
            dist = -float(res.fun)
            if dist <= self.tol:
                return False, 0.0
            a, b = res.x[:d], res.x[d]
            viol = Z @ a - b
            worst = np.flatnonzero(viol > 1e-12)
            if worst.size == 0:
                self._cuts = np.vstack([self._cuts, np.r_[a, b]])
                return True, dist
            # Add the most violating rows (hull vertices in direction a) for this point only:
            # a shared, ever-growing subset made every later LP slower (measured).
            add = worst[np.argsort(-viol[worst])[: 4 * (d + 1)]]
            active = np.union1d(active, add)

    def _distance(self, z: np.ndarray, decide_only: bool) -> np.ndarray:
        """0 inside; > 0 outside (a distance-like value, see :meth:`score`)."""
        enc = self.encoding_
        n, d = z.shape
        self.n_lp_ = 0
        out = np.zeros(n)
        if d == 0:
            return out
        box = np.maximum(enc.low - z, 0.0) + np.maximum(z - enc.high, 0.0)
        if self.mode_ == "interval":
            dist = box[:, 0]
            return np.where(dist > self.tol, dist, 0.0)
        if self.mode_ == "qhull":
            E = self.equations_
            for s in range(0, n, 1024):
                out[s : s + 1024] = (z[s : s + 1024] @ E[:, :d].T + E[:, d]).max(axis=1)
            return np.where(out > self.tol, out, 0.0)
        # High-dimensional / flat path.
        todo = np.ones(n, dtype=bool)
        box_l1 = box.sum(axis=1)
        hit = box_l1 > self.tol
        out[hit], todo[hit] = box_l1[hit], False
        if todo.any() and decide_only:
            idx = np.flatnonzero(todo)
            zz = z[idx]
            gaps = []
            if self._bank.size:
                gaps.append((zz @ self._bank.T - self._bank_support).max(axis=1))
            radial = zz - self._centre
            _, nn = self._tree.query(zz)
            near = zz - enc.z_reference[nn]
            for U in (radial, near):
                norm = np.linalg.norm(U, axis=1, keepdims=True)
                gaps.append(self._support_gap(zz, U / np.where(norm > 0, norm, 1.0)))
            gap = np.max(gaps, axis=0)
            sep = gap > self.tol
            out[idx[sep]], todo[idx[sep]] = gap[sep], False
        if todo.any() and self._inner is not None:
            idx = np.flatnonzero(todo)
            E = self._inner
            inner = np.empty(idx.size, dtype=bool)
            for s in range(0, idx.size, 256):
                inner[s : s + 256] = (z[idx[s : s + 256]] @ E[:, :d].T + E[:, d] <= 0).all(axis=1)
            todo[idx[inner]] = False
        if todo.any():
            # Cheap inner certificate: non-negative least squares for lambda on the extreme rows
            # plus the point's nearest rows; a zero residual means p = X^T lambda, sum(lambda) = 1.
            Z = enc.z_reference
            idx = np.flatnonzero(todo)
            _, nn = self._tree.query(z[idx], k=min(4 * (d + 1), len(Z)))
            nn = nn.reshape(idx.size, -1)
            for i, near in zip(idx, nn):
                rows = np.union1d(self._active, near)
                A = np.vstack([Z[rows].T, np.ones(rows.size)])
                _, resid = nnls(A, np.r_[z[i], 1.0])
                if resid <= self.tol * 1e-2:
                    todo[i] = False
        for i in np.flatnonzero(todo):
            p = z[i]
            if decide_only and self._cuts.shape[0]:
                g = self._cuts[:, :d] @ p - self._cuts[:, d]
                if g.max() > self.tol:
                    out[i] = g.max()
                    continue
            outside, dist = self._lp_point(p)
            out[i] = dist if outside else 0.0
        return out

    def _numeric_flags(self, pts: pd.DataFrame, usable: np.ndarray) -> np.ndarray:
        return self._distance(self.encoding_.standardise(pts), decide_only=True) > 0

    def score(self, points: pd.DataFrame) -> np.ndarray:
        """Distance from the hull in standardised units (0 inside; NaN for missing values).

        In one dimension the distance from the interval; with Qhull facets the
        largest signed distance beyond a facet plane; otherwise the L1
        distance from the hull (the optimum of the LP). Points with an unseen
        level get +inf.
        """
        pts = self._check_fitted(points)
        basic, _ = self.encoding_.basic_reasons(pts)
        z = self.encoding_.standardise(pts)
        out = np.full(len(pts), np.nan)
        ok = ~np.isnan(z).any(axis=1)
        out[ok] = self._distance(z[ok], decide_only=False)
        unseen = np.zeros(len(pts), dtype=bool)
        for m in self.encoding_.unseen(pts).values():
            unseen |= m
        out[unseen & ok] = np.inf
        return out

    def _reason(self, pts: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        z = self.encoding_.standardise(pts)
        box = self.encoding_.outside_box(z, self.tol)
        return np.where(box, "outside convex hull of reference data (outside its range)",
                        "outside convex hull of reference data (inside its range)").astype(object)


# ----------------------------------------------------------------- MCEC
class _RiskDetector(_EncodedDetector):
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
        Seeds the background sample and the classifier; the detector is
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
        self.threshold = _check_fraction(threshold, "threshold", 0.0, 1.0)
        self.n_background = None if n_background is None else _check_int(n_background, "n_background", 1)
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
            clf = RandomForestClassifier(n_estimators=100, min_samples_leaf=5, random_state=_seed(rng))
        else:
            clf = clone(self.classifier)
            if "random_state" in clf.get_params():
                clf.set_params(random_state=_seed(rng))
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
        return np.array([
            "MCEC R(x)=1 (outside the reference range)" if b else f"MCEC R(x)={v:.2f} > {self.threshold:g}"
            for v, b in zip(r, box)
        ], dtype=object)


# ----------------------------------------------------------------- CERT
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
    of the node's widest side (see ``min_gain``), with at least ``min_leaf`` (data + expected uniform) weight per child and
    depth at most ``max_depth``. A leaf's R = uniform / (uniform + data); a
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
        self.threshold = _check_fraction(threshold, "threshold", 0.0, 1.0)
        self.n_background = None if n_background is None else _check_int(n_background, "n_background", 1)
        self.min_gain = _check_fraction(min_gain, "min_gain", 0.0, 1.0)
        self.purity = _check_fraction(purity, "purity", 0.0, 0.5)
        if isinstance(min_leaf, bool) or not isinstance(min_leaf, numbers.Real) or not min_leaf > 0:
            raise ParameterError(f"min_leaf must be a positive number, got {min_leaf!r}.")
        self.min_leaf = float(min_leaf)
        self.max_depth = _check_int(max_depth, "max_depth", 0)
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
            for lst, v in ((self.feature_, -1), (self.threshold_, np.nan), (self.left_, -1), (self.right_, -1),
                           (self.risk_, np.nan)):
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


# ----------------------------------------------------------------- outlier detectors
class _OutlierDetector(_EncodedDetector):
    """scikit-learn novelty detector on standardised numeric + one-hot categorical features."""

    label = "outlier detector"

    def __init__(self, contamination: float = 0.01, random_state: Any = None) -> None:
        self.contamination = _check_fraction(contamination, "contamination", 0.0, 0.5, closed_high=True)
        self.random_state = random_state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(contamination={self.contamination!r})"

    @abstractmethod
    def _make(self, rng: np.random.Generator) -> Any:
        """The unfitted scikit-learn outlier estimator."""

    def _fit_encoded(self, reference: pd.DataFrame) -> None:
        rng = check_random_state(self.random_state)
        self.estimator_ = self._make(rng).fit(self.encoding_.one_hot(reference))

    def _decision(self, pts: pd.DataFrame) -> np.ndarray:
        return self.estimator_.decision_function(self.encoding_.one_hot(pts))

    def _numeric_flags(self, pts: pd.DataFrame, usable: np.ndarray) -> np.ndarray:
        return self._decision(pts) < 0

    def score(self, points: pd.DataFrame) -> np.ndarray:
        """Minus scikit-learn's ``decision_function`` (> 0 flagged; NaN with missing values or unseen levels)."""
        pts = self._check_fitted(points)
        basic, _ = self.encoding_.basic_reasons(pts)
        out = np.full(len(pts), np.nan)
        if (~basic).any():
            out[~basic] = -self._decision(pts.iloc[np.flatnonzero(~basic)])
        return out

    def _reason(self, pts: pd.DataFrame, flagged: np.ndarray) -> np.ndarray:
        v = self._decision(pts)
        return np.array([f"{self.label} decision_function={x:.3g} < 0" for x in v], dtype=object)


class IsolationForestDetector(_OutlierDetector):
    """Isolation forest outliers (Liu et al.; paper Appendix "Model Extrapolation").

    ``sklearn.ensemble.IsolationForest(contamination=contamination)`` fitted
    on the reference data (numeric features standardised, categorical ones
    one-hot); a point is flagged when its ``decision_function`` is < 0, so
    about a ``contamination`` share of the reference rows themselves would be
    flagged (default 1%). An unseen categorical level is flagged.

    Parameters
    ----------
    contamination : float in (0, 0.5], default=0.01
    random_state : None, int or numpy Generator
        Seeds the forest; deterministic given it.
    """

    name = "isolation_forest"
    label = "isolation forest"

    def _make(self, rng: np.random.Generator) -> Any:
        from sklearn.ensemble import IsolationForest

        return IsolationForest(contamination=self.contamination, random_state=_seed(rng))


class LOFDetector(_OutlierDetector):
    """Local outlier factor (Breunig et al.; paper Appendix, local density-based outlier scores).

    ``sklearn.neighbors.LocalOutlierFactor(novelty=True,
    n_neighbors=n_neighbors, contamination=contamination)`` fitted on the
    reference data (numeric features standardised, categorical ones one-hot);
    a point is flagged when its ``decision_function`` is < 0 (about a
    ``contamination`` share of reference rows would be flagged, default 1%).
    An unseen categorical level is flagged. Deterministic.

    Parameters
    ----------
    contamination : float in (0, 0.5], default=0.01
    n_neighbors : int, default=20
    """

    name = "lof"
    label = "LOF"

    def __init__(self, contamination: float = 0.01, n_neighbors: int = 20, random_state: Any = None) -> None:
        super().__init__(contamination, random_state)
        self.n_neighbors = _check_int(n_neighbors, "n_neighbors", 1)

    def _make(self, rng: np.random.Generator) -> Any:
        from sklearn.neighbors import LocalOutlierFactor

        return LocalOutlierFactor(n_neighbors=self.n_neighbors, novelty=True, contamination=self.contamination)
