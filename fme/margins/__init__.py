"""The margins vocabulary's front doors (paper §3.2 for the AME; marginaleffects' and Stata's verbs).

One module per concept, each a thin front door that validates once and hands a plan to the in-memory
(``fme._local``) or Dask (``fme._dask``) engine:

- :mod:`fme.margins.marginal`: ``ame``, ``mem``, ``mer``, ``dme`` and ``typical_values``;
- :mod:`fme.margins.predicted`: ``predictions`` and ``avg_predictions``;
- :mod:`fme.margins.comparisons`: ``comparisons`` (per row) and ``avg_comparisons``;
- :mod:`fme.margins.slopes`: ``slopes`` (per row) and ``avg_slopes``;
- :mod:`fme.margins.testing`: ``hypotheses`` on any result that keeps its joint covariance;
- :mod:`fme.margins.interactions`: ``interaction``.

Users call them as ``fme.ame``, ``fme.predictions``, ...: this package re-exports nothing, so no submodule
shares a name with a function.
"""
