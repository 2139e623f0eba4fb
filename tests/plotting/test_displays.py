"""Structural tests of fme.plotting: inspect the drawn artists, never pixels."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import fme
from fme.plotting import (
    COLORS,
    EffectsDisplay,
    FMEDisplay,
    NLMDisplay,
    PartitionDisplay,
    SecantTangentDisplay,
    plot_fme_nlm,
)
from fme.plotting._common import fmt_ci, fmt_p
from fme.plotting.tree import edge_label, leaf_label, tree_layout
from fme.steps import Step


def square(d: pd.DataFrame) -> pd.Series:
    return d["x"] ** 2


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 120
    return pd.DataFrame(
        {
            "x": rng.uniform(-2, 2, n),
            "z": rng.uniform(0, 3, n),
            "w": rng.normal(size=n),
            "g": rng.choice(["a", "b", "c"], n),
        }
    )


@pytest.fixture(scope="module")
def eff(data):
    # The envelope leaves out rows whose x + 1 exceeds max(x): a non-empty extrapolation set.
    return fme.fme(square, data, {"x": 1.0}, nlm=True, extrapolation="envelope")


def offsets(collection) -> np.ndarray:
    return np.asarray(collection.get_offsets(), dtype=float)


# ----------------------------------------------------------------- FMEDisplay
def test_scatter_matches_results(pyplot, eff):
    disp = FMEDisplay.from_effects(eff)
    assert disp.kind_ == "scatter"
    expected = np.column_stack([eff.feature_values["x"], eff.results["fme"]])
    np.testing.assert_allclose(offsets(disp.scatter_), expected)
    assert disp.ax_.get_ylabel() == "fME of x + 1"
    assert disp.ax_.get_title() == ""


def test_ame_line_and_arrow_length(pyplot, eff):
    disp = FMEDisplay.from_effects(eff)
    np.testing.assert_allclose(disp.ame_line_.get_ydata(), [eff.ame, eff.ame])
    np.testing.assert_allclose(disp.arrow_.xy[0] - disp.arrow_.xyann[0], 1.0)
    assert disp.arrow_.xy[1] == disp.arrow_.xyann[1]  # horizontal: a step in x only
    assert "h = 1" in disp.arrow_label_.get_text()


def test_negative_step_arrow_points_left(pyplot, data):
    res = fme.fme(square, data, {"x": -0.5})
    disp = FMEDisplay.from_effects(res)
    np.testing.assert_allclose(disp.arrow_.xy[0] - disp.arrow_.xyann[0], -0.5)
    assert disp.ax_.get_ylabel() == "fME of x − 0.5"


def test_extrapolation_rug(pyplot, eff):
    assert len(eff.extrapolated) > 0
    disp = FMEDisplay.from_effects(eff)
    rug = offsets(disp.extrapolation_)
    assert len(rug) == len(eff.extrapolated)
    np.testing.assert_allclose(np.sort(rug[:, 0]), np.sort(eff.data.loc[eff.extrapolated.index, "x"]))
    labels = [t.get_text() for t in disp.legend_.get_texts()]
    assert f"left out (extrapolation): {len(eff.extrapolated)}" in labels
    assert not np.allclose(disp.extrapolation_.get_edgecolor()[0][:3], disp.scatter_.get_facecolor()[0][:3])


def test_not_checked_is_not_zero_found(pyplot, data):
    disp = FMEDisplay.from_effects(fme.fme(square, data, {"x": 1.0}))
    labels = [t.get_text() for t in disp.legend_.get_texts()]
    assert "extrapolation: not checked" in labels
    assert disp.extrapolation_ is None


def test_units_in_labels(pyplot, eff):
    disp = FMEDisplay.from_effects(eff, units={"x": "rooms"}, prediction_unit="USD 1,000")
    assert disp.ax_.get_xlabel() == "x (rooms)"
    assert disp.ax_.get_ylabel() == "fME of x + 1 rooms (USD 1,000)"


def test_hexbin_above_threshold(pyplot, data):
    res = fme.fme(square, data, {"x": 1.0})
    assert FMEDisplay.from_effects(res).hexbin_ is None
    disp = FMEDisplay.from_effects(res, hexbin_threshold=50, gridsize=10)
    assert disp.kind_ == "hexbin" and disp.scatter_ is None
    counts = np.asarray(disp.hexbin_.get_array())
    assert counts.ndim == 1 and len(counts) == len(disp.hexbin_.get_offsets())
    assert counts.sum() == res.n  # every evaluated row lands in one hexagon
    assert disp.colorbar_ is not None


def test_map_for_two_features(pyplot, data):
    res = fme.fme(lambda d: d["x"] * d["z"], data, {"x": 1.0, "z": 0.5})
    disp = FMEDisplay.from_effects(res, gridsize=8)
    assert disp.kind_ == "map"
    means = np.asarray(disp.hexbin_.get_array())
    assert means.min() >= res.results["fme"].min() - 1e-12 and means.max() <= res.results["fme"].max() + 1e-12
    np.testing.assert_allclose(np.subtract(disp.arrow_.xy, disp.arrow_.xyann), [1.0, 0.5])
    assert (disp.ax_.get_xlabel(), disp.ax_.get_ylabel()) == ("x", "z")
    assert "mean fME" in disp.colorbar_.ax.get_ylabel()


def test_map_over_an_unstepped_feature(pyplot, data):
    res = fme.fme(lambda d: d["x"] * d["z"], data, {"x": 1.0})
    disp = FMEDisplay.from_effects(res, features=["x", "z"], gridsize=8)
    np.testing.assert_allclose(np.subtract(disp.arrow_.xy, disp.arrow_.xyann), [1.0, 0.0])


@pytest.mark.parametrize("steps", [{"x": 1.0, "z": 1.0, "w": 1.0}, {"g": "a"}])
def test_density_for_three_features_or_categorical(pyplot, data, steps):
    res = fme.fme(lambda d: d["x"] + d["z"] * d["w"] + d["x"] * (d["g"] == "a"), data, steps)
    disp = FMEDisplay.from_effects(res)
    assert disp.kind_ == "density"
    assert disp.hist_ is not None and disp.kde_line_ is not None
    assert disp.scatter_ is None and disp.arrow_ is None
    np.testing.assert_allclose(disp.ame_line_.get_xdata(), [res.ame, res.ame])
    assert disp.ax_.get_xlabel().startswith("fME of ") and disp.ax_.get_ylabel() == "density"


def test_density_of_constant_effects(pyplot, data):
    res = fme.fme(lambda d: d["x"] + 1.0 * (d["g"] == "a"), data, {"g": "a"})  # fME = 1 for every row
    disp = FMEDisplay.from_effects(res)
    assert len(disp.hist_) == 1 and disp.kde_line_ is None


def test_draws_into_given_axes_and_returns_self(pyplot, eff):
    fig, ax = pyplot.subplots()
    disp = FMEDisplay._from_result(eff, None, None, None, None)
    assert disp.plot(ax=ax) is disp
    assert disp.ax_ is ax and disp.figure_ is fig
    assert disp.scatter_ in ax.collections


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"kind": "pie"}, "kind must be one of"),
        ({"kind": "map"}, "two numeric features"),
        ({"features": ["nope"]}, "not columns"),
    ],
)
def test_errors(pyplot, eff, kw, msg):
    with pytest.raises(ValueError, match=msg):
        FMEDisplay.from_effects(eff, **kw)


def test_nlm_display_requires_nlm(pyplot, data):
    with pytest.raises(ValueError, match="nlm=True"):
        NLMDisplay.from_effects(fme.fme(square, data, {"x": 1.0}))


# ----------------------------------------------------------------- NLMDisplay
def test_nlm_scatter_colours_negative_values(pyplot, data):
    res = fme.fme(lambda d: np.sin(3 * d["x"]), data, {"x": 1.5}, nlm=True)
    disp = NLMDisplay.from_effects(res)
    nlm = res.results["nlm"].to_numpy()
    ok = np.isfinite(nlm)
    np.testing.assert_allclose(offsets(disp.scatter_)[:, 1], nlm[ok])
    colors = disp.scatter_.get_facecolor()[:, :3]
    negative = nlm[ok] < 0
    assert negative.any() and (~negative).any()
    assert len({tuple(c) for c in colors[negative]} & {tuple(c) for c in colors[~negative]}) == 0
    np.testing.assert_allclose(disp.ame_line_.get_ydata()[0], res.anlm)


def test_nlm_map_norm_centred_at_zero(pyplot, data):
    res = fme.fme(lambda d: np.sin(2 * d["x"]) * d["z"], data, {"x": 1.0, "z": 1.0}, nlm=True)
    disp = NLMDisplay.from_effects(res, gridsize=8)
    norm = disp.hexbin_.norm
    assert norm.vcenter == 0 and norm.vmax == 1 and norm.vmin <= -1
    assert disp.hexbin_.get_cmap().name == "RdBu"


def test_nlm_nan_counted_in_legend(pyplot, data):
    # A prediction constant along the path gives undefined NLMs.
    res = fme.fme(lambda d: np.where(d["x"] > 0, 1.0, d["x"]), data, {"x": 0.25}, nlm=True)
    n_nan = int(res.results["nlm"].isna().sum())
    assert n_nan > 0
    disp = NLMDisplay.from_effects(res)
    assert f"NLM undefined (NaN): {n_nan}" in [t.get_text() for t in disp.legend_.get_texts()]
    assert len(disp.scatter_.get_offsets()) == res.n - n_nan


def test_fme_nlm_side_by_side(pyplot, eff):
    disp = EffectsDisplay.from_effects(eff)
    assert disp.axes_.shape == (2,)
    assert disp.fme_display.ax_ is disp.axes_[0] and disp.nlm_display.ax_ is disp.axes_[1]
    assert disp.nlm_display.ax_.get_ylabel().startswith("NLM of")
    fig = plot_fme_nlm(eff)
    assert len([a for a in fig.axes if a.get_label() != "<colorbar>"]) == 2


def test_fme_nlm_side_by_side_takes_ax_as_every_display(pyplot, eff):
    """ax= is two Axes, or one Axes whose place becomes the two panels (as scikit-learn's displays split it)."""
    fig, axs = pyplot.subplots(1, 2)
    disp = EffectsDisplay.from_effects(eff, ax=axs)
    assert disp.fme_display.ax_ is axs[0] and disp.nlm_display.ax_ is axs[1]
    fig, (left, right) = pyplot.subplots(1, 2)
    disp = EffectsDisplay.from_effects(eff, ax=right)
    assert left in fig.axes and right not in fig.axes
    box = right.get_position()
    panels = [disp.fme_display.ax_.get_position(), disp.nlm_display.ax_.get_position()]
    assert all(box.x0 - 1e-9 <= p.x0 and p.x1 <= box.x1 + 1e-9 for p in panels)
    with pytest.raises(ValueError, match="either ax= or axes="):
        EffectsDisplay.from_effects(eff, ax=axs, axes=axs)


# ----------------------------------------------------------------- secant / tangent
def test_secant_tangent(pyplot, data):
    disp = SecantTangentDisplay.from_model(square, data, "x", 1.0)
    res = fme.fme(square, data, {"x": 1.0})
    # f = x^2: dME = 2x, so dME*h = 2x and the fME (secant) = 2x + 1.
    xy = offsets(disp.scatter_)
    np.testing.assert_allclose(xy[:, 0], 2 * data["x"], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(xy[:, 1], res.results["fme"])
    line = np.column_stack(disp.identity_line_.get_data())
    np.testing.assert_allclose(line[:, 0], line[:, 1])
    np.testing.assert_allclose(disp.mean_abs_error, 1.0, rtol=1e-6)


def test_secant_tangent_rejects_multivariate(pyplot, data):
    res = fme.fme(lambda d: d["x"] * d["z"], data, {"x": 1.0, "z": 1.0})
    with pytest.raises(ValueError, match="one numeric step"):
        SecantTangentDisplay.from_effects(res, fme.dme(square, data, "x"))


# ----------------------------------------------------------------- cAME tree
def _summary(values: np.ndarray, prefix: str) -> dict:
    from scipy import stats

    n, m, sd = len(values), float(np.mean(values)), float(np.std(values, ddof=1))
    half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
    return {
        prefix: m,
        f"sd_{'fme' if prefix == 'came' else 'nlm'}": sd,
        f"cov_{'fme' if prefix == 'came' else 'nlm'}": sd / abs(m),
        f"{prefix}_ci_low": m - half,
        f"{prefix}_ci_high": m + half,
    }


@pytest.fixture(scope="module")
def part(data):
    """A fake cAME partition with exactly the attributes of the lead's contract."""
    return _fake_partition(data, lambda d: d["x"] ** 2 + d["z"] * (d["g"] == "a"))


def _fake_partition(data, model):
    effects = fme.fme(model, data, {"x": 1.0}, nlm=True)
    X = effects.feature_values
    # Root 1 splits x <= 0.1 -> node 2 (splits g: a | b, c -> leaves 3, 4) and leaf 5.
    leaf = np.where(X["x"] > 0.1, 5, np.where(X["g"] == "a", 3, 4))
    leaf_of_row = pd.Series(leaf, index=effects.results.index)
    nodes = pd.DataFrame(
        {
            "parent": pd.array([pd.NA, 1, 2, 2, 1], dtype="Int64"),
            "depth": [0, 1, 2, 2, 1],
            "is_leaf": [False, False, True, True, True],
            "n": [effects.n] + [int((leaf != 5).sum())] + [int((leaf == k).sum()) for k in (3, 4, 5)],
            "mean": np.nan,
            "split_feature": ["x", "g", None, None, None],
            "split_value": [0.1, np.nan] + [np.nan] * 3,
            "split_levels": [None, {"a": 1, "b": 2, "c": 2}, None, None, None],
            "p_value": [0.0001, 0.0321, np.nan, np.nan, np.nan],
            "statistic": [30.0, 5.0, np.nan, np.nan, np.nan],
            "children": [(2, 5), (3, 4), (), (), ()],
        },
        index=pd.Index([1, 2, 3, 4, 5], name="node"),
    )
    rows, rules = [], {3: "x <= 0.1 & g in {a}", 4: "x <= 0.1 & g in {b, c}", 5: "x > 0.1"}
    for node in (3, 4, 5):
        mask = leaf_of_row == node
        fm, nl = effects.results.loc[mask, "fme"].to_numpy(), effects.results.loc[mask, "nlm"].to_numpy()
        rows.append(
            {
                "node": node,
                "n": int(mask.sum()),
                **_summary(fm, "came"),
                **_summary(nl, "canlm"),
                "n_nlm": int(mask.sum()),
                "rule": rules[node],
            }
        )
    leaves = pd.DataFrame(rows)
    root = pd.DataFrame(
        [
            {
                "node": 1,
                "n": effects.n,
                **_summary(effects.results["fme"].to_numpy(), "came"),
                **_summary(effects.results["nlm"].to_numpy(), "canlm"),
                "rule": "all",
            }
        ]
    )
    return SimpleNamespace(
        leaves=leaves,
        root=root,
        tree=SimpleNamespace(nodes_=nodes),
        effects=effects,
        leaf_of_row=leaf_of_row,
        conf_level=0.95,
    )


def test_tree_layout_and_edge_labels(part):
    pos = tree_layout(part.tree.nodes_)
    assert [pos[k][0] for k in (3, 4, 5)] == [0.0, 1.0, 2.0]
    assert pos[1] == (1.25, 0.0) and pos[2] == (0.5, -1.0) and pos[5][1] == -2.0
    nodes = part.tree.nodes_
    assert (edge_label(nodes, 1, 2), edge_label(nodes, 1, 5)) == ("<= 0.1", "> 0.1")
    assert (edge_label(nodes, 2, 3), edge_label(nodes, 2, 4)) == ("{a}", "{b, c}")


def test_partition_display(pyplot, part):
    disp = PartitionDisplay.from_partition(part)
    leaf_ids = list(part.leaves["node"])
    assert sorted(disp.leaf_axes_) == sorted(leaf_ids)
    assert len(disp.ax_.child_axes) == len(leaf_ids)
    for _, row in part.leaves.iterrows():
        text = disp.leaf_labels_[row["node"]].get_text()
        est, lo, hi = fmt_ci(row["came"], row["came_ci_low"], row["came_ci_high"])
        assert f"n = {row['n']}" in text and f"cAME {est} [{lo}, {hi}]" in text and "cANLM" in text
        inset = disp.leaf_axes_[row["node"]]
        heights = [b.get_height() for b in disp.leaf_hists_[row["node"]]]
        widths = [b.get_width() for b in disp.leaf_hists_[row["node"]]]
        np.testing.assert_allclose(np.dot(heights, widths), 1.0)  # a density of that leaf's fMEs
        np.testing.assert_allclose(disp.leaf_came_lines_[row["node"]].get_xdata()[0], row["came"])
        assert inset.get_ylim() == disp.leaf_axes_[leaf_ids[0]].get_ylim()  # shared scale
    assert sorted(disp.node_boxes_) == [1, 2]
    assert "p < 0.001" in disp.node_boxes_[1].get_text() and "p = 0.032" in disp.node_boxes_[2].get_text()
    assert {disp.edge_labels_[k].get_text() for k in (2, 5)} == {"<= 0.1", "> 0.1"}
    assert "95% CI" in disp.note_.get_text()


def test_partition_into_given_axes(pyplot, part):
    fig, ax = pyplot.subplots()
    disp = PartitionDisplay.from_partition(part, ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig


def test_leaf_label_without_nlm():
    row = pd.Series({"node": 7, "n": 1234, "came": 6.789, "came_ci_low": 6.58, "came_ci_high": 7.0, "cov_fme": 0.31})
    # the share as the report table prints it (one decimal, fme._utils.numfmt.fmt_share)
    assert leaf_label(row, 2468) == "Node 7: n = 1,234 (50.0%)\ncAME 6.79 [6.58, 7.00]\nCoV 0.31"


@pytest.mark.parametrize(
    "args, expected",
    [
        ((6.789, 6.58, 7.0), ("6.79", "6.58", "7.00")),
        ((0.8612, 0.6503, 1.0721), ("0.86", "0.65", "1.07")),
        ((1234.5, 1000.0, 1469.0), ("1,234", "1,000", "1,469")),
        ((5.0, np.nan, np.nan), ("5.000", "-", "-")),  # as the report table: 3 decimals and "-" without a CI
    ],
)
def test_fmt_ci(args, expected):
    assert fmt_ci(*args) == expected


def test_fmt_p_never_prints_zero():
    assert fmt_p(1e-9) == "p < 0.001" and fmt_p(0.0123) == "p = 0.012"


# ----------------------------------------------------------------- style and import
def _luminance(hex_colour: str) -> float:
    rgb = np.array([int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(lin @ [0.2126, 0.7152, 0.0722])


@pytest.mark.parametrize("role", ["points", "average", "negative", "extrapolation", "arrow", "came", "bars"])
def test_data_colours_contrast_on_white(role):
    assert 1.05 / (_luminance(COLORS[role]) + 0.05) >= 3.0  # WCAG 1.4.11


def test_import_fme_does_not_import_matplotlib():
    code = "import sys, fme, fme.plotting; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------- package layout
PLOTTING = Path(fme.__file__).parent / "plotting"
#: The lower modules: every display imports from them, they import no display.
HELPERS = {"_common", "data", "rugs"}


def _fme_imports(path: Path) -> set[str]:
    """Modules of fme imported by ``path`` (any depth, also inside functions), as dotted names under fme."""
    package = ["fme", *path.parent.relative_to(PLOTTING.parent).parts]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if target == "fme.plotting" or not node.module:  # ``from . import x`` / ``from fme.plotting import X``
                out |= {f"{target}.{a.name}" for a in node.names}
            out.add(target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m == "fme" or m.startswith("fme.")}


def test_plotting_helpers_import_no_display():
    displays = {p.stem for p in PLOTTING.glob("*.py")} - HELPERS - {"__init__"}
    assert displays == {"came", "effects", "extrapolation", "joint_tree", "nlm", "secant", "tree"}
    for helper in HELPERS:
        imported = _fme_imports(PLOTTING / f"{helper}.py")
        assert not {m for m in imported if m.startswith("fme.plotting.") and m.split(".")[2] not in HELPERS}, helper
        assert "fme.plotting" not in imported and not any(m.startswith("fme.report") for m in imported), helper


#: Displays built on another display (module -> the display modules it imports): NLMDisplay is an FMEDisplay; a
#: joint partition's tree takes its layout and labels from the cAME tree's.
EXTENDS = {"nlm": {"effects"}, "joint_tree": {"tree"}}


def test_plotting_displays_import_one_way():
    """Displays import the helpers and the layers below (effects, margins, steps), never the report nor each other,
    but the display a display extends (:data:`EXTENDS`)."""
    for path in PLOTTING.glob("*.py"):
        if path.stem in HELPERS or path.stem == "__init__":
            continue
        imported = _fme_imports(path)
        inside = {m.split(".")[2] for m in imported if m.startswith("fme.plotting.")}
        assert inside <= HELPERS | EXTENDS.get(path.stem, set()), (path.stem, inside)
        assert not any(m.startswith("fme.report") for m in imported), path.stem


def test_plotting_reexports_the_display_objects():
    import fme.plotting as plotting
    from fme.plotting import _common, came, effects, extrapolation, joint_tree, nlm, secant, tree

    for name, module in [
        ("FMEDisplay", effects),
        ("NLMDisplay", nlm),
        ("EffectsDisplay", nlm),
        ("plot_fme_nlm", nlm),
        ("SecantTangentDisplay", secant),
        ("PartitionDisplay", tree),
        ("JointPartitionDisplay", joint_tree),
        ("CAMEDisplay", came),
        ("ExtrapolationDisplay", extrapolation),
        ("PlotStyle", _common),
        ("DEFAULT_STYLE", _common),
        ("COLORS", _common),
        ("OKABE_ITO", _common),
    ]:
        assert getattr(plotting, name) is getattr(module, name)
    assert sorted(plotting.__all__) == sorted(
        [
            "OKABE_ITO",
            "COLORS",
            "FMEDisplay",
            "NLMDisplay",
            "EffectsDisplay",
            "SecantTangentDisplay",
            "PartitionDisplay",
            "JointPartitionDisplay",
            "CAMEDisplay",
            "ExtrapolationDisplay",
            "PlotStyle",
            "DEFAULT_STYLE",
            "plot_fme_nlm",
        ]
    )


@pytest.mark.parametrize("path", sorted(PLOTTING.glob("*.py")), ids=lambda p: p.name)
def test_plotting_modules_stay_small(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 600


def test_plotting_does_not_use_seaborn():
    """The package docstring says why each figure is drawn without seaborn; seaborn is no dependency."""
    import fme.plotting as plotting

    paths = [*PLOTTING.glob("*.py"), PLOTTING.parent / "report" / "analysis" / "figures.py"]
    sources = [p.read_text(encoding="utf-8") for p in paths]
    assert not any(re.search(r"^\s*(import|from)\s+seaborn\b", s, re.M) for s in sources)
    doc = plotting.__doc__
    assert "Why matplotlib and not seaborn" in doc
    for figure in ("Histogram + density", "NLM histogram", "coloured by NLM", "Per-leaf distributions"):
        assert figure in doc, figure


def test_per_class_output_needs_choice(pyplot, data):
    sklearn = pytest.importorskip("sklearn.linear_model")
    y = (data["x"] > 0).astype(int)
    model = sklearn.LogisticRegression().fit(data[["x", "z"]], y)
    eff = fme.fme(model, data[["x", "z"]], {"x": 1.0}, target_class="all")
    with pytest.raises(ValueError, match="pass output="):
        FMEDisplay.from_effects(eff)
    disp = FMEDisplay.from_effects(eff, output=1)
    assert disp.column == "fme_1"
    np.testing.assert_allclose(disp.ame_line_.get_ydata()[0], eff.results["fme_1"].mean())


# ----------------------------------------------------------------- awkward distributions (fme.plotting.data)
EPS = np.finfo(float).eps
AWKWARD = {
    "equal": np.full(6, 2.5),
    "tiny": 2.5 * (1.0 + np.arange(6) * EPS),  # relative spread ~1e-15: a linear model's fMEs
    "one": np.array([2.5]),
    "two": np.array([2.5, 3.0]),
    "nan_only": np.full(4, np.nan),
    "inf_mixed": np.array([1.0, np.inf, 2.0, -np.inf, 3.0, np.nan]),
}


def _awkward_display(cls, values, kind="map"):
    n = values.size
    x = pd.DataFrame({"x": np.linspace(0.0, 1.0, n), "z": np.linspace(5.0, 2.0, n)})
    x = x if kind == "map" else x[["x"]]
    finite = values[np.isfinite(values)]
    return cls(
        values=values,
        feature_values=x,
        steps=(fme.steps.Step("x", "numeric", 1.0),),
        average=float(finite.mean()) if finite.size else float("nan"),
        extrapolated=x.iloc[:0],
        extrapolation_checked=True,
    )


@pytest.mark.parametrize("case", list(AWKWARD))
@pytest.mark.parametrize("kind", ["scatter", "hexbin", "map", "density"])
@pytest.mark.parametrize("cls", [FMEDisplay, NLMDisplay])
def test_any_distribution_is_drawn_and_what_is_left_out_is_said(pyplot, cls, kind, case):
    import warnings

    values = AWKWARD[case]
    disp = _awkward_display(cls, values, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Too many bins", no singular-KDE or empty-slice warnings
        disp.plot(kind=kind)
        disp.figure_.canvas.draw()
    finite = values[np.isfinite(values)]
    if kind == "scatter":
        np.testing.assert_array_equal(offsets(disp.scatter_)[:, 1], finite)
    elif kind in ("hexbin", "map") and finite.size:
        counts = disp.hexbin_.get_array()
        assert (counts.sum() if kind == "hexbin" else counts.size) >= 1
    elif kind == "density":
        widths = np.array([b.get_width() for b in disp.hist_])
        assert np.all(widths > 0)
        if finite.size:
            heights = np.array([b.get_height() for b in disp.hist_])
            np.testing.assert_allclose(np.dot(heights, widths), 1.0)
            lo, hi = disp.hist_[0].get_x(), disp.hist_[-1].get_x() + widths[-1]
            assert lo <= finite.min() and finite.max() <= hi
        assert (disp.kde_line_ is None) == (case != "inf_mixed")  # a density needs >= 3 values with a spread
    labels = [t.get_text() for t in disp.legend_.get_texts()]
    n_nan, n_inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
    if cls is NLMDisplay:
        assert f"NLM undefined (NaN): {n_nan}" in labels
        expected = "not drawn: 2 non-finite values (1 +inf, 1 -inf)" if n_inf else None
    else:
        expected = {
            "nan_only": "not drawn: 4 non-finite values (4 NaN)",
            "inf_mixed": "not drawn: 3 non-finite values (1 NaN, 1 +inf, 1 -inf)",
        }.get(case)
    assert (expected in labels) if expected else not any(s.startswith("not drawn") for s in labels)
    if kind != "map":  # the map shows the average through its colour scale only
        assert (disp.ame_line_ is None) == (finite.size == 0)


def test_non_finite_feature_values_are_left_out_and_said(pyplot):
    disp = _awkward_display(FMEDisplay, np.array([1.0, 2.0, 3.0, 4.0]), "scatter")
    disp.feature_values.loc[1, "x"] = np.inf
    disp.plot(kind="scatter")
    np.testing.assert_array_equal(offsets(disp.scatter_)[:, 1], [1.0, 3.0, 4.0])
    assert "not drawn: 1 non-finite value (1 +inf)" in [t.get_text() for t in disp.legend_.get_texts()]


@pytest.mark.parametrize("case", ["equal", "tiny", "inf_mixed"])
def test_secant_tangent_any_distribution(pyplot, case):
    values = AWKWARD[case]
    disp = SecantTangentDisplay(
        fme_values=values,
        tangent_values=np.where(np.isfinite(values), 2.5, 0.0),
        step=fme.steps.Step("x", "numeric", 1.0),
    ).plot()
    finite = np.isfinite(values)
    np.testing.assert_array_equal(offsets(disp.scatter_)[:, 1], values[finite])
    labels = [t.get_text() for t in disp.legend_.get_texts()]
    assert ("not drawn: 3 non-finite values (1 NaN, 1 +inf, 1 -inf)" in labels) == (case == "inf_mixed")
    assert np.isfinite(disp.mean_abs_error)


def test_partition_display_with_float_flat_fmes(pyplot, data):
    # fMEs of a linear model: 2 up to rounding in every leaf; numpy cannot cut that range into 20 bins.
    part = _fake_partition(data, lambda d: 2.0 * d["x"] + d["z"])
    fm = part.effects.results["fme"].to_numpy()
    assert 0 < np.ptp(fm) < 1e-12
    disp = PartitionDisplay.from_partition(part)
    for node, bars in disp.leaf_hists_.items():
        assert len(bars) == 1 and bars[0].get_x() < 2.0 < bars[0].get_x() + bars[0].get_width()


# ------------------------------------------------------------------ legible trees
def _synthetic_tree(k: int, chain: bool):
    """Nodes and leaves of a tree with k leaves (balanced, or a chain of depth k - 1) and long numbers."""
    rows: dict[int, dict] = {}
    counter = [0]

    def make(n_leaves, parent, depth):
        counter[0] += 1
        me = counter[0]
        rows[me] = {
            "parent": np.nan if parent is None else parent,
            "depth": depth,
            "n": 1000 * n_leaves,
            "is_leaf": n_leaves == 1,
            "children": (),
            "split_feature": None,
            "split_value": np.nan,
            "split_levels": None,
            "p_value": np.nan,
            "statistic": np.nan,
        }
        if n_leaves > 1:
            left = 1 if chain else n_leaves // 2
            rows[me].update(split_feature="a_long_feature_name", split_value=1234.56789, p_value=1e-4)
            rows[me]["children"] = (make(left, me, depth + 1), make(n_leaves - left, me, depth + 1))
        return me

    make(k, None, 0)
    nodes = pd.DataFrame.from_dict(rows, orient="index")
    leaf_ids = [int(i) for i in nodes.index[nodes["is_leaf"].astype(bool)]]
    leaves = pd.DataFrame(
        [
            {
                "node": i,
                "n": 12345,
                "came": -1234.5678,
                "came_ci_low": -1299.1,
                "came_ci_high": -1170.2,
                "cov_fme": 12.3456,
                "canlm": 0.99681,
                "canlm_ci_low": 0.99372,
                "canlm_ci_high": 0.99991,
            }
            for i in leaf_ids
        ]
    )
    rng = np.random.default_rng(k)
    return nodes, leaves, {i: rng.normal(-1234.0, 100.0, 200) for i in leaf_ids}


@pytest.mark.parametrize("chain", [False, True])
@pytest.mark.parametrize("k", [2, 3, 4, 6, 9, 12, 16])
def test_tree_boxes_never_overlap_or_clip_up_to_16_leaves(k, chain):
    import io

    import matplotlib.pyplot as plt

    nodes, leaves, values = _synthetic_tree(k, chain)
    with plt.rc_context({"font.size": 10.0, "figure.dpi": 100}):  # as the report draws it
        disp = PartitionDisplay(
            nodes=nodes,
            leaves=leaves,
            leaf_values=values,
            average=-1234.5,
            n_total=12345 * k,
            conf_level=0.95,
            step_text="x + 1",
            root_label="AME -1,234.6 [-1,299.1, -1,170.2]",
        ).plot()
        fig = disp.figure_
        fig.savefig(io.BytesIO(), format="svg")  # the report saves without bbox_inches="tight"
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        boxes = [("leaf label", n, t.get_bbox_patch().get_window_extent(r)) for n, t in disp.leaf_labels_.items()]
        boxes += [("leaf panel", n, a.get_tightbbox(r)) for n, a in disp.leaf_axes_.items()]
        boxes += [("node", n, t.get_bbox_patch().get_window_extent(r)) for n, t in disp.node_boxes_.items()]
        boxes += [("edge label", n, t.get_bbox_patch().get_window_extent(r)) for n, t in disp.edge_labels_.items()]
        boxes += [("note", 0, disp.note_.get_window_extent(r))]
        page = fig.bbox
        plt.close(fig)
    assert len(disp.leaf_labels_) == k
    overlaps = [(a[:2], b[:2]) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if a[2].overlaps(b[2])]
    assert overlaps == []
    clipped = [
        b[:2]
        for b in boxes
        if b[2].x0 < page.x0 - 0.5 or b[2].x1 > page.x1 + 0.5 or b[2].y0 < page.y0 - 0.5 or b[2].y1 > page.y1 + 0.5
    ]
    assert clipped == []


def test_honest_tree_counts_one_set_of_rows_and_says_which(pyplot):
    """Every number and panel of an honest partition's figure is over the rows that estimate the leaves: the
    boxes' counts add up, the shares are of those rows, the root box and the dashed line are their AME; the note
    names them and gives the AME of all rows beside."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=600), "b": rng.normal(size=600)})
    m = RandomForestRegressor(n_estimators=20, random_state=0).fit(X, X.a * (X.b > 0) + rng.normal(size=600) * 0.1)
    eff = fme.fme(m, X, {"a": 1.0})
    part = fme.came(eff, features=["b"], n_partitions=2, random_state=0)
    assert part.honest
    d = part.plot()
    n_est = int(part.leaves["n"].sum())
    assert n_est == len(part.estimated_on) and n_est + len(part.grown_on) == 600
    root_box = d.node_boxes_[1].get_text()
    came_est = eff.results["fme"].loc[part.estimated_on].mean()
    assert f"n = {n_est:,}" in root_box and f"of these {n_est:,} rows" in root_box
    assert d.average == pytest.approx(came_est, rel=1e-12) and d.n_total == n_est
    assert d.leaf_came_lines_[int(part.leaves["node"].iloc[0])].get_xdata()[0] == part.leaves["came"].iloc[0]
    # every panel holds exactly its leaf's estimation rows
    assert {k: len(v) for k, v in d.leaf_values.items()} == dict(zip(part.leaves["node"], part.leaves["n"]))
    for node, values in d.leaf_values.items():
        rows = part.estimated_on[part.leaf_of_row.loc[part.estimated_on] == node]
        assert sorted(values) == sorted(eff.results["fme"].loc[rows])
    share = 100 * part.leaves["n"].iloc[0] / n_est
    assert f"({share:.1f}%)" in d.leaf_labels_[int(part.leaves["node"].iloc[0])].get_text()
    note = " ".join(d.note_.get_text().split())
    assert (
        f"Rows: the {n_est:,} that estimate the leaves (honest; the tree grew on {600 - n_est:,} others): every "
        f"count, share, cAME and CI, and the panels (all {n_est:,})." in note
    )
    assert "The AME of all 600 evaluated rows is" in note and "dashed: the estimation rows' AME" in note
    pyplot.close("all")


# ----------------------------------------------------------------- bad input: fme's own exceptions
def _no_nlm(data):
    return fme.fme(square, data, {"x": 1.0}, inference="sample")


REFUSALS = {
    "effects_without_nlm": (
        lambda data, eff: EffectsDisplay.from_effects(_no_nlm(data)),
        fme.ParameterError,
        r"EffectsDisplay.*no NLM.*fme\.fme\(\.\.\., nlm=True\)",
    ),
    "nlm_without_nlm": (
        lambda data, eff: NLMDisplay.from_effects(_no_nlm(data)),
        fme.ParameterError,
        r"NLMDisplay.*nlm=True",
    ),
    "fme_not_a_result": (
        lambda data, eff: FMEDisplay.from_effects(data),
        fme.ParameterError,
        r"FMEDisplay.from_effects takes .*got DataFrame",
    ),
    "fme_unknown_kind": (
        lambda data, eff: FMEDisplay.from_effects(eff, kind="pie"),
        fme.ParameterError,
        "kind must be one of",
    ),
    "fme_unknown_feature": (
        lambda data, eff: FMEDisplay.from_effects(eff, features=["nope"]),
        fme.FeatureError,
        r"\['nope'\] are not columns",
    ),
    "fme_map_of_one": (
        lambda data, eff: FMEDisplay.from_effects(eff, kind="map"),
        fme.ParameterError,
        "two numeric features",
    ),
    "effects_unknown_output": (
        lambda data, eff: EffectsDisplay.from_effects(eff, output="a"),
        fme.ParameterError,
        "not one of the classes",
    ),
    "effects_ax_and_axes": (
        lambda data, eff: EffectsDisplay.from_effects(eff, ax=[None, None], axes=[None, None]),
        fme.ParameterError,
        "either ax= or axes=",
    ),
    "secant_not_a_result": (
        lambda data, eff: SecantTangentDisplay.from_effects(data, data),
        fme.ParameterError,
        "SecantTangentDisplay.from_effects takes",
    ),
    "secant_two_steps": (
        lambda data, eff: SecantTangentDisplay.from_effects(
            fme.fme(lambda d: d["x"] * d["z"], data, {"x": 1.0, "z": 1.0}, inference="sample"),
            fme.dme(square, data, "x"),
        ),
        fme.StepError,
        "one numeric step",
    ),
    "secant_dme_not_a_frame": (
        lambda data, eff: SecantTangentDisplay.from_effects(eff, np.ones(3)),
        fme.DataError,
        r"'dme' column.*got ndarray",
    ),
    "secant_dme_missing_rows": (
        lambda data, eff: SecantTangentDisplay.from_effects(eff, fme.dme(square, data, "x").iloc[:3]),
        fme.DataError,
        "lacks",
    ),
    "secant_model_unknown_feature": (
        lambda data, eff: SecantTangentDisplay.from_model(square, data, "nope", 1.0),
        fme.FMEError,
        "nope",
    ),
    "partition_not_a_partition": (
        lambda data, eff: PartitionDisplay.from_partition(eff),
        fme.ParameterError,
        r"from_partition takes the result of fme\.came.*FMEResult",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_every_display_refuses_bad_input_with_an_fme_error(pyplot, data, eff, case):
    call, error, msg = REFUSALS[case]
    with pytest.raises(error, match=msg) as info:
        call(data, eff)
    assert isinstance(info.value, fme.FMEError)


def test_plotting_raises_no_bare_builtin_exception():
    """Every refusal in fme.plotting is one of fme's exceptions (which are also ValueError/TypeError)."""
    bare = []
    for path in sorted(Path(fme.plotting.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(exc, ast.Name) and exc.id in ("ValueError", "TypeError", "KeyError"):
                    bare.append(f"{path.name}:{node.lineno} {exc.id}")
    assert bare == []


# ----------------------------------------------------------------- legends clear of the data, no tangent for trees
def _covered_points(legend, collection) -> np.ndarray:
    """The drawn points of ``collection`` inside the legend's box, in display coordinates (after a draw)."""
    legend.figure.canvas.draw()
    box = legend.get_window_extent()
    xy = collection.get_offset_transform().transform(offsets(collection))
    inside = (box.x0 <= xy[:, 0]) & (xy[:, 0] <= box.x1) & (box.y0 <= xy[:, 1]) & (xy[:, 1] <= box.y1)
    return xy[inside]


@pytest.mark.parametrize(
    "tangent, secant",
    [
        ([2.5], [2.5]),  # the only point
        ([0.0, 0.0, 1.0, 1.0, 0.5], [0.0, 1.0, 0.0, 1.0, 0.5]),  # a point in every corner and the middle
        ([0.0, 0.1, 0.2, 1.0], [1.0, 0.95, 0.9, 0.0]),  # points in the upper left
    ],
)
def test_secant_tangent_legend_covers_no_point(pyplot, tangent, secant):
    disp = SecantTangentDisplay(
        fme_values=np.array(secant), tangent_values=np.array(tangent), step=Step("x", "numeric", 1.0)
    ).plot()
    assert len(offsets(disp.scatter_)) == len(secant)
    assert _covered_points(disp.legend_, disp.scatter_).size == 0


@pytest.fixture(scope="module")
def tree_model(data):
    tree = pytest.importorskip("sklearn.ensemble")
    y = np.sin(2 * data["x"]) + data["z"]
    return tree.RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(data[["x", "z"]], y)


def test_secant_tangent_of_a_tree_draws_no_tangent_and_warns_nothing(pyplot, data, tree_model):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no inference warning for an interval the figure does not show
        disp = SecantTangentDisplay.from_model(tree_model, data[["x", "z"]], "x", 1.0)
    assert disp.piecewise_constant
    assert disp.scatter_ is None and disp.identity_line_ is None
    assert not disp.ax_.collections and not disp.ax_.lines
    assert "No tangent drawn" in disp.note_.get_text() and "piecewise constant along x" in disp.note_.get_text()


def test_secant_tangent_reads_a_piecewise_constant_prediction_from_the_slopes(pyplot, data):
    def steps_of_half(d):
        return np.floor(2 * d["x"])

    eff = fme.fme(steps_of_half, data, {"x": 1.0}, inference="sample")
    derivative = fme.dme(steps_of_half, data, "x")
    disp = SecantTangentDisplay.from_effects(eff, derivative)
    # the slope is 0 wherever the central difference crosses no jump: almost every row
    assert disp.zero_slope_share > 0.9
    assert disp.piecewise_constant and disp.scatter_ is None and "No tangent drawn" in disp.note_.get_text()
    smooth = SecantTangentDisplay.from_model(square, data, "x", 1.0)
    assert smooth.zero_slope_share == 0.0 and not smooth.piecewise_constant and smooth.note_ is None


def _nlm_grid_display(n: int = 20) -> NLMDisplay:
    """NLMs filling the whole plotting area (every corner holds points), both signs, an extreme point at -3."""
    gx, gy = np.meshgrid(np.linspace(0.0, 1.0, n), np.linspace(-1.0, 1.0, n))
    x, y = gx.ravel(), gy.ravel()
    y[0] = -3.0
    return NLMDisplay(
        values=y,
        feature_values=pd.DataFrame({"x": x}),
        steps=(Step("x", "numeric", 0.1),),
        average=float(y.mean()),
        extrapolated=pd.DataFrame({"x": [1.05, 1.2]}),
    )


@pytest.mark.parametrize("cls", [FMEDisplay, NLMDisplay])
def test_effects_legend_covers_no_point(pyplot, cls):
    disp = _nlm_grid_display()
    disp = cls(
        values=disp.values,
        feature_values=disp.feature_values,
        steps=disp.steps,
        average=disp.average,
        extrapolated=disp.extrapolated,
    ).plot(kind="scatter")
    assert _covered_points(disp.legend_, disp.scatter_).size == 0
    assert disp.legend_.get_window_extent().y0 >= disp.ax_.bbox.y1  # above the axes, not over the extreme point


def _rgb(colour) -> tuple:
    from matplotlib.colors import to_rgb

    return tuple(np.round(to_rgb(colour), 3))


def _legend_colours(legend) -> set:
    out = set()
    for handle in legend.legend_handles:
        if hasattr(handle, "get_markerfacecolor"):
            out |= {_rgb(handle.get_color()), _rgb(handle.get_markerfacecolor())}
        elif hasattr(handle, "get_facecolor"):
            out |= {_rgb(c) for c in np.atleast_2d(handle.get_facecolor())[:, :3]}
    return out


def test_nlm_scatter_explains_every_colour(pyplot, data):
    res = fme.fme(
        lambda d: np.sin(3 * d["x"]), data, {"x": 1.5}, nlm=True, extrapolation="envelope", inference="sample"
    )
    disp = NLMDisplay.from_effects(res)
    assert len(res.extrapolated) > 0 and disp.extrapolation_ is not None
    used = {_rgb(line.get_color()) for line in disp.ax_.lines}
    for collection in disp.ax_.collections:
        assert collection.get_array() is None  # no colour from a colormap: the legend explains every one
        used |= {_rgb(c) for c in np.vstack([collection.get_facecolor(), collection.get_edgecolor()])[:, :3]}
    assert {_rgb(COLORS["points"]), _rgb(COLORS["negative"])} <= used
    assert used <= _legend_colours(disp.legend_)
    labels = [t.get_text() for t in disp.legend_.get_texts()]
    nlm = res.results["nlm"].dropna()
    assert f"NLM < 0 (strongly non-linear): {int((nlm < 0).sum())}" in labels
    assert f"NLM ≥ 0: {int((nlm >= 0).sum())}" in labels and "NLM = 1 (linear)" in labels


@pytest.mark.parametrize("cls", [FMEDisplay, NLMDisplay])
def test_left_out_rug_stays_inside_the_axes(pyplot, eff, cls):
    disp = cls.from_effects(eff)
    disp.figure_.canvas.draw()
    rug = disp.extrapolation_
    assert rug.get_clip_on()
    box = disp.ax_.bbox
    xy = rug.get_offset_transform().transform(offsets(rug))
    half = np.sqrt(rug.get_sizes()[0]) * disp.figure_.dpi / 72 / 2  # the tick's half height, in pixels
    assert np.all((box.x0 <= xy[:, 0]) & (xy[:, 0] <= box.x1))
    assert np.all((box.y0 <= xy[:, 1] - half + 1e-6) & (xy[:, 1] + half <= box.y1))  # stands on the bottom edge
    x0, x1 = disp.ax_.get_xlim()
    assert x0 <= offsets(rug)[:, 0].min() and offsets(rug)[:, 0].max() <= x1
