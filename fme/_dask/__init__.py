"""The Dask engine: the front doors' computations on Dask data, module for module (``effects``, ``ame``,
``margins``, ``came``), over ``common`` (chunk plumbing), ``result`` and the all-row reductions (``steps``,
``nlm``, ``quantiles``, ``groups``, ``bootstrap``, ``classic``, ``outputs``). The engine never imports a front door:
the front doors validate and hand it a resolved plan. Dask's own partitions are called chunks here; a
"partition" of fme is the cAME subspaces.
"""
