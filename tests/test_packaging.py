"""The set-up files agree with each other (pyproject is the single source of dependencies)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from fme.report.analysis.environment import CONDA_MARKER_ENV, canonical, locked_pins, read_lock

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_environment_yml_is_generated_from_the_lock() -> None:
    from fme.report.analysis.environment import conda_environment

    text = (ROOT / "environment.yml").read_text()
    assert text == conda_environment(LOCK), "environment.yml is stale: run `make lock`"
    env = yaml.safe_load(text)
    pins = next(d for d in env["dependencies"] if isinstance(d, dict))["pip"]
    assert "numpy==" + locked_pins(LOCK, CONDA_MARKER_ENV)["numpy"] in pins
    assert pins[-1] == "-e .[test]" and "python=3.11" in env["dependencies"]


def test_every_dependency_is_pinned_in_the_lock_within_its_bounds() -> None:
    from packaging.requirements import Requirement

    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith(f"{project['name']}[")]  # the project's own extras
    reqs += _pyproject()["build-system"]["requires"]
    lock = read_lock(LOCK)
    for text in reqs:
        req = Requirement(text)
        pins = [p for p in lock if p.name == canonical(req.name)]
        assert pins, f"{req.name} is not in {LOCK.name}: run `make lock`"
        for pin in pins:
            assert req.specifier.contains(pin.version, prereleases=True), f"{pin} violates {text}"


def test_every_locked_package_has_hashes() -> None:
    text = LOCK.read_text()
    blocks = re.split(r"\n(?=[a-z0-9])", text.split("\n", 2)[2])
    assert len(blocks) == len(read_lock(LOCK)) > 50
    for block in blocks:
        assert "--hash=sha256:" in block, block.splitlines()[0]
    assert "://" not in text and "--index-url" not in text  # no index URLs recorded


def test_makefile_installs_exactly_the_lock() -> None:
    make = (ROOT / "Makefile").read_text()
    assert "pip sync --python $(BIN)/python --require-hashes $(LOCK)" in make
    assert "--no-deps --no-build-isolation -e ." in make  # fme itself, built with the locked setuptools
    assert "--require-hashes" in make and "requirements-tools.lock" in make
    tools = read_lock(ROOT / "requirements-tools.lock")
    assert [p.name for p in tools] == ["uv"]


@pytest.mark.lock
def test_installed_versions_equal_the_lock() -> None:
    from fme.report.analysis.environment import lock_differences

    assert lock_differences(LOCK) == []
    for name in ("numpy", "pandas", "scipy", "scikit-learn", "matplotlib", "statsmodels"):
        assert metadata.version(name) == locked_pins(LOCK)[name]


def test_lock_record_reports_differences(tmp_path: Path) -> None:
    from fme.report.analysis.environment import lock_record

    fake = tmp_path / "requirements.lock"
    fake.write_text("numpy==0.0.1 \\\n    --hash=sha256:00\nnot-a-package-fme==1.0 ; python_version < '3'\n")
    rec = lock_record(fake)
    assert rec["matches"] is False and rec["file"] == "requirements.lock"
    assert rec["differences"] == [{"name": "numpy", "locked": "0.0.1", "installed": metadata.version("numpy")}]
    assert lock_record(tmp_path / "missing.lock") == {"file": None, "sha256": None, "matches": False, "differences": []}


def test_core_dependencies_have_lower_bounds() -> None:
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith(f"{project['name']}[")]  # the project's own extras
    for req in reqs:
        assert re.search(r">=\s*\d", req), f"{req!r} has no lower bound"
    names = {re.split(r"[<>=\[ ]", r)[0].lower() for r in project["dependencies"]}
    assert {"numpy", "scipy", "pandas", "scikit-learn", "statsmodels", "matplotlib", "jinja2"} <= names


def test_every_core_dependency_is_imported_by_fme() -> None:
    """No dependency stays declared and unused (seaborn was declared and never imported)."""
    import ast

    from packaging.requirements import Requirement

    imported = set()
    for path in (ROOT / "fme").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    distributions = metadata.packages_distributions()  # import name -> installed distributions
    used = {canonical(d) for name in imported for d in distributions.get(name, [])}
    declared = {canonical(Requirement(r).name) for r in _pyproject()["project"]["dependencies"]}
    assert declared - used == set(), "declared in pyproject.toml but never imported by fme"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make demo" in readme
    assert re.search(r"^make test$", ci, re.M)


def test_public_api_is_exported() -> None:
    import fme

    for name in [
        "fme",
        "ame",
        "mem",
        "mer",
        "dme",
        "came",
        "CTree",
        "step_size",
        "FMEResult",
        "PartitionResult",
        "FMEError",
    ]:
        assert name in fme.__all__ and hasattr(fme, name)


def test_wheel_packages_cover_the_sources_and_templates() -> None:
    st = _pyproject()["tool"]["setuptools"]
    packages = set(st["packages"])
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "fme").rglob("*.py") if "__pycache__" not in p.parts
    }
    assert on_disk <= packages, f"add {sorted(on_disk - packages)} to [tool.setuptools] packages"
    assert st["package-dir"] == {"fme._templates": "templates"}
    data = st["package-data"]
    shipped = [
        ("fme.data", ROOT / "fme" / "data"),
        ("fme._templates", ROOT / "templates"),
        ("fme._templates.partials", ROOT / "templates" / "partials"),
    ]
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
    code = (
        "import fme.report.render as r; print(r.TEMPLATES); "
        "r.markdown_env().get_template('report.qmd.j2'); "
        "assert (r.TEMPLATES / 'analysis.ipynb').is_file()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(out) == site / "fme" / "_templates"


def test_find_lock_finds_the_checkouts_lock() -> None:
    """A report built from this checkout records its lock (it was lost once when the module moved)."""
    from fme.report.analysis.environment import find_lock

    assert find_lock() == (ROOT / "requirements.lock").resolve()


def test_the_distribution_name_is_not_the_import_name_taken_on_the_index() -> None:
    """``fme`` on the package index is another project: the distribution is named for what it is, imports as fme."""
    import fme

    assert _pyproject()["project"]["name"] == fme.__distribution__ == "forward-marginal-effects"
    assert metadata.version("forward-marginal-effects") == fme.__version__


def test_import_fme_and_the_help_load_no_numerical_stack() -> None:
    """The public names load on first use: ``import fme``, ``fme --help`` and a config refused by the schema load
    none of pandas, SciPy, scikit-learn, statsmodels, numba; ``fme.ame`` then works as before."""
    import subprocess
    import sys

    probe = (
        "import sys; print(sorted(m for m in ('pandas', 'scipy', 'sklearn', 'statsmodels', 'numba') "
        "if m in sys.modules))"
    )
    help_code = "from fme.__main__ import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    for code in ("import fme", help_code):
        out = subprocess.run([sys.executable, "-c", code + "\n" + probe], capture_output=True, text=True)
        assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
    code = (
        "import fme; print(callable(fme.came), callable(fme.hypotheses), callable(fme.predictions)); "
        "import fme.conditional; print(callable(fme.came))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True", "True", "True"], out.stdout + out.stderr
