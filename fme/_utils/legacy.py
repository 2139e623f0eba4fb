"""Old private module paths, for results pickled before the house moved.

A pickle names the module of each class it holds: results pickled by earlier versions name
``fme._partition`` (``PartitionResult``), ``fme._ctree_stats``, ``fme._kernel`` and so on, modules that
now live in subpackages. :func:`install` adds a finder that answers an import of one of those old names
with a module gathering the names of the new modules that took its contents, so ``pickle.load`` finds
every class where it was. Nothing else imports the old names; public paths (``fme.effects``,
``fme.came``, ``fme.inference``, ``fme.ctree``, ...) never moved.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

__all__ = ["LEGACY_MODULES", "install"]

#: old module -> the modules that took its contents, in the order their names are gathered.
LEGACY_MODULES: dict[str, tuple[str, ...]] = {
    "fme._partition": ("fme._trees.partition",),
    "fme._ctree_stats": ("fme._trees.ctree_stats",),
    "fme._cart": ("fme._trees.cart",),
    "fme._tree_args": ("fme._trees.args",),
    "fme._came_support": ("fme._trees.support",),
    "fme._kernel": ("fme._core.kernel", "fme._core.plan", "fme._core.summary"),
    "fme._exclusions": ("fme._core.exclusions",),
    "fme._shrink": ("fme._core.shrink",),
    "fme._nlm_eval": ("fme._nlm.evaluate",),
    "fme._tree_paths": ("fme._nlm.tree_paths",),
    "fme._delta": ("fme.inference._delta",),
    "fme._bootstrap": ("fme.inference._bootstrap",),
    "fme._validation": ("fme._utils.validation",),
    "fme._guards": ("fme._utils.guards",),
    "fme._numfmt": ("fme._utils.numfmt",),
    "fme._progress": ("fme._utils.progress",),
    "fme._stats": ("fme._utils.stats",),
    "fme._dask_outputs": ("fme._dask.outputs",),
    "fme._dask_nlm": ("fme._dask.nlm",),
    "fme._dask_groups": ("fme._dask.groups",),
}


class _LegacyLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        for source in LEGACY_MODULES[module.__name__]:
            new = importlib.import_module(source)
            for name, value in vars(new).items():
                if not name.startswith("__"):
                    module.__dict__.setdefault(name, value)


class _LegacyFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None, target: object = None):
        if fullname in LEGACY_MODULES:
            return importlib.machinery.ModuleSpec(fullname, _LegacyLoader())
        return None


def install() -> None:
    """Add the finder once (idempotent)."""
    if not any(isinstance(f, _LegacyFinder) for f in sys.meta_path):
        sys.meta_path.append(_LegacyFinder())
