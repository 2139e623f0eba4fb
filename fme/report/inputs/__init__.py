"""Stage 0 of a report: the config, read and checked, and the files it names (no model, no numbers).

* :mod:`.config`: YAML -> a frozen, typed :class:`~fme.report.inputs.config.ReportConfig`; every error
  names the file, line and key;
* :mod:`.specs`: the config values that name library objects (detectors from
  :data:`fme.extrapolation.DETECTORS`, inference methods, flag thresholds), checked and resolved;
* :mod:`.validate`: the config against the outside world before anything is computed (model file, data
  files, entry point's module);
* :mod:`.sources`: the data files (one CSV/Parquet file; with ``engine: dask`` a Parquet dataset or a
  glob), their hashes and the Dask session.

The other stages receive the config object from here; this stage imports no other stage and no model code.
"""

from .config import ConfigError, config_error, config_sha256, load_config

__all__ = ["ConfigError", "config_error", "config_sha256", "load_config"]
