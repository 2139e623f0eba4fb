"""The extrapolation line, figure caption and alt text count the rows they are about: the whole data's count is
never joined to the seeded sample's range (Dask data beyond sample_size), every count takes the number of its
noun, and the figure's legend sits outside the bars."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fme.report.present.context import ep_line
from fme.report.present.extrapolation_text import extrapolation_words

SAMPLE = {"size": 500, "rows": 500, "of": 1500, "all_rows": False, "seed": 0}
WHERE = "outside the reference data in x for 40: observed x from 9.1 to 9.9"


def _v(n_ep=253):
    return {
        "detector": "envelope",
        "policy": "exclude",
        "n": 1500 - n_ep,
        "n_total": 1500,
        "n_extrapolation": n_ep,
        "extrapolation_where": [{"kind": "outside range", "feature": "x", "n": 40, "min": 9.1, "max": 9.9}],
    }


def test_the_whole_data_count_and_the_samples_whereabouts_are_kept_apart():
    line = ep_line(_v(), "districts", WHERE, SAMPLE)
    assert line.startswith("253 of the 1,500 districts left out as extrapolation points")
    assert f"(where they are, from the seeded sample of 500 of the 1,500 rows: {WHERE})" in line
    assert ep_line(_v(), "districts", WHERE, None) == (
        f"253 of the 1,500 districts left out as extrapolation points ({WHERE})"
    )
    assert ep_line(_v(1), "districts", None, None) == "1 of the 1,500 districts left out as an extrapolation point"


def test_the_figure_counts_the_rows_it_draws_and_says_whose_range_it_is():
    fig = {"feature": "x", "n_evaluated": 443, "n_extrapolation": 57}
    alt, cap = extrapolation_words(_v(), fig, {}, "x + 1", "districts", SAMPLE)
    assert (
        "443 districts of the seeded sample evaluated (solid) and 57 extrapolation points of the seeded sample"
    ) in alt
    assert "x from 9.1 to 9.9 over the 40 extrapolation points of the seeded sample outside" in alt
    assert "253" not in alt and "253" not in cap
    one = {"feature": "x", "n_evaluated": 1, "n_extrapolation": 1}
    alt, cap = extrapolation_words(_v(), one, {}, "x + 1", "districts", None)
    assert "1 district evaluated (solid) and 1 extrapolation point (hatched)" in alt
    assert "drawn: 1 district evaluated and 1 extrapolation point" in cap


def test_the_extrapolation_figures_legend_does_not_cover_the_bars(tmp_path, monkeypatch):
    import textwrap

    import fme
    from fme.report.analysis import figures
    from fme.report.inputs.config import load_config

    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""\
        title: T
        owner: O
        intended_use: U
        model: {joblib: m.joblib}
        data: {path: data.csv}
        target: y
        effects:
          - steps: {x: 1}
        """),
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.uniform(0, 10, 300), "z": rng.normal(size=300)})
    res = fme.fme(lambda d: d["x"].to_numpy() * 2.0, X, {"x": 1}, extrapolation="envelope", reference_data=X)
    seen = {}

    def keep(fig, out_dir, name, dpi, tight=True):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        (ax,) = fig.axes
        seen["legend"] = (
            fig.legends[0].get_window_extent(renderer) if fig.legends else ax.get_legend().get_window_extent(renderer)
        )
        seen["axes"] = ax.get_window_extent(renderer)
        return {"svg": "figures/x.svg", "png": "figures/x.png"}

    monkeypatch.setattr(figures, "save", keep)
    out = figures._extrapolation(res, cfg, {"x": 1}, tmp_path, "e")
    assert out["n_evaluated"] + out["n_extrapolation"] == 300 and out["n_extrapolation"] > 0
    legend, axes = seen["legend"], seen["axes"]
    assert legend.y1 <= axes.y0 or legend.y0 >= axes.y1  # above or below the plotting area, never on it


def test_a_leafs_count_over_all_rows_and_its_ranges_over_the_sample_are_told_apart():
    from fme.report.present.partition_view import where_came_holds

    part = {
        "leaves": [
            {
                "node": 2,
                "rule": "x <= 5",
                "n": 1,
                "n_extrapolation": 0,
                "box": [
                    {
                        "feature": "x",
                        "range": "[0, 5]",
                        "restricted": True,
                        "kind": "numeric",
                        "eval_min": 0.1,
                        "eval_max": 4.9,
                    }
                ],
            }
        ]
    }
    (text,) = where_came_holds(part, "districts", SAMPLE)
    assert text == (
        "The cAME of leaf 2 (x <= 5) applies only where it was evaluated, to its 1 district: over the "
        "seeded sample's rows in it (500 of all 1,500 rows drawn), x evaluated 0.1 to 4.9 (hyperrectangle "
        "[0, 5])."
    )
    (text,) = where_came_holds(part, "districts", None)
    assert "to its 1 district: x evaluated 0.1 to 4.9" in text
