"""Where each cAME holds: PartitionResult.extrapolation_counts (the extrapolation points in each subspace) and the
rows behind a partition (row_counts, sample_rows), on both engines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme


@pytest.fixture(scope="module")
def part():
    rng = np.random.default_rng(3)
    n = 600
    X = pd.DataFrame({"a": rng.uniform(0, 10, n), "b": rng.uniform(-1, 1, n), "c": rng.normal(0, 1, n)})

    def model(d):
        a, b = d["a"].to_numpy(), d["b"].to_numpy()
        return np.where(a > 5, 3.0, 1.0) * a + np.where(b > 0, 2.0, -2.0) * b**2

    eff = fme.fme(model, X, {"a": 2.5}, extrapolation="envelope")  # a > 7.5 leaves the data
    return fme.came(eff, minbucket=40, features=["a", "b"])


def _inside(X: pd.DataFrame, box: pd.DataFrame) -> np.ndarray:
    """Rows of X inside a hyperrectangle, from its printed bounds (independent of the tree)."""
    ok = np.ones(len(X), dtype=bool)
    for feat, b in box.iterrows():
        if b["restricted"]:
            v = X[feat].to_numpy(dtype=float)
            ok &= (v > b["low"]) if b["low_open"] else (v >= b["low"])
            ok &= v <= b["high"]
    return ok


def test_extrapolation_points_per_leaf_and_evaluated_ranges(part):
    eff = part.effects
    assert eff.n_excluded > 50 and len(part.leaf_ids) >= 2
    s = part.extrapolation_counts()
    assert s.name == "n_extrapolation" and s.index.name == "node" and list(s.index) == list(part.leaf_ids)
    assert s.dtype == np.int64
    ep = eff.data.loc[eff.excluded.index[eff.excluded["reason_type"] == "extrapolation"]]
    evaluated = eff.data.loc[eff.results.index]
    total = 0
    eval_max = []
    for node in part.leaf_ids:
        box = part.describe(node)
        assert s[node] == int(_inside(ep, box).sum())
        total += s[node]
        rows = evaluated[(part.leaf_of_row == node).to_numpy()]
        for feat in ("a", "b"):
            assert box.at[feat, "min"] == rows[feat].min()
            assert box.at[feat, "max"] == rows[feat].max()
            assert box.at[feat, "low"] <= box.at[feat, "min"] <= box.at[feat, "max"] <= box.at[feat, "high"]
        eval_max.append(box.at["a", "max"])
    assert total == len(ep) == eff.n_extrapolation
    # the evaluated range is narrower than the hyperrectangle for the stepped feature: no row above 7.5 has an fME
    assert max(eval_max) <= 7.5 < eff.data["a"].max()


def test_unchecked_effects_have_no_extrapolation_counts():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 200), "b": rng.uniform(0, 1, 200)})
    eff = fme.fme(lambda d: d["a"].to_numpy() * (d["b"].to_numpy() > 0.5), X, {"a": 0.1})
    assert fme.came(eff, minbucket=40).extrapolation_counts() is None


def test_a_point_with_a_missing_partitioning_value_falls_into_no_subspace(part):
    """Counted as the tree places points: a point the tree cannot place is left out, the others all count."""
    eff = part.effects
    data = eff.data.copy()
    ep = eff.excluded.index[eff.excluded["reason_type"] == "extrapolation"]
    data.loc[ep[:3], "b"] = np.nan
    eff2 = fme.fme(_model, data, {"a": 2.5}, extrapolation="envelope", reference_data=eff.data, inference="sample")
    p2 = fme.came(eff2, minbucket=40, features=["a", "b"])
    assert eff2.n_extrapolation == len(ep)
    assert p2.extrapolation_counts().sum() == len(ep) - 3


# ----------------------------------------------------------------- Dask data: the same counts over all rows
dd = pytest.importorskip("dask.dataframe")


def _model(d):
    a, b = d["a"].to_numpy(), d["b"].to_numpy()
    return np.where(a > 5, 3.0, 1.0) * a + np.where(b > 0, 2.0, -2.0) * b**2


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)
    n = 600
    return pd.DataFrame({"a": rng.uniform(0, 10, n), "b": rng.uniform(-1, 1, n), "c": rng.normal(0, 1, n)})


@pytest.mark.parametrize("honest", [False, True])
def test_dask_extrapolation_counts_and_row_counts_equal_pandas(frame, honest):
    eff = fme.fme(_model, frame, {"a": 2.5}, extrapolation="envelope", inference="sample")
    deff = fme.fme(
        _model,
        dd.from_pandas(frame, npartitions=3, sort=False),
        {"a": 2.5},
        extrapolation="envelope",
        inference="sample",
    )
    a = fme.came(eff, minbucket=40, features=["a", "b"], honest=honest)
    b = fme.came(deff, minbucket=40, features=["a", "b"], honest=honest)
    assert b.leaf_ids == a.leaf_ids and len(a.leaf_ids) >= 2
    sa, sb = a.extrapolation_counts(), b.extrapolation_counts()
    pd.testing.assert_series_equal(sb, sa)
    assert sa.sum() == eff.n_extrapolation == deff.n_extrapolation > 50
    assert b.row_counts == a.row_counts
    n_grown = 600 - eff.n_extrapolation if not honest else len(a.grown_on)
    assert a.row_counts == {"grown": n_grown, "evaluated": eff.n, "estimated": eff.n - (n_grown if honest else 0)}
    assert a.row_counts["estimated"] == a.leaves["n"].sum()
    assert (a.sample_rows, a.grown_on_sample, a.dask_effects) == (n_grown, False, None)
    assert (b.sample_rows, b.grown_on_sample, b.dask_effects) == (n_grown, False, deff)


def test_dask_extrapolation_counts_of_a_tree_grown_on_a_sample(frame):
    """The tree grows on a seeded sample; the counts are over every row of the data, as the tree places them."""
    deff = fme.fme(
        _model,
        dd.from_pandas(frame, npartitions=4, sort=False),
        {"a": 2.5},
        extrapolation="envelope",
        inference="sample",
    )
    b = fme.came(deff, minbucket=30, features=["a", "b"], honest=False, sample_size=300, random_state=2)
    assert b.grown_on_sample and b.sample_rows < deff.n and b.row_counts["grown"] == b.sample_rows
    excluded = deff.excluded.compute()
    ep = frame.loc[excluded.index[excluded["reason_type"] == "extrapolation"]]
    counts = b.extrapolation_counts()
    for node in b.leaf_ids:
        assert counts[node] == int(_inside(ep, b.describe(node)).sum())
    assert counts.sum() == len(ep) == deff.n_extrapolation
    unchecked = fme.came(
        fme.fme(_model, dd.from_pandas(frame, npartitions=2, sort=False), {"a": 2.5}, inference="sample"),
        minbucket=40,
        features=["a", "b"],
    )
    assert unchecked.extrapolation_counts() is None
