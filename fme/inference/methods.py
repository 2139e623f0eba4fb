"""Which uncertainty a call gets, and the dispatch to its worker (delta method, bootstrap, fixed-model sample).

The types every method shares (:class:`~fme.inference.estimates.Estimates`,
:class:`~fme.inference.estimates.RowInference`) live in
:mod:`fme.inference.estimates`; the workers in :mod:`fme.inference.delta` and
:mod:`fme.inference.bootstrap` import only those, so this dispatch imports
them at the top (no cycle).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._utils.warn import warn_caller
from ..exceptions import FixedModelWarning, ParameterError
from .bootstrap import bootstrap_rows, check_bootstrap
from .delta import delta_rows, supports_delta
from .estimates import Estimates, RowInference, check_inference, sample_inference

__all__ = ["resolve_method", "compute_rows", "compute_averages"]


def resolve_method(inference: str, model: Any, bootstrap: Any, multi_output: bool = False) -> str:
    """The method ``inference`` means for ``model``.

    ``auto``: ``bootstrap`` when a ``bootstrap`` specification is given, else
    ``delta`` when the model supports it (statsmodels results, the protocol of
    :mod:`fme.inference.delta`), else ``sample`` with a
    :class:`~fme.exceptions.FixedModelWarning` (the interval then holds the model fixed). Multi-output
    (``target_class='all'``) results only have ``sample``.
    """

    check_inference(inference)
    if multi_output:
        if inference in ("delta", "bootstrap"):
            raise ParameterError(
                f"inference={inference!r} works on one output; with target_class='all' use inference='sample' "
                "or pass one class (target_class=<label>) per call."
            )
        return "sample"
    if inference == "auto":
        if bootstrap is not None:
            return "bootstrap"
        if supports_delta(model):
            return "delta"
        # asked for 'auto', got only the fixed-model interval: say so once per call, the method then goes on
        # as an explicit 'sample' (fme.ame/mer hand it to fme.fme), so no second warning
        warn_caller(
            f"inference='auto': a {type(model).__name__} has no parameter covariance, so std_error, p_value and "
            "the interval describe the spread of the fMEs over the rows with the model held fixed (inference="
            "'sample'), not the model's uncertainty. Pass bootstrap={'X': X_train, 'y': y_train} (scikit-learn) "
            "or {'data': train_frame} (statsmodels formula results) to include the model's uncertainty by "
            "refits, or inference='sample' to ask for the fixed-model interval.",
            FixedModelWarning,
        )
        return "sample"
    if bootstrap is not None and inference != "bootstrap":
        raise ParameterError(
            f"bootstrap= was given but inference={inference!r}; use inference='bootstrap' "
            "(or 'auto') to refit, or drop bootstrap=."
        )
    return inference


def compute_rows(
    method: str,
    model: Any,
    pairs: list[tuple[pd.DataFrame, pd.DataFrame]],
    values: list[np.ndarray],
    f0s: list[np.ndarray | None] | None = None,
    bootstrap: Any = None,
    target_class: Any = None,
) -> list[RowInference]:
    """Per-row ingredients for sets of fMEs ``values[s] = f(X1_s) - f(X0_s)`` (``pairs[s] = (X0_s, X1_s)``).

    All sets share one bootstrap run (the same refits), so AMEs of several
    features come from B refits, not B per feature.
    """
    if method == "sample":
        return [sample_inference(v) for v in values]
    if method == "delta":
        f0s = f0s or [None] * len(pairs)
        return [delta_rows(model, x0, x1, v, f0, target_class) for (x0, x1), v, f0 in zip(pairs, values, f0s)]

    spec = check_bootstrap(bootstrap, model)
    return bootstrap_rows(model, pairs, values, spec, target_class)


def compute_averages(
    method: str,
    model: Any,
    pairs: list[tuple[pd.DataFrame, pd.DataFrame]],
    values: list[np.ndarray],
    groupings: list[tuple[np.ndarray, int]],
    f0s: list[np.ndarray | None] | None = None,
    bootstrap: Any = None,
    target_class: Any = None,
) -> list[Estimates]:
    """Group averages of sets of fMEs with their uncertainty: ``compute_rows(...)[s].average(*groupings[s])``.

    For ``bootstrap`` the same numbers without the n x B per-row draws: each refit's fMEs are averaged
    over the groups as they arrive (memory sum(n_groups) x B instead of n x B).
    """
    if method == "bootstrap":
        spec = check_bootstrap(bootstrap, model)
        return bootstrap_rows(model, pairs, values, spec, target_class, groupings=groupings)
    rows = compute_rows(method, model, pairs, values, f0s, bootstrap, target_class)
    # a grouping is (codes, n_groups) or (codes, n_groups, weights)
    return [r.average(*g) for r, g in zip(rows, groupings)]
