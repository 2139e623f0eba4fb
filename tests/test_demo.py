"""``fme demo`` (``make demo``): run from any working directory, it prints the worked example with every term
explained and no warning attributed to ``<frozen runpy>``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fme.__main__ import DEMO_CONFIG, DEMO_TERMS


def _demo(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FME_PROGRESS": "0", "PYTHONWARNINGS": "default"}
    return subprocess.run(
        [sys.executable, "-m", "fme", "demo", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.mark.slow
def test_demo_explains_every_term_from_any_directory(tmp_path):
    proc = _demo(tmp_path, "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert "<frozen runpy>" not in proc.stdout + proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    for term, meaning in DEMO_TERMS.items():
        assert f"  {term}: {meaning}" in proc.stdout, term
        assert term in proc.stdout.split(f"  {term}: {meaning}")[0], f"{term} is explained but never shown"


def test_demo_config_does_not_depend_on_the_working_directory():
    assert DEMO_CONFIG.is_absolute() and DEMO_CONFIG.exists()


@pytest.mark.slow
def test_demo_builds_the_report_from_another_directory(tmp_path):
    proc = _demo(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "<frozen runpy>" not in proc.stdout + proc.stderr
    assert (DEMO_CONFIG.parent / DEMO_CONFIG.stem / "report.html").exists()
