"""The unconditional variance of averages: the rows' sampling added to the parameters' (``vcov='unconditional'``).

The delta method's interval (:mod:`fme.inference.delta`) holds the averaged rows fixed: it covers the average
over *these* rows of the effect under the true parameters. When the rows are a sample of a population, the
population's average effect varies also with the rows drawn. With the average (paper §3.2, the AME; or an average
prediction, comparison or slope)

    AME = sum_i w_i m_i(theta_hat) / sum_i w_i          (the rows of a group; w_i = 1 without ``wts=``)

its influence function adds the row's deviation to the parameters' influence pushed through the average's
gradient g = d AME / d theta:

    c_i = w_i (m_i - AME) / sum_j w_j + g' a_i,          Var(AME) = f sum_i c_i^2,

where theta_hat - theta ~ sum_i a_i (the model's bread times row i's score: for OLS/WLS
a_i = (X'WX)^{-1} x_i w_i e_i, for a GLM or a discrete model (-H)^{-1} s_i; sum_i a_i a_i' is the HC0 sandwich;
:meth:`~fme._adapters.ModelAdapter.parameter_influence`). Rows the average does not use (another ``by`` group,
rows fME leaves out) contribute only g' a_i: a group is a domain of the sample. Several estimates share the rows,
so their joint covariance is f C C' with C the estimates' contributions side by side. With clusters the
contributions are summed within each cluster first. The factor f is marginaleffects' (``vcovUnconditional``):
HC0 1, HC1 n / (n - k); clustered G / (G - 1), with HC1 times (n - 1) / (n - k) (G clusters, k parameters).
For OLS without interactions the AME of x is beta_x for every row, so its unconditional variance is the HC0
sandwich variance of beta_x.

Spelled ``vcov="unconditional"`` (HC0) or ``vcov={"unconditional": "HC0" | "HC1", "cluster": column}`` (the
cluster optional), on the averaging verbs; the ``inference`` column says ``delta (unconditional)``. On Dask data
the chunks' rows are checked against their positions in the estimation sample as they are evaluated, and their
values come back with the pass's sums (:class:`SampledRows`): the estimation sample's influence is the model's,
n x k in memory already, so the rows' n x c values beside it change no order of memory, and the variance is
the in-memory one, whatever the chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import sparse

from .._adapters import adapt
from .._utils.numfmt import count
from ..exceptions import ModelError, ParameterError
from .estimates import Estimates, group_matrix

__all__ = [
    "Unconditional",
    "UNCONDITIONAL_TYPES",
    "is_unconditional",
    "unconditional_label",
    "resolve_unconditional",
    "empirical_part",
    "deviations_of",
    "SampledRows",
]

UNCONDITIONAL_TYPES = ("HC0", "HC1")


def is_unconditional(vcov: Any) -> bool:
    """True for the spellings of the unconditional variance (module docstring)."""
    return (isinstance(vcov, str) and vcov == "unconditional") or (isinstance(vcov, dict) and "unconditional" in vcov)


def _parse(vcov: Any) -> tuple[str, Any]:
    """(type, cluster column or None) of an unconditional ``vcov``."""
    if isinstance(vcov, str):
        return "HC0", None
    extra = set(vcov) - {"unconditional", "cluster"}
    kind = vcov["unconditional"]
    if extra or not isinstance(kind, str) or kind not in UNCONDITIONAL_TYPES:
        raise ParameterError(
            f"an unconditional vcov is 'unconditional' or {{'unconditional': 'HC0' or 'HC1', "
            f"'cluster': column (optional)}}; got {vcov!r}."
        )
    return kind, vcov.get("cluster")


def unconditional_label(vcov: Any) -> str:
    """The ``inference`` column's name: ``delta (unconditional)``, with the type and cluster when given."""
    kind, cluster = _parse(vcov)
    detail = "".join([", HC1" if kind == "HC1" else "", "" if cluster is None else f", cluster: {cluster}"])
    return f"delta (unconditional{detail})"


@dataclass(frozen=True, eq=False)
class Unconditional:
    """The parameters' per-row influence and the finite-sample factor of one call (module docstring).

    Attributes
    ----------
    influence : ndarray (n, k)
        a_i of each row of the averaged frame (the model's estimation sample).
    clusters : ndarray (n,) or None
        The rows' integer clusters.
    kind : {'HC0', 'HC1'}
    """

    influence: np.ndarray
    clusters: np.ndarray | None
    kind: str

    def check_count(self, n_rows: int) -> None:
        """:class:`~fme.ModelError` unless the averaged frame has the estimation sample's number of rows."""
        if n_rows != self.influence.shape[0]:
            raise ModelError(
                f"vcov='unconditional' averages over the model's estimation sample ("
                f"{count(self.influence.shape[0], 'row')}); the data has {count(n_rows, 'row')}. Pass the frame "
                "the model was fitted on (its complete rows, in order), or vcov=None."
            )

    @property
    def factor(self) -> float:
        """f of the module docstring."""
        n, k = self.influence.shape
        hc1 = (n - 1.0 if self.clusters is not None else n) / (n - k) if self.kind == "HC1" else 1.0
        if self.clusters is None:
            return hc1
        g = float(np.unique(self.clusters).size)
        return g / (g - 1.0) * hc1

    def combine(self, parts: list[tuple[Estimates, sparse.spmatrix]]) -> list[Estimates]:
        """Each delta estimate (``grad``: d estimate / d theta) with its empirical part (estimates x rows,
        :func:`empirical_part`) turned into estimates whose joint covariance, across all ``parts``, is f C C'.

        The contributions C (all estimates x rows, or x clusters) are kept as the triangular factor R' of
        C' = Q R: the estimates' gradients in an orthonormal basis of the rows' space, with the identity as
        its covariance, so contrasts, tests and stacking work as for any delta estimate."""
        if not parts:
            return []
        C = np.vstack(
            [
                np.asarray(p.toarray() if sparse.issparse(p) else p, dtype=float)
                + np.asarray(e.grad, dtype=float) @ self.influence.T
                for e, p in parts
            ]
        )
        if self.clusters is not None:
            # a cluster's rows are dependent: their contributions are summed before squaring
            n = self.clusters.size
            S = sparse.csr_matrix((np.ones(n), (self.clusters, np.arange(n))), shape=(int(self.clusters.max()) + 1, n))
            C = np.asarray((S @ C.T).T)
        C = C * np.sqrt(self.factor)
        # an estimate over no rows (an empty group) is undefined; it must not make the others undefined
        ok = np.all(np.isfinite(C), axis=1)
        basis = np.full((C.shape[0], max(min(C.shape), 1)), np.nan)
        if ok.any():
            r = np.asarray(np.linalg.qr(C[ok].T, mode="r"))
            basis = np.full((C.shape[0], r.shape[0]), np.nan)
            basis[ok] = r.T
        out, start = [], 0
        eye, token = np.eye(basis.shape[1]), object()
        for e, _ in parts:
            m = e.estimate.size
            out.append(replace(e, grad=basis[start : start + m], vcov=eye, basis=token))
            start += m
        return out


def resolve_unconditional(model: Any, vcov: Any, frame: Any, on_dask: bool, method: str) -> Unconditional | None:
    """The :class:`Unconditional` of a call with ``vcov`` over the rows of ``frame`` (the model's frame of the
    data), or None when ``vcov`` asks for another covariance. Refused where it does not apply."""
    if not is_unconditional(vcov):
        return None
    kind, cluster = _parse(vcov)
    if on_dask:
        # the estimation sample's influence is the model's, in memory; each chunk's rows are checked against
        # their positions in it as they are evaluated (:class:`SampledRows`)
        influence, codes = adapt(model).estimation_influence(cluster)
        _check_delta(vcov, method)
        return Unconditional(np.asarray(influence, dtype=float), None if codes is None else np.asarray(codes), kind)
    if not frame.index.is_unique:
        raise ParameterError(
            f"vcov={vcov!r} pairs each row with its share of the parameters by the frame's index, "
            "which repeats labels here; pass data.reset_index(drop=True)."
        )
    influence, codes = adapt(model).parameter_influence(frame, cluster)
    _check_delta(vcov, method)
    return Unconditional(np.asarray(influence, dtype=float), None if codes is None else np.asarray(codes), kind)


def _check_delta(vcov: Any, method: str) -> None:
    if method != "delta":
        raise ParameterError(
            f"vcov={vcov!r} is a delta-method variance; the call's inference is {method!r}. "
            "Use inference='delta' (or 'auto' with a statsmodels model), or drop vcov=."
        )


@dataclass(frozen=True, eq=False)
class SampledRows:
    """The rows' part of the unconditional variance gathered from Dask chunks: each evaluated row's position
    in the estimation sample, its values (n, c), group code and weight, and the chunks' row count.

    The estimation sample's influence (n x k) is the model's, in memory already; the rows' values (n x c)
    come back beside it, so the variance is computed exactly as in memory (:func:`empirical_part`,
    :meth:`Unconditional.combine`), whatever the chunks."""

    positions: np.ndarray
    values: np.ndarray
    codes: np.ndarray
    weights: np.ndarray | None
    n_rows: int

    @classmethod
    def of(
        cls,
        check: Callable[[Any, np.ndarray], None],
        frame: Any,
        positions: np.ndarray,
        values: np.ndarray,
        codes: np.ndarray,
        weights: np.ndarray | None,
        n_rows: int,
    ) -> SampledRows:
        """A chunk's rows: ``frame`` (the evaluated rows, checked by ``check(frame, positions)``, the adapter's
        :meth:`~fme._adapters.ModelAdapter.check_estimation_rows`), their values, codes and weights; ``n_rows``
        all rows of the chunk."""
        positions = np.asarray(positions, dtype=np.int64)
        if len(frame):
            check(frame, positions)
        v = np.asarray(values, dtype=float)
        return cls(
            positions,
            v.reshape(len(positions), -1),
            np.asarray(codes),
            None if weights is None else np.asarray(weights, dtype=float),
            int(n_rows),
        )

    def merge(self, other: SampledRows | None) -> SampledRows:
        if other is None:
            return self
        return SampledRows(
            np.concatenate([self.positions, other.positions]),
            np.vstack([self.values, other.values]),
            np.concatenate([self.codes, other.codes]),
            None if self.weights is None or other.weights is None else np.concatenate([self.weights, other.weights]),
            self.n_rows + other.n_rows,
        )


def empirical_part(
    deviations: np.ndarray,
    codes: np.ndarray,
    n_groups: int,
    positions: np.ndarray,
    n_rows: int,
    weights: np.ndarray | None = None,
) -> sparse.csr_matrix:
    """The rows' part of the groups' contributions (n_groups x n_rows): w_i (v_i - mean_g) / sum_g w at row
    ``positions[i]`` of the averaged frame, for the used rows i (``deviations`` = v_i - mean of i's group; codes
    < 0: rows no group uses)."""
    W = group_matrix(codes, n_groups, weights).tocoo()
    dev = np.nan_to_num(np.asarray(deviations, dtype=float)[W.col], nan=0.0)
    cols = np.asarray(positions, dtype=np.int64)[W.col]
    return sparse.csr_matrix((W.data * dev, (W.row, cols)), shape=(n_groups, n_rows))


def deviations_of(values: np.ndarray, est: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """v_i - mean of i's group (0 for rows no group uses)."""
    codes = np.asarray(codes)
    return np.where(codes >= 0, np.asarray(values, dtype=float) - np.asarray(est)[np.maximum(codes, 0)], 0.0)
