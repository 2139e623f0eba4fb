"""Report figures survive any distribution of fMEs and NLMs, built through report configs.

Each case is a small config (a joblib model, a CSV): all fMEs equal (a constant model, whose NLMs are all
undefined), fMEs equal up to rounding (a linear model: a spread of ~1e-15 relative, which numpy cannot cut
into 30 bins), one row, two rows, and NaN in the stepped feature. The figures must be drawn, and what they
leave out must be said in the caption. ``fme.plotting.data`` has the unit tests; ``test_plotting`` the displays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("papermill")
from fme.report.build import build_report  # noqa: E402

from .configs import bare_config

pytestmark = pytest.mark.slow


def _build(tmp: Path, name: str, model, data: pd.DataFrame, effects: list[dict]) -> dict:
    import joblib

    joblib.dump(model, tmp / f"{name}.joblib")
    data.to_csv(tmp / f"{name}.csv", index=False)
    cfg = {
        "title": name,
        "owner": "tests",
        "intended_use": "figure robustness",
        "pdf": False,
        "model": {"joblib": f"{name}.joblib"},
        "data": {"path": f"{name}.csv"},
        "target": "y",
        "effects": effects,
    }
    (tmp / f"{name}.yaml").write_text(json.dumps(cfg), encoding="utf-8")
    res = build_report(tmp / f"{name}.yaml", tmp / name, force=True, log=lambda s: None)
    return json.loads((Path(res["out_dir"]) / "results.json").read_text())


def _variant(results: dict, effect: int = 0) -> dict:
    v = results["effects"][effect]["variants"][0]
    assert "error" not in v or v["error"] is None, v.get("error")
    return v


def _captions(out: Path) -> str:
    """The report's visible HTML text, whitespace folded (captions are rendered from the qmd)."""
    import html
    import re

    body = re.sub(r"<(style|svg)\b.*?</\1>", " ", (out / "report.html").read_text(encoding="utf-8"), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 60
    X = pd.DataFrame({"a": rng.uniform(0, 10, n), "b": rng.normal(size=n), "c": rng.uniform(-1, 1, n)})
    return X.assign(y=2 * X["a"] + X["b"] - 3 * X["c"])


@pytest.fixture(scope="module")
def linear(frame):
    from sklearn.linear_model import LinearRegression

    return LinearRegression().fit(frame[["a", "b", "c"]], frame["y"])


def test_constant_model_equal_fmes_and_undefined_nlms(tmp_path, frame):
    from sklearn.dummy import DummyRegressor

    model = DummyRegressor().fit(frame[["a", "b", "c"]], frame["y"])
    res = _build(tmp_path, "constant", model, frame, [{"id": "a", "steps": {"a": 1}}])
    v = _variant(res)
    kinds = [f["kind"] for f in v["figures"]]
    assert kinds[:3] == ["extrapolation", "fme-scatter", "nlm"]
    nlm = next(f for f in v["figures"] if f["kind"] == "nlm")
    assert nlm["n_undefined"] == v["n"] > 0 and nlm["not_drawn"] is None
    # flat and constant paths counted apart (a constant model: every path constant)
    assert (
        f"The NLM is undefined for {v['n']} rows, not drawn: 0 flat paths (the prediction varies negligibly) "
        f"and {v['n']} constant paths (exactly constant)."
    ) in _captions(tmp_path / "constant")
    for f in v["figures"]:
        assert (tmp_path / "constant" / f["svg"]).stat().st_size > 0


def test_float_flat_fmes_and_non_finite_stepped_values(tmp_path, frame, linear):
    data = frame.copy()
    data.loc[[3, 7], "a"] = np.nan
    data.loc[5, "a"], data.loc[9, "a"] = np.inf, -np.inf  # left out and counted like NaN
    effects = [
        {"id": "a", "steps": {"a": 1}, "partition": {"minbucket": 10}},
        {"id": "abc", "steps": {"a": 1, "b": 1, "c": -1}, "extrapolation": "none"},
    ]
    import fme

    fm = fme.fme(linear, data[["a", "b", "c"]], effects[1]["steps"]).results["fme"].to_numpy()
    assert 0 < np.ptp(fm) < 1e-14 * abs(fm.mean())  # 6 up to rounding: the case numpy cannot bin
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram_bin_edges(fm, bins=30)
    res = _build(tmp_path, "linear", linear, data, effects)
    v = _variant(res, 0)
    figs = {f["kind"]: f for f in v["figures"]}
    assert figs["extrapolation"]["not_drawn"] == "not drawn: 4 non-finite values (2 NaN, 1 +inf, 1 -inf)"
    assert v["n"] + v["n_extrapolation"] == len(data) - 4 and v["n_extrapolation"] > 0
    assert figs["fme-scatter"]["not_drawn"] is None  # the NaN rows have no fME: left out before, as n says
    assert "Not drawn: 4 non-finite values (2 NaN, 1 +inf, 1 -inf)." in _captions(tmp_path / "linear")
    dens = {f["kind"]: f for f in _variant(res, 1)["figures"]}
    assert "fme-density" in dens and dens["fme-density"]["not_drawn"] is None


@pytest.mark.parametrize("n_rows", [1, 2])
def test_one_and_two_rows(tmp_path, frame, linear, n_rows):
    effects = [
        {"id": "a", "steps": {"a": 1}, "extrapolation": "none", "partition": False},
        {"id": "abc", "steps": {"a": 1, "b": 1, "c": 1}, "extrapolation": "none", "partition": False},
    ]
    res = _build(tmp_path, f"rows{n_rows}", linear, frame.iloc[:n_rows], effects)
    for i, kind in enumerate(["fme-scatter", "fme-density"]):
        v = _variant(res, i)
        assert v["n"] == n_rows
        assert [f["kind"] for f in v["figures"]] == [kind, "nlm"]


# ------------------------------------------------------------------ tree numbers = table cells
def _staircase(n_steps: int, seed: int = 0):
    import fme

    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.uniform(0, n_steps, 1500), "z": rng.normal(0, 1, 1500)})

    def model(d):
        x = d["x"].to_numpy()
        return np.floor(x) ** 2 * 0.37 + 1.234567 * x + 0.01 * d["z"].to_numpy()

    eff = fme.fme(model, X, {"x": 0.5}, nlm=True)
    return fme.came(eff, honest=False, features=["x"], minbucket=20)  # a staircase of as many leaves as steps


def _leaf_dicts(part) -> dict:
    leaves = []
    for _, row in part.leaves.iterrows():
        leaves.append({k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()})
    return {"root": part.root.to_dict(), "leaves": leaves}


def test_tree_figure_numbers_equal_the_leaf_table_cells():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fme._utils.numfmt import fmt_est
    from fme.plotting import PartitionDisplay
    from fme.report.present.context import leaf_rows

    part = _staircase(4)
    assert 2 <= len(part.leaves) <= 16
    disp = PartitionDisplay.from_partition(part)
    rows = {r["node"]: r for r in leaf_rows(_leaf_dicts(part), int(part.root["n"]))}
    for node, text in disp.leaf_labels_.items():
        lines = text.get_text().split("\n")
        r = rows[str(node)]
        assert lines[0] == f"Node {node}: n = {r['n']} ({r['share']})"
        assert lines[1] == f"cAME {r['came']} {r['ci']}"
        assert lines[2] == f"CoV {r['cov']}"
        assert lines[3] == f"cANLM {r['canlm']} {r['canlm_ci']}"
    est, lo, hi = fmt_est(part.root["came"], part.root["came_ci_low"], part.root["came_ci_high"])
    root_box = disp.node_boxes_[1].get_text()
    assert f"AME {est} [{lo}, {hi}]" in root_box and f"global AME {est}." in disp.note_.get_text()
    rules = " & ".join(part.leaves["rule"])
    for label in disp.edge_labels_.values():  # "<= 1.99871": the same digits as the rules and leaf boxes
        assert label.get_text().split(" ", 1)[1] in rules
    plt.close(disp.figure_)


def test_more_than_16_leaves_gives_dot_plot_and_tables_only(tmp_path):
    from fme.report.analysis import figures
    from fme.report.inputs.config import EffectConfig

    part = _staircase(24)
    assert len(part.leaves) > 16
    (tmp_path / "figures").mkdir()
    cfg = bare_config(tmp_path, figures={"width": 6.4, "png_dpi": 50, "max_points": 100})
    eff = EffectConfig(
        id="x", steps={"x": 0.5}, conf_level=0.95, inference={"method": "sample"}, extrapolation={"method": "none"}
    )
    out = figures.effect_figures(part.effects, part, eff, cfg, tmp_path, "v")
    kinds = [f["kind"] for f in out]
    assert "came-tree" not in kinds and kinds[-1] == "came"
    assert out[-1]["tree_omitted"] == len(part.leaves)
    assert not (tmp_path / "figures" / "v-tree.svg").exists()


def test_classifier_tree_numbers_equal_the_leaf_table_cells(tmp_path):
    """A classifier: the tree figure shows percentage points and the model-uncertainty CIs, as the leaf table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from fme._utils.numfmt import fmt_est
    from fme.plotting import PartitionDisplay
    from fme.report.analysis import compute_effect
    from fme.report.analysis.figures import shown
    from fme.report.inputs.config import load_config
    from fme.report.present.context import leaf_rows
    from fme.report.present.display import prepare_variant

    bc = load_breast_cancer(as_frame=True)
    X = bc.data[["mean radius", "mean texture", "worst concavity"]].iloc[:300]
    y = bc.target.map({0: "malignant", 1: "benign"}).iloc[:300]
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    X.to_csv(tmp_path / "data.csv", index=False)
    train = X.assign(diagnosis=y)
    train.to_csv(tmp_path / "train.csv", index=False)
    (tmp_path / "model.joblib").write_bytes(b"unused")
    (tmp_path / "c.yaml").write_text(
        "title: T\nowner: O\nintended_use: U\nmodel: {joblib: model.joblib}\ndata: {path: data.csv}\n"
        "target: diagnosis\ninference: {method: bootstrap, train_data: {path: train.csv}, n_resamples: 20}\n"
        "effects:\n  - steps: {mean texture: 2}\n"
        "    extrapolation: none\n    partition: {method: cart, max_depth: 2, min_samples_leaf: 30}\n"
        "    stability: false\n",
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    eff = cfg.effects[0]
    out = compute_effect(model, X, X, eff, 0, "malignant", train, "diagnosis")
    leaves_before = out["partition"].leaves.copy()
    v = prepare_variant(out["summary"], 100.0)
    assert v["ci_inference"] == "bootstrap"  # the leaf table shows the bootstrap CIs, not the fixed-model ones
    assert any(leaf["conf_low"] != leaf["came_ci_low"] for leaf in out["summary"]["partition"]["leaves"])
    rows = {r["node"]: r for r in leaf_rows(v["partition"], v["n"])}
    res, part = shown(out["result"], out["partition"], float(eff.conf_level), 100.0)
    pd.testing.assert_frame_equal(out["partition"].leaves, leaves_before)  # the caller's partition untouched
    disp = PartitionDisplay.from_partition(part)
    assert 2 <= len(disp.leaf_labels_) == len(rows) - 2  # the all-rows and the estimation rows above the leaves
    for node, text in disp.leaf_labels_.items():
        lines = text.get_text().split("\n")
        r = rows[str(node)]
        assert lines[0] == f"Node {node}: n = {r['n']} ({r['share']})"
        assert lines[1] == f"cAME {r['came']} {r['ci']}"
        assert lines[2] == f"CoV {r['cov']}"
    # honest (the default): the root box and the table's first row are the estimation rows' AME, the same cells
    assert v["partition"]["honest"]
    root = v["partition"]["estimation_root"]
    est, lo, hi = fmt_est(root["came"], root["came_ci_low"], root["came_ci_high"])
    assert f"AME {est} [{lo}, {hi}]" in disp.node_boxes_[1].get_text()
    assert rows["estimation rows +"]["came"] == est and rows["estimation rows +"]["ci"] == f"[{lo}, {hi}]"
    assert part.root["came"] == pytest.approx(100 * out["partition"].root["came"], rel=1e-12)
    assert part.estimation_root["came"] == pytest.approx(100 * out["partition"].estimation_root["came"], rel=1e-12)
    # percentage points: the fMEs drawn are 100 x the probability differences
    np.testing.assert_allclose(res.results["fme"], 100 * out["result"].results["fme"], rtol=0, atol=0)
    plt.close(disp.figure_)


def test_leaf_without_ci_reads_as_in_the_table():
    from fme.plotting.tree import leaf_label
    from fme.report.present.context import leaf_rows

    leaf = {"node": 3, "n": 1, "came": 0.5, "came_ci_low": None, "came_ci_high": None, "cov_fme": None, "rule": "x > 1"}
    row = leaf_rows({"root": {**leaf, "node": 1, "rule": "(all)"}, "leaves": [leaf]}, 1)[1]
    label = leaf_label(pd.Series({**leaf, "came_ci_low": np.nan, "came_ci_high": np.nan, "cov_fme": np.nan}), 1)
    assert row["ci"] == "- (fewer than 2 rows)" and f"cAME {row['came']} {row['ci']}" in label.split("\n")
    two = {**leaf, "n": 2}
    row = leaf_rows({"root": {**two, "node": 1, "rule": "(all)"}, "leaves": [two]}, 2)[1]
    label = leaf_label(pd.Series({**two, "came_ci_low": np.nan, "came_ci_high": np.nan, "cov_fme": np.nan}), 2)
    assert row["ci"] == "[-, -]" and f"cAME {row['came']} {row['ci']}" in label.split("\n")


def _tree(k: int):
    """A balanced tree of k leaves with report-sized labels (the Boston crim tree's numbers)."""
    rows: dict[int, dict] = {}
    counter = [0]

    def make(n_leaves, parent, depth):
        counter[0] += 1
        me = counter[0]
        rows[me] = {
            "parent": np.nan if parent is None else parent,
            "depth": depth,
            "n": 30 * n_leaves,
            "is_leaf": n_leaves == 1,
            "children": (),
            "split_feature": None,
            "split_value": np.nan,
            "split_levels": None,
            "p_value": np.nan,
            "statistic": np.nan,
        }
        if n_leaves > 1:
            rows[me].update(split_feature="crim", split_value=14.4383, p_value=1e-4)
            rows[me]["children"] = (make(n_leaves // 2, me, depth + 1), make(n_leaves - n_leaves // 2, me, depth + 1))
        return me

    make(k, None, 0)
    nodes = pd.DataFrame.from_dict(rows, orient="index")
    ids = [int(i) for i in nodes.index[nodes["is_leaf"].astype(bool)]]
    leaves = pd.DataFrame(
        [
            {
                "node": i,
                "n": 30,
                "came": 0.8612,
                "came_ci_low": 0.5503,
                "came_ci_high": 1.1721,
                "cov_fme": 0.31,
                "canlm": 0.951,
                "canlm_ci_low": 0.932,
                "canlm_ci_high": 0.973,
            }
            for i in ids
        ]
    )
    rng = np.random.default_rng(k)
    return nodes, leaves, {i: rng.normal(0.9, 0.3, 50) for i in ids}


@pytest.mark.parametrize("k", [2, 4, 6, 8, 12, 16])
def test_tree_text_in_the_pdf_stays_legible(k):
    """Follow-up 7: the smallest text of a tree, after typst shrinks the figure to the page, is >= 6 pt up to
    6 leaves (measured: 6.5 pt at 6, 5.8 at 8, 4.6 at 9 to 16 leaves on a landscape page: short of 6 pt, the
    limit of one diagram per page; the leaf table beside it has every number)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fme.plotting import PartitionDisplay
    from fme.report.analysis.figures import PDF_TEXT, min_font_pt, pdf_page

    nodes, leaves, values = _tree(k)
    with plt.rc_context({"font.size": 10.0, "figure.dpi": 100}):  # as the report draws it
        disp = PartitionDisplay(
            nodes=nodes,
            leaves=leaves,
            leaf_values=values,
            average=2.68,
            n_total=30 * k,
            conf_level=0.95,
            step_text="crim + 10",
            root_label="AME 2.68 [2.10, 3.26]",
        ).plot()
    width, height = disp.figure_.get_size_inches()
    page, scale = pdf_page(width, height)
    text_w, text_h = PDF_TEXT[page]
    assert width * scale <= text_w + 1e-9 and height * scale <= text_h + 1e-9  # fits the page's text area
    scales = {o: min(1.0, w / width, h / height) for o, (w, h) in PDF_TEXT.items()}
    assert scale == scales[page] and (page == "portrait") == (scales["landscape"] <= 1.15 * scales["portrait"])
    smallest = min_font_pt(disp.figure_) * scale
    plt.close(disp.figure_)
    assert smallest >= (6.0 if k <= 6 else 5.5 if k <= 8 else 4.5), (k, width, height, page, smallest)
    if k >= 12:
        assert page == "landscape"


# ------------------------------------------------------------------ drawn by fme.plotting, in the report's style
def _report_config(tmp_path: Path, **figures):
    return bare_config(
        tmp_path,
        units={"x": "years"},
        target_unit="USD",
        figures={"width": 6.4, "png_dpi": 40, "max_points": 100, **figures},
    )


def test_the_reports_figures_are_the_displays_in_the_report_palette(tmp_path, monkeypatch):
    """Each figure is a display of fme.plotting (its artists), drawn in the report's PALETTE, with the config's
    units on its axes and its row counts in its legend; the descriptors count what the displays drew."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_hex

    import fme
    from fme.plotting import CAMEDisplay, ExtrapolationDisplay, FMEDisplay, NLMDisplay
    from fme.report.analysis import figures
    from fme.report.analysis.figures import PALETTE
    from fme.report.inputs.config import EffectConfig

    built = []
    for cls in (ExtrapolationDisplay, FMEDisplay, NLMDisplay, CAMEDisplay):
        orig = cls.plot
        monkeypatch.setattr(cls, "plot", lambda self, *a, _o=orig, **k: built.append(self) or _o(self, *a, **k))
    saved = {}
    monkeypatch.setattr(figures, "save", lambda fig, out_dir, name, *a, **k: saved.update({name: fig}) or {})
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.uniform(0, 10, 300), "z": rng.normal(size=300)})
    res = fme.fme(
        lambda d: np.sin(d["x"].to_numpy()) + d["z"].to_numpy(), X, {"x": 1.0}, nlm=True, extrapolation="envelope"
    )
    part = fme.came(res, method="cart", max_depth=2, honest=False)
    eff = EffectConfig(id="x", steps={"x": 1.0}, conf_level=0.95, inference={"method": "sample"}, extrapolation={})
    (tmp_path / "figures").mkdir()
    out = figures.effect_figures(res, part, eff, _report_config(tmp_path), tmp_path, "v")
    kinds = [f["kind"] for f in out]
    assert kinds == ["extrapolation", "fme-scatter", "nlm", "came-tree", "came"]
    built = list({id(d): d for d in built}.values())  # NLMDisplay.plot is FMEDisplay's: once per display
    ex, sc, nl, dots = built
    assert [type(d) for d in built] == [ExtrapolationDisplay, FMEDisplay, NLMDisplay, CAMEDisplay]
    assert all(d.figure_ is saved[f"v-{n}"] for d, n in zip(built, ["extrapolation", "fme", "nlm", "came"]))

    def hexes(colors) -> set[str]:
        return {to_hex(c).upper() for c in colors}

    # extrapolation: evaluated rows solid in "kept", the points hatched in "excluded"
    evaluated, points = ex.bars_
    assert hexes(p.get_facecolor() for p in evaluated) == {PALETTE["kept"]}
    assert hexes(p.get_edgecolor() for p in points) == {PALETTE["excluded"]} and points[0].get_hatch() == "///"
    assert out[0]["n_evaluated"] == res.n == sum(p.get_height() for p in evaluated)
    assert out[0]["n_extrapolation"] == res.n_extrapolation == sum(p.get_height() for p in points) > 0
    # fME scatter: hollow "kept" circles, the AME dashed in "accent", zero solid in "reference"; 100 of the rows
    assert hexes(sc.scatter_.get_edgecolors()) == {PALETTE["kept"]} and len(sc.scatter_.get_facecolors()) == 0
    assert out[1]["n_drawn"] == 100 == len(sc.scatter_.get_offsets()) and out[1]["n"] == res.n
    assert out[1]["n_left_out"] == res.n_extrapolation == len(sc.extrapolation_.get_offsets())
    assert to_hex(sc.ame_line_.get_color()).upper() == PALETTE["accent"] and sc.ame_line_.get_linestyle() == "--"
    assert to_hex(sc.zero_line_.get_color()).upper() == PALETTE["reference"] and sc.zero_line_.get_linestyle() == "-"
    assert to_hex(sc.extrapolation_.get_edgecolor()[0]).upper() == PALETTE["excluded"]
    assert sc.ax_.get_ylabel() == "fME of x + 1 years (USD)" and sc.ax_.get_xlabel() == "x (years)"
    assert f"fME of a row: 100 of {res.n} drawn" in [t.get_text() for t in sc.legend_.get_texts()]
    # NLM: 40 bins on [-1, 1], edged in "kept"
    assert len(nl.hist_) == 40 and hexes(p.get_edgecolor() for p in nl.hist_) == {PALETTE["kept"]}
    # cAME dot plot: a "kept" point per leaf, the AME row in "reference"
    assert len(dots.leaves_.lines[0].get_xdata()) == len(part.leaves) == out[4]["leaves_drawn"]
    assert to_hex(dots.leaves_.lines[0].get_color()).upper() == PALETTE["kept"]
    assert dots.ax_.get_xlabel() == "cAME of x + 1 years (USD)"


#: matplotlib calls that draw or place marks: the report leaves them to fme.plotting's displays.
_DRAWING = {
    "scatter", "bar", "barh", "hist", "errorbar", "hexbin", "axhline", "axvline", "axhspan", "axvspan",
    "fill_between", "imshow", "pcolormesh", "contour", "contourf", "step", "stem", "pie", "boxplot",
    "violinplot", "annotate", "text", "add_patch", "add_artist", "legend", "colorbar", "set_xticks", "set_yticks",
}  # fmt: skip


def drawing_calls(root: Path) -> list[str]:
    """``file:line name`` of every drawing call under ``root``: a :data:`_DRAWING` method, or ``.plot`` with
    positional arguments (a display's ``plot`` takes keywords only, matplotlib's takes the data)."""
    import ast

    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                if name in _DRAWING or (name == "plot" and node.args):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_the_report_draws_nothing_itself(tmp_path):
    import fme.report

    assert drawing_calls(Path(fme.report.__file__).parent) == []
    planted = tmp_path / "figs.py"
    planted.write_text("def f(ax, disp):\n    disp.plot(ax=ax)\n    ax.plot([0], [1])\n    ax.bar([0], [1])\n")
    assert drawing_calls(tmp_path) == ["figs.py:3 plot", "figs.py:4 bar"]
