"""Report configs: schema validation with file:line:key errors, safe loading, defaults."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jsonschema")

from fme.report.config import ConfigError, load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

GOOD = """\
title: T
owner: O
intended_use: U
model:
  entry_point: "fme.paper:boston_svm"
data:
  dataset: boston
target: medv
effects:
  - steps: {crim: -5}
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def test_bundled_config_is_valid():
    cfg = load_config(REPO / "reports" / "boston-svm.yaml")
    assert cfg["_name"] == "boston-svm"
    assert [e["id"] for e in cfg["effects"]] == ["rm", "crim", "crim-nox", "crim-nox-ptratio", "chas"]
    assert cfg["effects"][0]["partition"] == {"method": "ctree", "minbucket": 100, "testtype": "teststatistic",
                                              "mincriterion": 0.99}


def test_defaults_filled(tmp_path):
    cfg = load_config(_write(tmp_path, GOOD))
    eff = cfg["effects"][0]
    assert eff["id"] == "crim" and eff["extrapolation"] == "envelope" and eff["on_extrapolation"] == "exclude"
    assert eff["conf_level"] == 0.95 and cfg["timestamp"] is False and cfg["seed"] == 0


@pytest.mark.parametrize("text, line, pattern", [
    (GOOD.replace("owner: O\n", "owner: O\ncolour: red\n"), 3, r"colour: unknown key 'colour'"),
    (GOOD.replace("owner: O\n", ""), 1, r"'owner' is missing"),
    (GOOD + "    on_extrapolation: drop\n", 11, r"effects\[0\]\.on_extrapolation: 'drop' is not one of"),
    (GOOD.replace("  dataset: boston\n", "  dataset: boston\n  path: x.csv\n"), 6, r"data: give exactly one of path, dataset"),
    (GOOD + "    partition: {method: ctree, minbucket: -3}\n", 11, r"effects\[0\]\.partition"),
    (GOOD.replace("effects:\n  - steps: {crim: -5}\n", "effects: []\n"), 9, r"effects: \[\] should be non-empty"),
    (GOOD + "    extrapolation: none\n    on_extrapolation: keep\n", 12, r"a policy needs a detector"),
    # expected_sign (§1.8) and signoff (§1.0)
    (GOOD + "    expected_sign: up\n", 11,
     r"effects\[0\]\.expected_sign: 'up' is not one of \['\+', '-'\]"),
    (GOOD.replace("{crim: -5}", "{chas: all}\n    expected_sign: '+'"), 11,
     r"effects\[0\]\.expected_sign: an expected sign is ambiguous for one effect per level"),
    (GOOD.replace("{crim: -5}", "{chas: [0, 1]}\n    expected_sign: '-'"), 11, r"expected_sign: .*ambiguous"),
    (GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: Preparer\n    title: Dr\n"), 11,
     r"signoff\[0\]\.title: unknown key 'title'; allowed keys here: name, role"),
    (GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: Preparer\n  - name: A\n"), 11,
     r"signoff\[1\]: 'role' is missing"),
    (GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: Preparer\n    name: 3\n"), 11,
     r"signoff\[0\]\.name: 3 is not of type 'string'"),
    (GOOD.replace("target: medv\n", "target: medv\nsignoff: []\n"), 9, r"signoff: \[\] should be non-empty"),
    (GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: ''\n"), 10, r"signoff\[0\]\.role: ''"),
])
def test_errors_name_key_and_line(tmp_path, text, line, pattern):
    p = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"^{p}:{line}: .*{pattern}"):
        load_config(p)


def test_invalid_yaml_reports_line(tmp_path):
    p = _write(tmp_path, GOOD.replace("owner: O", "owner: [O"))
    with pytest.raises(ConfigError, match=rf"^{p}:\d+: invalid YAML"):
        load_config(p)


def test_python_tags_are_not_constructed(tmp_path):
    p = _write(tmp_path, GOOD.replace("title: T", "title: !!python/object/apply:os.system ['echo pwned']"))
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(p)


def test_missing_file():
    with pytest.raises(ConfigError, match="cannot read"):
        load_config("/nonexistent/config.yaml")


def test_signoff_default_and_given(tmp_path):
    cfg = load_config(_write(tmp_path, GOOD))
    assert cfg["signoff"] == [{"role": "Preparer", "name": ""}, {"role": "Independent reviewer", "name": ""},
                              {"role": "Approver", "name": ""}]
    text = GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - {role: Preparer, name: A. B}\n"
                                          "  - {role: Validator}\n")
    cfg = load_config(_write(tmp_path, text))
    assert cfg["signoff"] == [{"role": "Preparer", "name": "A. B"}, {"role": "Validator", "name": ""}]


def test_expected_sign_accepted():
    cfg = load_config(REPO / "reports" / "boston-svm.yaml")
    signs = {e["id"]: e.get("expected_sign") for e in cfg["effects"]}
    assert signs == {"rm": "+", "crim": "+", "crim-nox": "+", "crim-nox-ptratio": "+", "chas": None}


def test_expected_sign_on_single_level_is_fine(tmp_path):
    cfg = load_config(_write(tmp_path, GOOD.replace("{crim: -5}", "{chas: 1}\n    expected_sign: '-'")))
    assert cfg["effects"][0]["expected_sign"] == "-"


def test_stability_defaults_merge_and_off(tmp_path):
    eff = load_config(_write(tmp_path, GOOD))["effects"][0]
    assert eff["stability"] == {"subsamples": 20, "fraction": 0.5}
    eff = load_config(_write(tmp_path, GOOD + "    stability: {subsamples: 5}\n"))["effects"][0]
    assert eff["stability"] == {"subsamples": 5, "fraction": 0.5}
    assert load_config(_write(tmp_path, GOOD + "    stability: false\n"))["effects"][0]["stability"] is False
    with pytest.raises(ConfigError, match=r":11: effects\[0\]\.stability"):
        load_config(_write(tmp_path, GOOD + "    stability: {fraction: 1.5}\n"))
