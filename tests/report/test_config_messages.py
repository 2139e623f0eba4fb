"""Broken configs get messages that name the key, its line, what is allowed and the fix in config words, before
any computation: a text conf_level, a malformed or unreachable scheduler, a YAML syntax error, a data file
without a model column and a numeric column stored as text."""

from __future__ import annotations

import socket
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from fme.report.inputs.config import ConfigError, load_config

from .configs import MINIMAL_YAML

HEAD = MINIMAL_YAML


def _write(tmp_path, extra: str = ""):
    p = tmp_path / "c.yaml"
    p.write_text(HEAD + textwrap.dedent(extra), encoding="utf-8")
    return p


def test_a_text_conf_level_names_the_allowed_range_and_the_fix(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, "conf_level: ninety-five\n"))
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'c.yaml'}:9: conf_level: 'ninety-five' is not of type 'number'")
    assert "allowed: a number greater than 0 and less than 1" in msg and "conf_level: 0.95" in msg


def test_a_malformed_scheduler_is_refused_when_the_config_is_loaded(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, "engine: dask\nscheduler: 'tcp//localhost:87a'\n"))
    msg = str(info.value)
    assert ":10: scheduler: 'tcp//localhost:87a' is not a Dask scheduler address" in msg
    assert "tcp://10.0.0.5:8786" in msg


def test_a_yaml_syntax_error_says_how_to_fix_it(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, "flags: [ep_share: 0.2\n"))
    msg = str(info.value)
    assert "(YAML): invalid YAML" in msg and "; fix: close every '[' and '{'" in msg and "opened on line 9" in msg


def test_an_unreachable_scheduler_names_the_key_and_the_address_within_ten_seconds(tmp_path):
    from fme.report.inputs.validate import check_scheduler

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "ds").mkdir()
    pd.DataFrame({"x1": [1.0, 2.0]}).to_parquet(tmp_path / "ds" / "a.parquet")
    p = _write(tmp_path, f"engine: dask\nscheduler: tcp://127.0.0.1:{port}\n").read_text().replace("data.csv", "ds")
    (tmp_path / "c.yaml").write_text(p, encoding="utf-8")
    cfg = load_config(tmp_path / "c.yaml")
    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        check_scheduler(cfg)
    assert time.perf_counter() - start < 10
    msg = str(info.value)
    assert f":10: scheduler: no Dask scheduler answers at tcp://127.0.0.1:{port}" in msg
    assert "remove the scheduler key" in msg and "data.path" not in msg


def _frame_case(tmp_path, data: pd.DataFrame):
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis.checks import check_against_data

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x1": rng.normal(size=50), "x2": rng.normal(size=50)})
    model = LinearRegression().fit(X, X["x1"] + X["x2"])
    cfg = load_config(_write(tmp_path))
    with pytest.raises(ConfigError) as info:
        check_against_data(cfg, model, data, data)
    return str(info.value)


def test_a_data_file_without_a_model_column_blames_the_data_path(tmp_path):
    msg = _frame_case(tmp_path, pd.DataFrame({"x1": [1.0, 2.0, 3.0]}))
    assert ":5: data.path: data.csv lacks the model's input column(s) 'x2'" in msg
    assert "Add the column(s) to data.csv" in msg and "effects[0]" not in msg


def test_a_numeric_column_stored_as_text_is_not_an_unknown_level(tmp_path):
    msg = _frame_case(tmp_path, pd.DataFrame({"x1": ["1.5", "2.25", "n/a", "3.0"], "x2": [1.0, 2.0, 3.0, 4.0]}))
    assert ":5: data.path: column 'x1' of data.csv is text" in msg and "'n/a'" in msg
    assert "unknown level" not in msg and "plain numbers" in msg
