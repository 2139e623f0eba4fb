"""Stage 2 of a report: ``results.json`` and the config -> display strings (tables, sentences, captions).

Nothing here computes an effect: it reads the numbers ``results.json`` holds (stage 1, :mod:`fme.report.analysis`)
and formats them with :mod:`fme._utils.numfmt`, the formatter the figures use too. It imports only the config
stage (:mod:`fme.report.inputs`), :mod:`fme._utils` and its own modules.
"""

from .context import build_context

__all__ = ["build_context"]
