"""A key that takes ``false`` or a mapping of its settings (``overview``, an effect's ``partition`` and
``stability``), given anything else, gets a message that says what it takes and the fix in config words, not
jsonschema's "False was expected"."""

from __future__ import annotations

import pytest

from fme.report.inputs.config import ConfigError, load_config

from .configs import MINIMAL_YAML

HEAD = MINIMAL_YAML


def _error(tmp_path, extra: str) -> str:
    p = tmp_path / "c.yaml"
    p.write_text(HEAD + extra, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(p)
    return str(info.value)


@pytest.mark.parametrize(("value", "given"), [("true", "true"), ("yes", "true"), ("sd", "'sd'"), ("1", "1")])
def test_overview_given_neither_false_nor_settings_says_what_it_takes(tmp_path, value, given):
    assert _error(tmp_path, f"overview: {value}\n") == (
        f"{tmp_path / 'c.yaml'}:9: overview: {given} is not allowed: overview takes a mapping of its settings "
        "(keys: extrapolation, step ('unit' or 'sd')) or false to leave it out; write, e.g., "
        "overview: {step: sd, extrapolation: envelope} (its default settings)"
    )


def test_an_effects_partition_and_stability_say_the_same_with_their_own_defaults(tmp_path):
    msg = _error(tmp_path, "    partition: true\n")
    assert msg.startswith(f"{tmp_path / 'c.yaml'}:9: effects[0].partition: true is not allowed: partition takes")
    assert "(keys: alpha, ccp_alpha, features, honest, honest_fraction, max_depth and 13 more)" in msg
    assert msg.endswith("write, e.g., partition: {method: ctree, max_leaves: 8} (its default settings)")
    assert _error(tmp_path, "    stability: true\n").endswith(
        "effects[0].stability: true is not allowed: stability takes a mapping of its settings (keys: fraction, "
        "subsamples) or false to leave it out; write, e.g., stability: {subsamples: 20, fraction: 0.5} (its "
        "default settings)"
    )


def test_a_bad_setting_inside_the_mapping_keeps_its_own_message(tmp_path):
    assert _error(tmp_path, "overview: {step: half}\n").endswith(
        ":9: overview.step: 'half' is not one of ['unit', 'sd']"
    )
    assert _error(tmp_path, "overview: {stepp: sd}\n").endswith(
        ":9: overview.stepp: unknown key 'stepp'; allowed keys here: extrapolation, step"
    )
