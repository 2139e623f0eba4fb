"""The set-up files agree with each other (pyproject is the single source of dependencies)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_environment_yml_mirrors_pyproject() -> None:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python"))
    assert python.replace("python", "") == _pyproject()["project"]["requires-python"]
    assert "pip" in deps
    pip_block = next(d for d in deps if isinstance(d, dict))["pip"]
    assert pip_block == ["-e .[all]"]
    assert "all" in _pyproject()["project"]["optional-dependencies"]


def test_core_dependencies_have_lower_bounds() -> None:
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith("fme[")]
    for req in reqs:
        assert re.search(r">=\s*\d", req), f"{req!r} has no lower bound"
    names = {re.split(r"[<>=\[ ]", r)[0].lower() for r in project["dependencies"]}
    assert {"numpy", "scipy", "pandas", "scikit-learn", "statsmodels", "matplotlib", "seaborn", "jinja2"} <= names


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make demo" in readme
    assert re.search(r"^make test$", ci, re.M)


def test_public_api_is_exported() -> None:
    import fme

    for name in ["fme", "ame", "mem", "mer", "dme", "came", "CTree", "step_size", "FMEResult", "PartitionResult",
                 "FMEError"]:
        assert name in fme.__all__ and hasattr(fme, name)


def test_wheel_packages_cover_the_sources_and_templates() -> None:
    st = _pyproject()["tool"]["setuptools"]
    packages = set(st["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "fme").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert on_disk <= packages, f"add {sorted(on_disk - packages)} to [tool.setuptools] packages"
    assert st["package-dir"] == {"fme._templates": "templates"}
    data = st["package-data"]
    shipped = [("fme.data", ROOT / "fme" / "data"), ("fme._templates", ROOT / "templates"),
               ("fme._templates.partials", ROOT / "templates" / "partials")]
    for pkg, folder in shipped:
        for f in folder.iterdir():
            if f.is_file():
                assert any(f.match(g) for g in data[pkg]), f"{f.relative_to(ROOT)} is not in the {pkg} package data"


def test_installed_layout_finds_the_shipped_templates(tmp_path: Path) -> None:
    # The wheel's layout (checked by hand against `pip wheel .`): fme/ with templates/ as fme/_templates.
    import shutil
    import subprocess
    import sys

    site = tmp_path / "site"
    shutil.copytree(ROOT / "fme", site / "fme", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", site / "fme" / "_templates")
    code = ("import fme.report.render as r; print(r.TEMPLATES); "
            "r.markdown_env().get_template('report.qmd.j2'); "
            "assert (r.TEMPLATES / 'analysis.ipynb').is_file()")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": ""},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out) == site / "fme" / "_templates"
