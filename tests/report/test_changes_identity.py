"""The change log says what changed between two builds: the model version and the SHA-256 of both builds'
model and data, and compares AMEs on the scale the report shows them (a classifier's percentage points)."""

from __future__ import annotations

from fme.report.present.changelog import changelog, compact


def _results(version, model_sha, data_sha, ame, target_class=None):
    v = {
        "id": "e",
        "step_label": "x + 1",
        "ame": ame,
        "n": 10,
        "n_total": 10,
        "n_extrapolation": 0,
        "detector": None,
        "policy": None,
        "inference": "sample",
        "fixed_interval": {"low": ame - 0.01, "high": ame + 0.01, "level": 0.95, "kind": "fixed model"},
    }
    return {
        "config_name": "c",
        "config_sha256": "0" * 64,
        "target_class": target_class,
        "config": {"model": {"version": version} if version else {}},
        "model": {"sha256": model_sha},
        "data": {"sha256": data_sha},
        "effects": [{"id": "e", "title": "E", "variants": [v]}],
    }


def test_the_change_log_names_model_version_and_both_builds_hashes():
    old = _results("1.0", "a" * 64, "d" * 64, 0.02)
    new = _results("1.1", "b" * 64, "d" * 64, 0.03)
    log = changelog(new, {"path": "p", "sha256": "0", **compact(old)})
    rows = {r["what"]: r for r in log["identity"]}
    assert rows["Model version"] == {"what": "Model version", "previous": "1.0", "now": "1.1", "state": "changed"}
    assert rows["Model SHA-256"]["state"] == "changed" and rows["Model SHA-256"]["now"] == "b" * 64
    assert rows["Data SHA-256"]["state"] == "unchanged"
    unknown = changelog(new, {"path": "p", "sha256": "0", **compact(_results(None, None, "d" * 64, 0.02))})
    assert {r["what"]: r["state"] for r in unknown["identity"]}["Model version"] == "not recorded"


def test_a_classifiers_change_log_is_in_percentage_points():
    old = _results("1", "a", "d", 0.024, target_class=1)
    new = _results("1", "a", "d", 0.030, target_class=1)
    (row,) = changelog(new, {"path": "p", "sha256": "0", **compact(old)})["rows"]
    assert row["previous"].startswith("2.4") and row["now"].startswith("3.0") and row["delta"] == "+0.6"


def test_the_model_card_lists_the_interactions():
    from fme.report.render.model_card import model_card

    results = _results("1", "a", "d", 0.02)
    results["interactions"] = {
        "rows": [
            {
                "steps_a": "x1 + 1",
                "steps_b": "x2 + 1",
                "estimate": 0.5,
                "conf_low": 0.4,
                "conf_high": 0.6,
                "inference": "delta",
                "n": 120,
            }
        ]
    }
    (m,) = [
        m
        for m in model_card(results, {})["quantitative_analysis"]["performance_metrics"]
        if m["type"].startswith("interaction")
    ]
    assert m["type"] == "interaction of x1 + 1 and x2 + 1 (delta interval)" and m["slice"] == "120 evaluated rows"
    assert m["confidence_interval"] == {"lower_bound": "0.4", "upper_bound": "0.6"}
