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
