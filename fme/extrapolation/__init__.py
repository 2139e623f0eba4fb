"""Extrapolation detection (paper §4.2 and Appendix A.2, "Model Extrapolation").

An fME is only trustworthy when neither x nor x + h lies where the model never
saw data. A detector is fitted on reference data (the training data) and flags
points:

>>> det = EnvelopeDetector().fit(train)        # doctest: +SKIP
>>> det.flag(points)                            # doctest: +SKIP
array([False,  True, ...])

Any object with ``fit(reference) -> self`` and ``flag(points) -> bool array``
can be passed as ``extrapolation=`` to :func:`fme.fme`; subclass
:class:`ExtrapolationDetector` to get ``score``/``explain`` defaults.

Layout (imports go one way: the families import :mod:`._base`, this package
imports the families, nothing imports back):

* :mod:`._base`: the :class:`ExtrapolationDetector` interface, the
  :data:`DETECTORS` registry and :func:`make_detector`;
* :mod:`._envelope`: :class:`EnvelopeDetector`;
* :mod:`._encoded`: shared plumbing of the detectors on standardised /
  one-hot reference data;
* :mod:`._hull`: :class:`ConvexHullDetector`;
* :mod:`._risk`: :class:`MCECDetector` and :class:`CERTDetector`;
* :mod:`._outlier`: :class:`IsolationForestDetector` and :class:`LOFDetector`;
* :mod:`.guards`: :func:`~.guards.detector_name` (how every part of fme names a detector) and the guards around
  a detector's ``fit`` and ``flag`` (any object with them may be one).

A new detector family is a module that subclasses :class:`ExtrapolationDetector`
(or ``_encoded.EncodedDetector``), decorates its classes with
``_base.register_detector`` and is listed in ``_FAMILIES`` below (its names in
:data:`DETECTOR_NAMES`, which a test keeps equal to the registry). The package
imports its families on first use of a public name, so that checking a name
does not load them.
"""

import importlib as _importlib

#: The detector families, in registry order: importing one registers its detectors in :data:`DETECTORS`.
_FAMILIES = ("_envelope", "_hull", "_risk", "_outlier")
#: The registered detectors' names in registry order, known without importing them (a report config's schema
#: checks its ``extrapolation`` keys against them before any computation); equal to ``tuple(DETECTORS)``.
DETECTOR_NAMES = ("envelope", "hull", "mcec", "cert", "isolation_forest", "lof")
_PUBLIC = {
    "ExtrapolationDetector": "_base",
    "DETECTORS": "_base",
    "make_detector": "_base",
    "EnvelopeDetector": "_envelope",
    "ConvexHullDetector": "_hull",
    "MCECDetector": "_risk",
    "CERTDetector": "_risk",
    "IsolationForestDetector": "_outlier",
    "LOFDetector": "_outlier",
}


def __getattr__(name: str):
    # the detectors (pandas, SciPy, scikit-learn) load on first use; the registry needs every family
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for family in _FAMILIES:
        _importlib.import_module(f"{__name__}.{family}")
    value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ExtrapolationDetector",
    "EnvelopeDetector",
    "ConvexHullDetector",
    "MCECDetector",
    "CERTDetector",
    "IsolationForestDetector",
    "LOFDetector",
    "DETECTORS",
    "make_detector",
    "DETECTOR_NAMES",
]
