"""Honest cAMEs in reports: the config keys, the sentences and the leaf tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

from fme.report.inputs.config import ConfigError, load_config  # noqa: E402

from .configs import bare_config


def _setup(tmp_path: Path, partition: str) -> tuple:
    import joblib
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(3)
    n = 800
    d = pd.DataFrame({"x": rng.uniform(0, 1, n), "z": rng.uniform(0, 1, n)})
    d["y"] = d["x"] * (1 + 3 * (d["z"] > 0.5)) + rng.normal(scale=0.1, size=n)
    model = HistGradientBoostingRegressor(max_iter=50, random_state=0).fit(d[["x", "z"]], d["y"])
    joblib.dump(model, tmp_path / "model.joblib")
    d[["x", "z"]].to_csv(tmp_path / "data.csv", index=False)
    body = f"""\
        title: T
        owner: O
        intended_use: U
        model: {{joblib: model.joblib}}
        data: {{path: data.csv}}
        target: y
        effects:
          - id: x
            steps: {{x: 0.2}}
            extrapolation: none
            partition: {partition}
            stability: false
        """
    (tmp_path / "c.yaml").write_text(textwrap.dedent(body), encoding="utf-8")
    return model, d[["x", "z"]], load_config(tmp_path / "c.yaml")


def test_honest_default_with_splits_and_the_not_honest_sentence(tmp_path):
    import fme
    from fme.report.analysis import run_effects
    from fme.report.present.context import honesty_sentence, leaf_test_cells, splits_sentence

    model, X, cfg = _setup(tmp_path, "{method: cart, max_depth: 2, n_splits: 3}")
    (g,) = run_effects(model, X, X, cfg, tmp_path / "out")
    p = g["variants"][0]["partition"]
    assert p["honest"] and p["n_grown"] + p["n_estimated"] == 800 and p["splits"]["n_splits"] == 3
    part = fme.came(fme.fme(model, X, {"x": 0.2}), method="cart", max_depth=2)
    assert [leaf["came"] for leaf in p["leaves"]] == pytest.approx(part.leaves["came"].tolist(), rel=1e-12)
    assert len(p["tests"]["rows"]) == len(part.leaf_ids) * (len(part.leaf_ids) - 1) // 2
    assert honesty_sentence(p).startswith(f"Honest subspaces: the tree was grown on {p['n_grown']}")
    cells = leaf_test_cells(p["tests"], 0.95, 7)
    assert "estimation rows only" in cells["basis"] and cells["global"].startswith("Global test")
    assert "the leaves' cAMEs differ" in cells["global"]  # z > 0.5 triples the effect
    assert splits_sentence(p["splits"]).startswith("Across 3 honest splits")

    model, X, cfg = _setup(tmp_path, "{method: cart, max_depth: 2, honest: false}")
    (g,) = run_effects(model, X, X, cfg, tmp_path / "out2")
    p = g["variants"][0]["partition"]
    assert p["honest"] is False and honesty_sentence(p).startswith("Not honest")
    assert "not adjusted" in leaf_test_cells(p["tests"], 0.95, 7)["basis"]


@pytest.mark.parametrize(
    "bad, key",
    [("{honest: yes please}", "honest"), ("{honest_fraction: 1.5}", "honest_fraction"), ("{n_splits: 0}", "n_splits")],
)
def test_bad_honest_keys_name_themselves(tmp_path, bad, key):
    with pytest.raises(ConfigError, match=key):
        _setup(tmp_path, bad)


def test_honest_figures_and_leaf_table_count_one_set_of_rows(tmp_path, monkeypatch):
    """An honest partition's tree figure, cAME plot and leaf table are each over the rows that estimate the
    leaves: the first row and the root are their AME (that of fme.came on the same rows), the leaves' n add up to
    it and their shares to 100 %; the captions name those rows and give the AME of all rows beside."""
    import fme
    from fme.report.analysis import figures, run_effects
    from fme.report.present.context import effect_cells, head_rows, leaf_rows
    from fme.report.present.display import prepare_variant
    from fme.report.present.figure_text import figure_entries

    model, X, cfg = _setup(tmp_path, "{method: cart, max_depth: 2}")
    (g,) = run_effects(model, X, X, cfg, tmp_path / "out")
    v = g["variants"][0]
    p = v["partition"]
    part = fme.came(fme.fme(model, X, {"x": 0.2}), method="cart", max_depth=2)
    est = p["estimation_root"]
    assert p["honest"] and est["n"] == p["n_estimated"] == sum(leaf["n"] for leaf in p["leaves"]) < v["n"]
    assert est["came"] == pytest.approx(part.estimation_root["came"], rel=1e-12)
    assert est["came"] == pytest.approx(part.effects.results["fme"].loc[part.estimated_on].mean(), rel=1e-12)
    assert est["came"] != pytest.approx(p["root"]["came"], rel=1e-6)  # another set of rows, another number
    tree = next(f for f in v["figures"] if f["kind"] == "came-tree")
    assert tree["panel_rows"] == p["n_estimated"]
    dots = next(f for f in v["figures"] if f["kind"] == "came")
    assert dots["rows"] == {"all": v["n"], "estimation": p["n_estimated"]}

    shown = prepare_variant(v, 1.0)
    rows = leaf_rows(shown["partition"], v["n"])
    # the AME of all rows (the checklist's root row), then the rows the leaves partition, then the leaves
    assert [r["node"] for r in rows[:2]] == ["all rows *", "estimation rows +"]
    assert rows[0]["n"] == f"{v['n']:,}" and rows[0]["share"] == "-" and rows[1]["n"] == f"{p['n_estimated']:,}"
    assert rows[1]["share"] == "100%"
    shares = [float(r["share"].rstrip("%")) for r in rows[2:]]
    assert sum(shares) == pytest.approx(100, abs=0.05 * len(shares))
    sentence = head_rows(shown["partition"])[1]
    assert sentence.startswith(
        f"The row marked * is all {v['n']:,} evaluated rows (the AME). The row marked + is "
        f"the {p['n_estimated']:,} rows that estimate the leaves (honest; the tree grew on the "
        f"other {p['n_grown']:,}, so its AME differs)"
    )
    cells = effect_cells(shown)
    described = dict(
        zip([f["kind"] for f in v["figures"]], figure_entries(shown, {**cells, "step": "x + 0.2"}, cfg, [0]))
    )
    caps = {k: d["caption"] for k, d in described.items()}
    alts = {k: d["alt"] for k, d in described.items()}
    assert f"the AME of its {p['n_estimated']:,} estimation rows is" in alts["came-tree"] and "of all" in alts["came"]
    assert (
        f"Every count, share, cAME, CI and fME panel is over the {p['n_estimated']:,} rows that estimate the "
        f"leaves (honest; the tree grew on the other {p['n_grown']:,})"
    ) in caps["came-tree"]
    assert f"the AME of all {v['n']:,} evaluated rows is {cells['ame']}" in caps["came"]

    # the dot plot: its top row is the estimation rows' AME, named so; no row counts all rows
    drawn = {}
    monkeypatch.setattr(
        figures,
        "save",
        lambda fig, *a, **k: drawn.update(labels=[t.get_text() for t in fig.axes[0].get_yticklabels()]) or {},
    )
    figures._came_plot(part, cfg, tmp_path, "x")
    assert drawn["labels"][0] == f"estimation rows (n = {p['n_estimated']})"
    assert all("estimation" not in s for s in drawn["labels"][1:]) and len(drawn["labels"]) == len(p["leaves"]) + 1


def test_a_tree_whose_panels_draw_a_sample_says_so(tmp_path):
    """On Dask data beyond sample_size estimation rows the panels draw a seeded sample of them: the caption gives
    its size; with every estimation row drawn it says nothing of a sample."""
    from fme.report.present.figure_text import figure_entries

    cfg = bare_config(tmp_path)
    p = {
        "leaves": [{"box": [{"feature": "z", "restricted": True}]}] * 2,
        "method": "cart",
        "honest": True,
        "n_estimated": 1_500_000,
        "n_grown": 1_500_000,
        "estimation_root": {"n": 1_500_000, "came": 0.5, "came_ci_low": 0.4, "came_ci_high": 0.6},
    }
    cells = {"step": "x + 1", "ame": "0.51"}

    def caption(panel_rows: int) -> str:
        v = {
            "figures": [{"kind": "came-tree", "svg": "a.svg", "png": "a.png", "panel_rows": panel_rows}],
            "partition": p,
            "n": 3_000_000,
        }
        return figure_entries(v, cells, cfg, [0])[0]["caption"]

    assert caption(1_000_000).endswith("The panels draw a seeded sample of 1,000,000 of those rows.")
    assert "sample" not in caption(1_500_000)
