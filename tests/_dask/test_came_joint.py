"""Joint regions on Dask data: fme.came of a list of Dask effects gives the partition and figures of the same
effects in memory (to 1e-10 when the rows fit in ``sample_size``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

import fme  # noqa: E402
from fme.exceptions import DataError  # noqa: E402
from tests._trees.test_joint import FEATURES, _frame, _model  # noqa: E402

RTOL = 1e-10


@pytest.fixture(scope="module", autouse=True)
def sync():
    with dask.config.set(scheduler="sync"):
        yield


def _effects(X) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a function model: the fixed-model interval, said by a warning
        return [fme.fme(_model, X, {f: 1.0}) for f in ("xa", "xb", "xc")]


@pytest.fixture(scope="module")
def both():
    X = _frame(900, seed=11)
    return _effects(X), _effects(dd.from_pandas(X, npartitions=3, sort=False))


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        if pd.api.types.is_numeric_dtype(a[c]) and not pd.api.types.is_bool_dtype(a[c]):
            np.testing.assert_allclose(b[c].to_numpy(dtype=float), a[c].to_numpy(dtype=float), rtol=RTOL, atol=1e-12)
        else:
            assert b[c].tolist() == a[c].tolist(), c


@pytest.mark.parametrize("kwargs", [{}, {"honest": False, "method": "cart", "max_depth": 2}])
def test_dask_joint_partition_equals_pandas(both, kwargs):
    mem, dsk = both
    a = fme.came(mem, features=FEATURES, **kwargs)
    b = fme.came(dsk, features=FEATURES, **kwargs)
    assert isinstance(b, fme.JointPartitionResult) and b.leaf_ids == a.leaf_ids and len(a.leaf_ids) >= 2
    pd.testing.assert_frame_equal(b.tree.nodes_, a.tree.nodes_)
    _same(a.leaves, b.leaves)
    _same(a.heterogeneity(), b.heterogeneity())
    _same(a.test(), b.test())
    assert b.row_counts == a.row_counts


def test_dask_one_effect_list_is_came_of_the_effect(both):
    _, dsk = both
    a = fme.came([dsk[1]], features=FEATURES)
    b = fme.came(dsk[1], features=FEATURES)
    pd.testing.assert_frame_equal(a.leaves, b.leaves)


def test_dask_effects_must_share_the_data(both):
    mem, dsk = both
    other = _effects(dd.from_pandas(_frame(900, seed=12), npartitions=3, sort=False))
    with pytest.raises(DataError, match=r"effects\[1\].*other rows"):
        fme.came([dsk[0], other[1]], features=FEATURES)
    with pytest.raises(DataError, match=r"effects\[1\].*Dask"):
        fme.came([dsk[0], mem[1]], features=FEATURES)


def test_dask_joint_partition_on_a_sample_sums_over_all_rows(both):
    mem, dsk = both
    part = fme.came(dsk, features=FEATURES, sample_size=200, random_state=4)
    assert part.grown_on_sample and part.sample_rows < 300  # a seeded fraction of the ~450 growing rows
    # every estimation row's subspace from the tree grown on the sample, its figures summed over all of them
    est = ~fme._trees.grow.honest_mask(mem[0].results.index, 0.5, 4)
    node = part._subspace[np.asarray(part.tree.apply(mem[0].data[FEATURES]), dtype=int)]
    for k, e in enumerate(mem):
        fm = e.results["fme"].to_numpy()
        rows = part.leaves[part.leaves["effect"] == part.effect_labels[k]]
        for _, r in rows.iterrows():
            m = est & (node == r["node"])
            assert r["n"] == m.sum()
            np.testing.assert_allclose(r["came"], fm[m].mean(), rtol=RTOL)
            np.testing.assert_allclose(r["sd_fme"], fm[m].std(ddof=1), rtol=RTOL)
    assert part.heterogeneity()["n"].tolist() == [int(est.sum())] * 3


def test_dask_effects_on_other_rows_of_the_same_size_are_refused():
    # one estimation row left out of the first effect, another of the second: as many rows, the same data
    X = _frame(900, seed=11)
    from fme._trees.grow import honest_mask

    est = ~honest_mask(X.index, 0.5, 0)
    i = int(np.flatnonzero(est & (X["z1"] < -0.5).to_numpy())[0])
    j = int(np.flatnonzero(est & (X["z1"] > 0.5).to_numpy())[0])
    X.loc[i, "xa"] = np.nan
    X.loc[j, "xb"] = np.nan
    D = dd.from_pandas(X, npartitions=3, sort=False)

    def model(d: pd.DataFrame) -> np.ndarray:
        return _model(d.fillna(0.0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effs = [fme.fme(model, D, {f: 1.0}) for f in ("xa", "xb")]
    assert effs[0].n == effs[1].n
    with pytest.raises(DataError, match=r"effects\[1\].*other rows"):
        fme.came(effs, features=FEATURES)


def test_dask_effects_excluding_as_many_but_other_rows_are_refused():
    # each effect leaves out one extrapolation point, another row of the same leaf at the end of the last chunk:
    # equal counts everywhere, and the tree's sample of 30 rows misses both; the excluded rows' labels differ
    X = _frame(300, seed=5)
    X["xb"] = X["xa"].to_numpy().copy()
    X.loc[298, ["xa", "xb"]] = [10.0, 9.5]
    X.loc[299, ["xa", "xb"]] = [9.5, 10.0]
    X.loc[299, FEATURES] = X.loc[298, FEATURES]
    data = dd.from_pandas(X, npartitions=3, sort=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effs = [
            fme.fme(_model, data, {f: 0.3}, extrapolation="envelope", on_extrapolation="exclude") for f in ("xa", "xb")
        ]
    assert [e.n_excluded for e in effs] == [1, 1]
    for kwargs in ({"honest": False, "sample_size": 30, "random_state": 2}, {}):
        with pytest.raises(DataError, match=r"effects\[1\] \(xb \+ 0.3\).*excludes 1 row, effects\[0\] 1, not the"):
            fme.came(effs, features=FEATURES, **kwargs)
    # the same exclusions: accepted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same = [fme.fme(_model, data, {"xa": 0.3}, extrapolation="envelope", on_extrapolation="exclude") for _ in "ab"]
    assert isinstance(fme.came(same, features=FEATURES), fme.JointPartitionResult)


def _chunks_repeating_labels(X: pd.DataFrame, k: int):
    """``X`` as ``k`` Dask chunks each indexed 0, 1, ... (as ``dd.from_map`` chunks often are)."""
    size = -(-len(X) // k)
    parts = [X.iloc[i : i + size].reset_index(drop=True) for i in range(0, len(X), size)]
    return dd.concat([dd.from_pandas(p, npartitions=1, sort=False) for p in parts])


def _nan_model(d: pd.DataFrame) -> np.ndarray:
    return _model(d.fillna(0.0))


def test_dask_effects_excluding_rows_with_the_same_label_in_other_chunks_are_refused():
    # the first effect leaves out row 5 of the first chunk, the second row 5 of the second: one row each, the same
    # label, other rows of the data
    X = _frame(300, seed=7)
    X.loc[5, "xa"] = np.nan
    X.loc[155, "xb"] = np.nan
    data = _chunks_repeating_labels(X, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effs = [fme.fme(_nan_model, data, {f: 1.0}) for f in ("xa", "xb")]
        assert [e.n_excluded for e in effs] == [1, 1]
        assert effs[0].excluded.index.compute().equals(effs[1].excluded.index.compute())  # labels alike
        with pytest.raises(DataError, match=r"effects\[1\].*other rows"):
            fme.came(effs, features=FEATURES, honest=False)
        # the same row left out by both (row 5 of the first chunk): the rows agree, the labels still repeat
        X.loc[5, "xb"], X.loc[155, "xb"] = np.nan, 0.5
        same = [fme.fme(_nan_model, _chunks_repeating_labels(X, 2), {f: 1.0}) for f in ("xa", "xb")]
        with pytest.raises(DataError, match=r"repeats labels \(e.g. \[0, 1, 2, 3, 4\]\).*its own range"):
            fme.came(same, features=FEATURES, honest=False)
        # with a label of its own for every row: accepted
        unique = dd.from_pandas(X, npartitions=2, sort=False)
        same = [fme.fme(_nan_model, unique, {f: 1.0}) for f in ("xa", "xb")]
        assert isinstance(fme.came(same, features=FEATURES, honest=False), fme.JointPartitionResult)


def test_dask_came_of_chunks_repeating_labels_says_how_to_label_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = fme.fme(_model, _chunks_repeating_labels(_frame(300, seed=7), 3), {"xa": 1.0})
        for kwargs in ({}, {"honest": False}, {"sample_size": 120, "random_state": 1, "honest": False}):
            with pytest.raises(DataError, match=r"repeats labels.*give every row its own label"):
                fme.came(eff, features=FEATURES, **kwargs)


def test_dask_extrapolation_counts_take_rows_by_position_within_a_chunk():
    # the extrapolation points of each chunk share one label (-1 in the first, -2 in the second: they are left out,
    # so the tree's rows keep labels of their own): the counts per subspace are those of the same chunks labelled
    # 0, 1, ..., where picking the points by label counted each of them as often as its label appears
    X = _frame(400, seed=9)
    kw = {"extrapolation": "envelope"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        points = fme.fme(_model, X, {"xa": 0.8}, **kw).excluded.index.to_numpy()
        labels = np.arange(len(X))
        labels[points[points < 200]], labels[points[points >= 200]] = -1, -2
        counts = []
        for index in (np.arange(len(X)), labels):
            data = dd.from_pandas(X.set_axis(index), npartitions=2, sort=False)
            eff = fme.fme(_model, data, {"xa": 0.8}, **kw)
            part = fme.came(eff, features=["z1", "z2"], maxdepth=2, minbucket=40)
            counts.append(part.extrapolation_counts())
    assert min((points < 200).sum(), (points >= 200).sum()) >= 3
    pd.testing.assert_series_equal(counts[1], counts[0])
    assert counts[0].sum() == len(points)
