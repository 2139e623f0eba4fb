"""Report config values that name library objects: detectors, inference and flag thresholds.

:func:`fme.report.inputs.config.load_config` calls the ``normalise_*`` functions so that every
such value is checked (names, parameter names *and* values, by building the object once)
before anything is computed, and is stored in one resolved form:

* ``extrapolation``: ``{"method": <name>, <parameter>: <value>, ...}`` or ``{"method": "none"}``;
* ``inference``: ``{"method": "auto"|"delta"|"bootstrap"|"sample", ...}`` (bootstrap with
  ``train_data``, ``n_resamples``, ``ci``, ``n_jobs``);
* ``flags``: every threshold, defaults filled in (:data:`FLAG_DEFAULTS`).

The analysis turns them into library arguments with :func:`make_detector` and
:func:`bootstrap_kwargs`; the report words them with :func:`describe_detector` and
:data:`CI_COVERS`.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = [
    "FLAG_DEFAULTS",
    "engine_problem",
    "FLAG_MEANING",
    "CI_COVERS",
    "detector_parameters",
    "normalise_detector",
    "normalise_inference",
    "make_detector",
    "describe_detector",
    "bootstrap_kwargs",
    "scales_dispersion",
    "dispersion_covariance",
    "ci_short",
]

#: Default flag thresholds (printed in every report; ``flags:`` in a config overrides them).
FLAG_DEFAULTS: dict[str, float] = {
    "ep_share": 0.5,
    "anlm": 0.9,
    "leaf_anlm": 0.5,
    "leaf_n": 30,
    "ari": 0.5,
    "dispersion": 1.5,
    "bootstrap_resamples": 200,
}
#: What each threshold means (for the report's list of thresholds and for reports/README.md).
FLAG_MEANING = {
    "ep_share": "share of extrapolation points left out of an effect above which it is flagged",
    "anlm": "ANLM below which an effect is flagged as non-linear",
    "leaf_anlm": "cANLM below which a cAME leaf is flagged as non-linear",
    "leaf_n": "cAME leaves with fewer rows are flagged as small",
    "ari": "median adjusted Rand index below which a partition is flagged as unstable",
    "dispersion": "Pearson chi2 / residual df of a Poisson or binomial GLM above which it is flagged as "
    "overdispersed and its delta-method intervals use the covariance scaled by that dispersion",
    "bootstrap_resamples": "resamples below which a percentile bootstrap interval at 95% or more is flagged (its "
    "tails rest on too few refits)",
}
#: Which uncertainty an interval of each inference method covers (shown beside every CI).
CI_COVERS = {
    "sample": "fixed model: spread of the effects over the evaluated rows, model-estimation uncertainty not included",
    "delta": "model uncertainty: delta method with the parameter covariance of the fitted model",
    "bootstrap": "model uncertainty: refits of the model on bootstrap resamples of the training data",
}
#: Short labels of the same (table cells).
CI_SHORT = {"sample": "fixed model (rows)", "delta": "model (delta method)", "bootstrap": "model (bootstrap refits)"}


def scales_dispersion(dispersion: dict | None, threshold: float) -> bool:
    """Whether a Poisson or binomial model's delta-method intervals use the covariance scaled by its Pearson
    dispersion: the dispersion (``glm_dispersion``'s record) exceeds the ``flags.dispersion`` threshold and the
    model's covariance is the non-robust one, which assumes a dispersion of 1 (a sandwich covariance needs no
    scale). The analysis scales on this rule and the report words it on the same rule."""
    return bool(dispersion) and dispersion["dispersion"] > float(threshold) and dispersion["cov_type"] == "nonrobust"


def ci_short(inference: str) -> str:
    """The short label of an ``inference`` value (:data:`CI_SHORT`), a covariance in brackets kept:
    ``delta (Pearson dispersion 13.48)`` -> ``model (delta method, Pearson dispersion 13.48)``."""
    method, _, rest = str(inference).partition(" (")
    if method not in CI_SHORT:
        return str(inference)
    return CI_SHORT[method] if not rest else f"{CI_SHORT[method][:-1]}, {rest}"


def dispersion_covariance(dispersion: dict) -> str:
    """The name of the scaled covariance, e.g. ``Pearson dispersion 13.48`` (the ``inference`` label reads
    ``delta (Pearson dispersion 13.48)``)."""
    return f"Pearson dispersion {dispersion['dispersion']:.2f}"


# Constructor arguments a config cannot give (objects, or set by the report itself).
_NOT_CONFIGURABLE = {"self", "random_state", "classifier"}


def _detector_class(name: str) -> type:
    from ...extrapolation import DETECTORS

    return DETECTORS[name]


def detector_parameters(name: str) -> dict[str, Any]:
    """``{parameter: default}`` a config may set for detector ``name`` (from its constructor)."""
    if name == "none":
        return {}
    sig = inspect.signature(_detector_class(name).__init__)
    return {
        p: (None if v.default is inspect.Parameter.empty else v.default)
        for p, v in sig.parameters.items()
        if p not in _NOT_CONFIGURABLE and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)
    }


def normalise_detector(value: Any) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """A config's ``extrapolation`` -> ``({"method": name, **params}, None)`` or ``(spec, (key, problem))``.

    The parameters are checked by name against the detector's constructor and by value by
    building the detector once (its own validation).
    """
    from ...exceptions import FMEError

    spec = {"method": value} if isinstance(value, str) else dict(value)
    name = spec["method"]
    params = {k: v for k, v in spec.items() if k != "method"}
    allowed = detector_parameters(name)
    for key in params:
        if key not in allowed:
            names = ", ".join(sorted(allowed)) or "none"
            return spec, (key, f"unknown parameter {key!r} of the {name} detector; its parameters are {names}")
    if name != "none":
        try:
            _detector_class(name)(**params)
        except (FMEError, TypeError, ValueError) as exc:
            bad = next((k for k in params if k in str(exc)), "method")
            return spec, (bad, " ".join(str(exc).split()))
    return spec, None


def make_detector(spec: dict[str, Any], seed: int) -> Any:
    """A fresh detector object for one ``fme.fme`` call (None for ``method: none``)."""
    if spec["method"] == "none":
        return None
    cls = _detector_class(spec["method"])
    params = {k: v for k, v in spec.items() if k != "method"}
    if "random_state" in inspect.signature(cls.__init__).parameters:
        params["random_state"] = seed
    return cls(**params)


def describe_detector(spec: dict[str, Any] | None) -> str:
    """'hull (tol = 1e-07, qhull_max_dim = 6, ...)' with every parameter, defaults included."""
    if spec is None or spec["method"] == "none":
        return "none"
    params = {**detector_parameters(spec["method"]), **{k: v for k, v in spec.items() if k != "method"}}
    shown = ", ".join(f"{k} = {v}" for k, v in params.items())
    return f"{spec['method']} ({shown})" if shown else spec["method"]


def normalise_inference(value: Any, inherited: dict[str, Any] | None = None) -> tuple[dict[str, Any], str | None]:
    """A config's ``inference`` -> ``({"method": ..., ...}, None)`` or ``(spec, problem)``.

    ``inherited`` is the top-level setting: an effect's ``bootstrap`` without ``train_data``
    takes the top level's bootstrap settings.
    """
    spec = {"method": value} if isinstance(value, str) else dict(value)
    spec.setdefault("method", "auto")
    boot_keys = ("train_data", "n_resamples", "ci", "n_jobs")
    if spec["method"] == "bootstrap":
        if "train_data" not in spec and inherited and inherited.get("method") == "bootstrap":
            spec = {**{k: inherited[k] for k in boot_keys if k in inherited}, **spec}
        if "train_data" not in spec:
            return spec, (
                "bootstrap refits the model and needs its training data: give train_data: {path: ...} "
                "(features and the target column)"
            )
        spec.setdefault("n_resamples", 200)
        spec.setdefault("ci", "percentile")
    else:
        extra = [k for k in boot_keys if k in spec]
        if extra:
            return spec, f"{extra[0]} is a bootstrap setting; set method: bootstrap or remove it"
    return spec, None


def normalise_level(key: str, value: Any, *inference: dict[str, Any]) -> tuple[Any, str | None]:
    """An effect's ``learner`` or ``data_level`` -> ``(False or {settings, "train_data": ...}, problem or None)``.

    Both refit on the training data: their own ``train_data``, else that of the effect's or the top level's
    bootstrap (``inference``, in that order).
    """
    from .schema import LEVEL_DEFAULTS

    if value is False:
        return False, None
    spec = {**LEVEL_DEFAULTS[key], **(value if isinstance(value, dict) else {})}
    if "train_data" not in spec:
        for inf in inference:
            if inf and inf.get("method") == "bootstrap" and "train_data" in inf:
                spec["train_data"] = inf["train_data"]
                break
    if "train_data" not in spec:
        what = "refits the learner on splits" if key == "learner" else "fits the outcome and the density ratio"
        return spec, (
            f"{key} {what} of the training data and needs them: give train_data: {{path: ...}} (features "
            f"and the target column) here, or inference: {{method: bootstrap, train_data: ...}}"
        )
    return spec, None


def bootstrap_kwargs(
    spec: dict[str, Any], train: Any, target: str, seed: int, cache: Any = None, columns: list | None = None
) -> dict[str, Any]:
    """``inference=`` and ``bootstrap=`` arguments of ``fme.fme`` for a resolved inference spec.

    ``train`` is the loaded ``train_data`` frame (features and ``target``) for bootstrap, else None; ``cache``
    a :class:`fme.inference.RefitCache` the build shares between its effects (the same model is refitted on the
    same resamples for every effect: once, then reused); ``columns`` the feature columns the refits fit on (the
    model's own, :func:`fme.report.analysis.checks.refit_columns`), None for every column but ``target``.
    """
    if spec["method"] != "bootstrap":
        return {"inference": spec["method"]}
    boot = {
        "X": train.drop(columns=[target]) if columns is None else train[list(columns)],
        "y": train[target],
        "n_resamples": int(spec["n_resamples"]),
        "random_state": seed,
        "ci": spec["ci"],
        "progress": False,
    }
    if spec.get("n_jobs") is not None:
        boot["n_jobs"] = int(spec["n_jobs"])
    if cache is not None:
        boot["cache"] = cache
    return {"inference": "bootstrap", "bootstrap": boot}


def engine_problem(raw: dict[str, Any]) -> tuple[tuple, str] | None:
    """(key path, problem) of the ``engine``/``scheduler`` keys and of glob paths, or None when they are fine."""
    import importlib.util

    engine = raw.get("engine", "pandas")
    if "scheduler" in raw and engine != "dask":
        return ("scheduler",), "a scheduler address needs engine: dask; add engine: dask or remove scheduler"
    if "sample_size" in raw and engine != "dask":
        return ("sample_size",), (
            "sample_size applies to engine: dask (pandas reports use every row); add engine: dask or remove sample_size"
        )
    if engine == "dask":
        missing = [m for m in ("dask", "distributed", "pyarrow") if importlib.util.find_spec(m) is None]
        if missing:
            return ("engine",), (
                f"engine: dask needs {', '.join(missing)}: pip install 'fme[dask]' (or remove engine: dask)"
            )
        return None
    from .sources import is_glob

    keys = [((k,), raw.get(k)) for k in ("data", "reference_data", "test_data")]
    inference = [(("inference",), raw.get("inference"))] + [
        (("effects", i, "inference"), e.get("inference")) for i, e in enumerate(raw.get("effects") or [])
    ]
    keys += [(k + ("train_data",), v.get("train_data")) for k, v in inference if isinstance(v, dict)]
    for key, spec in keys:
        if isinstance(spec, dict) and isinstance(spec.get("path"), str) and is_glob(spec["path"]):
            return key + ("path",), (
                f"{spec['path']!r} is a glob; several files are read with engine: dask (add "
                "engine: dask at the top level) or name one file"
            )
    return None
