"""The packages a report rests on, with their versions.

Beyond the fixed core (fme, Python, numpy, pandas, scipy, scikit-learn, statsmodels, matplotlib, jinja2):
the package of the model's class and of every estimator inside it (a pipeline's steps, a statsmodels
result's model and family), the packages the model's entry-point module imports (read from its source),
the formula package behind a statsmodels formula (patsy or formulaic) and the optional packages the
analysis itself imported (dask, distributed, pyarrow, joblib, threadpoolctl), each with the version of
its installed distribution. Which packages a model is made of is the adapters' knowledge
(:func:`fme.models.model_modules`); this module reads the entry point's source and the versions.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import sys
from pathlib import Path
from typing import Any

from ...models import model_modules

__all__ = ["model_packages"]

#: Optional packages the analysis may import (listed when they were imported).
ANALYSIS_OPTIONAL = ("dask", "distributed", "pyarrow", "joblib", "threadpoolctl", "patsy", "formulaic")
#: Top-level modules of the fixed core (listed under their own names by ``versions()``).
_CORE = {"fme", "numpy", "pandas", "scipy", "sklearn", "statsmodels", "matplotlib", "jinja2"}


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


def model_packages(model: Any, module_file: str | None = None) -> dict[str, str]:
    """``{distribution name: version}`` of the packages beyond the core (see the module docstring)."""
    wanted = model_modules(model) | _source_imports(module_file)
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
