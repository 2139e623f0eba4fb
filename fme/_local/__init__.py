"""The in-memory engine: the front doors' computations on pandas data, module for module and function for
function the mirror of the Dask engine (:mod:`fme._dask`).

A front door validates its arguments once, resolves them (the data, a :class:`~fme._core.plan.Plan` from an
:class:`~fme._core.plan.FMEOptions` record, steps, inference method, ``by`` columns, a verb's own record such as
:class:`~fme._core.plan.AMEOptions`) and hands them to ``fme._local.<verb>`` or ``fme._dask.<verb>``,
chosen by ``isinstance``; both engines trust what they are handed, never call a front door or a public
function, and never import each other. What both need lives in :mod:`fme._core`.
"""
