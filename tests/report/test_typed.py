"""A classifier report read back through its typed core: one unit per table (percentage points, named in the
header), row counts in the number they take, tables numbered in reading order, the with/without-extrapolation
caption naming each row's interval, and a results.json whose numbers are typed quantities with labelled
intervals and whose claims are listed (validated against fme/report/schemas/results.schema.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("papermill")
from fme._utils.numfmt import fmt_est  # noqa: E402
from fme.report.build import build_report  # noqa: E402

pytestmark = pytest.mark.slow
SCHEMA = Path(__file__).resolve().parents[2] / "fme" / "report" / "schemas" / "results.schema.json"


#: The folder of the module's build (the fixture below returns its results and qmd).
BUILT: dict[str, Path] = {}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import joblib
    from sklearn.linear_model import LogisticRegression

    tmp = tmp_path_factory.mktemp("typed")
    rng = np.random.default_rng(3)
    n = 300
    X = pd.DataFrame({"x1": rng.uniform(0, 10, n), "x2": rng.normal(size=n), "x3": rng.uniform(-1, 1, n)})
    lin = 0.4 * (X["x1"] - 5) - 0.8 * X["x2"] + 0.5 * X["x1"] * X["x3"]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-lin))).astype(int)
    champion = LogisticRegression().fit(X.assign(x13=X["x1"] * X["x3"])[["x1", "x2", "x3"]], y)
    challenger = LogisticRegression(C=0.01).fit(X, y)
    joblib.dump(champion, tmp / "model.joblib")
    joblib.dump(challenger, tmp / "challenger.joblib")
    X.assign(y=y).to_csv(tmp / "data.csv", index=False)
    cfg = {
        "title": "typed",
        "owner": "tests",
        "intended_use": "typed core",
        "pdf": False,
        "model": {"joblib": "model.joblib", "prediction_scale": "predicted P(default)"},
        "challenger": {"joblib": "challenger.joblib"},
        "data": {"path": "data.csv"},
        "target": "y",
        "inference": "sample",
        "interactions": [{"a": {"x1": 1}, "b": {"x2": 1}}],
        "effects": [
            {
                "id": "e1",
                "steps": {"x1": 1},
                "extrapolation": "envelope",
                "partition": {"method": "ctree", "minbucket": 40},
                "stability": {"subsamples": 3, "fraction": 0.5},
                "expect": {"at_least": -100},
            }
        ],
    }
    (tmp / "typed.yaml").write_text(json.dumps(cfg), encoding="utf-8")
    res = build_report(tmp / "typed.yaml", tmp / "out", force=True, log=lambda s: None)
    out = Path(res["out_dir"])
    BUILT["out"] = out
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    # the qmd escapes markdown punctuation ('0\\.56'); the tests read its text
    return results, re.sub(r"\\([^\w\s])", r"\1", (out / "report.qmd").read_text(encoding="utf-8"))


def _table(qmd: str, caption_start: str) -> list[list[str]]:
    """The body rows of the pipe table whose caption starts with ``caption_start`` (after 'Table N: ')."""
    lines = qmd.splitlines()
    i = next(k for k, line in enumerate(lines) if re.match(rf": Table \d+: {re.escape(caption_start)}", line))
    body = []
    k = i - 2
    while k >= 0 and lines[k].startswith("|"):
        body.append([c.strip() for c in lines[k].strip("|").split("|")])
        k -= 1
    return list(reversed(body))[2:]  # header and rule dropped


def test_results_json_carries_typed_quantities_labelled_intervals_and_claims(built):
    jsonschema = pytest.importorskip("jsonschema")
    results, _ = built
    jsonschema.validate(results, json.loads(SCHEMA.read_text(encoding="utf-8")))
    v = results["effects"][0]["variants"][0]
    assert "ci_low" not in v and "ci_high" not in v
    assert v["fixed_interval"]["kind"] == "fixed model" and v["fixed_interval"]["level"] == 0.95
    q = v["quantities"]["ame"]
    assert q["unit"]["name"] == "percentage points" and q["unit"]["scale"] == 100.0
    assert q["rows"]["n"] == v["n"] and q["rows"]["of"]["n"] == v["n_total"]
    # every number the comparison tables show is a quantity in the one unit, with the rows it is over
    assert {"ame_with_eps", "challenger_difference", "ame_step_x0.5", "ame_step_x2"} <= set(v["quantities"])
    assert {"stability_ame_min", "stability_ame_max", "stability_ame_sd"} <= set(v["quantities"])
    assert v["quantities"]["stability_ame_min"]["value"] == v["stability"]["ame_min"]
    leaves = [k for k in v["quantities"] if k.startswith("came_leaf_")]
    assert len(leaves) == len(v["partition"]["leaves"])
    # effect-scale numbers in the one unit; the diagnostics (NLMs, shares, ARI, p-values, statistics) are
    # scale-free or percentages of rows, each written in its own form
    scale_free = {k for k, q in v["quantities"].items() if q["unit"]["name"] != "percentage points"}
    assert {v["quantities"][k]["unit"]["name"] for k in scale_free} == {"", "percent"}
    diagnostic = (
        "anlm",
        "median_nlm",
        "share_",
        "ep_",
        "ari_",
        "global_test_",
        "alpha_",
        "canlm_",
        "cov_",
        "contract_",
        "leaf_difference_p_value",
        "eval_range_",
        "stability_ari_",
        "stability_leaves_",
        "stability_share_",
    )
    assert {k for k in scale_free if not k.startswith(diagnostic)} == set()
    diffs = [q for k, q in v["quantities"].items() if k.startswith("leaf_difference_")]
    assert all(q["rows"]["n"] > 0 for q in diffs)
    (inter,) = results["interactions"]["rows"]
    assert inter["quantity"]["rows"]["n"] == inter["n"] and inter["quantity"]["unit"]["scale"] == 100.0
    kinds = {c["kind"] for c in results["claims"]}
    assert "direction" in kinds and "contract_verdict" in kinds
    assert kinds & {"test_result", "test_not_valid"}
    assert all(c["cites"] for c in results["claims"])
    assert all(c["holds"] for c in results["claims"])  # a claim that fails its verifier fails the suite


def test_tables_are_numbered_in_reading_order_and_every_table_has_a_number(built):
    _, qmd = built
    numbers = [int(m) for m in re.findall(r"^: Table (\d+):", qmd, flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1))
    # every pipe table is followed by a numbered caption
    blocks = re.findall(r"(?:^\|.*\n)+\n(^: .*)$", qmd, flags=re.M)
    assert blocks and all(b.startswith(": Table ") for b in blocks), [
        b[:60] for b in blocks if not b.startswith(": Table ")
    ]


def test_comparison_tables_are_in_percentage_points_like_the_effects(built):
    results, qmd = built
    v = results["effects"][0]["variants"][0]
    c = v["challenger"]
    row = _table(qmd, "Champion and challenger")[0]
    d, lo, hi = fmt_est(100 * c["difference"], 100 * c["difference_low"], 100 * c["difference_high"])
    assert row[3] == f"{d} [{lo}, {hi}]"
    assert "| Champion AME (pp) | Challenger AME (pp) | Difference (pp) |" in qmd
    tests = v["partition"]["tests"]["rows"]
    if tests:
        first = _table(qmd, "Differences between the leaf cAMEs")
        by_hyp = {r["hypothesis"]: r for r in tests}
        r = by_hyp[first[0][0]]
        assert first[0][1] == fmt_est(100 * r["estimate"], 100 * r["conf_low"], 100 * r["conf_high"])[0]
    (inter,) = _table(qmd, "Interactions of two steps")
    r = results["interactions"]["rows"][0]
    assert inter[2] == f"{r['n']:,}" and inter[3] == f"{r['n_outside']:,} of {r['n']:,}"
    assert inter[4] == fmt_est(100 * r["estimate"], 100 * r["conf_low"], 100 * r["conf_high"])[0]
    assert "Average interaction (pp)" in qmd and r["n_outside"] > 0


def test_the_extrapolation_caption_names_each_rows_interval(built):
    _, qmd = built
    rows = _table(qmd, "AME of x1 without and with the extrapolation points")
    assert rows[1][-1] == "fixed model (rows)"
    assert "the column Interval names each row's interval" in qmd and "CIs: fixed model (rows)." not in qmd


def test_counts_take_the_number_of_their_noun_and_the_class_is_named_as_configured(built):
    _, qmd = built
    # (a step "x1 + 1 leaves the data" is a verb, not a count)
    plural = r"(extrapolation points|rows|observations|refits|subsamples|leaves)"
    assert not re.search(r"(?<![\d.,])(?<!\+ )1 " + plural + r"\b", qmd)
    assert "the model's predicted P(default)" in qmd and "probability of 1" not in qmd
    assert re.search(r"[\d,]+ of the [\d,]+ observations left out as extrapolation points", qmd)


#: Floats the template context may carry that are no number of the analysis (context path pattern -> why).
NOT_ANALYSIS_NUMBERS = {
    r"thresholds\.\w+": "the config's flag thresholds: settings of the flag rules, printed as the config gave them",
    r"effects\[\d+\]\.variants\[\d+\]\.figures\[\d+\]\.pdf_width": "page layout: a figure's width in inches",
}


def _floats(value, path: str = "") -> list[str]:
    """Every bare float in a template context, by its path (a Quantity is no bare float)."""
    from fme.report.inputs.quantities import Quantity

    if isinstance(value, bool) or isinstance(value, Quantity):
        return []
    if isinstance(value, float):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _floats(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in _floats(v, f"{path}[{i}]")]
    return []


def test_no_bare_float_of_the_analysis_reaches_the_template(built):
    """The context passed to jinja, rebuilt from the report's results.json and build.json as `fme render` does:
    every number of the analysis reaches the template formatted from its quantity, none as a bare float."""
    from fme.report.inputs.config import config_from_dict
    from fme.report.present.context import build_context

    results, _ = built
    build_info = json.loads((BUILT["out"] / "build.json").read_text(encoding="utf-8"))
    cfg = config_from_dict(results["config"], results["config_name"])
    ctx = build_context(results, cfg, build_info["config_text"], build_info)
    found = _floats(ctx)
    assert found, "the walk finds the whitelisted floats (not vacuous)"
    bare = [p for p in found if not any(re.fullmatch(w, p) for w in NOT_ANALYSIS_NUMBERS)]
    assert bare == []
    # the walk sees a float where one is planted
    assert _floats({"effects": [{"cells": {"ame": 2.4}}]}) == ["effects[0].cells.ame"]


def _html_text(out: Path) -> str:
    import html as htmllib

    raw = (out / "report.html").read_text(encoding="utf-8")
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def test_each_count_range_and_enters_predictions_sentence_has_its_claim_in_results_json(built):
    """Every count sentence ('k of the n observations left out as extrapolation points'), range ('x1 from a to b
    over the ...') and second-path verdict in the HTML is the text of a claim results.json lists, with its kind,
    the quantities it cites and the verifier's outcome."""
    results, _ = built
    text = _html_text(BUILT["out"])
    by_kind: dict[str, set[str]] = {}
    for c in results["claims"]:
        by_kind.setdefault(c["kind"], set()).add(c["text"])
        assert c["cites"] and isinstance(c["holds"], bool) and c["outcome"]
    counts = re.findall(
        r"[\d,]+ of the [\d,]+ observations (?:left out|kept in the average) as (?:an )?extrapolation points?", text
    )
    assert counts and all(m in by_kind["count"] for m in counts), counts
    ranges = re.findall(r"x\d from [-\d.e]+ to [-\d.e]+ over the [\d,]+ extrapolation points? [a-z ]+ in x\d", text)
    assert ranges and all(m in by_kind["range"] for m in ranges), ranges
    outside = re.findall(
        r"[\d,]+ of the [\d,]+ observations takes? the combined step outside the range of the data", text
    )
    assert outside and all(m in by_kind["count"] for m in outside), outside
    assert text.count("second path agrees to 1e-10") == len(results["effects"][0]["variants"])
    # every listed count and range claim is printed somewhere in the report
    assert all(t in text for t in by_kind["count"] | by_kind["range"])
