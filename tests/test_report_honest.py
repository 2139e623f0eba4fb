"""Honest cAMEs in reports (issue 25 item 6): the config keys, the sentences and the leaf tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

from fme.report.inputs.config import ConfigError, load_config  # noqa: E402


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
    from fme.report.present.context import _honesty_sentence, _leaf_test_cells, _splits_sentence

    model, X, cfg = _setup(tmp_path, "{method: cart, max_depth: 2, n_splits: 3}")
    (g,) = run_effects(model, X, X, cfg, tmp_path / "out")
    p = g["variants"][0]["partition"]
    assert p["honest"] and p["n_grown"] + p["n_estimated"] == 800 and p["splits"]["n_splits"] == 3
    part = fme.came(fme.fme(model, X, {"x": 0.2}), method="cart", max_depth=2)
    assert [leaf["came"] for leaf in p["leaves"]] == pytest.approx(part.leaves["came"].tolist(), rel=1e-12)
    assert len(p["tests"]["rows"]) == len(part.leaf_ids) * (len(part.leaf_ids) - 1) // 2
    assert _honesty_sentence(p).startswith(f"Honest subspaces: the tree was grown on {p['n_grown']}")
    cells = _leaf_test_cells(p["tests"], 0.95, 7)
    assert "estimation rows only" in cells["basis"] and cells["global"].startswith("Global test")
    assert "the leaves' cAMEs differ" in cells["global"]                       # z > 0.5 triples the effect
    assert _splits_sentence(p["splits"]).startswith("Across 3 honest splits")

    model, X, cfg = _setup(tmp_path, "{method: cart, max_depth: 2, honest: false}")
    (g,) = run_effects(model, X, X, cfg, tmp_path / "out2")
    p = g["variants"][0]["partition"]
    assert p["honest"] is False and _honesty_sentence(p).startswith("Not honest")
    assert "not adjusted" in _leaf_test_cells(p["tests"], 0.95, 7)["basis"]


@pytest.mark.parametrize("bad, key", [("{honest: yes please}", "honest"), ("{honest_fraction: 1.5}", "honest_fraction"),
                                      ("{n_splits: 0}", "n_splits")])
def test_bad_honest_keys_name_themselves(tmp_path, bad, key):
    with pytest.raises(ConfigError, match=key):
        _setup(tmp_path, bad)
