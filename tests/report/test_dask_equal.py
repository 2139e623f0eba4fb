"""Dask reports say what pandas reports say, and every figure and table counts one set of rows.

* The stability refits run on Dask data: over every sampled evaluated row (growing and estimation rows of an
  honest tree), a reduction to ``max_leaves`` being an upper bound for a refit as for the full tree; with all
  rows within ``sample_size`` the summary equals the pandas one number for number.
* A check that did not run stays in the flags table as "not run" with its reason.
* The stability table names the denominators of its counts and shares (the sample's evaluated rows).
* The environment names the cluster: scheduler, workers, threads per worker.
* A leaf of fewer than 2 estimation rows has no interval and enters no leaf-difference test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import fme
from fme.report.analysis.effect import compute_effect
from fme.report.analysis.effect_parts import _leaf_tests
from fme.report.inputs.config import EffectConfig
from fme.report.inputs.specs import FLAG_DEFAULTS
from fme.report.present.context import cluster_phrase, stability_cells
from fme.report.present.flags import flag_rows
from fme.report.present.partition_view import leaf_rows, leaf_test_cells


def _data(n: int = 3000) -> tuple:
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.uniform(0, 1, n), "z": rng.uniform(0, 1, n), "w": rng.uniform(0, 1, n)})
    y = X["x"] * (1 + 3 * (X["z"] > 0.5)) + np.sin(8 * X["w"]) * X["x"] + rng.normal(scale=0.1, size=n)
    return HistGradientBoostingRegressor(max_iter=50, random_state=0).fit(X, y), X


def _effect(stability: dict | bool = True) -> EffectConfig:
    return EffectConfig(
        id="x",
        steps={"x": 0.2},
        conf_level=0.95,
        inference={"method": "sample"},
        extrapolation={"method": "envelope"},
        partition={"method": "ctree", "max_leaves": 4},
        stability={"subsamples": 6, "fraction": 0.5} if stability is True else stability,
    )


def test_pruned_tree_refits_keep_fewer_leaves_instead_of_failing():
    """811 evaluated rows (the Dask test's sample, in memory), the honest tree pruned to 4 leaves: half-sized refits
    that grow 2 or 3 leaves keep them (before, 4 of 6 refits failed with "n_partitions=4 but the grown tree has
    only 2 leaves")."""
    model, X = _data(3000)
    rows = X.iloc[np.sort(np.random.default_rng(7).choice(3000, 1000, replace=False))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compute_effect(model, rows, X, _effect(), 7)
    st, part = out["summary"]["stability"], out["partition"]
    assert len(part.leaf_ids) == 4 and part.params["n_partitions"] == 4
    assert (st["n_refits"], st["n_failed"], st["errors"]) == (6, 0, [])
    assert st["leaves_min"] < 4 and st["leaves_max"] <= 4  # fewer leaves kept, never more than max_leaves
    assert st["of_sample"] is None and st["n_rows"] == out["summary"]["n"]
    # the exact call of fme.partition_stability still fails such refits (its documented behaviour)
    exact = fme.partition_stability(part, n_subsamples=6, fraction=0.5, random_state=7)
    assert exact["error"].str.contains("n_partitions=4 but the grown tree has only").sum() == 4
    kept = fme.partition_stability(part, n_subsamples=6, fraction=0.5, random_state=7, at_most=True)
    np.testing.assert_array_equal(kept["ame"].to_numpy(), exact["ame"].to_numpy())  # the same subsamples
    assert kept["error"].isna().all()
    ok = exact["error"].isna().to_numpy()
    np.testing.assert_array_equal(kept["ari"].to_numpy()[ok], exact["ari"].to_numpy()[ok])


def test_dask_stability_runs_on_the_sample_and_equals_pandas_on_all_rows():
    """On Dask data (a 1-worker in-process cluster): with a sample of 1,000 of 3,000 rows every refit succeeds
    and the summary names the sample; with every row in the sample it equals the pandas summary exactly."""
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    from fme.report.analysis.dask_analysis import compute_effect_dask
    from fme.report.inputs.sources import sample_rows

    model, X = _data(3000)
    eff = _effect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pandas = compute_effect(model, X, X, eff, 7)["summary"]
        with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0"):
            D = dd.from_pandas(X, npartitions=3)
            sample, everything = sample_rows(D, 3000, 1000, 7)
            assert not everything
            part_ = compute_effect_dask(model, D, D, eff, 7, None, None, None, sample=sample)["summary"]
            whole = compute_effect_dask(model, D, D, eff, 7, None, None, None, sample=sample_rows(D, 3000, 3000, 7)[0])[
                "summary"
            ]
    st = part_["stability"]
    evaluated_in_sample = int(X.loc[sample.index, "x"].add(0.2).le(X["x"].max()).sum())
    assert (st["n_refits"], st["n_failed"], st["errors"]) == (6, 0, [])
    assert st["n_rows"] == evaluated_in_sample and st["of_sample"] == part_["n"] == pandas["n"]
    assert st["n_each"] == round(0.5 * evaluated_in_sample)
    # rows within sample_size: the same rows, the same refits, the same numbers
    assert whole["stability"] == pandas["stability"]
    assert whole["stability"]["n_failed"] == 0 and whole["stability"]["of_sample"] is None
    cells = stability_cells(st, 3)["rows"][0]["value"]
    share = f"{100 * st['n_rows'] / st['of_sample']:.1f}%"
    assert cells == (
        f"6 random subsamples of {st['n_each']:,} rows each ({100 * st['n_each'] / st['n_rows']:.1f}% "
        f"of the {st['n_rows']:,} evaluated rows "
        f"of the sample, itself {share} of all {st['of_sample']:,} evaluated rows; drawn without "
        "replacement)"
    )


def test_stability_table_names_its_rows_and_what_did_not_run():
    st = {
        "subsamples": 20,
        "fraction": 0.5,
        "n_each": 6710,
        "n_rows": 13420,
        "of_sample": 27061,
        "ame_min": 0.1,
        "ame_max": 0.2,
        "ame_sd": 0.03,
        "n_same_sign": 20,
        "root_split": "x",
        "n_leaves_full": 4,
        "n_refits": 20,
        "n_failed": 0,
        "errors": [],
        "n_same_root": 19,
        "ari_median": 0.9,
        "ari_min": 0.8,
        "ari_max": 0.95,
        "leaves_median": 4.0,
        "leaves_min": 3,
        "leaves_max": 4,
    }
    rows = {r["quantity"]: r["value"] for r in stability_cells(st, 2)["rows"]}
    assert rows["Subsamples"] == (
        "20 random subsamples of 6,710 rows each (50.0% of the 13,420 evaluated rows of "
        "the sample, itself 49.6% of all 27,061 evaluated rows; drawn without replacement)"
    )
    assert rows["First split (x in the tree grown on the sample)"] == "the same in 19 of 20 refits"
    assert rows["Subspaces (leaves)"].startswith("tree grown on the sample 4; refits median 4.0")
    full = stability_cells({**st, "of_sample": None}, 2)["rows"]
    assert full[0]["value"] == (
        "20 random subsamples of 6,710 rows each (50.0% of the 13,420 evaluated rows; drawn without replacement)"
    )
    assert full[1]["quantity"] == "First split (x in the full data)"
    not_run = stability_cells({"subsamples": 20, "fraction": 0.5, "not_run": "no cAME partition (too few rows)"}, 2)
    assert not_run["rows"] == [{"quantity": "Refits", "value": "not run: no cAME partition (too few rows)"}]


def _variant(**more) -> dict:
    v = {
        "detector": "envelope",
        "policy": "exclude",
        "n": 100,
        "n_extrapolation": 0,
        "ci_low": 0.1,
        "ci_high": 0.3,
        "ame": 0.2,
        "nlm": False,
        "inference": "sample",
        "conf_level": 0.95,
        "stability": None,
        "partition": None,
        "partition_not_run": None,
    }
    v.update(more)
    return v


def _flags(v: dict) -> dict[str, tuple[str, str]]:
    cells = {"ep_share": "0.0%", "ci_low": "0.1", "ci_high": "0.3", "anlm": "-", "ame": "0.2"}
    return {r["rule"]: (r["value"], r["status"]) for r in flag_rows(v, cells, "x", dict(FLAG_DEFAULTS))}


def test_checks_that_did_not_run_stay_in_the_flags_table():
    ari = "partition unstable across subsamples (median ARI)"
    test = "leaves not distinguishable (global test of equal leaf cAMEs)"
    why = "honest cAMEs split the 3 evaluated rows into 3 to grow the tree and 0 to estimate its leaves"
    f = _flags(
        _variant(
            partition_not_run=why,
            stability={"subsamples": 20, "fraction": 0.5, "not_run": f"no cAME partition ({why})"},
        )
    )
    assert f[ari] == (f"not run: no cAME partition ({why})", "FLAG (!)")
    assert f[test] == (f"not run: {why}", "FLAG (!)")
    assert f["smallest cAME leaf"] == (f"not run: {why}", "FLAG (!)")
    # every refit failed: still a row
    f = _flags(_variant(stability={"subsamples": 20, "fraction": 0.5, "n_failed": 20, "ari_median": None}))
    assert f[ari] == ("not run: 20 of 20 refits failed", "FLAG (!)")
    # NLMs asked for but none defined; a single subspace has nothing to compare
    leaf = {"node": 1, "n": 100, "came": 0.2}
    f = _flags(_variant(nlm=True, anlm=None, partition={"leaves": [leaf], "tests": None}))
    assert f["ANLM below threshold"] == ("not run: no evaluated row has a defined NLM", "FLAG (!)")
    assert f[test] == ("not run: a single subspace (no leaves to compare)", "ok")
    # a partition switched off in the config is no check that failed
    assert not {ari, test} & set(_flags(_variant()))


def test_cluster_phrase_names_scheduler_workers_and_threads_per_worker():
    assert cluster_phrase({"scheduler": "local", "workers": 2, "threads": 2, "threads_per_worker": [1]}) == (
        " Cluster: local (2 workers, 1 thread per worker, 2 threads in all)."
    )
    assert cluster_phrase(
        {"scheduler": "tcp://10.0.0.5:8786", "workers": 3, "threads": 9, "threads_per_worker": [1, 4]}
    ) == (" Cluster: tcp://10.0.0.5:8786 (3 workers, 1 to 4 threads per worker, 9 threads in all).")
    assert cluster_phrase(None) == ""


def test_session_info_records_threads_per_worker():
    distributed = pytest.importorskip("distributed")
    from fme.report.inputs import sources

    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cl:
        sources.session(cl.scheduler_address)
        try:
            info = sources.session_info()
        finally:
            sources.close_session()
    assert info == {"scheduler": cl.scheduler_address, "workers": 1, "threads": 2, "threads_per_worker": [2]}


def _small_leaves() -> object:
    """A CART partition with a leaf of no and a leaf of one estimation row (seeded search, as in the docs)."""
    rng = np.random.default_rng(1)
    n = 60
    X = pd.DataFrame({"x": rng.uniform(0, 1, n), "z": rng.uniform(0, 1, n)})
    eff = fme.fme(
        lambda d: d["x"].to_numpy() ** 2 * (1 + 5 * d["z"].to_numpy()) + d["z"].to_numpy() ** 3,
        X,
        {"x": 0.1},
        inference="sample",
    )
    return fme.came(eff, method="cart", max_depth=3, min_samples_leaf=1, random_state=0)


def test_a_leaf_of_fewer_than_two_estimation_rows_has_no_interval_and_no_test():
    part = _small_leaves()
    n = part.leaves.set_index("node")["n"]
    assert (n[4], n[5]) == (0, 1) and (n.drop([4, 5]) >= 2).all()
    assert (
        part.leaves.set_index("node")
        .loc[[4, 5], ["came_ci_low", "came_ci_high", "std_error", "conf_low"]]
        .isna()
        .all()
        .all()
    )
    t = part.test()
    assert t.left_out == [4, 5]
    assert not t["hypothesis"].str.contains(r"\[4\]|\[5\]").any() and len(t) == 15  # 6 leaves: 15 pairs
    assert t["p_value"].notna().all() and np.isfinite(t.global_test["p_value"])
    assert t.global_test["df"] == 5.0
    tests = _leaf_tests(part)
    assert tests["left_out"] == [4, 5] and len(tests["rows"]) == 15
    cells = leaf_test_cells(tests, 0.95, 3)
    assert cells["global"].endswith(
        " Not tested: leaf 4, leaf 5 (fewer than 2 rows to estimate the cAME from: no interval)."
    )
    leaves = [
        {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
        for r in part.leaves.to_dict("records")
    ]
    root = {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in part.root.items()}
    rows = leaf_rows({"root": {**root, "rule": "all"}, "leaves": leaves}, 60)
    assert [r["ci"] for r in rows if r["node"] in ("4", "5")] == ["- (fewer than 2 rows)"] * 2
    assert all(r["ci"].startswith("[") for r in rows if r["node"] not in ("4", "5"))
