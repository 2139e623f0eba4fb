"""Report figures survive any distribution of fMEs and NLMs, built through report configs.

Each case is a small config (a joblib model, a CSV): all fMEs equal (a constant model, whose NLMs are all
undefined), fMEs equal up to rounding (a linear model: a spread of ~1e-15 relative, which numpy cannot cut
into 30 bins), one row, two rows, and NaN in the stepped feature. The figures must be drawn, and what they
leave out must be said in the caption. ``fme._plot_data`` has the unit tests; ``test_plotting`` the displays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("papermill")
from fme.report.build import build_report  # noqa: E402

pytestmark = pytest.mark.slow


def _build(tmp: Path, name: str, model, data: pd.DataFrame, effects: list[dict]) -> dict:
    import joblib

    joblib.dump(model, tmp / f"{name}.joblib")
    data.to_csv(tmp / f"{name}.csv", index=False)
    cfg = {"title": name, "owner": "tests", "intended_use": "figure robustness", "pdf": False,
           "model": {"joblib": f"{name}.joblib"}, "data": {"path": f"{name}.csv"}, "target": "y",
           "effects": effects}
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
    assert f"The NLM is undefined (constant path) for {v['n']} rows, not drawn." in _captions(tmp_path / "constant")
    for f in v["figures"]:
        assert (tmp_path / "constant" / f["svg"]).stat().st_size > 0


def test_float_flat_fmes_and_non_finite_stepped_values(tmp_path, frame, linear):
    data = frame.copy()
    data.loc[[3, 7], "a"] = np.nan
    data.loc[5, "a"], data.loc[9, "a"] = np.inf, -np.inf  # left out and counted like NaN
    effects = [{"id": "a", "steps": {"a": 1}, "partition": {"minbucket": 10}},
               {"id": "abc", "steps": {"a": 1, "b": 1, "c": -1}, "extrapolation": "none"}]
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
    effects = [{"id": "a", "steps": {"a": 1}, "extrapolation": "none", "partition": False},
               {"id": "abc", "steps": {"a": 1, "b": 1, "c": 1}, "extrapolation": "none", "partition": False}]
    res = _build(tmp_path, f"rows{n_rows}", linear, frame.iloc[:n_rows], effects)
    for i, kind in enumerate(["fme-scatter", "fme-density"]):
        v = _variant(res, i)
        assert v["n"] == n_rows
        assert [f["kind"] for f in v["figures"]] == [kind, "nlm"]
