"""Convex-hull extrapolation detector (King & Zeng; paper Appendix "Model Extrapolation").

Registered as ``"hull"``. Membership is decided exactly up to ``tol``: Qhull
facets in few dimensions, otherwise certified projections (batched pairwise
Frank-Wolfe, per-point active-set refinement) and cutting-plane linear
programs; see :class:`ConvexHullDetector`.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import linprog, nnls
from scipy.spatial import ConvexHull, QhullError

from .._utils.numfmt import count
from .._utils.validation import check_random_state
from ..exceptions import ExtrapolationError
from ._base import register_detector
from ._encoded import EncodedDetector, check_fraction, check_int

__all__ = ["ConvexHullDetector"]

#: Largest (points x reference rows) block of inner products built at once (32 MB of floats).
_BLOCK = 1 << 22
#: Points per batch of the Frank-Wolfe stage.
_FW_CHUNK = 1024
#: Pairwise Frank-Wolfe iterations (tuned on benchmarks/bench_hull.py, d = 8: fewer leave more
#: refinement rounds to the per-point loop, more cost more than they save there).
_FW_ITER = 30
#: Rounds of the per-point active-set refinement before falling back to the linear program.
_REFINE_ROUNDS = 30
#: Weight of the sum(lambda) = 1 row in the refinement's non-negative least squares.
_SUM_WEIGHT = 1e3


def _certify(Z: np.ndarray, P: np.ndarray, X: np.ndarray, lam: np.ndarray, tol: float):
    """Exact membership tests for the mixtures ``x = lam @ X`` (one row of ``lam`` per point of ``P``).

    With ``w = p - x`` (``lam`` renormalised to sum 1):

    * inside if ``||w||_1 <= tol``: p lies within L1 distance ``tol`` of a point of the hull;
    * outside if ``<w, p> - max_i <w, z_i> > tol * ||w||_inf`` over *all* reference rows: the
      hyperplane ``w`` separates p from the hull by at least that margin, so p's L1 distance from
      the hull exceeds ``tol`` (the L1 distance is at least margin / ||w||_inf).

    Both are the linear program's own criterion (L1 distance <= ``tol`` is inside), so a certified
    point gets the answer the LP would give. Returns (status: 0 undecided, 1 outside, 2 inside;
    margin / ||w||_inf for outside points, a lower bound on the L1 distance; the reference row
    maximising ``<w, z_i>``, the most promising new atom for an undecided point).
    """
    lam = lam / lam.sum(axis=1, keepdims=True)
    W = P - lam @ X
    l1 = np.abs(W).sum(axis=1)
    linf = np.abs(W).max(axis=1)
    top = np.empty(len(P))
    best = np.empty(len(P), dtype=np.intp)
    step = max(1, _BLOCK // len(Z))
    for s in range(0, len(P), step):
        V = W[s : s + step] @ Z.T
        best[s : s + step] = V.argmax(axis=1)
        top[s : s + step] = V[np.arange(V.shape[0]), best[s : s + step]]
    margin = np.einsum("ij,ij->i", W, P) - top
    inside = l1 <= tol
    outside = ~inside & (margin > tol * linf)
    status = np.where(inside, 2, np.where(outside, 1, 0))
    gap = np.where(outside, margin / np.where(linf > 0, linf, 1.0), 0.0)
    return status, gap, best


def _frank_wolfe(Z: np.ndarray, P: np.ndarray, atoms: np.ndarray, tol: float):
    """Pairwise Frank-Wolfe for all points of ``P`` at once, then exact certificates.

    Approximately minimises ``||lam @ Z[atoms] - p||^2`` over the simplex for every point
    (``_FW_ITER`` iterations from the nearest atom; each one is a (points x atoms) matrix product,
    row-wise argmin / argmax and a closed-form line search), then tests the iterates against all
    rows with :func:`_certify`.

    Returns (status, gap) for every point, the undecided points (indices into ``P``) and, for
    each of them, the rows carrying weight in its iterate plus its best new row: the start of
    :func:`_refine`.
    """
    m = len(P)
    X = Z[atoms]
    start = np.argmin((X**2).sum(axis=1) - 2 * P @ X.T, axis=1)  # nearest atom
    lam = np.zeros((m, atoms.size))
    r = np.arange(m)
    lam[r, start] = 1.0
    x = X[start]
    for _ in range(_FW_ITER):
        g = x - P  # half the gradient in x; <g, z_i> ranks the atoms
        G = g @ X.T
        s = G.argmin(axis=1)  # Frank-Wolfe atom
        G[lam <= 0] = -np.inf
        v = G.argmax(axis=1)  # away atom (carries weight)
        dv = X[s] - X[v]
        num = -np.einsum("ij,ij->i", g, dv)
        den = np.einsum("ij,ij->i", dv, dv)
        lv = lam[r, v]
        gam = np.minimum(np.maximum(num, 0.0) / np.where(den > 0, den, 1.0), lv)  # exact line search
        lam[r, s] += gam
        lam[r, v] = np.where((gam >= lv) & (v != s), 0.0, lam[r, v] - gam)
        x = x + gam[:, None] * dv
    status, gap, best = _certify(Z, P, X, lam, tol)
    live = np.flatnonzero(status == 0)
    rows, cols = np.nonzero(lam[live] > 0)  # row-major: grouped by point
    cuts = np.cumsum(np.bincount(rows, minlength=live.size))[:-1]
    supports = [np.union1d(S, [b]) for S, b in zip(np.split(atoms[cols], cuts), best[live])]
    return status, gap, live, supports


def _refine(Z: np.ndarray, p: np.ndarray, S: np.ndarray, tol: float) -> tuple[int, float]:
    """Active-set refinement for one point: (status as in :func:`_certify`, gap).

    Projects p on the hull of the rows ``S`` by non-negative least squares (the sum(lambda) = 1
    row weighted by ``_SUM_WEIGHT``), certifies with :func:`_certify`'s tests against all rows,
    and otherwise adds the rows beyond the supporting hyperplane through the projection (the most
    extreme ones in direction p - x) and solves again, at most ``_REFINE_ROUNDS`` times. An NNLS that does not
    converge leaves the point undecided (status 0), for the linear program.
    """
    k = 4 * (Z.shape[1] + 1)
    for _ in range(_REFINE_ROUNDS):
        X = Z[S]
        try:
            lam, _ = nnls(np.vstack([X.T, np.full(S.size, _SUM_WEIGHT)]), np.r_[p, _SUM_WEIGHT])
        except RuntimeError:
            # scipy's iteration cap on a near-degenerate system (its path depends on the BLAS's rounding): this
            # fast path gives up and the exact linear program decides the point
            return 0, 0.0
        total = lam.sum()
        if not total > 0:
            return 0, 0.0
        x = (lam / total) @ X
        w = p - x
        if np.abs(w).sum() <= tol:
            return 2, 0.0
        v = Z @ w
        linf = np.abs(w).max()
        margin = w @ p - v.max()
        if margin > tol * linf:
            return 1, margin / linf
        v[S] = -np.inf
        cand = np.flatnonzero(v > w @ x)  # rows beyond the supporting hyperplane through x
        if cand.size == 0:
            return 0, 0.0
        if cand.size > k:
            cand = cand[np.argpartition(-v[cand], k)[:k]]
        S = np.union1d(S, cand)
    return 0, 0.0


#: Reference rows sampled to estimate the share of rows on the hull's boundary (LP mode).
_BOUNDARY_SAMPLE = 20
#: Above this share of reference rows on the boundary the hull is degenerate: warn.
DEGENERATE_SHARE = 0.5


def _boundary_share(Z: np.ndarray, rng: np.random.Generator) -> float:
    """Share of sampled reference rows outside the hull of the other rows (leave-one-out LPs)."""
    n = len(Z)
    rows = rng.choice(n, size=min(_BOUNDARY_SAMPLE, n), replace=False)
    out = 0
    for i in rows:
        others = np.delete(Z, i, axis=0)
        A_eq = np.vstack([others.T, np.ones(n - 1)])
        res = linprog(np.zeros(n - 1), A_eq=A_eq, b_eq=np.r_[Z[i], 1.0], bounds=(0, None), method="highs")
        out += res.status != 0
    return out / rows.size


def _warn_degenerate(share: float, n: int, d: int) -> None:
    if share > DEGENERATE_SHARE:
        warnings.warn(
            f"the convex hull of the reference data is degenerate: about {share:.0%} of its "
            f"{count(n, 'row')} lie on the "
            f"boundary in {d} dimensions, so nearly every step leaves the hull. Use fewer features for the check "
            "(reference_data with the stepped ones), more reference rows, or another detector (e.g. 'mcec').",
            UserWarning,
            stacklevel=4,
        )


@register_detector
class ConvexHullDetector(EncodedDetector):
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
      along a bank of directions (random ones and the direction from the
      centroid) are outside;
      points inside the hull of a few extreme reference rows (Qhull of at
      most ``n_inner`` rows) are inside. The remaining points are projected
      on the hull, all at once, by pairwise Frank-Wolfe iterations (matrix
      products over the points), then one by one by an active-set
      refinement (non-negative least squares on the rows carrying weight,
      adding rows beyond the current supporting hyperplane). A projection x
      of p certifies *inside* if ||p - x||_1 <= ``tol``, and *outside* if
      the hyperplane with normal w = p - x separates p from **all**
      reference rows by more than ``tol * ||w||_inf`` (then p's L1 distance
      from the hull exceeds ``tol``): the linear program's own criterion,
      checked exactly. Every point still undecided is decided by a
      cutting-plane linear program solved with
      ``scipy.optimize.linprog(method="highs")``: maximise a.p - b subject
      to a.x_i <= b for a growing subset of reference rows and |a_k| <= 1.
      Its optimum is the L1 distance of p from the hull of the subset; a
      positive optimum whose hyperplane a.x <= b holds for *all* reference
      rows certifies "outside" (and that hyperplane is reused for the other
      points), otherwise the violating rows join the subset and the LP is
      solved again. :meth:`score` needs that L1 distance, so it uses the
      projections' inside certificates only.

    Parameters
    ----------
    tol : float, default=1e-7
        Points within ``tol`` (standardised units, L1 distance on the
        high-dimensional path) of the hull count as inside, so that
        reference rows themselves are never flagged.
    qhull_max_dim : int, default=6
        Largest number of numeric features for which the Qhull facets are used
        (Qhull's facet count grows quickly with the dimension).
    n_directions : int, default=256
        Size of the random direction bank (high-dimensional path).
    n_inner : int, default=30
        Rows whose hull serves as the inner test (high-dimensional path; 0
        disables it).
    random_state : None, int or numpy Generator
        Seeds the direction bank and the rows sampled for the degenerate-hull warning (None: seed 0); the
        flags do not depend on it (every decision is certified), only the running time does.

    Attributes
    ----------
    n_lp_ : int
        Linear programs solved by the last :meth:`flag` call.
    n_stage_ : collections.Counter
        Points decided by each stage of the high-dimensional path in the last
        call ("box", "direction bank", "inner hull", "frank-wolfe",
        "refinement"; "linear program" counts the points left to the LPs).
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
        self.tol = check_fraction(tol, "tol", 0.0, 1.0)
        self.qhull_max_dim = check_int(qhull_max_dim, "qhull_max_dim", 1)
        self.n_directions = check_int(n_directions, "n_directions", 0)
        self.n_inner = check_int(n_inner, "n_inner", 0)
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
                self.boundary_share_ = hull.vertices.size / len(Z)
                _warn_degenerate(self.boundary_share_, len(Z), d)
        if self.mode_ != "lp":
            return
        self.boundary_share_ = _boundary_share(Z, rng)
        _warn_degenerate(self.boundary_share_, len(Z), d)
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
            res = linprog(
                c, A_ub=np.hstack([S, -np.ones((len(S), 1))]), b_ub=np.zeros(len(S)), bounds=bounds, method="highs"
            )
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
        self.n_stage_ = Counter()
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
        self.n_stage_["box"] = int(hit.sum())
        if todo.any() and decide_only:
            idx = np.flatnonzero(todo)
            zz = z[idx]
            gap = np.full(idx.size, -np.inf)
            if self._bank.size:
                gap = (zz @ self._bank.T - self._bank_support).max(axis=1)
            radial = zz - self._centre
            norm = np.linalg.norm(radial, axis=1, keepdims=True)
            gap = np.maximum(gap, self._support_gap(zz, radial / np.where(norm > 0, norm, 1.0)))
            sep = gap > self.tol
            out[idx[sep]], todo[idx[sep]] = gap[sep], False
        self.n_stage_["direction bank"] = int(n - hit.sum() - todo.sum())
        if todo.any() and self._inner is not None:
            idx = np.flatnonzero(todo)
            E = self._inner
            inner = np.empty(idx.size, dtype=bool)
            for s in range(0, idx.size, 256):
                inner[s : s + 256] = (z[idx[s : s + 256]] @ E[:, :d].T + E[:, d] <= 0).all(axis=1)
            todo[idx[inner]] = False
            self.n_stage_["inner hull"] = int(inner.sum())
        if todo.any():
            # Projections on the hull: batched Frank-Wolfe, then per-point refinement; every
            # decision is one of _certify's exact tests. score() needs the LP's L1 distance, so
            # there only "inside" is taken.
            Z = enc.z_reference
            idx = np.flatnonzero(todo)
            for s in range(0, idx.size, _FW_CHUNK):
                part = idx[s : s + _FW_CHUNK]
                status, gap, live, supports = _frank_wolfe(Z, z[part], self._active, self.tol)
                for k, S in zip(live, supports):
                    status[k], gap[k] = _refine(Z, z[part[k]], S, self.tol)
                done = (status == 2) | ((status == 1) & decide_only)
                self.n_stage_["refinement"] += int(done[live].sum())
                self.n_stage_["frank-wolfe"] += int(done.sum() - done[live].sum())
                out[part[done]] = gap[done]
                todo[part[done]] = False
        self.n_stage_["linear program"] = int(todo.sum())
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
        return np.where(
            box,
            "outside convex hull of reference data (outside its range)",
            "outside convex hull of reference data (inside its range)",
        ).astype(object)
