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
import re
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


def _member_of_documented(env, dotted: str) -> str | None:  # noqa: ANN001
    """``Class.attr`` where the class is documented under another name and ``attr`` is documented with it
    (dataclass fields and attributes have no object of their own to look up)."""
    parent, _, attr = dotted.rpartition(".")
    owner = _lookup(parent) if parent else _MISSING
    if owner is _MISSING or not inspect.isclass(owner):
        return None
    documented = _documented(env).get(id(owner))
    objects = env.get_domain("py").objects
    names = ([documented] if documented else []) + [f"{owner.__module__}.{owner.__qualname__}"]
    for name in names:
        if f"{name}.{attr}" in objects:
            return f"{name}.{attr}"
    # an attribute with no object of its own (a dataclass field, an annotation, an instance attribute named in
    # the class's "Attributes" section): the class's page documents it
    def source(klass: type) -> str:
        try:
            return inspect.getsource(klass)
        except (OSError, TypeError):
            return ""

    def declares(klass: type) -> bool:  # a field, an annotation, a documented or an assigned instance attribute
        return any(attr in getattr(k, "__dataclass_fields__", {}) or attr in getattr(k, "__annotations__", {})
                   or re.search(rf"^\s*{re.escape(attr)} :", k.__doc__ or "", flags=re.M)
                   or re.search(rf"\bself\.{re.escape(attr)}\s*(:[^=]*)?=[^=]", source(k))
                   for k in klass.__mro__ if k.__module__.startswith("fme"))

    if declares(owner):
        for name in names:
            if name in objects:
                return name
    # a mixin naming an attribute of the result classes that use it: the one documented subclass declaring it
    subclasses, stack = [], list(owner.__subclasses__())
    while stack:
        k = stack.pop()
        subclasses.append(k)
        stack.extend(k.__subclasses__())
    found = {_documented(env).get(id(k)) for k in subclasses if declares(k)} - {None}
    return found.pop() if len(found) == 1 else None


def _data_named(env, dotted: str) -> str | None:  # noqa: ANN001
    """A module-level name (a constant, a table) documented in the module that defines it, found by the same
    value under the name that the docstring's module imported."""
    module, _, attr = dotted.rpartition(".")
    value = _lookup(dotted)
    if value is _MISSING:
        return None
    for name in env.get_domain("py").objects:
        if name.endswith("." + attr) and name.startswith("fme") and name != dotted:
            if _lookup(name) is value:
                return name
    return None


def _unique_suffix(env, target: str) -> str | None:  # noqa: ANN001
    """The one documented fme object whose name ends with ``.target`` (``ModelAdapter.training_levels`` named
    in a module that only imports ModelAdapter for type checking), or None when there is none or several."""
    found = {n for n in env.get_domain("py").objects if n.startswith("fme") and n.endswith("." + target)}
    if len(found) > 1:  # the same object under its public and its module name: keep the public one
        objs = {id(_key(_lookup(n))) for n in found}
        if len(objs) == 1:
            return min(found, key=lambda n: (n.count("._"), n.count("."), n))
    return found.pop() if len(found) == 1 else None


def _defining_module(env, candidate: str) -> str | None:  # noqa: ANN001
    """The documented module that assigns ``NAME`` at its top level, for a constant without a docstring of its
    own (autodoc lists only commented ones): the reference links to that module's page."""
    import ast

    module_name, _, attr = candidate.rpartition(".")
    value = _lookup(candidate)
    if value is _MISSING or not module_name:
        return None
    holder = _lookup(module_name)
    modules = [holder] if inspect.ismodule(holder) else []
    import sys

    modules += [m for n, m in list(sys.modules.items()) if n.startswith("fme") and getattr(m, attr, _MISSING) is value]
    for module in modules:
        try:
            tree = ast.parse(inspect.getsource(module))
        except (OSError, TypeError, SyntaxError):
            continue
        for stmt in tree.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                if module.__name__ in env.get_domain("py").objects:
                    return module.__name__
    return None


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
            name = _member_of_documented(env, candidate)
            if name:
                newnode = node.deepcopy()
                newnode["reftarget"] = name
                newnode.attributes.pop("refspecific", None)  # searchmode 0: any object type by its exact name
                return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name, newnode,
                                           contnode)
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
                if name is None:
                    name = _data_named(env, candidate)
        if name is None:
            name = _member_of_documented(env, candidate)
        if name is None and node["reftype"] in ("data", "obj", "attr", "const"):
            module = _defining_module(env, candidate)
            if module:
                newnode = node.deepcopy()
                newnode["reftarget"] = module
                newnode.attributes.pop("refspecific", None)
                return domain.resolve_xref(env, node["refdoc"], app.builder, "mod", module, newnode, contnode)
        if name and name in domain.objects:
            newnode = node.deepcopy()
            newnode["reftarget"] = name
            newnode.attributes.pop("refspecific", None)
            return domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"] if node["reftype"] != "obj" else "obj",
                name, newnode, contnode)
    found = _unique_suffix(env, target)
    if found:
        newnode = node.deepcopy()
        newnode["reftarget"] = found
        newnode.attributes.pop("refspecific", None)
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], found, newnode, contnode)
    return None


def setup(app):  # noqa: ANN001, ANN201
    app.connect("missing-reference", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
