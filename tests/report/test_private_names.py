"""A private name of a report module is used only in that module: what another module imports is public.

Scans every module of ``fme/report`` for ``from fme.report... import _x``
(and relative imports of report modules): a leading underscore then promises what the code keeps.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "fme" / "report"


def _module_of(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join(base + ([node.module] if node.module else []))


def private_imports(paths: list[Path]) -> list[str]:
    """``'importer -> module._name'`` for every private name of a report module imported elsewhere."""
    found = []
    for path in paths:
        module = _module_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _resolve(node, module, path.name == "__init__.py")
            if not source.startswith("fme.report"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{module} -> {source}.{alias.name}")
    return sorted(found)


def test_no_private_report_name_is_imported_by_another_module():
    assert private_imports(sorted(REPORT.rglob("*.py"))) == []


def test_the_scan_finds_a_planted_private_import(tmp_path):
    planted = REPORT / "present" / "_planted_probe.py"
    try:
        planted.write_text(
            "from .partition_view import _evaluated\nfrom fme.report.present import flags\n", encoding="utf-8"
        )
        assert private_imports([planted]) == [
            "fme.report.present._planted_probe -> fme.report.present.partition_view._evaluated"
        ]
    finally:
        planted.unlink()
