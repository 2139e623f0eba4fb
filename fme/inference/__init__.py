"""Uncertainty of fMEs and of their averages (AME, MER/MEM, by-groups, cAME leaves).

Three meanings of "the uncertainty of an AME" (paper §3.2 defines the AME;
§5.5 the t-based CI of a cAME):

``delta``
    Model uncertainty by the delta method: with the parameter covariance V
    and the Jacobian g = d AME / d theta, Var(AME) ~ g' V g; z statistics and
    normal quantiles (as Stata's ``margins`` and R/Python ``marginaleffects``).
``bootstrap``
    Model uncertainty by refitting the model on resamples of its training
    data; percentile (default) or normal CIs.
``sample``
    The spread of the fMEs over the evaluated rows with the model held fixed:
    mean +- t(1 - alpha/2, n - 1) SD / sqrt(n) (the paper's cAME CI, §5.5).
    It is *not* the uncertainty of the model.

Per evaluated row we keep what any average needs: the row's Jacobian
(``delta``; n x k) or its fMEs under each refit (``bootstrap``; n x B). An
average over any subset of rows (the AME, a ``by`` group, a cAME leaf) then
gets its uncertainty from those rows by one sparse product, without
predicting again (:meth:`RowInference.average`).

Memory: the Jacobian takes 8 n k bytes, the bootstrap draws 8 n B bytes
(160 MB at n = 10^5, B = 200). Draws beyond the bootstrap's ``memory_limit``
(256 MiB by default) live in a temporary memory-mapped file, the same float64
numbers. When the groups are known up front (:func:`fme.ame`, with or without
``by``), :func:`compute_averages` never stores per-row draws: each refit's fMEs
are averaged per group as they arrive (8 B x groups bytes).

With ``vcov='unconditional'`` the delta method of an average adds the sampling of the averaged rows to the
parameters' (the population's average effect, not these rows'; :mod:`fme.inference.unconditional`).

Layout: the shared types in :mod:`fme.inference.estimates`, the method choice and dispatch in
:mod:`fme.inference.methods`, the delta Jacobians in :mod:`fme.inference.delta` and the bootstrap
refits in :mod:`fme.inference.bootstrap`. The tables of estimates with their joint uncertainty
(:class:`EstimatesTable`) are in :mod:`fme.inference.table`; tests on several estimates (contrasts, the
Wald test, multiple comparisons) in :mod:`fme.inference.wald`, and when such a test is a test (an identified
hypothesis, standard errors above rounding) in :mod:`fme.inference.validity`.
"""

from .estimates import (
    BOOTSTRAP_CIS,
    INFERENCE_COLUMNS,
    INFERENCE_METHODS,
    Estimates,
    RowInference,
    alloc_draws,
    check_inference,
    group_matrix,
    pairwise_matrix,
    sample_inference,
    undefined_where,
)
from .methods import compute_averages, compute_rows, resolve_method
from .refit_cache import RefitCache
from .table import EstimatesTable, JointEstimates

__all__ = [
    "INFERENCE_METHODS",
    "INFERENCE_COLUMNS",
    "RowInference",
    "Estimates",
    "EstimatesTable",
    "JointEstimates",
    "RefitCache",
    "check_inference",
    "compute_averages",
    "compute_rows",
    "resolve_method",
    "BOOTSTRAP_CIS",
    "alloc_draws",
    "group_matrix",
    "pairwise_matrix",
    "sample_inference",
    "undefined_where",
]
