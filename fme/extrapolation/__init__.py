"""Extrapolation detection (paper §3.2 and Appendix "Model Extrapolation").

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
* :mod:`._outlier`: :class:`IsolationForestDetector` and :class:`LOFDetector`.

A new detector family is a module that subclasses :class:`ExtrapolationDetector`
(or ``_encoded._EncodedDetector``), decorates its classes with
``_base.register_detector`` and is imported below.
"""

from ._base import DETECTORS, ExtrapolationDetector, make_detector

# Imported in registry order: each import registers its detectors in DETECTORS.
from ._envelope import EnvelopeDetector  # isort: skip
from ._hull import ConvexHullDetector  # isort: skip
from ._risk import CERTDetector, MCECDetector  # isort: skip
from ._outlier import IsolationForestDetector, LOFDetector  # isort: skip

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
]
