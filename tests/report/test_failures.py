"""A report build fails loudly, in one line naming config, line and key, and writes no report.

Fast tests check the config against data and model (:mod:`fme.report.inputs.validate`) and the command line for
failures found before the notebook runs; the slow ones run the notebook into a failure.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

from fme.__main__ import main  # noqa: E402
from fme.report.analysis.checks import check_against_data  # noqa: E402
from fme.report.inputs.config import ConfigError, load_config  # noqa: E402
from fme.report.inputs.validate import check_inputs  # noqa: E402

HEAD = """\
title: T
owner: O
intended_use: U
model:
  joblib: model.joblib
data:
  path: data.csv
target: y
effects:
"""


def _frame(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(0, 10, n), rng.normal(0, 1, n)
    colour = rng.choice(["red", "blue"], n)
    y = 2 * x1 - x2 + np.where(colour == "red", 1.0, 0.0) + rng.normal(0, 0.5, n)
    return pd.DataFrame({"x1": x1, "x2": x2, "colour": colour, "y": y})


def _config(tmp_path: Path, effects: str, head: str = HEAD) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(head + textwrap.dedent(effects), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def regressor():
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    X = _frame().drop(columns="y")
    pre = ColumnTransformer([("cat", OneHotEncoder(), ["colour"])], remainder="passthrough")
    return make_pipeline(pre, LinearRegression()).fit(X, _frame()["y"])


@pytest.fixture(scope="module")
def three_classes():
    from sklearn.linear_model import LogisticRegression

    X = _frame()[["x1", "x2"]]
    y = np.select([X["x1"] < 3, X["x1"] < 7], ["low", "mid"], "high")
    return LogisticRegression(max_iter=500).fit(X, y)


def _check(tmp_path, effects, model, head=HEAD):
    cfg = load_config(_config(tmp_path, effects, head))
    data = _frame().drop(columns="y")
    return cfg, check_against_data(cfg, model, data, data)


# ------------------------------------------------------------------ against data and model (fast)
@pytest.mark.parametrize(
    "effects, line, key, phrase",
    [
        (
            "  - steps: {x1: 1}\n  - steps: {x9: 1}\n",
            11,
            r"effects\[1\]\.steps\.x9",
            "unknown feature 'x9'; the data's features are 'x1', 'x2', 'colour'$",
        ),
        (
            "  - steps: {colour: green}\n",
            10,
            r"effects\[0\]\.steps\.colour",
            "unknown level 'green' of feature 'colour'; its levels are 'blue', 'red'$",
        ),
        ("  - steps: {colour: [red, green]}\n", 10, r"effects\[0\]\.steps\.colour", "unknown level 'green'"),
        (
            "  - steps: {x1: 1}\n    partition: {features: [x1, x7]}\n",
            11,
            r"effects\[0\]\.partition\.features\[1\]",
            "unknown partition feature 'x7'",
        ),
        (
            "  - steps: {x1: 2*iqq}\n",
            10,
            r"effects\[0\]\.steps\.x1",
            "feature 'x1': unknown step rule 'iqq' in '2\\*iqq'",
        ),
        ("  - steps: {x1: all}\n", 10, r"effects\[0\]\.steps\.x1", "feature 'x1' is numeric: give a number"),
    ],
)
def test_unknown_names_are_config_errors(tmp_path, regressor, effects, line, key, phrase):
    with pytest.raises(ConfigError, match=rf"^{tmp_path / 'c.yaml'}:{line}: {key}: {phrase}"):
        _check(tmp_path, effects, regressor)


def test_valid_effects_pass_and_regressor_has_no_class(tmp_path, regressor):
    cfg, target_class = _check(
        tmp_path, "  - steps: {x1: sd}\n  - steps: {colour: all}\n    partition: {features: [x2]}\n", regressor
    )
    assert target_class is None and cfg.effects[1].steps == {"colour": "all"}


def test_multiclass_needs_target_class(tmp_path, three_classes):
    with pytest.raises(
        ConfigError,
        match=rf"^{tmp_path / 'c.yaml'}:4: model: the model has 3 classes "
        r"\('high', 'low', 'mid'\); set model.target_class",
    ):
        _check(tmp_path, "  - steps: {x1: 1}\n", three_classes)


def test_target_class_must_be_a_class(tmp_path, three_classes, regressor):
    head = HEAD.replace("  joblib: model.joblib\n", "  joblib: model.joblib\n  target_class: medium\n")
    with pytest.raises(
        ConfigError,
        match=rf"^{tmp_path / 'c.yaml'}:6: model\.target_class: 'medium' is not a class "
        r"of the model; its classes are 'high', 'low', 'mid'$",
    ):
        _check(tmp_path, "  - steps: {x1: 1}\n", three_classes, head)
    with pytest.raises(ConfigError, match=r":6: model\.target_class: the model \(Pipeline\) is not a classifier"):
        _check(tmp_path, "  - steps: {x1: 1}\n", regressor, head)
    ok = HEAD.replace("  joblib: model.joblib\n", "  joblib: model.joblib\n  target_class: mid\n")
    assert _check(tmp_path, "  - steps: {x1: 1}\n", three_classes, ok)[1] == "mid"


def test_check_does_not_modify_config(tmp_path, regressor):
    cfg = load_config(_config(tmp_path, "  - steps: {colour: all}\n"))
    before = json.dumps(cfg.to_dict(), sort_keys=True, default=str)
    check_against_data(cfg, regressor, _frame().drop(columns="y"), _frame().drop(columns="y"))
    assert json.dumps(cfg.to_dict(), sort_keys=True, default=str) == before


# ------------------------------------------------------------------ the command line, before the notebook (fast)
def _run_cli(capsys, config: Path) -> tuple[int, list[str]]:
    rc = main(["report", str(config), "--no-pdf"])
    err = capsys.readouterr().err
    return rc, err.splitlines()


def _no_report_left(config: Path) -> None:
    stem = config.stem
    assert not (config.parent / stem).exists()
    assert not (config.parent / f".{stem}.partial").exists()


@pytest.mark.parametrize(
    "edit, line, key, phrase",
    [
        (
            ("joblib: model.joblib", "joblib: gone.joblib"),
            5,
            r"model\.joblib",
            "model file not found: .*gone.joblib; fix the path",
        ),
        (("path: data.csv", "path: missing.csv"), 7, r"data\.path", "data file not found: .*missing.csv"),
        (
            ("  joblib: model.joblib", '  entry_point: "no_such_pkg.models:fit"'),
            5,
            r"model\.entry_point",
            "module 'no_such_pkg.models' cannot be imported .*ModuleNotFoundError",
        ),
        (("target: y", "target: y\ntarget: z"), 9, "target", r"duplicate key \(first given on line 8\)"),
    ],
)
def test_cli_missing_inputs_one_line_nonzero_no_folder(tmp_path, capsys, edit, line, key, phrase):
    _frame().to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "model.joblib").write_bytes(b"not used")
    config = _config(tmp_path, "  - steps: {x1: 1}\n", HEAD.replace(*edit))
    rc, lines = _run_cli(capsys, config)
    assert rc == 1 and len(lines) == 1, lines
    import re

    assert re.match(rf"^{config}:{line}: {key}: {phrase}", lines[0]), lines[0]
    assert "Traceback" not in lines[0]
    _no_report_left(config)


def test_cli_non_utf8_one_line(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_bytes((HEAD + "  - steps: {x1: 1}\n").replace("owner: O", "owner: \u00c5sa").encode("latin-1"))
    rc, lines = _run_cli(capsys, config)
    assert rc == 1 and lines == [
        f"{config}:2: (encoding): the config is not UTF-8 text (byte 0xc5 at offset 16); save the file as UTF-8"
    ]
    _no_report_left(config)


def test_check_inputs_accepts_existing_files(tmp_path):
    _frame().to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "model.joblib").write_bytes(b"x")
    check_inputs(load_config(_config(tmp_path, "  - steps: {x1: 1}\n")))


# ------------------------------------------------------------------ failures inside the notebook (slow)
MODULE = """\
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression


def three():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x1": rng.uniform(0, 10, 90), "x2": rng.normal(0, 1, 90)})
    return LogisticRegression(max_iter=500).fit(X, np.repeat(["a", "b", "c"], 30))


def broken():
    raise RuntimeError("training data server unreachable")
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, effects, line, key, phrase",
    [
        (
            "  joblib: model.joblib\n",
            "  - steps: {x1: 1}\n  - steps: {colour: green}\n",
            11,
            r"effects\[1\]\.steps\.colour",
            "unknown level 'green' of feature 'colour'",
        ),
        ('  entry_point: "fme_t16_models:three"\n', "  - steps: {x1: 1}\n", 4, "model", "the model has 3 classes"),
    ],
)
def test_notebook_failure_is_one_line_and_leaves_no_report(
    tmp_path, capsys, monkeypatch, regressor, model, effects, line, key, phrase
):
    import re

    import joblib

    (tmp_path / "fme_t16_models.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    joblib.dump(regressor, tmp_path / "model.joblib")
    frame = _frame()
    frame.to_csv(tmp_path / "data.csv", index=False)
    config = _config(tmp_path, effects, HEAD.replace("  joblib: model.joblib\n", model))
    rc, lines = _run_cli(capsys, config)
    assert rc == 1 and len(lines) == 1, lines
    log = tmp_path / "c.error.log"
    assert re.match(rf"^{config}:{line}: {key}: {phrase}.* \(details: {log}\)$", lines[0]), lines[0]
    _no_report_left(config)
    assert "Traceback" in log.read_text(encoding="utf-8") or "Error" in log.read_text(encoding="utf-8")


@pytest.mark.slow
def test_failed_rebuild_keeps_previous_report_whole(tmp_path, capsys, regressor):
    import joblib

    joblib.dump(regressor, tmp_path / "model.joblib")
    _frame().to_csv(tmp_path / "data.csv", index=False)
    config = _config(tmp_path, "  - steps: {x1: 1}\n    partition: false\n    stability: false\n")
    assert main(["report", str(config), "--no-pdf"]) == 0
    out = tmp_path / "c"
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert "report.html" in before and not (tmp_path / "c.error.log").exists()
    config.write_text(config.read_text(encoding="utf-8") + "- steps: {x3: 1}\n", encoding="utf-8")
    rc, lines = _run_cli(capsys, config)
    assert rc == 1 and len(lines) == 1 and "effects[1].steps.x3: unknown feature 'x3'" in lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not (tmp_path / ".c.partial").exists()


# ------------------------------------------------------------------ the cache notices a changed model
HYPER_MODULE = """\
import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.svm import SVR

C = 1.0


def fit():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x1": rng.uniform(0, 10, 60), "x2": rng.normal(0, 1, 60)})
    extra = json.loads((Path(__file__).parent / "hyper.json").read_text())
    return SVR(C=C * extra["scale"]).fit(X, 2 * X["x1"] - X["x2"]), X
"""


def test_inputs_hash_covers_entry_point_model_module_and_lock(tmp_path, monkeypatch):
    from fme.report import build
    from fme.report.render import TEMPLATES

    (tmp_path / "fme_t16_hyper.py").write_text(HYPER_MODULE, encoding="utf-8")
    (tmp_path / "hyper.json").write_text('{"scale": 1}', encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    _frame().to_csv(tmp_path / "data.csv", index=False)
    config = _config(
        tmp_path,
        "  - steps: {x1: 1}\n",
        HEAD.replace("  joblib: model.joblib\n", '  entry_point: "fme_t16_hyper:fit"\n'),
    )
    cfg = load_config(config)
    first = build.inputs_sha256(cfg, TEMPLATES)
    assert build.inputs_sha256(cfg, TEMPLATES) == first  # deterministic
    # the fitted model changes while no file the config names does: the pickled model is hashed
    (tmp_path / "hyper.json").write_text('{"scale": 3}', encoding="utf-8")
    refit = build.inputs_sha256(cfg, TEMPLATES)
    assert refit != first
    # the module's hyper-parameter edited on disk (the imported copy is stale): the source is hashed
    (tmp_path / "fme_t16_hyper.py").write_text(HYPER_MODULE.replace("C = 1.0", "C = 2.0"), encoding="utf-8")
    assert build.inputs_sha256(cfg, TEMPLATES) not in (first, refit)
    # the resolved config and the lock are inputs too
    edited = build.inputs_sha256(cfg, TEMPLATES)
    assert build.inputs_sha256(dataclasses.replace(cfg, seed=7), TEMPLATES) != edited
    lock = tmp_path / "requirements.lock"
    lock.write_text("numpy==1.0\n", encoding="utf-8")
    monkeypatch.setattr("fme.report.analysis.environment.find_lock", lambda start=None: lock)
    with_lock = build.inputs_sha256(cfg, TEMPLATES)
    lock.write_text("numpy==2.0\n", encoding="utf-8")
    assert build.inputs_sha256(cfg, TEMPLATES) != with_lock
    monkeypatch.setattr("fme.__version__", "0.0.0-test")
    assert build.inputs_sha256(cfg, TEMPLATES) != with_lock


def test_inputs_hash_covers_joblib_test_and_reference_data(tmp_path):
    from fme.report import build
    from fme.report.render import TEMPLATES

    _frame().to_csv(tmp_path / "data.csv", index=False)
    _frame(seed=1).to_csv(tmp_path / "ref.csv", index=False)
    _frame(seed=2).to_csv(tmp_path / "test.csv", index=False)
    (tmp_path / "model.joblib").write_bytes(b"model-1")
    config = _config(tmp_path, "  - steps: {x1: 1}\n", HEAD + "")
    config.write_text(config.read_text() + "reference_data: {path: ref.csv}\ntest_data: {path: test.csv}\n")
    cfg = load_config(config)
    seen = {build.inputs_sha256(cfg, TEMPLATES)}
    for name, content in (
        ("model.joblib", b"model-2"),
        ("ref.csv", b"x1\n1\n"),
        ("test.csv", b"x1\n2\n"),
        ("data.csv", b"x1\n3\n"),
    ):
        (tmp_path / name).write_bytes(content)
        seen.add(build.inputs_sha256(cfg, TEMPLATES))
    assert len(seen) == 5


def test_inputs_hash_and_audit_cover_bootstrap_train_data(tmp_path):
    from fme.report import build
    from fme.report.present.audit import hash_rows
    from fme.report.render import TEMPLATES

    _frame().to_csv(tmp_path / "data.csv", index=False)
    _frame(seed=3).to_csv(tmp_path / "train.csv", index=False)
    _frame(seed=4).to_csv(tmp_path / "train2.csv", index=False)
    (tmp_path / "model.joblib").write_bytes(b"model-1")
    config = _config(
        tmp_path,
        "  - steps: {x1: 1}\n  - steps: {x2: 1}\n    inference: {method: bootstrap, train_data: {path: train2.csv}}\n",
        HEAD.replace("effects:\n", "inference: {method: bootstrap, train_data: {path: train.csv}}\neffects:\n"),
    )
    cfg = load_config(config)
    digests = build.input_digests(cfg)
    import hashlib

    assert digests["train_data"] == {
        "sha256": hashlib.sha256((tmp_path / "train.csv").read_bytes()).hexdigest(),
        "of": "inference.train_data: file train.csv",
    }
    assert digests["train_data 2"] == {
        "sha256": hashlib.sha256((tmp_path / "train2.csv").read_bytes()).hexdigest(),
        "of": "effects.1.inference.train_data: file train2.csv",
    }
    before = build.inputs_sha256(cfg, TEMPLATES)
    _frame(seed=5).to_csv(tmp_path / "train.csv", index=False)
    after = build.inputs_sha256(cfg, TEMPLATES)
    assert after != before
    _frame(seed=6).to_csv(tmp_path / "train2.csv", index=False)
    assert build.inputs_sha256(cfg, TEMPLATES) not in (before, after)
    rows = hash_rows({"config": {}}, {"hashes": build.input_digests(cfg)})
    train_rows = [(r["input"], r["of"]) for r in rows if r["input"].startswith("Training data")]
    assert train_rows == [
        ("Training data (refits)", "inference.train_data: file train.csv"),
        ("Training data (refits) 2", "effects.1.inference.train_data: file train2.csv"),
    ]
    # a missing training-data file is one line naming its key, before anything is hashed or computed
    (tmp_path / "train2.csv").unlink()
    with pytest.raises(
        ConfigError,
        match=r"c\.yaml:\d+: effects\[1\]\.inference\.train_data\.path: data file not "
        r"found",
    ):
        check_inputs(cfg)


def test_entry_point_raising_is_one_line_before_the_notebook(tmp_path, capsys, monkeypatch):
    (tmp_path / "fme_t16_models.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    _frame().to_csv(tmp_path / "data.csv", index=False)
    config = _config(
        tmp_path,
        "  - steps: {x1: 1}\n",
        HEAD.replace("  joblib: model.joblib\n", '  entry_point: "fme_t16_models:broken"\n'),
    )
    rc, lines = _run_cli(capsys, config)
    assert rc == 1 and lines == [f"{config}:5: model.entry_point: RuntimeError: training data server unreachable"]
    _no_report_left(config)


def test_every_message_names_the_config_as_given(tmp_path, monkeypatch):
    """Before the notebook (loading, checks) and after it (an error the notebook raised with the absolute path
    it loads the config by), the message names the config as the caller gave it."""
    from papermill.exceptions import PapermillExecutionError

    from fme.report.build import _loud
    from fme.report.inputs.config import config_error

    (tmp_path / "c.yaml").write_text(
        "title: T\nowner: O\nintended_use: U\nmodel: {joblib: m.joblib}\n"
        "data: {path: d.csv}\ntarget: y\neffects:\n  - steps: {x: 1}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    cfg = load_config("c.yaml")
    assert cfg.path == (tmp_path / "c.yaml").resolve() and cfg.shown == "c.yaml"
    assert str(config_error(cfg, ("effects", 0, "steps"), "bad")) == "c.yaml:8: effects[0].steps: bad"
    exc = PapermillExecutionError(
        3, 3, "run_effects(...)", "ConfigError", f"{cfg.path}:8: effects[0].steps: the step failed", []
    )
    assert str(_loud(exc, cfg, tmp_path / "c.error.log")) == (
        f"c.yaml:8: effects[0].steps: the step failed (details: {tmp_path / 'c.error.log'})"
    )


def test_a_refused_bootstrap_of_a_weighted_glm_gives_only_the_relevant_advice(tmp_path):
    """A GLM with var_weights cannot be refitted: the message names the weights argument and the fix (another
    method) at the inference method's line, and says nothing about the training data's columns."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from fme.report.analysis.checks import check_train_data

    rng = np.random.default_rng(2)
    d = pd.DataFrame({"x": rng.normal(size=60)})
    d["y"] = rng.poisson(np.exp(0.2 * d["x"]))
    glm = smf.glm("y ~ x", data=d, family=sm.families.Poisson(), var_weights=np.full(60, 3.0)).fit()
    (tmp_path / "c.yaml").write_text(
        "title: T\nowner: O\nintended_use: U\nmodel: {joblib: m.joblib}\n"
        "data: {path: d.csv}\ntarget: y\ninference:\n  method: bootstrap\n"
        "  train_data: {path: t.csv}\neffects:\n  - steps: {x: 1}\n",
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    with pytest.raises(ConfigError) as err:
        check_train_data(cfg, ("inference",), glm, d, d[["x"]])
    assert str(err.value) == (
        f"{tmp_path / 'c.yaml'}:8: inference.method: bootstrap refits of a GLM with var_weights "
        "are not supported (the weights are not a column the formula can take again); set "
        "method: delta (it needs no refit) or sample"
    )
