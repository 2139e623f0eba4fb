"""Sphinx configuration of the fme documentation site (``make docs`` -> docs/_build/html).

The site builds offline with warnings as errors (``-W``) and every reference checked (``-n``). Three
pages are written at build time from the code, so that they cannot drift from it:

* ``api/reference.rst``: one autosummary entry (and page) per name of ``fme.__all__`` and ``fme.plotting.__all__``;
* ``api/config.md``: the report config's keys, from its JSON Schema
  (:data:`fme.report.inputs.schema.SCHEMA`) and the defaults the loader fills in.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))
os.environ.setdefault("FME_PROGRESS", "0")  # no progress bars in the executed examples
# One OpenMP/BLAS thread for the examples the build runs: on a shared 2-core machine, HistGradientBoosting's
# default of a thread per core oversubscribes it (a 1 s example took 35-60 s under load). Set before any
# numerical library is imported, which loads the thread pools.
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")  # the Dask example: no scheduler chatter in the build log
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402

import fme  # noqa: E402

# Tables printed by the executed examples: wide enough for the result tables' columns on a page.
pd.set_option("display.width", 120)
pd.set_option("display.max_columns", 30)

project = "fme"
author = "the fme developers"
copyright = "the fme developers; the method: Scholbeck et al. 2024"
release = version = fme.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax served from _static/mathjax: the site fetches nothing
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "pyexec",  # docs/pyexec.py: examples run at build time, their printed output shown
    "alias_refs",  # docs/alias_refs.py: a reference by an imported name links to the documented object
    "paper_refs",  # docs/paper_refs.py: "paper §5.4" in docstrings links to the paper page
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# docs/architecture.md is included by develop/architecture.md (its owner edits it in place)
exclude_patterns = ["_build", "architecture.md", "api/glance.md", "examples/README.txt", "**/README.txt"]
templates_path = ["_templates"]

html_theme = "furo"  # no web fonts, no CDN: system font stacks and local assets only
html_title = f"fme {release}"
html_static_path = ["_static"]
html_show_sourcelink = False
html_copy_source = False

# --- references ------------------------------------------------------------------------------------------------
nitpicky = True
# No intersphinx: the build is offline and no inventory is fetched. These third-party names appear in the
# docstrings' and signatures' references and have no inventory here; each is listed with its origin.
_THIRD_PARTY = {
    # pandas: the data and result containers
    "pandas.DataFrame", "pandas.Series", "pandas.Index", "pd.DataFrame", "pd.Series", "DataFrame", "Series",
    "pandas.core.frame.DataFrame", "pandas.core.series.Series",
    # numpy arrays and generators
    "numpy.ndarray", "np.ndarray", "ndarray", "numpy.random.Generator", "numpy.typing.ArrayLike",
    "numpy.typing.NDArray",
    # dask and distributed (the dask extra)
    "dask.dataframe.DataFrame", "dd.DataFrame", "distributed.Client",
    # matplotlib (figures of the displays)
    "matplotlib.axes.Axes", "matplotlib.figure.Figure", "Axes", "Figure",
    # scikit-learn and statsmodels models
    "sklearn.base.BaseEstimator", "sklearn.pipeline.Pipeline",
    "statsmodels.base.model.Results",
}
nitpick_ignore = [(role, name) for name in sorted(_THIRD_PARTY)
                  for role in ("py:class", "py:obj", "py:func", "py:meth", "py:mod", "py:data", "py:attr")]
# Whole third-party and standard-library namespaces (no inventory offline): pandas' and NumPy's API named in
# docstrings, including the pandas docstrings that EstimatesTable's DataFrame overrides keep; the standard library.
nitpick_ignore_regex = [
    (r"py:.*", r"(pandas|pd|numpy|np|scipy|sklearn|statsmodels|matplotlib|dask|distributed|pyarrow|joblib)(\..*)?"),
    (r"py:.*", r"(DataFrame|Series|Index|DatetimeIndex|TimedeltaIndex|RangeIndex|Categorical)(\..*)?"),
    (r"py:.*", r"(collections|importlib|atexit|typing|functools|itertools|copy|pathlib|os|sys|json)(\..*)?"),
    (r"py:.*", r"(sorted|open|len|dict|list|tuple|set|float|int|str|bool|object|type|callable|Exception)"),
]

# --- autodoc / numpydoc ------------------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc Parameters sections carry the types; signatures stay short
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = False  # each attribute gets a target (docstrings link to them)

# --- MyST -------------------------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# --- gallery ----------------------------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(DOCS / "examples"),
    "gallery_dirs": str(DOCS / "gallery"),
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "write_computation_times": False,
    "show_memory": False,
    "remove_config_comments": True,
    "backreferences_dir": None,
    "doc_module": (),
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "expected_failing_examples": [],
    "only_warn_on_example_error": False,
    "abort_on_example_error": True,
    "min_reported_time": 1e9,
    "capture_repr": (),  # a display object's repr is not output; its figure is
}


# --- pages written from the code at build time ----------------------------------------------------------------
def _is_data(obj: object) -> bool:
    import inspect

    return not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj))


def _public_api() -> str:
    """The reference of every public name: fme.__all__ and fme.plotting.__all__, in their order. Functions and
    classes go through autosummary; data (a registry, a palette) get a page written here, since autosummary
    would summarise them by their type's docstring (a dict's)."""
    import fme.plotting

    def block(module: str, names: list[str]) -> str:
        objects = {n: getattr(importlib.import_module(module), n) for n in names}
        code = [n for n in names if not _is_data(objects[n])]
        data = [n for n in names if _is_data(objects[n])]
        out = ".. autosummary::\n   :toctree: generated\n   :nosignatures:\n\n" + "".join(f"   {n}\n" for n in code)
        if data:
            out += "\nData:\n\n.. toctree::\n   :hidden:\n\n" + "".join(f"   generated/{module}.{n}\n" for n in data)
            out += "\n" + "".join(f"* :data:`{module}.{n}` ({type(objects[n]).__name__})\n" for n in data)
            for n in data:
                _write_if_changed(DOCS / "api" / "generated" / f"{module}.{n}.rst",
                                  f"{module}.{n}\n{'=' * len(module + n) + '='}\n\n.. currentmodule:: {module}\n\n"
                                  f".. autodata:: {n}\n\n   A ``{type(objects[n]).__name__}``, defined in "
                                  f":mod:`{_defining_module(module, n)}`.\n")
        return out

    return ("..\n   Written by docs/conf.py from fme.__all__ and fme.plotting.__all__ at build time: do not edit.\n\n"
            "Public names\n============\n\n"
            "Every name of ``fme.__all__`` and of ``fme.plotting.__all__``, in their order; this page is written "
            "from those lists when the site is built.\n\n"
            ".. currentmodule:: fme\n\n``fme``\n-------\n\n" + block("fme", list(fme.__all__)) + "\n"
            ".. currentmodule:: fme.plotting\n\n``fme.plotting``\n----------------\n\n"
            + block("fme.plotting", list(fme.plotting.__all__)))


def _defining_module(module: str, name: str) -> str:
    """The module whose source assigns ``name`` (where a re-exported constant is defined)."""
    import ast
    import inspect
    import sys

    value = getattr(importlib.import_module(module), name)
    for mod_name, mod in sorted(sys.modules.items()):
        if not mod_name.startswith("fme") or getattr(mod, name, None) is not value:
            continue
        try:
            tree = ast.parse(inspect.getsource(mod))
        except (OSError, TypeError, SyntaxError):
            continue
        for stmt in tree.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return mod_name
    return module


def _module_names() -> list[str]:
    import pkgutil

    return ["fme"] + sorted(m.name for m in pkgutil.walk_packages(fme.__path__, "fme.")
                            if not m.name.startswith("fme._templates"))


def _modules() -> str:
    """An index of every module of the package, one page each (targets for the docstrings' references)."""
    names = _module_names()
    public = [n for n in names if not any(part.startswith("_") for part in n.split(".")[1:])]
    private = [n for n in names if n not in public]

    def section(title: str, mods: list[str]) -> str:
        return (f"{title}\n{'-' * len(title)}\n\n.. toctree::\n   :maxdepth: 1\n\n"
                + "".join(f"   modules/{n}\n" for n in mods) + "\n")

    return ("..\n   Written by docs/conf.py from the package's modules at build time: do not edit.\n\n"
            "Modules\n=======\n\n"
            "Every module of the package, one page each with everything it defines, written from the package "
            "when the site is built. The supported API is that of :doc:`reference`; these pages say where each "
            "part lives and are the targets of the docstrings' references. A module whose name has a part "
            "starting with ``_`` is an implementation detail and may move.\n\n"
            + section("Public modules", public) + section("Implementation modules", private))


def _module_page(name: str) -> str:
    return (f"{name}\n{'=' * len(name)}\n\n.. automodule:: {name}\n   :members:\n   :undoc-members:\n"
            "   :private-members:\n   :ignore-module-all:\n")


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


_write_if_changed(DOCS / "api" / "reference.rst", _public_api())
_write_if_changed(DOCS / "api" / "modules.rst", _modules())
for _name in _module_names():
    _write_if_changed(DOCS / "api" / "modules" / f"{_name}.rst", _module_page(_name))

import config_reference  # noqa: E402  (docs/config_reference.py)

_write_if_changed(DOCS / "api" / "config.md", config_reference.markdown())


def _owner_module(obj: object) -> str | None:
    """The module that defines a class member (a function, property, cached property or descriptor)."""
    for candidate in (getattr(obj, "__objclass__", None), getattr(obj, "fget", None), getattr(obj, "func", None),
                      obj):
        module = getattr(candidate, "__module__", None)
        if isinstance(module, str):
            return module
    return None


def _skip_foreign_members(app, what, name, obj, skip, options):  # noqa: ANN001, ANN202
    """A class page shows the members fme defines (its own and its fme base classes'), not those a class inherits
    from pandas (EstimatesTable is a DataFrame) or from the built-in exceptions."""
    if what != "class" or skip:
        return None
    module = _owner_module(obj)
    if module is not None and not module.startswith("fme"):
        return True
    import pandas as pd

    # EstimatesTable's overrides of DataFrame methods (which keep the rows' joint uncertainty) carry pandas'
    # docstring: pandas documents them; the class docstring says what the override adds
    theirs = getattr(pd.DataFrame, name, None)
    if theirs is not None and getattr(obj, "__doc__", None) and obj.__doc__ == getattr(theirs, "__doc__", None):
        return True
    return None


def _alias_safe_signatures(app) -> None:  # noqa: ANN001
    """numpydoc's signature hook, except for type aliases (``_Split = tuple[float, int]``, documented by a ``#:``
    comment): a ``types.GenericAlias`` is callable, so numpydoc would parse the docstring of the aliased builtin
    and fail ("error while formatting signature"). An alias has no signature; autodoc documents it as data."""
    import types

    for listener in list(app.events.listeners.get("autodoc-process-signature", [])):
        if getattr(listener.handler, "__module__", "") != "numpydoc.numpydoc":
            continue
        app.disconnect(listener.id)

        def signature(app, what, name, obj, options, sig, retann, _numpydoc=listener.handler):  # noqa: ANN001, ANN202
            if isinstance(obj, types.GenericAlias):
                return None
            return _numpydoc(app, what, name, obj, options, sig, retann)

        app.connect("autodoc-process-signature", signature, priority=listener.priority)


def setup(app):  # noqa: ANN001, ANN201
    app.connect("autodoc-skip-member", _skip_foreign_members)
    _alias_safe_signatures(app)
