"""Reports that hold on models no one here wrote (statsmodels GLMs with C() terms, gradient boosting
with pandas categoricals, LightGBM). Each test runs a small case like the one that found the problem, on data
shipped with statsmodels or scikit-learn."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

from fme.report.inputs.config import ConfigError, load_config  # noqa: E402


def _randhie(n: int = 600) -> pd.DataFrame:
    import statsmodels.api as sm

    d = sm.datasets.randhie.load_pandas().data.iloc[:n].copy()
    d["health"] = np.select([d["hlthp"] == 1, d["hlthf"] == 1, d["hlthg"] == 1], ["poor", "fair", "good"], "excellent")
    return d.drop(columns=["hlthg", "hlthf", "hlthp"])


def _poisson(d: pd.DataFrame):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    return smf.glm(
        "mdvis ~ lncoins + lpi + physlm + disea + C(idp) + C(health)", data=d, family=sm.families.Poisson()
    ).fit()


def _config(tmp_path: Path, model, data: pd.DataFrame, body: str, target: str = "mdvis") -> dict:
    import joblib

    joblib.dump(model, tmp_path / "model.joblib")
    data.drop(columns=[target]).to_csv(tmp_path / "data.csv", index=False)
    head = (
        f"title: T\nowner: O\nintended_use: U\nmodel: {{joblib: model.joblib}}\ndata: {{path: data.csv}}\n"
        f"target: {target}\n"
    )
    (tmp_path / "c.yaml").write_text(head + textwrap.dedent(body), encoding="utf-8")
    return load_config(tmp_path / "c.yaml")


def _bare_config(tmp_path, **fields):
    """A config object with the given fields (and placeholders for the required ones), without a file."""
    from fme.report.inputs.config import ReportConfig

    base = {
        "title": "T",
        "owner": "O",
        "intended_use": "U",
        "model": {},
        "data": {},
        "target": "y",
        "effects": (),
        "path": tmp_path / "c.yaml",
        "directory": tmp_path,
        "name": "c",
    }
    return ReportConfig(**{**base, **fields})


# ------------------------------------------------------------------ the interval a file carries
def test_sidecars_and_changelog_carry_the_primary_interval_labelled(tmp_path):
    from fme.report.analysis import run_effects
    from fme.report.present.changelog import changelog, compact

    d = _randhie()
    model = _poisson(d)
    cfg = _config(
        tmp_path,
        model,
        d,
        """\
        inference: delta
        effects:
          - id: lpi
            steps: {lpi: 1}
            partition: false
            stability: false
        """,
    )
    data = d.drop(columns=["mdvis"])
    (g,) = run_effects(model, data, data, cfg, tmp_path / "out")
    v = g["variants"][0]
    mc = v["model_ci"]
    assert v["inference"] == "delta" and v["ci_inference"] == "sample"
    # the Poisson model is overdispersed: its delta intervals use the covariance scaled by the dispersion
    from fme.report.analysis.model_view import glm_dispersion

    scaled = f"Pearson dispersion {glm_dispersion(model)['dispersion']:.2f}"
    assert mc["covariance"] == scaled
    primary, fixed = v["intervals"]
    assert primary["inference"] == f"delta ({scaled})" and primary["primary"] is True
    assert (primary["conf_low"], primary["conf_high"], primary["std_error"]) == (
        mc["conf_low"],
        mc["conf_high"],
        mc["std_error"],
    )
    assert fixed["inference"] == "sample" and fixed["primary"] is False
    assert (fixed["conf_low"], fixed["conf_high"], fixed["std_error"]) == (v["ci_low"], v["ci_high"], v["se"])
    assert "model uncertainty" in primary["covers"] and "not included" in fixed["covers"]
    table = pd.read_csv(tmp_path / "out" / "tables" / "lpi-ame.csv")
    assert table["inference"].tolist() == [f"delta ({scaled})", "sample"]
    assert table["primary"].tolist() == [True, False]
    assert {"estimate", "std_error", "conf_low", "conf_high", "conf_level", "covers"} <= set(table.columns)
    assert "std.error" not in table.columns and "ci_low" not in table.columns
    assert table.loc[0, "conf_low"] == pytest.approx(mc["conf_low"], rel=1e-12)
    assert table.loc[1, "conf_high"] == pytest.approx(v["ci_high"], rel=1e-12)
    # the change log compares the primary (delta) intervals: shift the AME so that the narrow fixed-model
    # intervals no longer overlap while the wide delta intervals still do
    results = {"config_name": "c", "config_sha256": "0" * 64, "effects": [g]}
    shift = (fixed["conf_high"] - fixed["conf_low"]) * 1.5
    assert shift < primary["conf_high"] - primary["conf_low"]
    moved = {
        **v,
        "ame": v["ame"] + shift,
        "ci_low": v["ci_low"] + shift,
        "ci_high": v["ci_high"] + shift,
        "model_ci": {**mc, "conf_low": mc["conf_low"] + shift, "conf_high": mc["conf_high"] + shift},
    }
    new = {**results, "effects": [{**g, "variants": [moved]}]}
    (row,) = changelog(new, {"path": "p", "sha256": "0", **compact(results)})["rows"]
    assert row["interval"] == f"model (delta method, {scaled})" and row["overlap"] == "yes"
    # a previous build with only the fixed-model interval: compared on the fixed-model intervals, said so
    old = {**results, "effects": [{**g, "variants": [{**v, "model_ci": None, "inference": "sample"}]}]}
    (row,) = changelog(new, {"path": "p", "sha256": "0", **compact(old)})["rows"]
    assert row["interval"] == f"fixed model (rows) to model (delta method, {scaled})"
    assert row["overlap"] == "no (fixed-model intervals; the primary ones differ in kind)"


# ------------------------------------------------------------------ readable cAME trees that never crash
def _fair(n: int | None = None) -> pd.DataFrame:
    import statsmodels.api as sm

    d = sm.datasets.fair.load_pandas().data
    d = d if n is None else d.iloc[:n].copy()
    d["religious"] = pd.Categorical(
        d["religious"].map({1: "not", 2: "mildly", 3: "fairly", 4: "strongly"}),
        categories=["not", "mildly", "fairly", "strongly"],
    )
    d["occupation"] = pd.Categorical(d["occupation"].astype(int).astype(str))
    return d


def _hgb(d: pd.DataFrame):
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # OpenMP threads on a shared 2-core machine: far slower than one
        return HistGradientBoostingRegressor(max_iter=30, categorical_features="from_dtype", random_state=0).fit(
            d.drop(columns="affairs"), d["affairs"]
        )


def test_tree_figure_with_a_level_absent_from_a_node(tmp_path):
    """A categorical split of a node that lacks some levels (CTree maps them to None) is drawn and summarised."""
    import fme
    from fme.plotting.tree import edge_label
    from fme.report.analysis.effect_parts import root_split
    from fme.report.analysis.figures import _tree_plot

    d = _fair()
    X = d.drop(columns="affairs")
    res = fme.fme(_hgb(d), X, {"age": 5.0})
    part = fme.came(res, honest=False)  # the full grown tree (the case of the issue): splits with absent levels
    nodes = part.nodes
    absent = [i for i, lv in nodes["split_levels"].items() if isinstance(lv, dict) and None in lv.values()]
    assert absent
    node = absent[0]
    lv = nodes.at[node, "split_levels"]
    kids = [int(c) for c in nodes.at[node, "children"]]
    first, second = edge_label(nodes, node, kids[0]), edge_label(nodes, node, kids[1])
    assert first == "{" + ", ".join(k for k, s in lv.items() if s == 1) + "}"
    assert second == "{" + ", ".join(k for k, s in lv.items() if s == 2) + "}"
    assert root_split(part)["levels"] == {"not": 1, "mildly": 2, "fairly": 2, "strongly": 2}
    # a drawn tree (16 leaves) with such a split: the figure is written and shows only the levels present
    drawn = fme.came(res, honest=False, n_partitions=16, alpha=0.35, minbucket=0.02 * res.n)
    split = next(i for i, lv in drawn.nodes["split_levels"].items() if isinstance(lv, dict) and None in lv.values())
    cfg = _bare_config(tmp_path, figures={"png_dpi": 50})
    (tmp_path / "figures").mkdir()
    fig = _tree_plot(drawn, cfg, tmp_path, "age")
    kids = [int(c) for c in drawn.nodes.at[split, "children"]]
    assert [edge_label(drawn.nodes, split, k) for k in kids] == ["{mildly}", "{fairly, strongly}"]
    assert fig["kind"] == "came-tree" and (tmp_path / fig["svg"]).stat().st_size > 0


def test_default_tree_is_readable_on_a_smooth_4000_row_glm(tmp_path):
    """The defaults grew 134-228 leaves of n = 7 on a 4,000-row Poisson GLM; now at most 8, none below 2 %."""
    import fme
    from fme.report.analysis.effect_parts import grow_partition

    d = _randhie(4000)
    model = _poisson(d)
    cfg = _config(
        tmp_path,
        model,
        d,
        """\
        effects:
          - steps: {lpi: 1}
          - steps: {lpi: 1}
            partition: {max_leaves: null}
        """,
    )
    eff, full = cfg.effects
    assert eff.partition == {"method": "ctree", "max_leaves": 8}
    res = fme.fme(model, d.drop(columns="mdvis"), {"lpi": 1.0})
    assert res.n == 4000
    part = grow_partition(res, eff, 0.95)
    assert 2 <= len(part.leaf_ids) <= 8
    assert part.leaves["n"].min() >= 0.02 * res.n
    unpruned = grow_partition(res, full, 0.95)  # one config key away: the grown tree, the method's defaults
    assert len(unpruned.leaf_ids) > 8 and unpruned.leaf_ids == fme.came(res).leaf_ids
    assert unpruned.leaves["n"].min() < 0.01 * res.n  # the leaves of n = 7 of the issue
    # such a tree in the report: 16 subspaces shown, the rest named with where they are
    from fme.report.analysis.effect_parts import partition_summary
    from fme.report.present.context import MAX_LEAVES_SHOWN, shown_leaves

    summ = partition_summary(unpruned, full, lambda node: 0)
    shown, note = shown_leaves(summ, "lpi-2")
    k = len(unpruned.leaf_ids)
    assert len(shown["leaves"]) == MAX_LEAVES_SHOWN == 16
    biggest = sorted(unpruned.leaves["n"], reverse=True)[:16]
    assert sorted((r["n"] for r in shown["leaves"]), reverse=True) == biggest
    # the rows the left-out subspaces hold: their leaves' n (estimation rows, as cAMEs are honest by default)
    held = int(unpruned.leaves["n"].sum()) - sum(biggest)
    assert note.startswith(
        f"This partition has {k} subspaces; the tables below show the 16 with the most rows "
        f"and leave out {k - 16} subspaces holding {held:,} rows."
    )
    assert "tables/lpi-2-leaves.csv" in note and "max_leaves" in note
    assert shown_leaves(partition_summary(part, eff, lambda node: 0), "lpi")[1] is None
    with pytest.raises(ConfigError, match="max_leaves: give either n_partitions"):
        _config(
            tmp_path,
            model,
            d,
            """\
            effects:
              - steps: {lpi: 1}
                partition: {n_partitions: 4, max_leaves: 6}
            """,
        )


# ------------------------------------------------------------------ a stable model hash
def test_identical_fits_hash_alike_and_a_changed_fit_does_not(tmp_path, monkeypatch):
    import pickle

    from fme.report.build import input_digests
    from fme.report.model_hash import model_sha256

    d = _randhie(400)
    a, b = _poisson(d), _poisson(d)  # two separate, identical fits
    assert pickle.dumps(a, protocol=4) != pickle.dumps(b, protocol=4)  # the case of the issue
    assert model_sha256(a) == model_sha256(b)
    assert model_sha256(a) != model_sha256(_poisson(_randhie(401)))  # other data
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    other = smf.glm(
        "mdvis ~ lncoins + lpi + physlm + disea + C(idp) + C(health)",
        data=d,
        family=sm.families.NegativeBinomial(alpha=1.0),
    ).fit()
    assert model_sha256(a) != model_sha256(other)  # other family
    assert model_sha256(a) != model_sha256(_poisson(d).model.fit(cov_type="HC0"))  # other covariance
    # scikit-learn and LightGBM: identical fits alike, another fit not
    f = _fair(800)
    assert model_sha256(_hgb(f)) == model_sha256(_hgb(f)) != model_sha256(_hgb(_fair(801)))
    lgb = pytest.importorskip("lightgbm")
    X, y = f.drop(columns="affairs"), f["affairs"]
    fit = lambda s: lgb.LGBMRegressor(n_estimators=5, verbose=-1, random_state=s).fit(X, y)  # noqa: E731
    assert model_sha256(fit(0)) == model_sha256(fit(0))
    # the build's digest of an entry point that refits on every call: the same for unchanged inputs
    (tmp_path / "glm_entry_i22.py").write_text(
        textwrap.dedent("""\
        import numpy as np
        import statsmodels.api as sm
        import statsmodels.formula.api as smf


        def fit():
            d = sm.datasets.randhie.load_pandas().data.iloc[:300]
            m = smf.glm("mdvis ~ lncoins + lpi + C(idp)", data=d, family=sm.families.Poisson()).fit()
            return m, d.drop(columns="mdvis")
        """),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    d.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "e.yaml").write_text(
        "title: T\nowner: O\nintended_use: U\nmodel: {entry_point: 'glm_entry_i22:fit'}\n"
        "data: {path: data.csv}\ntarget: mdvis\neffects:\n  - steps: {lpi: 1}\n",
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "e.yaml")
    first, second = input_digests(cfg), input_digests(cfg)
    assert first["model"] == second["model"]
    assert "canonical serialisation" in first["model"]["of"]


# ------------------------------------------------------------------ every sentence is true
def test_categorical_step_names_the_level_rows_already_at_are_left_out(tmp_path):
    from fme.report.analysis import compute_effect
    from fme.report.present.context import effect_cells, level_label
    from fme.report.present.display import prepare_variant
    from fme.report.present.sentences import effect_sentence

    d = _fair(1500)
    model = _hgb(d)
    cfg = _config(
        tmp_path,
        model,
        d,
        """\
        effects:
          - steps: {religious: strongly}
            partition: false
            stability: false
        """,
        target="affairs",
    )
    X = d.drop(columns="affairs")
    v = compute_effect(model, X, X, cfg.effects[0], 0)["summary"]
    v = prepare_variant({**v, "level": None}, 1.0)
    n_at = int((X["religious"] == "strongly").sum())
    assert v["n_at_level"] == n_at and level_label(v) == "strongly"
    v["level_label"] = level_label(v)
    text = effect_sentence(v, effect_cells(v), "affairs", "", "observations", {})
    assert f"; {n_at:,} already at level strongly left out" in text and "None" not in text
    assert level_label({"steps": {"a": "x", "b": "y"}}) == "a x, b y"


def test_limitations_say_what_a_model_interval_covers_and_what_not():
    from fme.report.present.display import ci_method_text, model_ci_scope

    delta = model_ci_scope({"delta", "sample"})
    assert "sqrt(g'Vg)" in delta and "evaluation rows are held fixed" in delta
    assert "do not cover which rows were evaluated" in delta and "cov_type HC0" in delta
    assert "also cover the uncertainty of fitting the model" not in delta
    boot = model_ci_scope({"bootstrap"})
    assert boot.startswith("CIs marked model (bootstrap refits)") and "do not cover which rows" in boot
    assert model_ci_scope({"sample"}) == ""
    assert "the evaluation rows held fixed" in ci_method_text({"delta"}, "95%")
    template = (Path(__file__).resolve().parents[2] / "templates" / "report.qmd.j2").read_text(encoding="utf-8")
    assert "also cover the uncertainty of fitting the model" not in template and "{{ model_ci_scope }}" in template


@pytest.mark.parametrize(
    "rows",
    [
        [(-0.004, -0.02, 0.012), (0.003, -0.01, 0.016), (0.01, -0.005, 0.025)],  # three "no clear direction"
        [(0.0, 0.0, 0.0), (0.02, -0.01, 0.05), (0.05, -0.02, 0.12)],  # h/2: every fME exactly 0 (a tree model)
    ],
)
def test_step_size_sentence_only_when_the_ci_direction_changes(rows):
    from fme.report.present.context import sensitivity_rows
    from fme.report.present.sentences import sensitivity_sentence

    sens = [
        {
            "factor": f,
            "steps": {"x": f},
            "step_label": f"x + {f:g}",
            "n": 50,
            "n_extrapolation": 0,
            "ame": a,
            "ci_low": lo,
            "ci_high": hi,
        }
        for f, (a, lo, hi) in zip((0.5, 1.0, 2.0), rows)
    ]
    cells = sensitivity_rows({"sensitivity": sens}, "95%")
    assert {c["direction"] for c in cells} == {"no clear direction"}
    assert sensitivity_sentence(sens, cells) is None


def test_linearity_sentence_states_the_rows_the_anlm_covers():
    from fme.report.present.context import effect_cells
    from fme.report.present.sentences import linearity_sentence

    v = {
        "nlm": True,
        "anlm": -0.91,
        "anlm_ci_low": -1.4,
        "anlm_ci_high": -0.42,
        "n": 554,
        "n_nlm": 106,
        "n_nlm_flat": 440,
        "n_nlm_constant": 8,
        "ame": 0.1,
        "ci_low": 0.05,
        "ci_high": 0.15,
        "n_total": 554,
        "conf_level": 0.95,
        "sd": 1,
        "q25": 0,
        "q75": 1,
        "step_label": "x + 1",
        "detector": None,
        "policy": None,
        "nlm_method": "exact",
    }
    text = linearity_sentence(v, effect_cells(v))
    assert text == (
        "Along the step the model's prediction is strongly non-linear on average (ANLM -0.91, 95% CI "
        "-1.40 to -0.42, over 106 of the 554 rows: the NLM is undefined for 448 (440 flat paths; "
        "8 constant paths))."
    )
    assert linearity_sentence({**v, "n_nlm": 554, "n_nlm_flat": 0, "n_nlm_constant": 0}, effect_cells(v)).endswith(
        "over all 554 rows)."
    )


def test_classifier_alt_text_is_in_percentage_points(tmp_path):
    from fme.report.present.display import target_phrase
    from fme.report.present.figure_text import figure_entries

    cfg = _bare_config(tmp_path, target_unit="probability")
    _, unit, _ = target_phrase({"target_class": "malignant", "target": "diagnosis"}, cfg)
    v = {"figures": [{"kind": "fme-density", "svg": "figures/a-density.svg", "png": "figures/a-density.png"}]}
    cells = {"step": "mean radius + 1", "ame": "1.09", "q25": "0.5", "q75": "1.5", "n": "100"}
    (fig,) = figure_entries(v, cells, cfg, [0], unit)
    assert "the AME is 1.09 percentage points" in fig["alt"] and "probability" not in fig["alt"]


def test_numbers_and_plurals_as_the_tables_print_them():
    from fme._utils.numfmt import count, fmt_est
    from fme.report.present.sentences import step_phrase

    assert step_phrase({"x": 6.141071763}, True, {}) == "Raising x by 6.14107"
    assert step_phrase({"x": -1234567.0}, True, {"x": "EUR"}) == "Lowering x by 1.23457e+06 EUR"
    assert count(1, "point") == "1 point" and count(2, "subspace") == "2 subspaces"
    assert count(1234, "point") == "1,234 points"
    assert fmt_est(0.99989, 0.99989, 0.99989) == ("0.999890", "0.999890", "0.999890")
    assert fmt_est(1.0, 1.0, 1.0) == ("1.00000", "1.00000", "1.00000")  # a zero-width CI: 6 significant digits


# ------------------------------------------------------------------ errors name the key and fail fast
def test_bootstrap_train_data_with_a_text_column_fails_at_its_key_before_any_refit(tmp_path):
    from fme.report.analysis import run_effects

    d = _fair(600)
    d["occupation"] = d["occupation"].astype(int)
    model = _hgb(d)
    d.to_csv(tmp_path / "train.csv", index=False)  # the categorical religious becomes text
    cfg = _config(
        tmp_path,
        model,
        d,
        """\
        inference: {method: bootstrap, train_data: {path: train.csv}, n_resamples: 200}
        effects:
          - steps: {age: 5}
            partition: false
            stability: false
        """,
        target="affairs",
    )
    X = d.drop(columns="affairs")
    with pytest.raises(ConfigError) as info:
        run_effects(model, X, X, cfg, tmp_path / "out")
    msg = str(info.value)
    assert "c.yaml:7: inference.train_data: column 'religious' is text in the training data but categorical" in msg
    assert "store the training data as Parquet" in msg and "steps" not in msg
    # a numeric column with a stray string: the values named
    bad = d.copy()
    bad["educ"] = bad["educ"].astype(object)
    bad.loc[3, "educ"] = "unknown"
    bad["religious"] = bad["religious"].astype(str)
    bad.to_csv(tmp_path / "train.csv", index=False)
    X2 = X.assign(religious=X["religious"].astype(str))
    with pytest.raises(
        ConfigError, match=r"column 'educ' is text .* correct the non-numeric values \(e.g. 'unknown'\)"
    ):
        run_effects(model, X2, X2, cfg, tmp_path / "out2")
    # types agree, but the model cannot be refitted on them: the one probe refit fails at the key, at once
    d.assign(religious=d["religious"].astype(str)).to_csv(tmp_path / "train.csv", index=False)
    with pytest.raises(
        ConfigError,
        match=r"c.yaml:7: inference.train_data: refitting the model on the training "
        r"data fails \(ValueError: could not convert string to float",
    ):
        run_effects(model, X2, X2, cfg, tmp_path / "out3")


def test_yaml_tab_error_names_the_line_and_the_fix(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("title: T\nowner: O\neffects:\n  - steps:\n\t  a: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"t.yaml:5: \(YAML\): invalid YAML: .*indent with spaces"):
        load_config(p)


def test_hull_error_in_high_dimension_says_x_is_outside_and_names_the_key(tmp_path):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis import run_effects

    X = load_breast_cancer(as_frame=True).frame.iloc[:120, :25]
    d = X.assign(y=X.iloc[:, 0] * 2)
    model = LinearRegression().fit(X, d["y"])
    ref = X.iloc[:60]
    cfg = _config(
        tmp_path,
        model,
        d,
        """\
        effects:
          - steps: {mean texture: 1}
            extrapolation: hull
            partition: false
            stability: false
        """,
        target="y",
    )
    with pytest.raises(ConfigError) as info:
        run_effects(model, X.iloc[60:], ref, cfg, tmp_path / "out")
    msg = str(info.value)
    assert "effects[0].extrapolation: every row is an extrapolation point because x itself lies outside" in msg
    assert "60 of 60 evaluated rows are flagged before any step, in 25 dimensions with 60 reference rows" in msg
    assert "extrapolation: envelope" in msg


# ------------------------------------------------------------------ model identity and the whole model
def test_packages_list_what_the_model_and_the_analysis_imported():
    import importlib.metadata as md

    from sklearn.datasets import load_breast_cancer

    from fme.report.analysis import versions

    lgb = pytest.importorskip("lightgbm")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    v = versions(lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(X.iloc[:200], y.iloc[:200]))
    assert v["lightgbm"] == md.version("lightgbm") and v["scikit-learn"] and v["statsmodels"]
    glm = versions(_poisson(_randhie(300)))
    formula_pkg = {"patsy", "formulaic"} & set(glm)
    assert formula_pkg and all(glm[p] == md.version(p) for p in formula_pkg)


def test_formula_c_terms_are_categorical_and_glm_dispersion_is_flagged(tmp_path):
    from fme.report.analysis.model_view import feature_dictionary, feature_overview, glm_dispersion
    from fme.report.inputs.specs import FLAG_DEFAULTS
    from fme.report.present.flags import dispersion_text, model_flag_rows
    from fme.report.present.model_context import whole_model

    d = _randhie(800)
    model = _poisson(d)
    X = d.drop(columns="mdvis")
    cfg = _bare_config(
        tmp_path,
        overview={"step": "sd", "extrapolation": {"method": "envelope"}},
        inference={"method": "delta"},
        target="mdvis",
    )
    dic = {r["feature"]: r for r in feature_dictionary(model, X, cfg)}
    assert dic["idp"]["type"] == "categorical" and dic["idp"]["levels"] == ["0", "1"]
    assert dic["idp"]["encoding"] == "treatment coding (C() in the model formula), reference level 0"
    assert dic["lpi"]["type"] == "numeric"
    ov = feature_overview(model, X, X, cfg, None)
    idp = [r for r in ov["rows"] if r["feature"] == "idp"]
    assert sorted(r["level"] for r in idp) == [0, 1] and all(r["step"] is None for r in idp)
    shown = whole_model({"overview": ov, "dictionary": list(dic.values())}, cfg, 1.0, 5)
    row = next(r for r in shown["dictionary"] if r["feature"] == "idp")
    assert row["type"].startswith("categorical (treatment coding (C() in the model formula)") and row["range"] == "0, 1"
    disp = glm_dispersion(model)
    resid = np.asarray(model.resid_pearson)
    assert disp["dispersion"] == pytest.approx(float(resid @ resid) / model.df_resid, rel=1e-10)
    assert disp["dispersion"] > FLAG_DEFAULTS["dispersion"]
    (flag,) = model_flag_rows({"dispersion": disp}, FLAG_DEFAULTS)
    assert flag["status"] == "FLAG (!)" and flag["threshold"] == "> 1.5"
    text = dispersion_text(disp, FLAG_DEFAULTS)
    assert f"= {disp['dispersion']:.2f} (1 under the model" in text and "fit(cov_type='HC0')" in text
    robust = glm_dispersion(model.model.fit(cov_type="HC0"))
    assert model_flag_rows({"dispersion": robust}, FLAG_DEFAULTS)[0]["status"] == "ok"
    assert glm_dispersion(_hgb(_fair(300))) is None


def test_a_c_term_stepped_by_its_own_effect_is_a_level_change_without_nlm():
    """A ``C(idp)`` column of integers, stepped in an effect: a change of level (rows already at it left out), no
    NLM (defined along numeric paths only); the build failed with the NLM's StepError before."""
    from fme.report.analysis.effect_parts import run_effect_fme
    from fme.report.inputs.config import EffectConfig

    d = _randhie(600)
    model = _poisson(d)
    X = d.drop(columns="mdvis")
    eff = EffectConfig(
        id="idp", steps={"idp": 1}, extrapolation={"method": "none"}, conf_level=0.95, inference={"method": "delta"}
    )
    res, steps, numeric, _, use_nlm, _ = run_effect_fme(model, X, X, eff, 0, None, None, "mdvis")
    assert (numeric, use_nlm) == (False, False)
    (st,) = res.steps
    assert (
        (st.kind, st.value) == ("categorical", 1)
        and res.n == int((X["idp"] != 1).sum())
        and res.n_excluded == int((X["idp"] == 1).sum())
    )
    lam = model.predict(X)
    at1 = model.predict(X.assign(idp=1))
    assert res.ame == pytest.approx(float(np.mean((at1 - lam)[X["idp"] != 1])), rel=1e-12)


# ------------------------------------------------------------------ items 7 and 8: engines agree; sizes
def _flag_variant(**kw):
    v = {
        "detector": None,
        "policy": None,
        "ame": 0.5,
        "ci_low": 0.1,
        "ci_high": 0.9,
        "n": 100,
        "conf_level": 0.95,
        "inference": "sample",
        "model_ci": None,
    }
    v.update(kw)
    return v


def test_lowest_canlm_leaf_breaks_ties_by_node_whatever_the_order():
    from fme.report.inputs.specs import FLAG_DEFAULTS
    from fme.report.present.flags import flag_rows

    leaves = [
        {"node": 7, "n": 40, "canlm": 0.2, "canlm_ci_low": 0.1, "canlm_ci_high": 0.3},
        {"node": 3, "n": 40, "canlm": 0.2, "canlm_ci_low": 0.1, "canlm_ci_high": 0.3},
        {"node": 5, "n": 40, "canlm": 0.9, "canlm_ci_low": 0.8, "canlm_ci_high": 0.95},
    ]
    cells = {"ci_low": "0.1", "ci_high": "0.9", "ame": "0.5", "ep_share": "-"}
    values = []
    for order in (leaves, leaves[::-1]):
        rows = flag_rows(_flag_variant(partition={"leaves": order}), cells, "x", FLAG_DEFAULTS)
        values.append(next(r["value"] for r in rows if r["rule"].startswith("non-linear cAME leaf")))
    assert values[0] == values[1] == "0.20 (leaf 3; 2 of 3 leaves below)"


def test_percentile_bootstrap_with_few_resamples_is_flagged():
    from fme.report.inputs.specs import FLAG_DEFAULTS
    from fme.report.present.flags import flag_rows

    cells = {"ci_low": "0.1", "ci_high": "0.9", "ame": "0.5", "ep_share": "-"}

    def row(n, ci="percentile", conf=0.95, failed=0):
        v = _flag_variant(
            inference="bootstrap",
            conf_level=conf,
            model_ci={"ci": ci, "n_resamples": n, "n_failed": failed, "conf_low": 0.1, "conf_high": 0.9},
        )
        return [r for r in flag_rows(v, cells, "x", FLAG_DEFAULTS) if r["rule"].startswith("percentile bootstrap")]

    (r,) = row(50)
    assert (r["threshold"], r["value"], r["status"]) == ("< 200 at 95%", "50 successful refits", "FLAG (!)")
    assert row(200)[0]["status"] == "ok" and row(210, failed=20)[0]["status"] == "FLAG (!)"
    assert row(50, ci="normal") == [] and row(50, conf=0.9) == []


def test_rug_draws_at_most_max_points_marks():
    from fme.report.analysis.figures import rug_values

    v = np.random.default_rng(0).normal(size=100_000)
    marks, label = rug_values(v, 2000)
    assert marks.size == 2000 and label == "observed values (2,000 quantiles of all rows)"
    assert marks[0] == v.min() and marks[-1] == v.max()
    few, label = rug_values(np.r_[np.repeat([1.0, 2.0, 3.0], 10_000), np.nan], 2000)
    assert few.tolist() == [1.0, 2.0, 3.0] and label == "observed values (all rows)"


def test_fme_scatter_of_many_rows_stays_small(tmp_path):
    from sklearn.linear_model import LinearRegression

    import fme
    from fme.report.analysis.figures import _fme_plot

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"x": rng.normal(size=100_000), "z": rng.normal(size=100_000)})
    model = LinearRegression().fit(X, X["x"] ** 2 + X["z"])
    res = fme.fme(model, X, {"x": 0.1})
    (tmp_path / "figures").mkdir()
    cfg = _bare_config(tmp_path, figures={"max_points": 2000, "width": 6.4, "png_dpi": 50})
    info = _fme_plot(res, cfg, {"x": 0.1}, tmp_path, "x")
    assert info["n_drawn"] == 2000 and info["rug_drawn"] == 2000
    assert (tmp_path / info["svg"]).stat().st_size < 400_000


def test_unrestricted_categorical_side_lists_every_level_of_the_data_in_both_engines():
    """The Dask partition's data are the evaluated rows of its sample; the report lists the data's levels."""
    import fme
    from fme.report.analysis.checks import levels_of
    from fme.report.analysis.effect_parts import partition_summary
    from fme.report.inputs.config import EffectConfig

    d = _randhie(1500)
    model = _poisson(d)
    X = d.drop(columns="mdvis")
    eff = EffectConfig(
        id="lpi",
        steps={"lpi": 1.0},
        conf_level=0.95,
        inference={"method": "sample"},
        extrapolation={"method": "none"},
        partition={"method": "ctree"},
    )

    def unrestricted(summary):
        return {
            b["range"]
            for leaf in summary["leaves"]
            for b in leaf["box"]
            if b["feature"] == "health" and not b["restricted"]
        }

    full = fme.came(fme.fme(model, X, {"lpi": 1.0}), features=["lpi", "physlm", "health"], n_partitions=3)
    evaluated = X[X["health"] != "poor"]  # as the Dask sample of evaluated rows can be
    sub = fme.came(fme.fme(model, evaluated, {"lpi": 1.0}), features=["lpi", "physlm", "health"], n_partitions=3)
    every = "{excellent, fair, good, poor}"
    assert unrestricted(partition_summary(full, eff, lambda n: 0)) == {every}
    assert unrestricted(partition_summary(sub, eff, lambda n: 0)) == {"{excellent, fair, good}"}
    levels = {"health": levels_of(X, "health")}
    assert unrestricted(partition_summary(sub, eff, lambda n: 0, levels)) == {every}


@pytest.mark.slow
def test_report_of_a_smooth_4000_row_glm_stays_small(tmp_path):
    """With the default tree the report is small; a tree of 184 leaves (max_leaves: null) is
    shown by its 16 largest subspaces, with what was left out and where it is."""
    from fme.__main__ import main

    d = _randhie(4000)
    _config(
        tmp_path,
        _poisson(d),
        d,
        """\
        overview: false
        effects:
          - id: lpi
            steps: {lpi: 1}
            extrapolation: none
            stability: false
          - id: full
            steps: {lpi: 1}
            extrapolation: none
            partition: {max_leaves: null, honest: false}
            stability: false
        """,
    )  # the tree: grown on every row (honest trees grow on half of them)
    assert main(["report", str(tmp_path / "c.yaml")]) == 0
    html = (tmp_path / "c" / "report.html").read_bytes()
    assert len(html) < 2_000_000
    text = " ".join(html.decode("utf-8").split())  # pandoc wraps lines
    assert "This partition has 184 subspaces; the tables below show the 16 with the most rows" in text
    assert "tables/full-leaves.csv" in text
    from fme.report.analysis.figures import MAX_TREE_LEAVES
    from fme.report.present.context import MAX_LEAVES_SHOWN

    assert MAX_LEAVES_SHOWN == MAX_TREE_LEAVES
    assert "Dot plot of the cAME with 95% CI for the 16 largest of 184 subspaces" in text
    leaves = pd.read_csv(tmp_path / "c" / "tables" / "full-leaves.csv")
    assert len(leaves) == 184 and len(pd.read_csv(tmp_path / "c" / "tables" / "lpi-leaves.csv")) <= 8
    # the PDF of the same report: about 60 pages at most (the build printed 375, leaf tables overprinted)
    import re
    import shutil
    import subprocess

    pdf = tmp_path / "c" / "report.pdf"
    assert pdf.stat().st_size > 0
    if shutil.which("pdfinfo") is None:
        pytest.skip("pdfinfo (poppler-utils, installed by .ci/run) is needed to count the PDF's pages")
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    assert 10 <= pages <= 60, pages
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "This partition has 184 subspaces" in " ".join(text.split())


def test_single_subspace_is_singular_in_the_dot_plot(tmp_path):
    from sklearn.linear_model import LinearRegression

    import fme
    from fme.report.analysis.figures import _came_plot

    X = pd.DataFrame({"x": np.linspace(0, 1, 60), "z": np.linspace(1, 2, 60)})
    model = LinearRegression().fit(X, 2 * X["x"] + X["z"])
    part = fme.came(fme.fme(model, X, {"x": 0.1}), minsplit=1000)  # fewer rows than minsplit: one node
    assert len(part.leaves) == 1
    (tmp_path / "figures").mkdir()
    import matplotlib.pyplot as plt

    titles = []
    orig = plt.Figure.suptitle
    try:
        plt.Figure.suptitle = lambda self, label, *a, **k: titles.append(label) or orig(self, label, *a, **k)
        _came_plot(part, _bare_config(tmp_path, figures={"width": 6.4, "png_dpi": 50}), tmp_path, "x")
    finally:
        plt.Figure.suptitle = orig
    assert titles[-1].startswith("cAMEs on 1 subspace (")
