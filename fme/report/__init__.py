"""Interpretation reports: YAML config -> papermill notebook -> Quarto document -> HTML and PDF.

The report layer (layer 5) only reads results of :mod:`fme`; no lower layer
imports it. Entry points: ``fme report <config.yaml>`` (see :mod:`fme.__main__`)
and :func:`fme.report.build.build_report`.

Security: configs are read with ``yaml.safe_load``. A model given as a joblib
or pickle file, or as a Python entry point, *executes code* when loaded:
build reports only from configs and model files you trust.
"""

__all__ = ["load_config", "build_report"]


def __getattr__(name: str):  # lazy: keep `import fme.report` cheap
    if name == "load_config":
        from .inputs.config import load_config

        return load_config
    if name == "build_report":
        from .build import build_report

        return build_report
    raise AttributeError(name)
