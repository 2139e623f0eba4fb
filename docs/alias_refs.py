"""Sphinx extension: a reference to an fme object by another of its names links to where the object is documented.

fme's docstrings name an object where it is imported from, e.g. :class:`ExtrapolationDetector` inside
``fme.extrapolation`` or ``fme.inference.RefitCache``, while the object is documented once, under its public
name (``fme.ExtrapolationDetector``) or its defining module (``fme.inference.bootstrap.RefitCache``). When
Sphinx finds no target under the written name, this resolves the name the way Python would (relative to the
docstring's module and class, then absolute), takes the object it denotes and links to the page that documents
that very object. A name that denotes nothing, or an object documented nowhere, stays a broken reference and
fails the build.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

_MISSING = object()


def _lookup(dotted: str) -> Any:
    """The object a dotted name denotes (modules imported as needed), or _MISSING."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module: try a shorter prefix
            continue
        for attr in parts[cut:]:
            try:
                obj = inspect.getattr_static(obj, attr) if inspect.isclass(obj) else getattr(obj, attr)
            except AttributeError:
                return _MISSING
        return obj
    return _MISSING


def _key(obj: Any) -> Any:
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    return getattr(obj, "func", obj) if type(obj).__name__ == "cached_property" else obj


def _documented(env) -> dict[int, str]:  # noqa: ANN001
    """id(object) -> the documented name, for every documented fme object that Python can find."""
    cache = getattr(env, "_fme_alias_index", None)
    if cache is not None:
        return cache
    index: dict[int, str] = {}
    objects = env.get_domain("py").objects
    # public names first, so that an object documented under several names links to its public page
    for name in sorted(objects, key=lambda n: (n.count("._"), n.count("."), n)):
        if not name.startswith("fme"):
            continue
        obj = _lookup(name)
        if obj is _MISSING or isinstance(obj, (int, float, str, bytes, tuple, bool, type(None))):
            continue
        index.setdefault(id(_key(obj)), name)
    env._fme_alias_index = index
    return index


def _resolve(app, env, node, contnode):  # noqa: ANN001, ANN202
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    module, klass = node.get("py:module"), node.get("py:class")
    candidates = []
    if module and klass:
        candidates.append(f"{module}.{klass}.{target}")
    if module:
        parts = module.split(".")
        candidates += [".".join(parts[:k] + [target]) for k in range(len(parts), 0, -1)]
    candidates.append(target)
    domain = env.get_domain("py")
    for candidate in candidates:
        if not candidate.startswith("fme"):
            continue
        obj = _lookup(candidate)
        if obj is _MISSING:
            continue
        if inspect.ismodule(obj):
            name = obj.__name__
        else:
            name = _documented(env).get(id(_key(obj)))
            if name is None:
                # data (a constant, a registry) is documented under the module that defines the name
                owner = candidate.rsplit(".", 1)
                name = candidate if candidate in domain.objects else None
                if name is None and len(owner) == 2:
                    holder = _lookup(owner[0])
                    defining = getattr(holder, "__module__", None) if not inspect.ismodule(holder) else None
                    name = f"{defining}.{owner[1]}" if defining and f"{defining}.{owner[1]}" in domain.objects else None
        if name and name in domain.objects:
            newnode = node.deepcopy()
            newnode["reftarget"] = name
            newnode["refspecific"] = False
            return domain.resolve_any_xref and domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"] if node["reftype"] != "obj" else "obj",
                name, newnode, contnode)
    return None


def setup(app):  # noqa: ANN001, ANN201
    app.connect("missing-reference", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
