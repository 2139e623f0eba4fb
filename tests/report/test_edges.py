"""Edges of a report's inputs: bootstrap training data whose column types differ from the evaluation data's
(Parquet keeps a categorical dtype, CSV does not), and the hull detector in many dimensions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("jsonschema")

from fme.report.inputs.config import ConfigError, load_config  # noqa: E402

LEVELS = ["not", "mildly", "fairly", "strongly"]


def _fair(n: int = 500) -> pd.DataFrame:
    """Rows of statsmodels' fair data (seeded sample: the file is sorted by affairs), religiousness as a pandas
    categorical and a binary target."""
    import statsmodels.api as sm

    d = sm.datasets.fair.load_pandas().data.sample(n, random_state=0).reset_index(drop=True)
    d["religious"] = pd.Categorical(d["religious"].map(dict(enumerate(LEVELS, start=1))), categories=LEVELS)
    d["affair"] = (d.pop("affairs") > 0).astype(int)
    return d


def _hgb_classifier(d: pd.DataFrame):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # OpenMP threads on a shared machine: far slower than one
        return HistGradientBoostingClassifier(max_iter=15, categorical_features="from_dtype", random_state=0).fit(
            d.drop(columns="affair"), d["affair"]
        )


def _config(tmp_path: Path, model, train_file: str) -> object:
    import joblib

    joblib.dump(model, tmp_path / "model.joblib")
    head = (
        "title: T\nowner: O\nintended_use: U\nmodel: {joblib: model.joblib}\ndata: {path: data.csv}\ntarget: affair\n"
    )
    body = f"""\
        inference: {{method: bootstrap, train_data: {{path: {train_file}}}, n_resamples: 10}}
        effects:
          - id: age
            steps: {{age: 5}}
            extrapolation: none
            partition: false
            stability: false
        """
    (tmp_path / "c.yaml").write_text(head + textwrap.dedent(body), encoding="utf-8")
    return load_config(tmp_path / "c.yaml")


def test_bootstrap_reads_evaluation_text_as_the_fitted_model_does(tmp_path):
    """Training Parquet with a categorical column, evaluation CSV with the same column as text: the fitted
    model predicts those rows, so its refits do; the intervals equal those on categorical evaluation data."""
    pytest.importorskip("pyarrow")
    from fme.report.analysis import run_effects

    d = _fair()
    model = _hgb_classifier(d)
    d.to_parquet(tmp_path / "train.parquet")
    X = d.drop(columns="affair")
    X.to_csv(tmp_path / "data.csv", index=False)
    text = pd.read_csv(tmp_path / "data.csv")
    assert not isinstance(text["religious"].dtype, pd.CategoricalDtype)
    cfg = _config(tmp_path, model, "train.parquet")
    (g,) = run_effects(model, text, text, cfg, tmp_path / "out", target_class=1)
    v = g["variants"][0]
    assert v["inference"] == "bootstrap" and v["model_ci"]["n_failed"] == 0 and v["model_ci"]["n_resamples"] == 10
    # the same refits on the categorical frame: the same numbers (the text is read as the same levels)
    (ref,) = run_effects(model, X, X, cfg, tmp_path / "out2", target_class=1)
    r = ref["variants"][0]
    assert v["ame"] == pytest.approx(r["ame"], rel=1e-12)
    for k in ("std_error", "conf_low", "conf_high"):
        assert v["model_ci"][k] == pytest.approx(r["model_ci"][k], rel=1e-12)


def test_bootstrap_training_csv_with_text_columns_names_the_column(tmp_path):
    from fme.report.analysis import run_effects

    d = _fair()
    model = _hgb_classifier(d)
    d.to_csv(tmp_path / "train.csv", index=False)  # religious becomes text; so it is in the evaluation CSV
    d.drop(columns="affair").to_csv(tmp_path / "data.csv", index=False)
    text = pd.read_csv(tmp_path / "data.csv")
    cfg = _config(tmp_path, model, "train.csv")
    with pytest.raises(ConfigError) as info:
        run_effects(model, text, text, cfg, tmp_path / "out", target_class=1)
    msg = str(info.value)
    assert msg.startswith(
        f"{tmp_path / 'c.yaml'}:7: inference.train_data: refitting the model on the training "
        "data fails (ValueError: could not convert string to float: "
    )
    assert (
        "every bootstrap refit would fail. Column 'religious' of the training data is text (e.g. 'fairly', "
        "'mildly', 'not'), which the model cannot fit: store the training data as Parquet with the column's "
        "categorical dtype"
    ) in msg
    # two text columns, the error quoting a value of the first in the file's order: that one is named
    d2 = d.assign(occupation=d["occupation"].map(lambda x: f"job{int(x)}").astype("category"))
    d2 = d2[["occupation"] + [c for c in d2.columns if c != "occupation"]]
    model2 = _hgb_classifier(d2)
    d2.to_csv(tmp_path / "train.csv", index=False)
    text2 = pd.read_csv(tmp_path / "train.csv").drop(columns="affair")
    with pytest.raises(ConfigError) as info:
        run_effects(model2, text2, text2, cfg, tmp_path / "out2", target_class=1)
    msg = str(info.value)
    assert "could not convert string to float: 'job" in msg
    assert "Column 'occupation' of the training data is text (e.g. 'job1', 'job2', 'job3')" in msg


def test_hull_in_30_dimensions_names_the_extrapolation_key_and_the_degenerate_hull(tmp_path):
    import joblib
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis import run_effects

    X = load_breast_cancer(as_frame=True).frame.iloc[:300, :30]
    model = LinearRegression().fit(X, X.iloc[:, 0] * 2)
    joblib.dump(model, tmp_path / "model.joblib")
    X.to_csv(tmp_path / "data.csv", index=False)
    body = """\
        effects:
          - steps: {mean texture: 1}
            extrapolation: hull
            partition: false
            stability: false
        """
    (tmp_path / "c.yaml").write_text(
        "title: T\nowner: O\nintended_use: U\nmodel: {joblib: model.joblib}\n"
        "data: {path: data.csv}\ntarget: y\n" + textwrap.dedent(body),
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    with pytest.warns(UserWarning, match="degenerate"), pytest.raises(ConfigError) as info:
        run_effects(model, X, X, cfg, tmp_path / "out")  # evaluation = reference rows: x itself is in the hull
    msg = str(info.value)
    assert msg.startswith(
        f"{tmp_path / 'c.yaml'}:9: effects[0].extrapolation: every row is an extrapolation "
        "point because the convex hull is degenerate: in 30 dimensions with 300 reference rows "
        "about "
    )
    share = int(msg.split("reference rows about ")[1].split("%")[0])
    assert 50 <= share <= 100
    assert "of the rows themselves lie outside the hull of the others" in msg and "extrapolation: envelope" in msg
    # a hull of few dimensions is not degenerate: the library's own message about the step stands
    from fme.report.analysis.checks import all_extrapolation_error

    low = X.iloc[:, :2]
    cfg_low = load_config(tmp_path / "c.yaml")
    assert all_extrapolation_error(cfg_low, cfg_low.effects[0], low, low, 0) is None
