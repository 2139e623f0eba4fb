"""fme report --model-card: model_card.json validates against the Model Card Toolkit schema
(shipped with fme) and carries the effects, contracts, limitations and audit hashes of the report."""

from __future__ import annotations

import json

import pytest

jsonschema = pytest.importorskip("jsonschema")


def test_model_card_validates_and_carries_the_report(tmp_path):
    from fme.__main__ import main
    from fme.report.render.model_card import SCHEMA
    from tests.report.test_contracts import _ols_case

    m, _ = _ols_case(tmp_path, "{sign: '+', at_most: 0.7}")
    assert (
        main(
            [
                "report",
                str(tmp_path / "c.yaml"),
                "--out",
                str(tmp_path / "r"),
                "--no-pdf",
                "--model-card",
                "--no-progress",
            ]
        )
        == 0
    )
    card = json.loads((tmp_path / "r" / "model_card.json").read_text(encoding="utf-8"))
    jsonschema.validate(card, json.loads(SCHEMA.read_text(encoding="utf-8")))
    results = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    build = json.loads((tmp_path / "r" / "build.json").read_text(encoding="utf-8"))
    v = results["effects"][0]["variants"][0]
    iv = v["intervals"][0]
    ame = next(x for x in card["quantitative_analysis"]["performance_metrics"] if x["type"].startswith("AME of"))
    assert float(ame["value"]) == pytest.approx(iv["estimate"], rel=1e-5) and iv["inference"] in ame["type"]
    assert float(ame["confidence_interval"]["lower_bound"]) == pytest.approx(iv["conf_low"], rel=1e-5)
    verdicts = sorted(
        x["type"] for x in card["quantitative_analysis"]["performance_metrics"] if x["type"].startswith("contract")
    )
    assert verdicts == ["contract AME <= 0.7: not met", "contract AME > 0: met"]
    assert build["inputs_sha256"] in card["model_details"]["version"]["name"]
    for k, h in build["hashes"].items():
        if isinstance(h, str):
            assert h in card["model_details"]["version"]["diff"]
    assert card["model_details"]["name"] == "T" and card["considerations"]["limitations"]
    # a card that breaks the schema is caught by the validation above
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**card, "model_details": {"owners": "nobody"}}, json.loads(SCHEMA.read_text()))


def test_model_card_carries_the_sha256_of_every_input():
    """build.json records each input as {"sha256", "of"}: the card's version names every one of them."""
    from fme.report.render.model_card import model_card

    results = {"config": {"title": "T", "owner": "O", "intended_use": "U"}, "effects": []}
    hashes = {
        "model": {"sha256": "a" * 64, "of": "model.joblib"},
        "data": {"sha256": "b" * 64, "of": "data.csv"},
        "config": {"sha256": "c" * 64, "of": "c.yaml"},
    }
    card = model_card(results, {"inputs_sha256": "d" * 64, "hashes": hashes})
    version = card["model_details"]["version"]
    assert version["name"] == "build inputs " + "d" * 64
    for label, h in hashes.items():
        assert f"{label} sha256 {h['sha256']}" in version["diff"]
