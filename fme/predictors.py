"""Public path of :func:`make_predictor` (the model as ``f(DataFrame) -> ndarray``); it lives in
:mod:`fme._adapters.predictor`."""

from ._adapters.predictor import Predictor, make_predictor  # noqa: F401

__all__ = ["make_predictor", "Predictor"]
