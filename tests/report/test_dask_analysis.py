"""Reports out of core with ``engine: dask`` (fme/report/dask_analysis.py, fme/report/sources.py).

* The same rows as a CSV file (engine: pandas) and as a Parquet dataset (engine: dask) give the same
  results.json to 1e-12 relative when the data have no more rows than ``sample_size``; the items that
  differ by design are listed in :data:`DIFFERENT_BY_DESIGN`.
* With more rows than the sample, the all-row numbers still equal the pandas ones, and no object of
  more rows than the samples reaches the client (every ``Client.gather`` is counted).
* The cluster the build starts is closed after a failing analysis too (no worker process left).

Every dataset is written into tmp_path (no network).
"""

from __future__ import annotations

import json
import math
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")
pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

# imported after the importorskip guards, so that a missing optional package skips this module, not fails it
import fme  # noqa: E402 - after importorskip
from fme.report import analysis  # noqa: E402 - after importorskip
from fme.report.inputs import sources  # noqa: E402 - after importorskip
from fme.report.inputs.config import load_config  # noqa: E402 - after importorskip

CONFIG = """\
title: T
owner: O
intended_use: U
model:
  joblib: model.joblib
data:
  path: {path}
target: y
seed: 7
effects:
  - steps: {{x1: 1}}
    # the engines compared on the paper's procedure (honest subspaces: tests/test_honest.py, Dask = pandas there)
    partition: {{honest: false}}
    stability: {{subsamples: 3, fraction: 0.5}}
  - steps: {{x2: sd}}
    partition: false
    stability: false
  - steps: {{k: all}}
    partition: false
    stability: false
"""

#: results.json paths (regular expressions) that differ between the engines by design.
DIFFERENT_BY_DESIGN = [
    r"/config/data/path",
    r"/config/engine",
    r"/config/sample_size",
    r"/config_name",
    r"/config_sha256",
    r"/data/(source|sha256|n_files|engine|sample)",  # the files themselves, and the sample's description
    r"/effects/\d+/variants/\d+/partition/notes",  # fme.came on Dask data adds "tree grown on ... rows"
    r"/versions/(dask|distributed)",  # packages the Dask analysis imported (pandas: not used)
    r"/environment/cluster",  # the cluster the Dask build ran on
]


def _frame(n: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(0, 10, n), "x2": rng.normal(0, 1, n), "k": rng.choice(["a", "b", "c"], n)})
    df["y"] = np.sin(df["x1"]) + df["x2"] ** 2 + (df["k"] == "b") + rng.normal(0, 0.1, n)
    return df


def _model(df: pd.DataFrame):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    ct = ColumnTransformer([("oh", OneHotEncoder(), ["k"])], remainder="passthrough")
    return make_pipeline(ct, GradientBoostingRegressor(n_estimators=30, random_state=0)).fit(
        df[["x1", "x2", "k"]], df["y"]
    )


#: Fewer computations for the memory test: one partition, one stepped rule, one level.
SMALL_EFFECTS = """\
  - steps: {x1: 1}
    partition: {honest: false}
    stability: false
  - steps: {x2: sd}
    partition: false
    stability: false
  - steps: {k: b}
    partition: false
    stability: false
"""


def _inputs(tmp_path: Path, n: int, parts: int = 3, extra: str = "", effects: str | None = None) -> pd.DataFrame:
    """model.joblib, one.csv, a Parquet dataset ds/ (``parts`` files) and configs p.yaml / d.yaml."""
    import joblib

    df = _frame(n)
    joblib.dump(_model(df), tmp_path / "model.joblib")
    df.to_csv(tmp_path / "one.csv", index=False)
    (tmp_path / "ds").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(n), parts)):
        df.iloc[rows].reset_index(drop=True).to_parquet(tmp_path / "ds" / f"part-{i:03d}.parquet")
    for name, path, more in (("p", "one.csv", ""), ("d", "ds", "engine: dask\n" + extra)):
        text = CONFIG.format(path=path)
        if effects is not None:
            text = text[: text.index("effects:\n") + len("effects:\n")] + effects
        (tmp_path / f"{name}.yaml").write_text(text + more, encoding="utf-8")
    return df


def _differences(
    a, b, exempt: tuple = tuple(DIFFERENT_BY_DESIGN), path: str = "", out: list | None = None, rel: float = 1e-12
) -> list:
    """Paths where two JSON values differ: numbers beyond ``rel`` relative (or ``rel`` absolute: values
    of order 1, so an SD of rounding noise, ~1e-16, matches one of ~1e-16)."""
    import re

    out = [] if out is None else out
    if any(re.fullmatch(p, path) for p in exempt):
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if (k not in a or k not in b) and not any(re.fullmatch(p, f"{path}/{k}") for p in exempt):
                out.append((f"{path}/{k}", "only in one"))
            elif k not in a or k not in b:
                continue
            else:
                _differences(a[k], b[k], exempt, f"{path}/{k}", out, rel)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((path, f"lengths {len(a)} and {len(b)}"))
        for i, (x, y) in enumerate(zip(a, b)):
            _differences(x, y, exempt, f"{path}/{i}", out, rel)
    elif isinstance(a, float) and isinstance(b, float) and not isinstance(a, bool):
        if not math.isclose(a, b, rel_tol=rel, abs_tol=rel):
            out.append((path, a, b))
    elif a != b or type(a) is not type(b):
        out.append((path, a, b))
    return out


def _noise_leaves(results: dict) -> list[str]:
    """Subspaces whose fMEs are all equal: their SD is rounding noise (~1e-16), so the t statistic and
    p-value divided by it carry no digits; those two are compared only where the SD exceeds 1e-12."""
    out = []
    for i, group in enumerate(results["effects"]):
        for j, v in enumerate(group["variants"]):
            for k, leaf in enumerate((v.get("partition") or {}).get("leaves", [])):
                if leaf["sd_fme"] is not None and leaf["sd_fme"] < 1e-12:
                    out.append(f"/effects/{i}/variants/{j}/partition/leaves/{k}/(statistic|p_value)")
    return out


def _descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _settled(before: set[int], timeout: float = 30.0) -> set[int]:
    """Processes started since ``before`` that are still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = {
            pid
            for pid in _descendants() - before
            if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        }
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.mark.slow
def test_dask_report_equals_pandas_report(tmp_path, monkeypatch):
    """Same rows, engine pandas (one CSV) and engine dask (three Parquet files, a local cluster)."""
    from fme.__main__ import main

    monkeypatch.chdir(tmp_path)
    _inputs(tmp_path, 300)
    before = _descendants()
    assert main(["report", "p.yaml", "--no-pdf"]) == 0
    t0 = time.perf_counter()
    assert main(["report", "d.yaml", "--no-pdf"]) == 0
    print(f"engine dask build: {time.perf_counter() - t0:.1f} s")
    assert _settled(before) == set()  # the local cluster was closed with the kernel
    p = json.loads((tmp_path / "p" / "results.json").read_text(encoding="utf-8"))
    d = json.loads((tmp_path / "d" / "results.json").read_text(encoding="utf-8"))
    assert _differences(p, d, tuple(DIFFERENT_BY_DESIGN + _noise_leaves(p))) == []
    assert d["data"]["sample"]["all_rows"] is True and d["data"]["sample"]["rows"] == 300
    assert d["effects"][0]["variants"][0]["partition"]["tree_on_sample"] is False
    # the per-row tables hold the same rows; the report says what is over all rows and what is sampled
    for name in ("x1-fme.csv", "x1-ame.csv", "x2-fme.csv", "k-1-fme.csv"):
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / "p" / "tables" / name), pd.read_csv(tmp_path / "d" / "tables" / name), rtol=1e-12
        )
    qmd = (tmp_path / "d" / "report.qmd").read_text(encoding="utf-8")
    assert qmd.count("Computed out of core \\(engine\\: dask\\)\\. Over all 300 rows") == 5  # every variant
    assert "- **Out of core (engine: dask):** engine\\: dask\\; summaries over all 300 rows" in qmd
    assert "out of core" not in (tmp_path / "p" / "report.qmd").read_text(encoding="utf-8").lower()


@pytest.fixture(scope="module")
def cluster():
    cl = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0")
    yield cl
    sources.close_session()
    cl.close()


class _Gathered:
    """Rows of every pandas object / array a ``Client.gather`` hands to the client (the analysis' memory)."""

    def __init__(self) -> None:
        self.largest = 0

    def count(self, obj) -> None:
        if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index, np.ndarray)):
            self.largest = max(self.largest, len(obj) if getattr(obj, "ndim", 1) else 0)
        elif isinstance(obj, (list, tuple)):
            for x in obj:
                self.count(x)
        elif isinstance(obj, dict):
            for x in obj.values():
                self.count(x)


@pytest.mark.slow
def test_analysis_never_gathers_the_data(tmp_path, monkeypatch, cluster):
    """20,000 rows in two files, figures from 500 rows, tree and detectors from 800: no object of more
    than a quarter of the rows reaches the client (fme's own probes and quantile windows hold about
    1,000 values), and the all-row numbers equal the pandas analysis of the same rows."""
    import fme._dask.common

    n = 20_000
    df = _inputs(
        tmp_path, n, parts=2, extra=f"scheduler: {cluster.scheduler_address}\nsample_size: 500\n", effects=SMALL_EFFECTS
    )
    monkeypatch.setattr(fme._dask.common, "FIT_SAMPLE_SIZE", 800)
    seen = _Gathered()
    real = distributed.Client.gather

    def gather(self, futures, *args, **kwargs):
        got = real(self, futures, *args, **kwargs)
        before = seen.largest
        seen.count(got)
        if seen.largest > before:  # where the largest came from, for the failure message
            import traceback

            seen.where = "".join(traceback.format_stack(limit=9)[:-1])
        return got

    monkeypatch.setattr(distributed.Client, "gather", gather)
    cfg = load_config(tmp_path / "d.yaml")
    data, info = analysis.load_data(cfg, cfg.data)
    assert info["n_rows"] == n and info["sample"]["rows"] == 500 and not info["sample"]["all_rows"]
    data.partitions[0].compute()
    assert seen.largest == n // 2  # the guard sees a gathered partition
    seen.largest = 0
    model, _, _ = analysis.load_model(cfg)
    features = data.drop(columns=["y"])
    out = tmp_path / "out"
    effects = analysis.run_effects(model, features, features, cfg, out, None)
    overview = analysis.feature_overview(model, features, features, cfg, None)
    dictionary = analysis.feature_dictionary(model, features, cfg)
    assert 0 < seen.largest <= n // 4, seen.where
    # the same analysis in memory (engine pandas) on all rows
    pcfg = load_config(tmp_path / "p.yaml")
    pfeat = df.drop(columns=["y"])
    p_effects = analysis.run_effects(model, pfeat, pfeat, pcfg, tmp_path / "pout", None)
    assert _differences(analysis.feature_overview(model, pfeat, pfeat, pcfg, None), overview) == []
    assert _differences(analysis.feature_dictionary(model, pfeat, pcfg), dictionary) == []
    all_rows = [
        "n_total",
        "n",
        "n_extrapolation",
        "n_at_level",
        "n_missing",
        "ame",
        "sd",
        "se",
        "ci_low",
        "ci_high",
        "q25",
        "q75",
        "n_negative",
        "anlm",
        "sd_nlm",
        "anlm_ci_low",
        "anlm_ci_high",
        "n_nlm",
        "n_nlm_linear",
        "median_nlm",
        "share_linear",
        "n_nlm_flat",
        "n_nlm_constant",
        "n_nlm_undefined",
        "with_eps",
        "sensitivity",
        "step_label",
        "steps",
        "model_ci",
    ]
    for pg, dg in zip(p_effects, effects):
        for pv, dv in zip(pg["variants"], dg["variants"]):
            got = {k: dv.get(k) for k in all_rows}
            assert _differences({k: pv.get(k) for k in all_rows}, got) == [], dv["id"]
    # the cAMEs: over all rows, on the tree grown on 800 of the evaluated rows
    part = effects[0]["variants"][0]["partition"]
    assert part["tree_on_sample"] is True and part["tree_rows"] == 800
    assert sum(leaf["n"] for leaf in part["leaves"]) == effects[0]["variants"][0]["n"]
    assert sum(leaf["n_extrapolation"] for leaf in part["leaves"]) == effects[0]["variants"][0]["n_extrapolation"]
    # the per-row table: the 500 sampled rows (less those left out)
    table = pd.read_csv(out / "tables" / "x1-fme.csv", index_col=0)
    assert len(table) < 500 and table.index.isin(range(n)).all()
    ref = fme.fme(model, pfeat.loc[table.index], {"x1": 1.0}).results["fme"]
    np.testing.assert_allclose(table["fme"].to_numpy(), ref.to_numpy(), rtol=1e-12)


def test_sample_is_seeded_and_independent_of_the_files(tmp_path, cluster):
    df = _frame(1000)
    frames = []
    for parts in (2, 7):
        d = tmp_path / f"ds{parts}"
        d.mkdir()
        for i, rows in enumerate(np.array_split(np.arange(1000), parts)):
            df.iloc[rows].reset_index(drop=True).to_parquet(d / f"p{i}.parquet")
        ddf, n = sources.read_dask(sources.data_files(tmp_path, d.name), cluster.scheduler_address)
        assert n == 1000 and ddf.known_divisions
        frames.append(sources.sample_rows(ddf, n, 100, seed=5))
    (a, all_a), (b, all_b) = frames
    assert not all_a and not all_b and len(a) == 100
    pd.testing.assert_frame_equal(a, b)
    expected = np.sort(np.random.default_rng(5).choice(1000, size=100, replace=False))
    # values and row labels of the in-memory rows (Dask reads text as a string dtype with pd.NA)
    pd.testing.assert_frame_equal(a, df.iloc[expected], check_dtype=False)
    whole, everything = sources.sample_rows(ddf, n, 1000, seed=5)
    assert everything
    pd.testing.assert_frame_equal(whole, df, check_dtype=False)


@pytest.mark.slow
def test_cluster_closed_after_a_failing_analysis(tmp_path, monkeypatch):
    """The analysis fails after the local cluster started (a feature the data lack): no process is left."""
    from fme.__main__ import main

    monkeypatch.chdir(tmp_path)
    _inputs(tmp_path, 60)
    cfg = (tmp_path / "d.yaml").read_text(encoding="utf-8").replace("{x2: sd}", "{x9: sd}")
    (tmp_path / "d.yaml").write_text(cfg, encoding="utf-8")
    before = _descendants()
    assert main(["report", "d.yaml", "--no-pdf"]) != 0
    assert "unknown feature 'x9'" in (tmp_path / "d.error.log").read_text(encoding="utf-8")
    assert _settled(before) == set()
    assert not (tmp_path / "d").exists()


def test_sample_size_needs_engine_dask(tmp_path):
    from fme.report.inputs.config import ConfigError

    _inputs(tmp_path, 30)
    p = tmp_path / "p.yaml"
    p.write_text(p.read_text(encoding="utf-8") + "sample_size: 1000\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"p\.yaml:\d+: sample_size: sample_size applies to engine: dask"):
        load_config(p)
    d = tmp_path / "d.yaml"
    d.write_text(d.read_text(encoding="utf-8") + "sample_size: 5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"d\.yaml:\d+: sample_size: "):
        load_config(d)


@pytest.mark.slow
def test_dask_and_pandas_reports_of_a_poisson_glm_with_c_terms_say_the_same(tmp_path, monkeypatch):
    """On the case that found it: a statsmodels Poisson GLM with ``C()`` terms on randhie, delta
    inference and the default (honest, pruned) cAME trees, built from one CSV (pandas) and a Parquet dataset
    (Dask): results.json and the tables agree, the leaf boxes list the same levels and the flags pick the same
    leaves."""
    import joblib
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from fme.__main__ import main

    monkeypatch.chdir(tmp_path)
    d = sm.datasets.randhie.load_pandas().data.iloc[:1200].copy()
    d["health"] = np.select([d["hlthp"] == 1, d["hlthf"] == 1, d["hlthg"] == 1], ["poor", "fair", "good"], "excellent")
    d = d.drop(columns=["hlthg", "hlthf", "hlthp"])
    model = smf.glm(
        "mdvis ~ lncoins + lpi + physlm + disea + C(idp) + C(health)", data=d, family=sm.families.Poisson()
    ).fit()
    joblib.dump(model, tmp_path / "model.joblib")
    X = d.drop(columns="mdvis")
    X.to_csv(tmp_path / "one.csv", index=False)
    (tmp_path / "ds").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(X)), 3)):
        X.iloc[rows].reset_index(drop=True).to_parquet(tmp_path / "ds" / f"part-{i:03d}.parquet")
    body = """\
        title: T
        owner: O
        intended_use: U
        model: {{joblib: model.joblib}}
        data: {{path: {path}}}
        target: mdvis
        seed: 3
        overview: false
        inference: {{method: delta}}
        effects:
          - steps: {{lpi: 1}}
            stability: false
          - steps: {{health: poor}}
            stability: false
          - steps: {{idp: 1}}
            partition: false
            stability: false
        """
    for name, path, more in (("p", "one.csv", ""), ("d", "ds", "engine: dask\n")):
        (tmp_path / f"{name}.yaml").write_text(textwrap.dedent(body.format(path=path)) + more, encoding="utf-8")
    assert main(["report", "p.yaml", "--no-pdf"]) == 0
    assert main(["report", "d.yaml", "--no-pdf"]) == 0
    p = json.loads((tmp_path / "p" / "results.json").read_text(encoding="utf-8"))
    dd_ = json.loads((tmp_path / "d" / "results.json").read_text(encoding="utf-8"))
    assert _differences(p, dd_, tuple(DIFFERENT_BY_DESIGN + _noise_leaves(p)), rel=1e-10) == []
    # the trees were grown (pruned to at most 8 subspaces), and a C() column is stepped to a level, NLM off
    parts = [v["partition"] for g in p["effects"] for v in g["variants"] if v.get("partition")]
    assert len(parts) == 2 and all(2 <= len(q["leaves"]) <= 8 for q in parts)
    idp = p["effects"][2]["variants"][0]
    assert (idp["numeric"], idp["nlm"], idp["step_label"]) == (False, False, "idp -> 1")
    assert (idp["n_at_level"], idp["n"]) == (int((X["idp"] == 1).sum()), int((X["idp"] != 1).sum()))
    dic = {r["feature"]: r for r in p["dictionary"]}
    assert dic["idp"]["type"] == "categorical" and dic["idp"]["encoding"].endswith("reference level 0")
    for name in sorted(f.name for f in (tmp_path / "p" / "tables").glob("*.csv")):
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / "p" / "tables" / name), pd.read_csv(tmp_path / "d" / "tables" / name), rtol=1e-10
        )


#: results.json paths that name the engine itself: the files read, the sample's description, the packages
#: and the cluster the Dask build used. Every other value, every number included, must be equal.
ENGINE_IDENTIFICATION = [
    r"/config/data/path",
    r"/config/engine",
    r"/config_name",
    r"/config_sha256",
    r"/data/(source|sha256|n_files|engine|sample)",
    r"/versions/(dask|distributed)",
    r"/environment/cluster",
    r"/effects/\d+/variants/\d+/partition/notes",  # fme.came on Dask data says which rows grew the tree
]

PARITY_EFFECTS = """\
  - steps: {x1: 1}
    partition: {max_leaves: null}
    stability: {subsamples: 4, fraction: 0.5}
  - steps: {x2: sd}
    partition: false
    stability: false
  - steps: {k: all}
    partition: false
    stability: false
"""


def _numbers(value, path: str = "") -> dict[str, float]:
    """Every number of a JSON value by its path (booleans excluded)."""
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(_numbers(v, f"{path}/{k}"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(_numbers(v, f"{path}/{i}"))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[path] = float(value)
    return out


@pytest.mark.slow
def test_dask_report_on_rows_within_sample_size_equals_the_pandas_report(tmp_path, monkeypatch):
    """An honest cAME tree (the default) with stability refits, 2,000 rows as one CSV (pandas) and as three Parquet
    files (Dask, all rows within sample_size): every number and value of results.json is equal to 1e-10 but the
    engine's own identification; the stability refits ran on both engines, over the same rows; the flags table
    lists the same rules."""
    from fme.__main__ import main

    monkeypatch.chdir(tmp_path)
    _inputs(tmp_path, 2000, effects=PARITY_EFFECTS)
    assert main(["report", "p.yaml", "--no-pdf"]) == 0
    assert main(["report", "d.yaml", "--no-pdf"]) == 0
    p = json.loads((tmp_path / "p" / "results.json").read_text(encoding="utf-8"))
    d = json.loads((tmp_path / "d" / "results.json").read_text(encoding="utf-8"))
    assert d["data"]["sample"]["all_rows"] is True
    exempt = tuple(ENGINE_IDENTIFICATION + _noise_leaves(p))
    assert _differences(p, d, exempt, rel=1e-10) == []
    numbers = _numbers(p)
    assert len(numbers) > 300  # the comparison is not vacuous: every number of the pandas report is checked
    for res in (p, d):
        v = res["effects"][0]["variants"][0]
        st = v["stability"]
        assert v["partition"]["honest"] is True
        assert st["n_refits"] == 4 and st["n_failed"] == 0 and st["errors"] == []
        assert st["n_rows"] == v["n"] and st["n_each"] == round(0.5 * v["n"])  # half of the evaluated rows
    p_html, d_html = (" ".join((tmp_path / e / "report.html").read_text(encoding="utf-8").split()) for e in "pd")
    rule = "partition unstable across subsamples (median ARI)"
    assert rule in p_html and rule in d_html
    n_rows = f"(50.0% of the {p['effects'][0]['variants'][0]['stability']['n_rows']:,} evaluated rows; drawn"
    assert n_rows in d_html and n_rows in p_html
    cluster = d["environment"]["cluster"]  # the local cluster the build started: its workers and threads
    assert cluster["scheduler"] == "local" and cluster["workers"] >= 1 and cluster["threads"] >= cluster["workers"]
    assert f"Cluster: local ({cluster['workers']} worker" in d_html and "Cluster:" not in p_html


def _figures_of(res) -> dict:
    """Every public figure of an effect result (the report's only way to read one)."""
    out = {
        "counts": res.exclusion_counts(),
        "n": res.n,
        "n_total": res.n_total,
        "n_extrapolation": res.n_extrapolation,
        "n_kept_extrapolation": res.n_kept_extrapolation,
        "n_negative": res.n_negative,
        "n_nlm_linear": res.n_nlm_linear,
        "quantiles": res.quantiles(),
        "ame": res.ame,
        "sd": res.sd,
    }
    if res.has_nlm:
        out["nlm"] = res.nlm_figures()
    return out


@pytest.mark.parametrize("steps, policy", [({"x1": 1.0}, "exclude"), ({"x1": 1.0}, "keep"), ({"k": "b"}, "exclude")])
def test_public_figures_are_equal_on_both_engines(steps, policy):
    """The figures compute_effect reads (exclusion counts, negative fMEs, NLMs >= 0.9, quartiles and median, the
    NLM summary, flagged rows kept) are the same numbers in memory and on Dask data, for the same rows: missing
    stepped values, rows already at the level and extrapolation points included."""
    import dask.dataframe as dd

    df = _frame(3000, seed=4)
    if "x1" in steps:  # missing stepped values are left out (the model never sees them)
        df.loc[np.random.default_rng(5).choice(3000, 40, replace=False), "x1"] = np.nan
    model = _model(_frame(400))
    X = df.drop(columns="y")
    kwargs = dict(
        extrapolation="envelope",
        on_extrapolation=policy,
        reference_data=X[X["x1"] < 9],
        nlm="k" not in steps,
        random_state=0,
    )
    mem = fme.fme(model, X, steps, **kwargs)
    lazy = fme.fme(model, dd.from_pandas(X, npartitions=4), steps, **kwargs)
    a, b = _figures_of(mem), _figures_of(lazy)
    lazy.release()  # the figures stay: n_negative and the quantiles are kept
    assert _figures_of(lazy) == b
    assert _differences(a, b, rel=1e-10) == []
    assert a["counts"]["missing"] == (40 if "x1" in steps else 0) and a["n_total"] == 3000
    if "k" in steps:
        assert a["counts"]["at_level"] == int((X["k"] == "b").sum()) and "nlm" not in a
    elif policy == "keep":
        assert a["n_kept_extrapolation"] > 0 and a["n_extrapolation"] == 0
    else:
        assert a["n_extrapolation"] > 0 and a["n_kept_extrapolation"] == 0 and a["nlm"]["n"] > 0
