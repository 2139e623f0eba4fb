"""fme.report.present.changelog: the change log against a previous report."""

from __future__ import annotations

import json

import pytest

from fme.report.inputs.config import ConfigError, load_config
from fme.report.present.changelog import changelog, compact, load_previous


def _variant(vid, ame, lo, hi, n=100, n_ep=0, split=None, level=None):
    return {
        "id": vid,
        "step_label": "x + 1",
        "ame": ame,
        "ci_low": lo,
        "ci_high": hi,
        "n": n,
        "n_extrapolation": n_ep,
        "detector": "envelope",
        "policy": "exclude",
        "level": level,
        "partition": None if split is None else {"root_split": split},
    }


def _results(*groups):
    return {
        "config_name": "r",
        "config_sha256": "ab" * 32,
        "effects": [{"id": vid, "title": title, "variants": vs} for vid, title, vs in groups],
    }


OLD = _results(
    (
        "x",
        "Step x",
        [_variant("x", 1.20, 1.00, 1.40, n=80, n_ep=20, split={"feature": "z", "value": 2.5, "levels": None})],
    ),
    ("gone", "Removed one", [_variant("gone", 0.5, 0.4, 0.6)]),
)
NEW = _results(
    (
        "x",
        "Step x",
        [_variant("x", 1.95, 1.80, 2.10, n=60, n_ep=40, split={"feature": "w", "value": 0.125, "levels": None})],
    ),
    ("new", "Added one", [_variant("new", 0.5, 0.4, 0.6)]),
)


def test_changelog_rows_added_removed():
    prev = {"path": "old.json", "sha256": "0" * 64, **compact(OLD)}
    c = changelog(NEW, prev)
    assert c["previous_id"] == "r-" + "ab" * 6
    assert c["added"] == ["Added one"] and c["removed"] == ["Removed one"]
    (row,) = c["rows"]
    assert row["label"] == "Step x" and row["step"] == "x + 1"
    assert row["previous"] == "1.20 [1.00, 1.40]" and row["now"] == "1.95 [1.80, 2.10]"
    assert row["delta"] == "+0.75"  # 1.95 - 1.20 at the CIs' two-significant-figure precision
    assert row["overlap"] == "no"
    assert row["ep_share"] == "+20.0 pp (20.0% to 40.0%)"
    assert row["first_split"] == "changed: z <= 2.5 to w <= 0.125"


def test_changelog_overlap_and_unchanged_split():
    same = _results(
        (
            "x",
            "Step x",
            [_variant("x", 1.30, 1.10, 1.50, n=80, n_ep=20, split={"feature": "z", "value": 2.5, "levels": None})],
        )
    )
    c = changelog(same, {"path": "p", "sha256": "0", **compact(OLD)})
    (row,) = c["rows"]
    assert row["overlap"] == "yes" and row["delta"] == "+0.10" and row["ep_share"] == "+0.0 pp (20.0% to 20.0%)"
    assert row["first_split"] == "unchanged: z <= 2.5"
    assert changelog(same, None) is None


def _config(tmp_path, previous):
    text = (
        f"title: t\nowner: o\nintended_use: u\nmodel: {{joblib: m.joblib}}\ndata: {{path: d.csv}}\n"
        f"target: y\neffects:\n  - {{id: a, steps: {{a: 1}}}}\nprevious: {previous}\n"
    )
    (tmp_path / "c.yaml").write_text(text, encoding="utf-8")
    return load_config(tmp_path / "c.yaml")


def test_load_previous_reads_and_fails_loudly(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps(OLD), encoding="utf-8")
    prev = load_previous(_config(tmp_path, "old.json"))
    assert prev["path"] == "old.json" and set(prev["effects"]) == {"x", "gone"} and len(prev["sha256"]) == 64
    with pytest.raises(ConfigError, match=r"c\.yaml:9: previous: file 'missing\.json' not found"):
        load_previous(_config(tmp_path, "missing.json"))
    (tmp_path / "bad.json").write_text('{"effects": [{"id": 1}]}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"c\.yaml:9: previous: 'bad\.json' is not a results\.json"):
        load_previous(_config(tmp_path, "bad.json"))
