"""Report data sources (fme/report/sources.py): Parquet datasets and globs with ``engine: dask``.

Every dataset is written by the test into tmp_path (no network). The Dask reads run on a local cluster
started and closed by :func:`fme.report.inputs.sources.dask_session`, or on a given scheduler address.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")
pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")

# imported after the importorskip guards, so that a missing optional package skips this module, not fails it
from fme.report import analysis  # noqa: E402 - after importorskip
from fme.report.inputs import sources  # noqa: E402 - after importorskip
from fme.report.inputs.config import ConfigError, load_config  # noqa: E402 - after importorskip
from fme.report.inputs.sources import data_files, files_sha256  # noqa: E402 - after importorskip
from fme.report.inputs.validate import check_inputs  # noqa: E402 - after importorskip

HEAD = """\
title: T
owner: O
intended_use: U
model:
  joblib: model.joblib
data:
  path: {path}
target: y
effects:
  - steps: {{x1: 1}}
"""


def _frame(n: int = 90, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"x1": rng.uniform(0, 10, n), "x2": rng.normal(0, 1, n), "k": rng.integers(0, 5, n), "y": rng.normal(0, 1, n)}
    )


def _dataset(tmp_path: Path, frame: pd.DataFrame) -> Path:
    """A Parquet dataset directory of three files (each with its own 0..k index) and a metadata file."""
    d = tmp_path / "ds"
    (d / "sub").mkdir(parents=True)
    for i, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        target = d / ("sub" if i == 2 else "") / f"part-{i}.parquet"
        frame.iloc[part].reset_index(drop=True).to_parquet(target)
    (d / "_SUCCESS").write_bytes(b"")
    return d


def _config(tmp_path: Path, path: str, extra: str = "") -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(textwrap.dedent(HEAD.format(path=path)) + extra, encoding="utf-8")
    if not (tmp_path / "model.joblib").exists():  # check_inputs needs the file; loading is not tested here
        (tmp_path / "model.joblib").write_bytes(b"x")
    return p


@pytest.fixture(scope="module")
def cluster():
    cl = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0")
    yield cl
    cl.close()


def test_dataset_directory_and_glob_read_with_dask(tmp_path, cluster):
    frame = _frame()
    d = _dataset(tmp_path, frame)
    files = data_files(tmp_path, "ds")
    assert [f.relative_to(d).as_posix() for f in files] == ["part-0.parquet", "part-1.parquet", "sub/part-2.parquet"]
    cfg = load_config(_config(tmp_path, "ds", f"engine: dask\nscheduler: {cluster.scheduler_address}\n"))
    check_inputs(cfg)
    got, info = analysis.load_data(cfg, cfg.data)  # data stay lazy
    pd.testing.assert_frame_equal(got.compute(), frame.reset_index(drop=True))
    assert info["n_files"] == 3 and info["n_rows"] == 90
    # the same rows through a glob; the provenance hash covers every file and changes with any of them
    cfg = load_config(_config(tmp_path, "'ds/*.parquet'", f"engine: dask\nscheduler: {cluster.scheduler_address}\n"))
    check_inputs(cfg)
    got, info2 = analysis.load_data(cfg, cfg.data)
    pd.testing.assert_frame_equal(got.compute(), frame.iloc[:60].reset_index(drop=True))
    sources.close_session()
    assert info2["n_files"] == 2 and info2["sha256"] != info["sha256"]
    before = files_sha256(files, tmp_path)
    frame.iloc[:30].assign(x1=0.0).to_parquet(files[0])
    assert files_sha256(files, tmp_path) != before


def test_default_local_cluster_is_started_and_closed(tmp_path):
    frame = _frame(40, seed=1)
    _dataset(tmp_path, frame)
    cfg = load_config(_config(tmp_path, "ds", "engine: dask\n"))
    got, _ = analysis.load_data(cfg, cfg.data)
    # the kernel's client serves the whole analysis (lazy data): open until close_session (run at exit)
    client = distributed.default_client()
    assert len(client.scheduler_info()["workers"]) >= 1
    pd.testing.assert_frame_equal(got.compute(), frame.reset_index(drop=True))
    test, _ = analysis.load_data(cfg, cfg.data, "test_data")  # test data: gathered, on the same client
    pd.testing.assert_frame_equal(test, frame.reset_index(drop=True))
    assert distributed.default_client() is client
    sources.close_session()
    with pytest.raises(ValueError):  # no client is left behind
        distributed.default_client()


def test_single_file_unchanged_under_both_engines(tmp_path):
    frame = _frame(30)
    frame.to_parquet(tmp_path / "one.parquet")
    cfg = load_config(_config(tmp_path, "one.parquet"))
    got, info = analysis.load_data(cfg, cfg.data)
    pd.testing.assert_frame_equal(got, frame)
    import hashlib

    assert info["sha256"] == hashlib.sha256((tmp_path / "one.parquet").read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "extra, path, line, key, phrase",
    [
        ("scheduler: tcp://127.0.0.1:8786\n", "ds", 11, "scheduler", "a scheduler address needs engine: dask"),
        ("engine: spark\n", "ds", 11, "engine", "'spark' is not one of"),
        (
            "",
            "'ds/*.parquet'",
            7,
            r"data\.path",
            "'ds/\\*.parquet' is a glob; several files are read with engine: dask",
        ),
    ],
)
def test_config_errors_name_line_and_key(tmp_path, extra, path, line, key, phrase):
    with pytest.raises(ConfigError, match=rf"^{tmp_path / 'c.yaml'}:{line}: {key}: {phrase}"):
        load_config(_config(tmp_path, path, extra))


def test_missing_dask_dependency_is_a_config_error(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else real(name, *a))
    with pytest.raises(ConfigError, match=r":11: engine: engine: dask needs distributed: pip install 'fme\[dask\]'"):
        load_config(_config(tmp_path, "ds", "engine: dask\n"))


def test_check_inputs_directory_and_glob(tmp_path):
    _dataset(tmp_path, _frame())
    cfg = load_config(_config(tmp_path, "ds"))  # a directory without engine: dask
    with pytest.raises(
        ConfigError,
        match=r":7: data\.path: .*ds is a directory \(a Parquet dataset\); several "
        r"files are read with engine: dask",
    ):
        check_inputs(cfg)
    cfg = load_config(_config(tmp_path, "'ds/*.csv'", "engine: dask\n"))
    with pytest.raises(ConfigError, match=r":7: data\.path: .* is a glob but no file matches it"):
        check_inputs(cfg)
    (tmp_path / "empty").mkdir()
    cfg = load_config(_config(tmp_path, "empty", "engine: dask\n"))
    with pytest.raises(ConfigError, match=r":7: data\.path: .* holds no \.parquet/\.pq file"):
        check_inputs(cfg)


@pytest.mark.slow
def test_report_built_from_a_parquet_dataset_equals_the_single_file_report(tmp_path):
    """The whole build with engine: dask (local cluster) gives the numbers of the same rows in one file."""
    import json

    import joblib
    from sklearn.linear_model import LinearRegression

    from fme.__main__ import main

    frame = _frame(120, seed=2)
    joblib.dump(LinearRegression().fit(frame[["x1", "x2", "k"]], frame["y"]), tmp_path / "model.joblib")
    _dataset(tmp_path, frame)
    frame.to_parquet(tmp_path / "one.parquet")
    effects = "    partition: false\n    stability: false\n"
    ames = {}
    for name, path, extra in [("a", "ds", "engine: dask\n"), ("b", "one.parquet", "")]:
        cfg = _config(tmp_path, path, extra)
        cfg.write_text(
            cfg.read_text(encoding="utf-8").replace("  - steps: {x1: 1}\n", "  - steps: {x1: 1}\n" + effects),
            encoding="utf-8",
        )
        config = cfg.rename(tmp_path / f"{name}.yaml")
        assert main(["report", str(config), "--no-pdf"]) == 0
        results = json.loads((tmp_path / name / "results.json").read_text(encoding="utf-8"))
        v = results["effects"][0]["variants"][0]
        ames[name] = (
            v["n"],
            v["ame"],
            v["fixed_interval"]["low"],
            v["fixed_interval"]["high"],
            results["data"]["n_rows"],
        )
    # engine: dask now computes out of core, equal to the in-memory
    # numbers to ~1e-16 relative, not bit for bit: counts exact, the AME and its CI to 1e-12 relative
    (n_a, *num_a, rows_a), (n_b, *num_b, rows_b) = ames["a"], ames["b"]
    assert (n_a, rows_a) == (n_b, rows_b) and rows_a == 120 and n_a > 60
    np.testing.assert_allclose(num_a, num_b, rtol=1e-12, atol=0)
