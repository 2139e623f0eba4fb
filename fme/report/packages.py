"""The packages a report rests on, with their versions (issue 22 item 5).

Beyond the fixed core (fme, Python, numpy, pandas, scipy, scikit-learn, statsmodels, matplotlib, jinja2):
the package of the model's class and of every estimator inside it (a pipeline's steps, a statsmodels
result's model and family), the packages the model's entry-point module imports (read from its source),
the formula package behind a statsmodels formula (patsy or formulaic) and the optional packages the
analysis itself imported (dask, distributed, pyarrow, joblib, threadpoolctl), each with the version of
its installed distribution.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import sys
from pathlib import Path
from typing import Any

__all__ = ["model_packages"]

#: Optional packages the analysis may import (listed when they were imported).
ANALYSIS_OPTIONAL = ("dask", "distributed", "pyarrow", "joblib", "threadpoolctl", "patsy", "formulaic")
#: Top-level modules of the fixed core (listed under their own names by ``versions()``).
_CORE = {"fme", "numpy", "pandas", "scipy", "sklearn", "statsmodels", "matplotlib", "jinja2"}


def _top(module: str | None) -> str | None:
    return module.split(".")[0] if module else None


def _estimator_modules(obj: Any, depth: int = 0) -> set[str]:
    """Top-level modules of ``obj``'s class and of the estimators and models inside it."""
    out = set()
    if obj is None or depth > 6:
        return out
    top = _top(type(obj).__module__)
    if top and top not in {"builtins"}:
        out.add(top)
    params = {}
    if callable(getattr(obj, "get_params", None)):
        try:
            params = obj.get_params(deep=False)
        except Exception:  # noqa: BLE001
            params = {}
    for value in list(params.values()) + [getattr(obj, "model", None), getattr(getattr(obj, "model", None),
                                                                               "family", None)]:
        if isinstance(value, (list, tuple)):  # Pipeline steps, ColumnTransformer transformers
            for item in value:
                for part in (item if isinstance(item, tuple) else (item,)):
                    if hasattr(part, "__dict__") and not isinstance(part, (str, type)):
                        out |= _estimator_modules(part, depth + 1)
        elif value is not None and hasattr(value, "__dict__") and not isinstance(value, type):
            out |= _estimator_modules(value, depth + 1)
    return out


def _source_imports(path: str | None) -> set[str]:
    """Top-level names a module's source imports (absolute imports only)."""
    if not path or not Path(path).is_file():
        return set()
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _formula_package(model: Any) -> set[str]:
    inner = getattr(model, "model", None)
    if getattr(inner, "formula", None) is None:
        return set()
    info = getattr(getattr(inner, "data", None), "design_info", None)
    top = _top(type(info).__module__) if info is not None else None
    return {top} if top in ("patsy", "formulaic") else {"patsy"} if "patsy" in sys.modules else set()


def model_packages(model: Any, module_file: str | None = None) -> dict[str, str]:
    """``{distribution name: version}`` of the packages beyond the core (see the module docstring)."""
    wanted = _estimator_modules(model) | _source_imports(module_file) | _formula_package(model)
    wanted |= {m for m in ANALYSIS_OPTIONAL if m in sys.modules}
    dists = md.packages_distributions()
    out: dict[str, str] = {}
    for mod in sorted(wanted - _CORE):
        if mod in sys.stdlib_module_names or mod == "__main__":
            continue
        for dist in dists.get(mod, []):
            try:
                out[dist] = md.version(dist)
            except md.PackageNotFoundError:
                continue
    return out
