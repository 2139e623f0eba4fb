"""fme.report.present.audit: the audit-trail rows and context."""

from __future__ import annotations

from pathlib import Path

from fme.report.inputs.config import ReportConfig
from fme.report.present.audit import audit_context, hash_rows

from .configs import bare_config

H = {
    "model": {"sha256": "a" * 64, "of": "fitted model: file m.joblib"},
    "data": {"sha256": "b" * 64, "of": "file d.csv"},
    "test_data": {"sha256": "c" * 64, "of": "file t.csv"},
    "requirements.lock": {"sha256": "d" * 64, "of": "requirements.lock"},
}
RESULTS = {
    "config": {"model": {"joblib": "m.joblib", "version": "2.1"}, "test_data": {"path": "t.csv"}},
    "reference_data": {"source": "the evaluation data (no reference data configured)"},
    "environment": {"os": "Linux", "os_release": "6.1", "machine": "aarch64"},
}


def test_hash_rows_every_input_and_the_results_file():
    rows = hash_rows(RESULTS, {"hashes": H, "results_sha256": "e" * 64})
    assert [(r["input"], r["sha256"]) for r in rows] == [
        ("Fitted model", "a" * 64),
        ("Evaluation data", "b" * 64),
        ("Reference data", "same as the evaluation data"),
        ("Test data", "c" * 64),
        ("Dependency lock", "d" * 64),
        ("Results file", "e" * 64),
    ]


def _config(model: dict) -> ReportConfig:
    return bare_config(Path("."), model=model)


def test_audit_context_model_version_platform_and_resolved_config():
    a = audit_context(RESULTS, _config(RESULTS["config"]["model"]), {"hashes": H})["audit"]
    assert a["model_version"] == "2.1" and a["os"] == "Linux 6.1" and a["machine"] == "aarch64"
    assert a["model_sha256"] == "a" * 64
    assert '"version": "2.1"' in a["resolved_config"] and a["fence"] == "```"
    unversioned = {"model": {"joblib": "m.joblib"}}
    b = audit_context(
        {**RESULTS, "config": {**unversioned, "x": "``` four ````"}}, _config(unversioned["model"]), {"hashes": H}
    )
    assert b["audit"]["model_version"].startswith("not stated") and b["audit"]["fence"] == "`````"
