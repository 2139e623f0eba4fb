"""Stage 1 of a report: the model and the data -> ``results.json``, ``tables/*.csv`` and ``figures/*``.

Run inside the analysis notebook (``templates/analysis.ipynb``), which calls the names below. It reads the
config object of :mod:`fme.report.inputs` and computes every number through fme's public API:
:func:`~fme.report.analysis.run.compute_effect` builds one effect's summary for either engine from the
results' public figures; :func:`~fme.report.analysis.dask_analysis.compute_effect_dask` adds what only
Dask data need (the seeded sample behind the per-row figures).
"""

from .effect import compute_effect
from .interactions import run_interactions
from .joint_regions import run_joint_regions
from .model_view import feature_dictionary, feature_overview, model_fit
from .run import (
    environment_record,
    load_data,
    load_model,
    load_train_data,
    previous_record,
    run_effects,
    versions,
    write_results,
)

__all__ = [
    "compute_effect",
    "environment_record",
    "feature_dictionary",
    "feature_overview",
    "load_data",
    "load_model",
    "load_train_data",
    "model_fit",
    "previous_record",
    "run_effects",
    "run_interactions",
    "run_joint_regions",
    "versions",
    "write_results",
]
