"""The report's joint-regions section: its config key checked up front, the tree grown on the configured effects'
fMEs equal to a direct ``fme.came([...])``, the heterogeneity table equal to ``part.heterogeneity()``, typed
quantities and verified claims in results.json, and ``fme render`` rendering it again."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fme.report.analysis.joint_typed import NOT_HONEST, share_unit, type_joint_regions
from fme.report.inputs.claims import TestRecord, explained_share
from fme.report.inputs.config import ConfigError, load_config
from fme.report.inputs.quantities import Interval, Quantity, RowSet, model_units
from fme.report.present.joint_regions import joint_context

SCHEMA = Path(__file__).resolve().parents[2] / "fme" / "report" / "schemas" / "results.schema.json"

HEAD = """\
title: T
owner: O
intended_use: U
model: {joblib: m.joblib}
data: {path: data.csv}
target: y
effects:
  - id: a
    steps: {x1: 1}
  - id: b
    steps: {x2: 1}
  - id: lev
    steps: {g: all}
"""


def _load(tmp_path, extra: str):
    p = tmp_path / "c.yaml"
    p.write_text(HEAD + textwrap.dedent(extra), encoding="utf-8")
    return load_config(p)


# ------------------------------------------------------------------ config
def test_joint_regions_defaults_are_filled_in_and_recorded(tmp_path):
    cfg = _load(tmp_path, "joint_regions:\n  effects: [a, b]\n  minbucket: 20\n")
    assert cfg.joint_regions == {"method": "ctree", "max_leaves": 8, "effects": ["a", "b"], "minbucket": 20}
    assert cfg.to_dict()["joint_regions"] == cfg.joint_regions
    assert "joint_regions" not in load_config(_write_plain(tmp_path)).to_dict()


def _write_plain(tmp_path):
    p = tmp_path / "plain.yaml"
    p.write_text(HEAD, encoding="utf-8")
    return p


J = "joint_regions:\n  effects: "
ERRORS = [
    (J + "[a, zz]\n", ":15: joint_regions.effects[1]: 'zz' is not the id of an effect", "ids of effects (a, b, lev)"),
    (J + "[a]\n", ":15: joint_regions.effects: 1 effect given", "list at least two"),
    (J + "[a, a]\n", ":15: joint_regions.effects[1]: 'a' is listed twice", "list each effect once"),
    (J + "[a, lev]\n", ":15: joint_regions.effects[1]: effect 'lev' is one effect per level", "a single level"),
    (J + "[a, b]\n  max_depth: 3\n", ":16: joint_regions.max_depth: 'max_depth' is a CART", "use maxdepth with"),
    (J + "[a, b]\n  n_partitions: 3\n  max_leaves: 4\n", ":17: joint_regions.max_leaves: give either", "not both"),
    (J + "[a, b]\n  n_splits: 3\n", ":16: joint_regions.n_splits: unknown key 'n_splits'", "allowed keys here: alpha,"),
    (J + "[a, b]\n  alpha: 2\n", ":16: joint_regions.alpha: 2 is greater than the maximum", "allowed: a number"),
]


@pytest.mark.parametrize("extra, where, words", ERRORS)
def test_joint_regions_errors_name_the_key_its_line_what_is_allowed_and_the_fix(tmp_path, extra, where, words):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, extra)
    msg = str(info.value)
    assert msg.startswith(str(tmp_path / "c.yaml") + where), msg
    assert words in msg, msg


# ------------------------------------------------------------------ claims and the present stage
def _share(value, low, high):
    return Quantity(
        "joint/a/share_explained",
        "share",
        value,
        share_unit(),
        RowSet("estimation rows", 150),
        Interval(low, high, 0.95, "noncentral F"),
    )


def test_an_explained_share_is_stated_only_with_its_interval_and_a_valid_f_test():
    good = TestRecord("joint/a/f_test", 12.5, 1e-6, 3, n_per_group=(40, 40, 40, 30))
    c = explained_share(_share(0.4, 0.3, 0.5), good, 146, 0.05, "x1 + 1")
    assert c.kind == "explained_share" and c.holds and c.outcome == "explains"
    assert "explain 40.0 % of the heterogeneity of the fMEs of x1 + 1 (95% CI 30.0 % to 50.0 %" in c.text
    assert "with 3 and 146 df" in c.text and c.text.endswith("they explain some of it at the 5% level")
    assert "50.0 %; noncentral F interval) over the" in c.text
    weak = TestRecord("joint/a/f_test", 0.5, 0.7, 3, n_per_group=(40, 40, 40, 30))
    assert explained_share(_share(0.01, 0.0, 0.03), weak, 146, 0.05, "x").outcome == "not shown"
    for record, share, reason in [
        (TestRecord("t", 12.5, 1e-6, 3, note=NOT_HONEST), _share(0.4, 0.3, 0.5), "honest: false"),
        (TestRecord("t", 12.5, 1e-6, 3, n_per_group=(1, 40)), _share(0.4, 0.3, 0.5), "fewer than 2 rows"),
        (TestRecord("t", None, None, 3), _share(0.4, None, None), "undefined"),
        (good, _share(0.4, None, None), "interval is undefined"),
    ]:
        c = explained_share(share, record, 146, 0.05, "x")
        assert c.kind == "test_not_valid" and reason in c.text and "explain 40" not in c.text


def _section(honest: bool = True) -> dict:
    leaves = [
        {
            "node": node,
            "effect": e,
            "label": f"{e} + 1",
            "n": n,
            "came": came,
            "came_ci_low": came - 0.1,
            "came_ci_high": came + 0.1,
            "conf_low": None,
            "conf_high": None,
            "rule": f"x <= {node}",
        }
        for node, n in ((2, 60), (3, 90))
        for e, came in (("a", 0.5 * node), ("b", -0.1))
    ]
    het = [
        {
            "effect": e,
            "label": f"{e} + 1",
            "n": 150,
            "n_leaves": 2,
            "variance": v,
            "within_variance": w,
            "between_variance": v - w,
            "share_explained": 1 - w / v,
            "share_ci_low": lo,
            "share_ci_high": hi,
            "statistic": f,
            "df1": 1.0,
            "df2": 148.0,
            "p_value": p,
        }
        for e, v, w, lo, hi, f, p in (
            ("a", 0.08, 0.02, 0.6, 0.8, 444.0, 1e-40),
            ("b", 0.01, 0.0099, 0.0, 0.04, 1.5, 0.22),
        )
    ]
    rows = {"n": 300, "by_effect": {"a": 300, "b": 300}, "recomputed": False}
    return dict(
        effects=["a", "b"],
        labels={"a": "a + 1", "b": "b + 1"},
        method="ctree",
        params={},
        rows=rows,
        conf_level=0.95,
        not_computed=None,
        leaves=leaves,
        heterogeneity=het,
        honest=honest,
        honesty="honest",
        n_grown=150,
        n_estimated=150,
        n_leaves=2,
        notes=[],
        features=["x"],
        figure=None,
    )


@pytest.mark.parametrize("honest", [True, False])
def test_the_heterogeneity_table_shows_a_test_only_when_its_claim_found_it_valid(honest):
    section = _section(honest)
    claims = type_joint_regions(section, model_units("points"))
    assert {q["id"] for q in section["quantities"].values()} >= {"joint/a/came_leaf_2", "joint/b/share_explained"}
    assert section["quantities"]["a/variance"]["unit"] == {
        "name": "squared points",
        "short": "points²",
        "scale": 1.0,
        "of": "",
    }
    tables = iter(range(5, 10))
    ctx = joint_context({"joint_regions": section, "claims": claims}, lambda: next(tables), [0])
    assert (ctx["table_leaves"], ctx["table_heterogeneity"]) == (5, 6)
    a, b = ctx["het_rows"]
    assert a["variance"] == "0.0800" and a["within"] == "0.0200"
    assert a["share"] == ("75" if honest else "-")
    if honest:
        assert [c["kind"] for c in claims] == ["explained_share", "explained_share"]
        assert (a["ci"], a["statistic"], a["p"]) == ("[60, 80]", "444.00", "< 0.001")
        assert b["p"] == "0.220"
    else:
        assert [c["kind"] for c in claims] == ["test_not_valid", "test_not_valid"]
        assert a["ci"] == "-" and a["p"] == "-" and a["statistic"].startswith("not valid: the regions were chosen")
        assert all("cannot be stated here" in t for t in ctx["claims"])
    rows = ctx["leaf_rows"]
    assert [r["node"] for r in rows] == ["2", "", "3", ""] and rows[1]["effect"] == "b (b + 1)"
    assert rows[0]["came"] == "1.00" and rows[0]["ci"] == "[0.90, 1.10]" and rows[0]["kind"] == "fixed model"


def test_a_section_that_could_not_be_computed_says_why():
    section = {"effects": ["a", "b"], "labels": {}, "method": "ctree", "rows": {"n": 0}, "not_computed": "too few"}
    claims = type_joint_regions(section, model_units(""))
    assert claims[0]["kind"] == "not_computed" and claims[0]["cites"] == ["joint_regions"]
    ctx = joint_context({"joint_regions": section, "claims": claims}, lambda: 1, [0])
    assert ctx["not_computed"] == "Joint regions of a (a) and b (b): not computed: too few"
    assert joint_context({}, lambda: 1, [0]) is None


# ------------------------------------------------------------------ a build
def _data():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(1)
    n = 300
    X = pd.DataFrame({"x1": rng.uniform(0, 10, n), "x2": rng.normal(size=n), "x3": rng.uniform(-1, 1, n)})
    y = 1 + 0.3 * X["x1"] * X["x3"] + 0.3 * X["x2"] * X["x3"] + rng.normal(scale=0.5, size=n)
    return X, y, smf.ols("y ~ x1*x3 + x2*x3", data=X.assign(y=y)).fit()


JOINT = {"effects": ["a", "b", "c"], "max_leaves": None, "minbucket": 25, "alpha": 0.05}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("papermill")
    import joblib

    from fme.report.build import build_report

    tmp = tmp_path_factory.mktemp("joint")
    X, y, model = _data()
    joblib.dump(model, tmp / "model.joblib")
    X.assign(y=y).to_csv(tmp / "data.csv", index=False)
    off = {"partition": False, "stability": False}
    cfg = {
        "title": "joint regions",
        "owner": "tests",
        "intended_use": "tests",
        "pdf": False,
        "overview": False,
        "model": {"joblib": "model.joblib"},
        "data": {"path": "data.csv"},
        "target": "y",
        "target_unit": "points",
        "effects": [
            {"id": "a", "steps": {"x1": 1}, "extrapolation": "none", **off},
            {"id": "b", "steps": {"x2": 1}, "extrapolation": "none", **off},
            {"id": "c", "steps": {"x3": 0.5}, **off},  # the envelope leaves rows out: recomputed on the common rows
        ],
        "joint_regions": JOINT,
    }
    (tmp / "joint.yaml").write_text(json.dumps(cfg), encoding="utf-8")
    res = build_report(tmp / "joint.yaml", tmp / "out", force=True, log=lambda s: None)
    return res, X, model


def _direct(X, model):
    import fme

    c = fme.fme(model, X, {"x3": 0.5}, extrapolation="envelope")
    rows = X.loc[c.results.index]  # the rows every effect evaluated: those c kept
    effects = [fme.fme(model, rows, {f: h}) for f, h in (("x1", 1), ("x2", 1), ("x3", 0.5))]
    return fme.came(effects, method="ctree", conf_level=0.95, random_state=0, minbucket=25, alpha=0.05), len(rows)


def _qmd(res) -> str:
    return re.sub(r"\\([^\w\s])", r"\1", (Path(res["out_dir"]) / "report.qmd").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_built_section_equals_a_direct_joint_came(built):
    from fme._utils.numfmt import fmt_est

    res, X, model = built
    part, n_common = _direct(X, model)
    out = Path(res["out_dir"])
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    section = results["joint_regions"]
    assert section["not_computed"] is None and section["rows"]["recomputed"] and section["rows"]["n"] == n_common
    want = pd.DataFrame(part.leaves)
    assert len(section["leaves"]) == len(want) == 3 * len(part.leaf_ids) and len(part.leaf_ids) >= 2
    for got, (_, w) in zip(section["leaves"], want.iterrows()):
        assert got["node"] == w["node"] and got["label"] == w["effect"] and got["n"] == w["n"]
        for k in ("came", "conf_low", "conf_high", "came_ci_low", "came_ci_high"):
            assert got[k] == pytest.approx(float(w[k]), rel=1e-12, abs=1e-14), k
    het = part.heterogeneity()
    for got, (_, w) in zip(section["heterogeneity"], het.iterrows()):
        for k in ("variance", "within_variance", "share_explained", "share_ci_low", "share_ci_high", "p_value"):
            assert got[k] == pytest.approx(float(w[k]), rel=1e-10, abs=1e-14), k
    # the section in the rendered report: the leaf table's cells are the direct partition's numbers
    qmd = _qmd(res)
    assert "# Joint regions {#sec-joint-regions}" in qmd and "![Figure" in qmd
    table = qmd[qmd.index("| Region | Rule |") : qmd.index(": Table", qmd.index("| Region | Rule |"))]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:] if line]
    assert [r[4] for r in cells] == [fmt_est(w["came"], w["conf_low"], w["conf_high"])[0] for _, w in want.iterrows()]
    assert [r[5] for r in cells] == [
        "[{1}, {2}]".format(*fmt_est(w["came"], w["conf_low"], w["conf_high"])) for _, w in want.iterrows()
    ]
    assert "cAME (points)" in table and "Variance (points²)" in qmd
    shares = [
        fmt_est(100 * r["share_explained"], 100 * r["share_ci_low"], 100 * r["share_ci_high"])[0]
        for _, r in het.iterrows()
    ]
    for s in shares:
        assert f"| {s} |" in qmd
    # the share's interval is named by its kind: the unified (Feldman-Cousins) one
    assert [got["interval"] for got in section["heterogeneity"]] == ["unified (Feldman-Cousins)"] * len(het)
    assert "unified (Feldman-Cousins) interval" in qmd
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="sec-joint-regions"' in html and "joint-regions-tree" not in html.split("<body")[0]


@pytest.mark.slow
def test_results_json_types_the_section_and_lists_its_claims(built):
    jsonschema = pytest.importorskip("jsonschema")
    res, _, _ = built
    results = json.loads((Path(res["out_dir"]) / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, json.loads(SCHEMA.read_text(encoding="utf-8")))
    section = results["joint_regions"]
    ids = {q["id"] for q in section["quantities"].values()}
    assert {"joint/a/share_explained", "joint/c/within_variance"} <= ids
    joint = [c for c in results["claims"] if any(x.startswith("joint/") for x in c["cites"])]
    assert len(joint) == 3 and all(c["holds"] for c in joint)
    assert {c["kind"] for c in joint} <= {"explained_share", "test_not_valid"}
    for c in joint:
        assert set(c["cites"]) <= ids | {c["cites"][0].replace("share_explained", "f_test")}
        if c["kind"] == "explained_share":
            assert "% CI " in c["text"] and "F test" in c["text"]


@pytest.mark.slow
def test_fme_render_renders_the_section_from_results_json(built, tmp_path):
    from fme.__main__ import main

    res, _, _ = built
    folder = tmp_path / "copy"
    shutil.copytree(res["out_dir"], folder)
    (folder / "report.html").unlink()
    (folder / "report.qmd").unlink()
    assert main(["render", str(folder)]) == 0
    assert (folder / "report.qmd").read_bytes() == (Path(res["out_dir"]) / "report.qmd").read_bytes()
    assert 'id="sec-joint-regions"' in (folder / "report.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_dask_build_grows_the_same_joint_regions_as_pandas_and_says_why_when_it_cannot(tmp_path):
    """The analysis stage on Dask data: the same regions and figures as in memory (to 1e-10); effects that left
    out different rows give the section's reason instead of a tree."""
    dd = pytest.importorskip("dask.dataframe")
    from fme.report.analysis import run_effects, run_joint_regions

    X, _, model = _data()
    off = {"partition": False, "stability": False, "extrapolation": "none"}
    cfg = {
        **{k: "t" for k in ("title", "owner", "intended_use")},
        "model": {"joblib": "m.joblib"},
        "data": {"path": "d.csv"},
        "target": "y",
        "effects": [{"id": "a", "steps": {"x1": 1}, **off}, {"id": "b", "steps": {"x2": 1}, **off}],
        "joint_regions": {"effects": ["a", "b"], "max_leaves": None, "minbucket": 25, "alpha": 0.05},
    }
    out = {}
    for engine, data in (("pandas", X), ("dask", dd.from_pandas(X, npartitions=3))):
        (tmp_path / f"{engine}.yaml").write_text(json.dumps({**cfg, "engine": engine}), encoding="utf-8")
        kept: dict = {}
        run_effects(model, data, X, load_config(tmp_path / f"{engine}.yaml"), tmp_path / engine, None, kept)
        out[engine] = run_joint_regions(kept, load_config(tmp_path / f"{engine}.yaml"), tmp_path / engine)
    mem, lazy = out["pandas"], out["dask"]
    assert mem["not_computed"] is None and lazy["not_computed"] is None and len(mem["leaves"]) >= 4
    for a, b in zip(mem["leaves"] + mem["heterogeneity"], lazy["leaves"] + lazy["heterogeneity"]):
        assert a.keys() == b.keys()
        for k, v in a.items():
            if isinstance(v, float):
                assert b[k] == pytest.approx(v, rel=1e-10, abs=1e-12), k
            else:
                assert b[k] == v, k
    assert (tmp_path / "dask" / "figures" / "joint-regions-tree.svg").exists()
    # an envelope check leaves different rows out of each effect: on Dask data the section says why it is missing
    cfg["effects"][1] = {**cfg["effects"][1], "extrapolation": "envelope"}
    (tmp_path / "rows.yaml").write_text(json.dumps({**cfg, "engine": "dask"}), encoding="utf-8")
    kept = {}
    rows_cfg = load_config(tmp_path / "rows.yaml")
    run_effects(model, dd.from_pandas(X, npartitions=3), X, rows_cfg, tmp_path / "rows", None, kept)
    section = run_joint_regions(kept, rows_cfg, tmp_path / "rows")
    assert section["not_computed"].startswith("with engine: dask the effects must evaluate the same rows")
    assert "give the effects of joint_regions extrapolation: none" in section["not_computed"]
    assert "leaves" not in section


def test_a_classifiers_joint_numbers_read_in_percentage_points_and_their_variances_in_its_square():
    from fme.report.inputs.quantities import percentage_points

    section = _section()
    for leaf in section["leaves"]:
        leaf.update(
            came=leaf["came"] / 100, came_ci_low=leaf["came_ci_low"] / 100, came_ci_high=leaf["came_ci_high"] / 100
        )
    type_joint_regions(section, percentage_points("P(yes)"))
    q = section["quantities"]
    assert q["a/variance"]["unit"] == {
        "name": "squared percentage points",
        "short": "pp²",
        "scale": 10000.0,
        "of": "P(yes)",
    }
    assert q["a/share_explained"]["unit"]["scale"] == 100.0 and q["a/came_leaf_2"]["unit"]["short"] == "pp"
    ctx = joint_context({"joint_regions": section, "claims": []}, lambda: 1, [0])
    assert ctx["unit"] == " (pp)" and ctx["variance_unit"] == " (pp²)"
    assert ctx["leaf_rows"][0]["came"] == "1.00" and ctx["het_rows"][0]["variance"] == "800"


def test_an_unknown_joint_feature_is_refused_before_any_effect_is_computed(tmp_path):
    from fme.report.analysis.checks import check_against_data

    X, _, model = _data()
    cfg = _load(tmp_path, "joint_regions:\n  effects: [a, b]\n  features: [x1, x9]\n")
    cfg = dataclasses.replace(cfg, effects=cfg.effects[:2])  # not the effect per level of g, absent here
    with pytest.raises(ConfigError) as info:
        check_against_data(cfg, model, X, X)
    msg = str(info.value)
    assert ":16: joint_regions.features[1]: unknown partition feature 'x9'" in msg and "'x1', 'x2'" in msg
