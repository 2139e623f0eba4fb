"""Figure captions name what a figure draws: the unit of the effects it draws and the rows of its tree."""

from __future__ import annotations

from fme.report.inputs.config import ReportConfig
from fme.report.present.figure_text import figure_entries

from .configs import bare_config


def _cfg(tmp_path, unit: str = "") -> ReportConfig:
    return bare_config(tmp_path, target_unit=unit)


def _tree(honest: bool) -> dict:
    leaf = {"n": 129, "box": [{"feature": "z", "restricted": True}]}
    return {
        "figures": [{"kind": "came-tree", "svg": "t.svg", "png": "t.png"}],
        "partition": {"leaves": [leaf, {**leaf, "n": 1}], "method": "ctree", "honest": honest, "root": {}},
        "n": 130,
    }


def test_effect_figures_name_the_unit_and_paper_mode_trees_their_rows(tmp_path):
    cells = {"step": "x + 1", "ame": "0.51", "q25": "0.4", "q75": "0.6", "n": "130"}
    scatter = {
        "figures": [{"kind": "fme-scatter", "svg": "a.svg", "png": "a.png", "feature": "x", "n_drawn": 130}],
        "n_negative": 0,
    }
    (fig,) = figure_entries(scatter, cells, _cfg(tmp_path, "hours"), [0])
    assert fig["caption"].endswith("a rug of all observed x values. fMEs and AME in hours.")
    (fig,) = figure_entries(scatter, cells, _cfg(tmp_path, "hours"), [0], "percentage points of P(yes)")
    assert fig["caption"].endswith(" fMEs and AME in percentage points of P(yes).")
    (fig,) = figure_entries(scatter, cells, _cfg(tmp_path), [0])  # no unit configured: nothing to name
    assert fig["caption"].endswith("values.")
    scatter["figures"][0]["n_left_out"] = 1  # the left-out rows' ticks, counted in the right number
    (fig,) = figure_entries(scatter, cells, _cfg(tmp_path), [0])
    assert fig["caption"].endswith(
        "a rug of all observed x values; taller ticks mark the 1 extrapolation point left out."
    )
    # the paper's procedure: one set of rows grows the tree and estimates its leaves (1 + 129 of them)
    (fig,) = figure_entries(_tree(False), cells, _cfg(tmp_path, "hours"), [0])
    assert fig["caption"].endswith(
        "the same numbers. The tree grew on and its leaves are estimated on the same 130 evaluated rows. "
        "cAMEs, CIs and fMEs in hours."
    )
