"""Report configs: schema validation with file:line:key errors, safe loading, defaults."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jsonschema")

from fme.report.inputs.config import ConfigError, load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

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
    assert cfg.name == "boston-svm"
    assert [e.id for e in cfg.effects] == ["rm", "crim", "crim-nox", "crim-nox-ptratio", "chas"]
    assert cfg.effects[0].partition == {
        "method": "ctree",
        "minbucket": 100,
        "testtype": "teststatistic",
        "mincriterion": 0.99,
        "max_leaves": 8,
    }


def test_defaults_filled(tmp_path):
    cfg = load_config(_write(tmp_path, GOOD))
    eff = cfg.effects[0]
    assert eff.id == "crim" and eff.extrapolation == {"method": "envelope"} and eff.on_extrapolation == "exclude"
    assert eff.conf_level == 0.95 and cfg.timestamp is False and cfg.seed == 0


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        (GOOD.replace("owner: O\n", "owner: O\ncolour: red\n"), 3, r"colour: unknown key 'colour'"),
        (GOOD.replace("owner: O\n", ""), 1, r"'owner' is missing"),
        (GOOD + "    on_extrapolation: drop\n", 11, r"effects\[0\]\.on_extrapolation: 'drop' is not one of"),
        (
            GOOD.replace("  dataset: boston\n", "  dataset: boston\n  path: x.csv\n"),
            6,
            r"data: give exactly one of path, dataset",
        ),
        (GOOD + "    partition: {method: ctree, minbucket: -3}\n", 11, r"effects\[0\]\.partition"),
        (GOOD.replace("effects:\n  - steps: {crim: -5}\n", "effects: []\n"), 9, r"effects: \[\] should be non-empty"),
        (GOOD + "    extrapolation: none\n    on_extrapolation: keep\n", 12, r"a policy needs a detector"),
        # expected_sign (§1.8) and signoff (§1.0)
        (GOOD + "    expected_sign: up\n", 11, r"effects\[0\]\.expected_sign: 'up' is not one of \['\+', '-'\]"),
        (
            GOOD.replace("{crim: -5}", "{chas: all}\n    expected_sign: '+'"),
            11,
            r"effects\[0\]\.expected_sign: an expected sign is ambiguous for one effect per level",
        ),
        (GOOD.replace("{crim: -5}", "{chas: [0, 1]}\n    expected_sign: '-'"), 11, r"expected_sign: .*ambiguous"),
        (
            GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: Preparer\n    title: Dr\n"),
            11,
            r"signoff\[0\]\.title: unknown key 'title'; allowed keys here: name, role",
        ),
        (
            GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: Preparer\n  - name: A\n"),
            11,
            r"signoff\[1\]: 'role' is missing",
        ),
        (
            GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: Preparer\n    name: 3\n"),
            11,
            r"signoff\[0\]\.name: 3 is not of type 'string'",
        ),
        (GOOD.replace("target: medv\n", "target: medv\nsignoff: []\n"), 9, r"signoff: \[\] should be non-empty"),
        (GOOD.replace("target: medv\n", "target: medv\nsignoff:\n  - role: ''\n"), 10, r"signoff\[0\]\.role: ''"),
    ],
)
def test_errors_name_key_and_line(tmp_path, text, line, pattern):
    p = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"^{p}:{line}: .*{pattern}"):
        load_config(p)


def test_invalid_yaml_reports_line(tmp_path):
    p = _write(tmp_path, GOOD.replace("owner: O", "owner: [O"))
    with pytest.raises(ConfigError, match=rf"^{p}:3: \(YAML\): invalid YAML: expected"):
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
    assert list(cfg.signoff) == [
        {"role": "Preparer", "name": ""},
        {"role": "Independent reviewer", "name": ""},
        {"role": "Approver", "name": ""},
    ]
    text = GOOD.replace(
        "target: medv\n", "target: medv\nsignoff:\n  - {role: Preparer, name: A. B}\n  - {role: Validator}\n"
    )
    cfg = load_config(_write(tmp_path, text))
    assert list(cfg.signoff) == [{"role": "Preparer", "name": "A. B"}, {"role": "Validator", "name": ""}]


def test_expected_sign_accepted():
    cfg = load_config(REPO / "reports" / "boston-svm.yaml")
    signs = {e.id: e.expected_sign for e in cfg.effects}
    assert signs == {"rm": "+", "crim": "+", "crim-nox": "+", "crim-nox-ptratio": "+", "chas": None}


def test_expected_sign_on_single_level_is_fine(tmp_path):
    cfg = load_config(_write(tmp_path, GOOD.replace("{crim: -5}", "{chas: 1}\n    expected_sign: '-'")))
    assert cfg.effects[0].expected_sign == "-"


def test_stability_defaults_merge_and_off(tmp_path):
    eff = load_config(_write(tmp_path, GOOD)).effects[0]
    assert eff.stability == {"subsamples": 20, "fraction": 0.5}
    eff = load_config(_write(tmp_path, GOOD + "    stability: {subsamples: 5}\n")).effects[0]
    assert eff.stability == {"subsamples": 5, "fraction": 0.5}
    assert load_config(_write(tmp_path, GOOD + "    stability: false\n")).effects[0].stability is False
    with pytest.raises(ConfigError, match=r":11: effects\[0\]\.stability"):
        load_config(_write(tmp_path, GOOD + "    stability: {fraction: 1.5}\n"))


# ------------------------------------------------------------------ loud, line-numbered failures
def test_duplicate_key_is_an_error_with_its_line(tmp_path):
    p = _write(tmp_path, GOOD.replace("  - steps: {crim: -5}\n", "  - steps: {crim: 1, crim: -1}\n"))
    with pytest.raises(
        ConfigError,
        match=rf"^{p}:10: effects\[0\]\.steps\.crim: duplicate key \(first given on "
        r"line 10\); give each key once$",
    ):
        load_config(p)


def test_duplicate_top_level_key(tmp_path):
    p = _write(tmp_path, GOOD + "owner: P\n")
    with pytest.raises(ConfigError, match=rf"^{p}:11: owner: duplicate key \(first given on line 2\)"):
        load_config(p)


def test_unique_key_loader_refuses_duplicates():
    import yaml

    from fme.report.inputs.config import UniqueKeyLoader

    assert yaml.load("a: {x: 1, y: 2}", Loader=UniqueKeyLoader) == {"a": {"x": 1, "y": 2}}
    with pytest.raises(yaml.YAMLError, match="duplicate key 'x'"):
        yaml.load("a: {x: 1, x: -1}", Loader=UniqueKeyLoader)


def test_non_utf8_config_is_one_line(tmp_path):
    p = tmp_path / "latin1.yaml"
    p.write_bytes(GOOD.replace("owner: O", "owner: M\u00fcller").encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_config(p)
    msg = str(info.value)
    assert msg == f"{p}:2: (encoding): the config is not UTF-8 text (byte 0xfc at offset 17); save the file as UTF-8"
    assert "\n" not in msg and info.value.__cause__ is None


@pytest.mark.parametrize(
    "partition, key, phrase",
    [
        (
            "{method: ctree, max_depth: 3}",
            "max_depth",
            "'max_depth' is a CART parameter, not one of method ctree's "
            r"\(minbucket, minsplit, alpha, maxdepth, testtype, "
            r"mincriterion\); use maxdepth with method: ctree",
        ),
        (
            "{method: cart, maxdepth: 3}",
            "maxdepth",
            "'maxdepth' is a CTree parameter, .*use max_depth with method: cart",
        ),
        ("{method: cart, alpha: 0.1}", "alpha", "'alpha' is a CTree parameter, .*set method: ctree or remove it"),
        ("{maxdpeth: 3}", "maxdpeth", "unknown key 'maxdpeth'; allowed keys here: alpha, ccp_alpha, features"),
    ],
)
def test_partition_parameter_names_per_method(tmp_path, partition, key, phrase):
    p = _write(tmp_path, GOOD + f"    partition: {partition}\n")
    with pytest.raises(ConfigError, match=rf"^{p}:11: effects\[0\]\.partition\.{key}: {phrase}"):
        load_config(p)


def test_cart_parameters_accepted(tmp_path):
    cfg = load_config(_write(tmp_path, GOOD + "    partition: {method: cart, max_depth: 3, min_samples_leaf: 20}\n"))
    assert cfg.effects[0].partition == {"method": "cart", "max_depth": 3, "min_samples_leaf": 20, "max_leaves": 8}


def test_unknown_detector_names_valid_ones(tmp_path):
    p = _write(tmp_path, GOOD + "    extrapolation: hul\n")
    with pytest.raises(
        ConfigError,
        match=rf"^{p}:11: effects\[0\]\.extrapolation: 'hul' is not one of "
        r"\['envelope', 'hull', 'mcec', 'cert', 'isolation_forest', 'lof', 'none'\]",
    ):
        load_config(p)
    assert load_config(_write(tmp_path, GOOD + "    extrapolation: hull\n")).effects[0].extrapolation == {
        "method": "hull"
    }


def test_detector_names_match_the_library():
    from fme.extrapolation import DETECTORS
    from fme.report.inputs.config import DETECTOR_NAMES

    assert sorted(DETECTOR_NAMES) == sorted(DETECTORS)


# ------------------------------------------------------------------ the config object
def test_config_is_a_frozen_typed_object(tmp_path):
    """The stages receive a frozen dataclass: what the modules read by private keys is a typed attribute."""
    import dataclasses

    from fme.report.inputs.config import EffectConfig, ReportConfig

    p = _write(tmp_path, GOOD + "    inference: sample\n  - steps: {chas: all}\n    extrapolation: none\n")
    cfg = load_config(p)
    assert isinstance(cfg, ReportConfig) and all(isinstance(e, EffectConfig) for e in cfg.effects)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.effects[0].id = "x"
    assert (cfg.path, cfg.directory, cfg.name) == (p.resolve(), p.resolve().parent, "c")
    assert cfg.lines["effects[0].steps"] == 10 and cfg.lines["effects[1].steps"] == 12 and cfg.lines["target"] == 8
    assert cfg.given == {"title", "owner", "intended_use", "model", "data", "target", "effects"}
    first, second = cfg.effects
    assert (first.index, second.index) == (0, 1)
    assert first.given == {"steps", "inference"} and second.given == {"steps", "extrapolation"}
    assert (first.inference, second.extrapolation) == ({"method": "sample"}, {"method": "none"})
    assert cfg.reference_data is None and cfg.engine == "pandas" and cfg.sample_size is None
    assert cfg.resolve_path("d.csv") == p.resolve().parent / "d.csv" and cfg.resolve_path("/a/b") == Path("/a/b")
    level = second.variant("chas", 1)
    assert (level.steps, level.level, second.level, level.index) == ({"chas": 1}, 1, None, 1)


def test_resolved_config_round_trips_and_has_no_private_keys(tmp_path):
    """to_dict() is the resolved config results.json records (defaults and given keys, nothing else); fme render
    reads it back into the same object (config_from_dict)."""
    from fme.report.inputs.config import config_from_dict

    cfg = load_config(REPO / "reports" / "boston-svm.yaml")
    resolved = cfg.to_dict()
    assert not [k for k in resolved if k.startswith("_")]
    assert "engine" not in resolved and "reference_data" not in resolved  # neither given nor defaulted
    assert resolved["effects"][0]["stability"] == {"subsamples": 20, "fraction": 0.5}
    assert (
        "title" in resolved["effects"][0] and "title" not in load_config(_write(tmp_path, GOOD)).to_dict()["effects"][0]
    )
    back = config_from_dict(resolved, cfg.name)
    assert back.to_dict() == resolved and back.name == "boston-svm" and back.lines == {}
    assert [e.id for e in back.effects] == [e.id for e in cfg.effects]
    resolved["effects"][0]["steps"]["rm"] = 99  # the dict is a copy: the config object is unchanged
    assert cfg.effects[0].steps == {"rm": 1}


def test_config_errors_name_the_file_line_and_key_through_the_object(tmp_path):
    from fme.report.inputs.config import config_error

    cfg = load_config(_write(tmp_path, GOOD))
    err = config_error(cfg, ("effects", 0, "steps", "crim"), "bad")
    assert str(err) == f"{(tmp_path / 'c.yaml').resolve()}:10: effects[0].steps.crim: bad"
    assert str(config_error(cfg, ("figures", "width"), "x")).startswith(f"{(tmp_path / 'c.yaml').resolve()}:1: ")


def test_an_unknown_interaction_feature_is_found_before_the_notebook(tmp_path):
    """interactions: a pair naming a column the data lacks fails at its key and line at once (it used to fail
    in the notebook after half a minute, at 'line 1 (top level)')."""
    import textwrap
    import time

    import joblib
    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LinearRegression

    from fme.report.build import build_report
    from fme.report.inputs.config import ConfigError

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"x": rng.normal(size=50), "w": rng.normal(size=50)})
    joblib.dump(LinearRegression().fit(d, d.x), tmp_path / "model.joblib")
    d.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""\
        title: T
        owner: O
        intended_use: U
        model: {joblib: model.joblib}
        data: {path: data.csv}
        target: y
        effects:
          - id: x
            steps: {x: 1}
        interactions:
          - a: {x: 1}
            b: {nope: 1}
        """),
        encoding="utf-8",
    )
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"c\.yaml:1[23]: interactions\[0\]\.b.*unknown feature 'nope': not a column"):
        build_report(tmp_path / "c.yaml", tmp_path / "out")
    assert time.perf_counter() - start < 20
