"""Architecture of the package: fme's import graph flows one way (developers' guide, "Layers").

The graph is read from the sources with :mod:`ast`, never by importing them. An import counts as

* *module-level* when it runs at import time (top level, class bodies, ``if``/``try`` blocks);
* *deferred* when it sits inside a function (runs on the first call);
* *typing-only* under ``if TYPE_CHECKING:`` (never runs).

Module-level imports must form no cycle. All three kinds must respect the layer order of
:data:`LAYERS`: a module never imports one of a higher layer, except for the commented
:data:`ALLOWANCES`. Importing ``fme.a.b`` also runs ``fme/a/__init__.py``; those implicit parent
imports are not edges (every subpackage would be a cycle with its own ``__init__``).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "fme"

#: The layers, lowest first. Every module of fme belongs to exactly one. A package listed here
#: (``fme.extrapolation``, ``fme.report``) is one unit: its submodules share its layer, and the
#: order among them is checked only through the cycle test. A new top-level module fails
#: test_every_module_has_a_layer until it is placed here.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("fme.exceptions", "fme._utils", "fme.datasets")),
    # one adapter module per backend (fme._adapters) and the Predictor over them
    ("model adapters", ("fme._adapters", "fme.models")),
    ("steps, NLM, extrapolation", ("fme.steps", "fme.nlm", "fme._nlm", "fme.extrapolation")),
    ("inference", ("fme.inference",)),
    # the plan, the batch kernel, mergeable summaries, exclusions, the in-memory engine and FMEResult
    ("core", ("fme._core",)),
    ("trees and cAMEs", ("fme._trees",)),
    # the two engines, in memory and on Dask, mirrored module for module: below the front doors, which validate
    # and hand them a resolved plan; they never import each other (test_engines_do_not_import_each_other)
    ("engines", ("fme._local", "fme._dask")),
    ("front doors", ("fme.effects", "fme.margins", "fme.conditional", "fme.linearity")),
    # learner- and data-level AMEs: refits and cross-fitting around the front doors' verbs
    ("levels of an effect", ("fme.levels",)),
    ("plotting", ("fme.plotting",)),
    # The package root re-exports the public API of the layers below for users and the report.
    ("public API", ("fme",)),
    ("report and replication", ("fme.report", "fme.paper", "fme.__main__")),
]

#: Upward imports that stay, (importer unit, imported unit) -> why. Each must still exist and still
#: point upward (test_allowances_are_current), so a fixed one has to be removed from here.
ALLOWANCES: dict[tuple[str, str], str] = {
    ("fme._trees", "fme.plotting"): (
        "PartitionResult.plot() is the scikit-learn-style shortcut to PartitionDisplay.from_partition; the "
        "Display belongs to plotting, and the import is deferred so that fme.came() never loads matplotlib."
    ),
}

MODULE, DEFERRED, TYPING = "module-level", "deferred", "typing-only"


# ----------------------------------------------------------------- graph
def module_files(root: Path, package: str = "fme") -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file under ``root`` (the package ``package``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: dict[str, Path], package: str
) -> list[str]:
    """The package's modules an import statement loads (``from m import name``: ``m.name`` if a module, else ``m``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        names = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
    out = []
    for name in names:
        if name.split(".")[0] != package:
            continue
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known:
            out.append(name)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_graph(root: Path, package: str = "fme") -> dict[str, dict[str, set[str]]]:
    """module -> {kind: set of imported modules}, kind one of MODULE, DEFERRED, TYPING (self-imports dropped)."""
    known = module_files(root, package)
    graph: dict[str, dict[str, set[str]]] = {}
    for module, path in known.items():
        edges: dict[str, set[str]] = {MODULE: set(), DEFERRED: set(), TYPING: set()}
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, kind: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    edges[kind].update(_targets(child, module, is_package, known, package))
                    continue
                if kind == MODULE and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    visit(child, DEFERRED)
                elif kind == MODULE and isinstance(child, ast.If) and _is_type_checking(child.test):
                    for stmt in child.body:
                        visit(ast.Module(body=[stmt], type_ignores=[]), TYPING)
                    for stmt in child.orelse:
                        visit(ast.Module(body=[stmt], type_ignores=[]), MODULE)
                else:
                    visit(child, kind)

        visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), MODULE)
        for kind in edges:
            edges[kind].discard(module)
        edges[DEFERRED] -= edges[MODULE]
        edges[TYPING] -= edges[MODULE] | edges[DEFERRED]
        graph[module] = edges
    return graph


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def unit_of(module: str, layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> str | None:
    """The entry of ``layers`` a module belongs to: itself, or the nearest listed package above it (never the root)."""
    listed = {m for _, members in layers for m in members}
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        if name in listed and (k == len(parts) or k > 1):
            return name
    return None


def layer_index(layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> dict[str, int]:
    return {m: i for i, (_, members) in enumerate(layers) for m in members}


def upward_imports(
    graph: dict[str, dict[str, set[str]]],
    layers: list[tuple[str, tuple[str, ...]]] = LAYERS,
) -> dict[tuple[str, str], list[str]]:
    """(importer unit, imported unit) -> ["kind: importer -> imported", ...] for every import into a higher layer."""
    rank = layer_index(layers)
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, edges in graph.items():
        for kind, targets in edges.items():
            for target in sorted(targets):
                a, b = unit_of(module, layers), unit_of(target, layers)
                if a is not None and b is not None and rank[b] > rank[a]:
                    out[(a, b)].append(f"{kind}: {module} -> {target}")
    return dict(out)


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, set[str]]]:
    return import_graph(SOURCE)


# ----------------------------------------------------------------- fme's graph
def test_layer_map_lists_each_module_once_and_only_existing_ones(graph):
    listed = [m for _, members in LAYERS for m in members]
    assert len(listed) == len(set(listed))
    assert sorted(set(listed) - set(graph)) == []


def test_every_module_has_a_layer(graph):
    unplaced = sorted(m for m in graph if unit_of(m) is None)
    assert unplaced == [], f"place these modules in a layer of tests/test_architecture.py LAYERS: {unplaced}"


def test_graph_reads_fmes_imports(graph):
    """The reader is not vacuous on fme itself (the kinds are checked on a planted package below)."""
    assert "fme.extrapolation" in graph["fme._core.plan"][MODULE]  # from ..extrapolation import make_detector
    assert "fme.extrapolation._base" in graph["fme.extrapolation._hull"][MODULE]  # relative, inside the package
    assert "fme" in graph["fme.report.analysis.run"][MODULE]  # the package root
    assert "fme.extrapolation" in graph["fme.report.inputs.specs"][DEFERRED]  # from ..extrapolation inside a function
    assert sum(len(e[MODULE]) for e in graph.values()) > 100


def every_import(graph: dict[str, dict[str, set[str]]]) -> dict[str, set[str]]:
    """module -> every module it imports, whatever the kind (module-level, deferred, typing-only)."""
    return {m: e[MODULE] | e[DEFERRED] | e[TYPING] for m, e in graph.items()}


def test_no_import_cycles_counting_every_import(graph):
    """A deferred or typing-only import closes a cycle as surely as a module-level one: it only hides it."""
    found = cycles(every_import(graph))
    assert found == [], f"import cycles (imports inside functions and under TYPE_CHECKING count): {found}"


def test_house_size_limits():
    """At most 12 modules directly in fme/ (``__init__`` and ``__main__`` counted), none over 600 lines, and no
    Dask engine module outside fme/_dask/."""
    root_modules = sorted(p.name for p in SOURCE.glob("*.py"))
    assert len(root_modules) <= 12, root_modules
    assert [m for m in root_modules if m.startswith("_dask")] == []
    long = {
        str(p.relative_to(SOURCE)): n
        for p in SOURCE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}, f"split these modules (over 600 lines): {long}"


def test_a_planted_deferred_cycle_in_fme_is_caught(tmp_path):
    """The guard on fme's own tree: a copy of fme whose batch kernel calls back up into the front door
    through an import inside a function (the kind of cycle the old module-level check missed)."""
    import shutil

    copy = tmp_path / "fme"
    shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    kernel = copy / "_core" / "kernel.py"
    kernel.write_text(
        kernel.read_text(encoding="utf-8") + "\n\ndef _planted():\n    from ..effects import fme\n\n    return fme\n",
        encoding="utf-8",
    )
    g = import_graph(copy)
    assert cycles({m: e[MODULE] for m, e in g.items()}) == []  # invisible at module level
    found = cycles(every_import(g))
    assert len(found) == 1 and {"fme._core.kernel", "fme.effects", "fme._local.effects"} <= set(found[0])
    assert upward_imports(g)[("fme._core", "fme.effects")] == ["deferred: fme._core.kernel -> fme.effects"]


def test_engines_do_not_import_each_other(graph):
    """The in-memory and the Dask engine share only what lives in fme._core (or lower): neither imports the
    other, whatever the kind of import."""
    crossing = sorted(
        f"{m} -> {t}"
        for m, targets in every_import(graph).items()
        for t in targets
        for a, b in (("fme._local", "fme._dask"), ("fme._dask", "fme._local"))
        if (m == a or m.startswith(a + ".")) and (t == b or t.startswith(b + "."))
    )
    assert crossing == []


#: The engines' entry points, module -> names: fme/_local/<module>.py and fme/_dask/<module>.py both define each
#: name with the same parameters (the front door hands either the same resolved plan).
ENGINE_ENTRIES = {
    "effects": ("fme",),
    "ame": ("ame",),
    "came": ("came", "came_joint"),
    "vocab": ("average", "comparisons", "predictions"),
    "interactions": ("interaction",),
    "arrays": ("fme", "ame"),
}


def _functions(path: Path) -> dict[str, list[str]]:
    """Top-level function name -> its parameter names (positional and keyword-only, in order)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


@pytest.mark.parametrize("module", sorted(ENGINE_ENTRIES))
def test_engines_are_mirrored(module):
    """Two engines, one shape: each entry point exists in both engines with the same parameters, in the same
    order (the Dask engine may take trailing parameters of its own that the other verbs' engines hand it,
    such as the groups whose sums ride on the fME pass)."""
    local, dask = _functions(SOURCE / "_local" / f"{module}.py"), _functions(SOURCE / "_dask" / f"{module}.py")
    for name in ENGINE_ENTRIES[module]:
        assert name in local and name in dask, (module, name)
        assert dask[name][: len(local[name])] == local[name], (module, name, local[name], dask[name])


def test_every_engine_module_is_listed_or_a_helper():
    """A module of fme/_local/ is an engine entry (mirrored on Dask) or one of the in-memory engine's pieces
    the Dask engine reaches differently (margins: the grid runs in memory for both)."""
    local = sorted(p.stem for p in (SOURCE / "_local").glob("*.py") if p.stem != "__init__")
    assert set(local) - set(ENGINE_ENTRIES) <= {"margins"}, local


def _is_private(segment: str) -> bool:
    return segment.startswith("_") and not segment.startswith("__")


def _owner_allows(importer: str, target: str) -> bool:
    """A module with a private segment (``a._b.c``) belongs to the package above that segment (``a``): only
    modules inside it may import it, for every private segment of the path."""
    parts = target.split(".")
    for i, segment in enumerate(parts):
        if _is_private(segment):
            owner = ".".join(parts[:i])
            if not (importer == owner or importer.startswith(owner + ".")):
                return False
    return True


def private_reaches(root: Path = SOURCE, package: str = "fme") -> list[str]:
    """Every reach into another package's private module or another module's private name.

    A leading underscore is private to where it stands: a module ``_m`` to its package (``fme._core`` to
    ``fme``, ``fme.inference.execution``'s sibling ``_x`` to ``fme.inference``), a name ``_f`` to its module.
    Found: ``import``/``from ... import`` of such a module from outside its package, ``from m import _f``
    from another module, and ``m._f`` on a module ``m`` bound by an import.
    """
    known = module_files(root, package)
    out = []
    for module, path in known.items():
        own = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] != package:
                        continue
                    if not _owner_allows(module, alias.name):
                        out.append(f"{module}: import {alias.name}")
                    if alias.asname and alias.name in known:
                        bound[alias.asname] = alias.name
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = own.split(".")[: len(own.split(".")) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                if origin.split(".")[0] != package:
                    continue
                for alias in node.names:
                    full = f"{origin}.{alias.name}"
                    if full in known:
                        if not _owner_allows(module, full):
                            out.append(f"{module}: from {origin} import {alias.name}")
                        bound[alias.asname or alias.name] = full
                        continue
                    if not _owner_allows(module, origin):
                        out.append(f"{module}: from {origin} import {alias.name}")
                    elif _is_private(alias.name) and origin != module:
                        out.append(f"{module}: from {origin} import {alias.name}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _is_private(node.attr)
                and bound[node.value.id] != module
            ):
                out.append(f"{module}: {bound[node.value.id]}.{node.attr}")
    return sorted(set(out))


def test_no_private_module_or_name_is_reached_from_outside():
    """What another package uses is public there (a module without underscore, or a name without one);
    what stays private is used only where it stands."""
    assert private_reaches() == []


def test_the_private_reach_check_finds_each_planted_kind(tmp_path):
    root = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a/__init__.py": "",
            "a/m.py": "_x = 1\ny = 2\n",
            "a/_p.py": "z = 3\n",
            "a/n.py": "from ._p import z\nfrom .m import y\n",  # inside a: its private module is fine
            "a/o.py": "from .m import _x\n",  # a private name of another module
            "b/__init__.py": "",
            "b/k.py": "from ..a._p import z\nfrom ..a import _p\nimport pkg.a._p\n",  # another package's private module
            "b/l.py": "from ..a import m\nimport pkg.a.m as am\n\nv = m._x + am._x + m.y\n",  # attribute reach-ins
        },
    )
    assert private_reaches(root, "pkg") == [
        "pkg.a.o: from pkg.a.m import _x",
        "pkg.b.k: from pkg.a import _p",
        "pkg.b.k: from pkg.a._p import z",
        "pkg.b.k: import pkg.a._p",
        "pkg.b.l: pkg.a.m._x",
    ]


def test_no_module_shares_a_name_with_a_public_function():
    """Importing a submodule binds it as an attribute of its package: a module fme/<name>.py beside a public
    fme.<name> would replace the function (the reason the margins vocabulary lives in fme/margins/)."""
    import fme

    children = {p.stem for p in SOURCE.glob("*.py")} | {
        p.name for p in SOURCE.iterdir() if (p / "__init__.py").exists()
    }
    assert sorted(children & set(fme.__all__)) == []


def test_no_import_hooks_or_module_rewrites():
    """fme has no users of an older layout to keep: no import hook, no module class swap, no __module__ rewrite."""
    found = []
    for path in SOURCE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr in ("__module__", "__class__"):
                        found.append(f"{path.relative_to(SOURCE)}:{node.lineno}")
            if isinstance(node, ast.Attribute) and node.attr in ("meta_path", "path_hooks"):
                found.append(f"{path.relative_to(SOURCE)}:{node.lineno}")
    assert found == []


def test_extrapolation_families_import_only_the_base_downwards(graph):
    """fme.extrapolation: the families import _base (and the shared _encoded), never the package or each other."""
    families = (
        "fme.extrapolation._envelope",
        "fme.extrapolation._hull",
        "fme.extrapolation._risk",
        "fme.extrapolation._outlier",
    )
    inside = {m for m in graph if m.startswith("fme.extrapolation")}
    for family in families:
        imported = (graph[family][MODULE] | graph[family][DEFERRED]) & inside
        assert imported <= {"fme.extrapolation._base", "fme.extrapolation._encoded"}, family
    for base in ("fme.extrapolation._base", "fme.extrapolation._encoded"):
        assert not (graph[base][MODULE] | graph[base][DEFERRED]) & (inside - {"fme.extrapolation._base"}), base


def test_layers_flow_one_way(graph):
    found = upward_imports(graph)
    unexplained = {pair: lines for pair, lines in found.items() if pair not in ALLOWANCES}
    assert unexplained == {}, "imports into a higher layer (move the helper down, or explain it in ALLOWANCES)"


def test_allowances_are_current(graph):
    found = upward_imports(graph)
    stale = sorted(pair for pair in ALLOWANCES if pair not in found)
    assert stale == [], f"these upward imports are gone; remove them from ALLOWANCES: {stale}"
    rank = layer_index()
    for (a, b), lines in found.items():
        if (a, b) in ALLOWANCES:
            # an allowance covers deferred imports only: a module-level upward import is never explained away
            assert all(line.startswith(DEFERRED) for line in lines), lines
            assert rank[b] > rank[a]


# ----------------------------------------------------------------- the checks themselves can fail
def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_checks_find_a_planted_cycle_and_an_upward_import(tmp_path):
    root = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "from .top import run\n",
            "low.py": "from . import mid\n",  # low -> mid -> low: a module-level cycle
            "mid.py": "import pkg.low\n\ndef f():\n    from .top import run\n",  # deferred, upward
            "top.py": "from .mid import f\n\ndef run():\n    from .low import x\n",
            "sub/__init__.py": "from ._a import A\n",
            "sub/_a.py": "from .. import low\nfrom ._b import B\n",
            "sub/_b.py": "def g():\n    from ._a import A\n",  # a deferred cycle inside sub: not a module-level one
            "typed.py": (
                "from typing import TYPE_CHECKING\nimport typing\n\nif TYPE_CHECKING:\n    from .top import run\n"
                "else:\n    from . import low\nif typing.TYPE_CHECKING:\n    import pkg.mid\n\n"
                "class C:\n    from .sub import _b\n\n    def m(self):\n        import pkg.sub._a\n"
            ),
        },
    )
    g = import_graph(root, "pkg")
    assert g["pkg.low"][MODULE] == {"pkg.mid"} and g["pkg.mid"][MODULE] == {"pkg.low"}
    assert g["pkg.mid"][DEFERRED] == {"pkg.top"} and g["pkg.sub._b"][DEFERRED] == {"pkg.sub._a"}
    assert g["pkg.typed"] == {
        MODULE: {"pkg.low", "pkg.sub._b"},
        DEFERRED: {"pkg.sub._a"},
        TYPING: {"pkg.top", "pkg.mid"},
    }
    assert cycles({m: e[MODULE] for m, e in g.items()}) == [["pkg.low", "pkg.mid"]]
    # counting every import, the deferred mid -> top and sub._b -> sub._a close the cycles it hid
    assert cycles(every_import(g)) == [["pkg.low", "pkg.mid", "pkg.top"], ["pkg.sub._a", "pkg.sub._b"]]
    layers = [("low", ("pkg.low", "pkg.sub")), ("mid", ("pkg.mid",)), ("top", ("pkg", "pkg.top", "pkg.typed"))]
    assert upward_imports(g, layers) == {
        ("pkg.low", "pkg.mid"): ["module-level: pkg.low -> pkg.mid"],
        ("pkg.mid", "pkg.top"): ["deferred: pkg.mid -> pkg.top"],
    }
    assert unit_of("pkg.sub._b", layers) == "pkg.sub" and unit_of("pkg.new", layers) is None


def test_cycle_finder_on_longer_cycles_and_self_free_chains():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"d"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def attrs_uses(root: Path) -> list[str]:
    """``path:line`` of every use of a ``.attrs`` attribute in the package at ``root`` (read, write, call, in
    any expression; ``getattr``/``setattr``/``delattr``/``hasattr`` of ``"attrs"`` too); comments and
    docstrings are not code, so they do not count."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            named = isinstance(node, ast.Attribute) and node.attr == "attrs"
            by_name = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "delattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == "attrs"
            )
            if named or by_name:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_module_keeps_anything_in_dataframe_attrs():
    """Results carry their payloads as typed attributes (fme.EstimatesTable and its subclasses, the leaf tests'
    table, fields of the result objects): pandas' attrs are experimental, many operations drop them, and
    pd.concat/merge fail on an array kept there."""
    found = attrs_uses(SOURCE)
    assert found == [], f"keep results' payloads in typed attributes, not DataFrame.attrs: {found}"


def test_the_attrs_check_finds_every_planted_use(tmp_path):
    root = _write(
        tmp_path / "pkg",
        {
            "__init__.py": '"""A docstring may name t.attrs["x"]."""\n# and so may a comment: t.attrs = {}\n',
            "read.py": "def f(t):\n    return t.attrs['global']\n",
            "write.py": "def f(t):\n    t.attrs = {}\n    t.attrs['x'] = 1\n",
            "call.py": "def f(t):\n    return t.attrs.get('x', getattr(t, 'attrs'))\n",
            "clean.py": "def f(t):\n    return t.global_test, {'attrs': 1}\n",
        },
    )
    assert attrs_uses(root) == ["call.py:2", "call.py:2", "read.py:2", "write.py:2", "write.py:3"]


# ================================================================= the report's stages (fme/report)
# The report is four stages joined by the config object and results.json (house rule 4). Within the
# report's layer, each stage imports only downward: inputs < analysis < present < render; the
# orchestration at fme/report/ (build, model_hash, _notebook) may import every stage, no stage imports it.
REPORT = "fme.report"
#: The stages, lowest first.
REPORT_STAGES = ("inputs", "analysis", "present", "render")
#: Modules of fme/report/ itself that run the stages (not a stage).
REPORT_ORCHESTRATION = ("fme.report", "fme.report.build", "fme.report.model_hash", "fme.report._notebook")
#: What each stage may import outside the report (besides the stages below it and its own modules): by
#: prefix of the imported module.
REPORT_STAGE_OUTSIDE = {
    # the config: no model code; the detectors' registry and parameter checks, the library's exceptions
    "inputs": ("fme.exceptions", "fme._utils", "fme.extrapolation"),
    # the analysis: fme's public API (the root and the public modules), the foundation helpers; no private module
    "analysis": ("fme", "fme._utils"),
    # results.json -> strings: the number formatter only (not even a constant of an engine)
    "present": ("fme._utils",),
    # strings -> documents: nothing of fme
    "render": (),
}
#: The one private package of fme the report may import: the foundation's formatting and validation helpers.
REPORT_PRIVATE_ALLOWED = "fme._utils"


def _stage_of(module: str) -> str | None:
    parts = module.split(".")
    if module.startswith(REPORT + ".") and len(parts) >= 3 and parts[2] in REPORT_STAGES:
        return parts[2]
    return None


def _is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split(".")[1:])


def _report_may_import(target: str) -> bool:
    """A module of fme outside the report that a report module may import: public (no segment after ``fme``
    starts with an underscore) or the foundation helpers."""
    return _is_public(target) or target == REPORT_PRIVATE_ALLOWED or target.startswith(REPORT_PRIVATE_ALLOWED + ".")


def private_report_imports(graph: dict[str, dict[str, set[str]]]) -> list[str]:
    """Imports of private fme modules by any report module (stages and orchestration; every kind of import)."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in every_import(graph).items()
        if module == REPORT or module.startswith(REPORT + ".")
        for target in targets
        if not target.startswith(REPORT + ".") and not _report_may_import(target)
    )


def report_stage_violations(graph: dict[str, dict[str, set[str]]]) -> list[str]:
    """Imports of a report stage that break the stage rules (every kind of import counts)."""
    out = []
    for module, targets in sorted(every_import(graph).items()):
        stage = _stage_of(module)
        if stage is None:
            continue
        rank = REPORT_STAGES.index(stage)
        for target in sorted(targets):
            other = _stage_of(target)
            if other is not None:
                if REPORT_STAGES.index(other) > rank:
                    out.append(f"{module} -> {target}: a stage imports a later stage")
                continue
            if target in REPORT_ORCHESTRATION or target.startswith(REPORT + "."):
                out.append(f"{module} -> {target}: a stage imports the orchestration")
                continue
            allowed = REPORT_STAGE_OUTSIDE[stage]
            if stage == "analysis":
                ok = target == "fme" or (target.startswith("fme.") and _report_may_import(target))
            else:
                ok = any(target == p or target.startswith(p + ".") for p in allowed)
            if not ok:
                out.append(f"{module} -> {target}: outside what the {stage} stage may import")
    return out


def test_report_stages_import_only_downward(graph):
    """inputs imports no model code and no other stage; analysis imports fme's public API, fme._utils, inputs and
    itself (no private module of fme); present imports inputs, fme._utils and itself;
    render imports present, inputs and itself; no stage imports the orchestration."""
    assert {_stage_of(m) for m in graph if m.startswith(REPORT + ".")} - {None} == set(REPORT_STAGES)
    assert report_stage_violations(graph) == []


def test_report_modules_are_a_stage_or_the_orchestration(graph):
    loose = sorted(m for m in graph if m.startswith(REPORT) and _stage_of(m) is None and m not in REPORT_ORCHESTRATION)
    assert loose == [], f"put these report modules into a stage folder (or the orchestration list): {loose}"


def test_no_report_module_imports_a_private_fme_module(graph):
    """The report reads fme's public API only (the figures it needs are public attributes of the results):
    no report module, orchestration included, imports a module with an underscore segment after ``fme``, but
    the foundation helpers ``fme._utils``."""
    assert private_report_imports(graph) == []


def test_report_stage_rules_catch_planted_imports(tmp_path):
    """The stage rules are not vacuous: a present module reading an engine constant, an inputs module
    importing the analysis, a render module computing through fme and an analysis module running the batch kernel
    are all reported, and so are the private modules read by the analysis, the present stage and the
    orchestration (the model hash asking the adapters instead of fme.models)."""
    import shutil

    copy = tmp_path / "fme"
    shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    plants = {
        ("report", "present", "flags.py"): "\n\ndef _planted():\n    from ..._dask.common import FIT_SAMPLE_SIZE\n",
        ("report", "inputs", "validate.py"): "\n\ndef _planted():\n    from ..analysis import run\n",
        ("report", "render", "documents.py"): "\n\ndef _planted():\n    import fme\n",
        ("report", "analysis", "details.py"): "\n\ndef _planted():\n    from ..._core.kernel import evaluate_batch\n",
        ("report", "model_hash.py"): "\n\ndef _planted():\n    from .._adapters import fingerprint\n",
    }
    for parts, code in plants.items():
        path = copy.joinpath(*parts)
        path.write_text(path.read_text(encoding="utf-8") + code, encoding="utf-8")
    graph = import_graph(copy)
    found = report_stage_violations(graph)
    assert found == [
        "fme.report.analysis.details -> fme._core.kernel: outside what the analysis stage may import",
        "fme.report.inputs.validate -> fme.report.analysis.run: a stage imports a later stage",
        "fme.report.present.flags -> fme._dask.common: outside what the present stage may import",
        "fme.report.render.documents -> fme: outside what the render stage may import",
    ]
    assert private_report_imports(graph) == [
        "fme.report.analysis.details -> fme._core.kernel",
        "fme.report.model_hash -> fme._adapters",
        "fme.report.present.flags -> fme._dask.common",
    ]


def test_no_report_module_tests_a_model_type():
    """A backend is known in one place (house rule 3): outside fme/_adapters/ no report module reads a model's
    class or module name; the model's identity is the adapter's fingerprint."""
    import re

    hits = []
    for path in sorted((SOURCE / "report").rglob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"__module__|__qualname__|type\((model|obj|res|family|inner|info)\)", line):
                hits.append(f"{path.relative_to(SOURCE)}:{i}: {line.strip()}")
    assert hits == []


# ================================================================= a backend is known in one place
#: The backend adapter modules of fme/_adapters/: outside the package only its __init__ (``adapt``, ``model_frame``,
#: the ModelAdapter's methods) is imported.
BACKEND_MODULES = tuple(
    f"fme._adapters.{m}"
    for m in ("statsmodels", "sklearn", "lightgbm", "xgboost", "formula", "forest", "generic", "identity")
)
#: Packages outside fme/_adapters/ that may import a backend adapter module (package -> why).
BACKEND_IMPORTERS = {
    "fme._nlm": (
        "the exact NLM walks a tree ensemble's paths backend-free, over the Forest that forest() returns: "
        "it reads _adapters.forest's Forest arrays (and LightGBM's zero-threshold convention) directly"
    ),
}
#: Modules outside fme/_adapters/ that read a class's ``__module__`` of something that is not a model (module -> why).
MODULE_NAME_READERS = {
    "fme._utils.validation": "is_dask_collection recognises the data (a Dask collection), never imports dask",
}


def backend_knowledge(graph: dict[str, dict[str, set[str]]], root: Path = SOURCE, package: str = "fme") -> list[str]:
    """Modules outside ``<package>._adapters`` that import a backend adapter module (any kind of import) or read a
    class's ``__module__`` (a type test by module name), less the listed exceptions."""
    adapters = f"{package}._adapters"
    backends = tuple(m.replace("fme.", f"{package}.", 1) for m in BACKEND_MODULES)
    inside = lambda m, p: m == p or m.startswith(p + ".")  # noqa: E731
    allowed = tuple(p.replace("fme.", f"{package}.", 1) for p in BACKEND_IMPORTERS)
    readers = {p.replace("fme.", f"{package}.", 1) for p in MODULE_NAME_READERS}
    out = []
    for module, targets in sorted(every_import(graph).items()):
        if inside(module, adapters) or any(inside(module, p) for p in allowed):
            continue
        out += [f"{module} imports {t}" for t in sorted(targets) if any(inside(t, b) for b in backends)]
    for module, path in module_files(root, package).items():
        if inside(module, adapters) or module in readers:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "__module__" in line:
                out.append(f"{module}:{i} reads __module__: {line.strip()}")
    return out


def test_a_backend_is_known_only_in_the_adapters(graph):
    """House rule 3: outside fme/_adapters/ no module imports a backend adapter module or tests a model's class by
    its module; what fme needs to know of a model is a ModelAdapter method (fme._adapters.adapt)."""
    assert backend_knowledge(graph) == []


def test_backend_exceptions_are_current(graph):
    used = {
        unit_of(m)
        for m, ts in every_import(graph).items()
        for t in ts
        if any(t == b or t.startswith(b + ".") for b in BACKEND_MODULES)
    }
    assert set(BACKEND_IMPORTERS) <= used
    for module in MODULE_NAME_READERS:
        assert "__module__" in module_files(SOURCE)[module].read_text(encoding="utf-8"), module


def test_the_backend_check_finds_planted_type_tests(tmp_path):
    """Not vacuous: a core module importing the statsmodels adapter and an inference module testing a model's
    ``__module__`` are both reported; the same in fme/_nlm (the listed exception) only for ``__module__``."""
    root = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "_adapters/__init__.py": "from . import statsmodels\n",
            "_adapters/statsmodels.py": "def f(m):\n    return type(m).__module__\n",
            "_core/__init__.py": "",
            "_core/plan.py": "def g():\n    from .._adapters.statsmodels import f\n",
            "inference/__init__.py": "",
            "inference/vcov.py": "def h(m):\n    return type(m).__module__.startswith('x')\n",
            "_nlm/__init__.py": "",
            "_nlm/paths.py": "from .._adapters import statsmodels\nX = int.__module__\n",
            "ok.py": "from . import _adapters\n",
        },
    )
    found = backend_knowledge(import_graph(root, "pkg"), root, "pkg")
    assert found == [
        "pkg._core.plan imports pkg._adapters.statsmodels",
        "pkg._nlm.paths:2 reads __module__: X = int.__module__",
        "pkg.inference.vcov:2 reads __module__: return type(m).__module__.startswith('x')",
    ]


# ================================================================= validate once: the data's path through a call
def modules_data_visits(call, data) -> list[str]:
    """The fme modules whose functions receive ``data`` itself (the caller's object, by identity) during
    ``call()``, in call order, consecutive calls within one module counted once (a "stay")."""
    import sys

    stays: list[str] = []

    def profile(frame, event, arg):  # noqa: ANN001, ARG001
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("fme"):
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if any(frame.f_locals.get(n) is data for n in names) and (not stays or stays[-1] != module):
            stays.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return stays


@pytest.fixture(scope="module")
def ols_case():
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    smf = pytest.importorskip("statsmodels.formula.api")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=200), "z": rng.normal(size=200)})
    model = smf.ols("y ~ x + z", data=X.assign(y=X.x + 0.5 * X.z + rng.normal(size=200))).fit()
    return model, X


@pytest.mark.parametrize("verb", ["fme", "ame"])
def test_the_data_visits_at_most_ten_modules(ols_case, verb):
    """A front door validates the data once and hands the engine a resolved plan and fme's own frame: the
    caller's object reaches the front door, the plan and the validation, and no engine or kernel (before the
    house moved, fme.ame's data visited 13 modules in 37 stays)."""
    import fme

    model, X = ols_case
    steps = {"x": 1} if verb == "fme" else {"x": 1, "z": 1}
    visited = modules_data_visits(lambda: getattr(fme, verb)(model, X, steps), X)
    assert visited[0] in ("fme.effects", "fme.margins.marginal")
    assert len(set(visited)) <= 10, visited
    assert not [m for m in visited if m.startswith(("fme._local", "fme._dask", "fme._core.kernel"))], visited


def test_the_data_path_reader_follows_the_object_itself():
    """The reader counts modules by identity of the object, not by equality or name."""
    import fme._utils.validation as validation

    frame = object()
    visited = modules_data_visits(
        lambda: (validation.is_dask_collection(frame), validation.is_dask_collection(1)), frame
    )
    assert visited == ["fme._utils.validation"]
