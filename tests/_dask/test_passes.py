"""How many graphs each verb sends to the Dask scheduler: a budget per verb, so that a later change cannot
silently add passes (on a small job every computation is a round trip to the scheduler and a copy of the
model to the workers, which cost more than the rows; ``benchmarks/bench_dask_overhead.py``).

The scheduler here is Dask's synchronous one wrapped to count its calls: every ``compute``, ``persist`` and
``compute`` of a persisted result is one call, as on a distributed cluster each is one graph sent to the
scheduler. Each test also checks the numbers against the pandas path, so a budget cannot be met by
computing less.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")
pytest.importorskip("statsmodels")

import fme  # noqa: E402

RTOL = 1e-10


class Executions:
    """Dask's synchronous scheduler, counting the graphs it is given."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, dsk, keys, **kwargs):
        from dask.local import get_sync

        self.count += 1
        return get_sync(dsk, keys, **kwargs)


@pytest.fixture
def executions():
    counter = Executions()
    with dask.config.set(scheduler=counter):
        yield counter


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(11)
    n = 3000
    g = pd.Categorical(rng.choice(["a", "b", "c", "d"], n), categories=["a", "b", "c", "d"])
    d = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "x3": rng.normal(size=n),
            "g": g,
            "h": rng.choice(["u", "v", "w"], n),
        }
    )
    eta = -0.2 + 0.8 * d["x1"] - 0.5 * d["x2"] + 0.3 * d["x3"] + np.array([0.0, 0.4, -0.3, 0.8])[g.codes]
    d["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    d.index = rng.permutation(np.arange(10_000, 10_000 + n))
    return d


@pytest.fixture(scope="module")
def logit(frame):
    import statsmodels.formula.api as smf

    return smf.logit("y ~ x1 + x2 + x3 + C(g) + C(h)", data=frame).fit(disp=0)


def _dd(frame: pd.DataFrame, npartitions: int = 4):
    return dd.from_pandas(frame, npartitions=npartitions, sort=False)


def _same(b: pd.DataFrame, a: pd.DataFrame) -> None:
    """The Dask table equals the pandas one: text columns exactly, numbers to RTOL relative; an estimate or
    bound near 0 (a difference of groups) to RTOL of its standard error, a statistic to RTOL of 1 + |z|, a
    p-value to RTOL z^2 (a tail probability magnifies a relative error of z by about z^2)."""
    assert list(b.columns) == list(a.columns) and len(b) == len(a)
    nums = [c for c in a.columns if pd.api.types.is_float_dtype(a[c]) and c != "step"]
    rest = [c for c in a.columns if c not in nums]
    pd.testing.assert_frame_equal(b[rest].reset_index(drop=True), a[rest].reset_index(drop=True), check_dtype=False)
    z = np.nan_to_num(np.abs(a["statistic"].to_numpy(dtype=float)))
    se = np.nan_to_num(a["std_error"].to_numpy(dtype=float))
    for c in nums:
        x, y = b[c].to_numpy(dtype=float), a[c].to_numpy(dtype=float)
        assert np.array_equal(np.isnan(x), np.isnan(y)), c
        scale = np.abs(y) + (se if c in ("ame", "conf_low", "conf_high") else 1.0 if c == "statistic" else 0.0)
        tol = RTOL * scale * (np.maximum(1.0, z**2) if c == "p_value" else 1.0)
        ok = ~np.isnan(y)
        assert np.all(np.abs(x - y)[ok] <= tol[ok]), (c, x, y)


def test_fme_takes_three_computations(frame, logit, executions):
    """The set-up (first rows), the pass and its summaries; the quartiles only when asked (two rounds)."""
    res = fme.fme(logit, _dd(frame), {"x1": 1.0}, inference="delta")
    assert executions.count <= 3
    ref = fme.fme(logit, frame, {"x1": 1.0}, inference="delta")
    np.testing.assert_allclose(res.ame, ref.ame, rtol=RTOL)
    np.testing.assert_allclose(res.conf_int(), ref.conf_int(), rtol=RTOL)


def test_ame_takes_the_same_computations_for_any_number_of_rows(frame, logit, executions):
    """Every table row (numeric steps, an sd rule, the levels of a pandas categorical and of a text column)
    in one pass: four computations whether the table has one row or eleven."""
    one = fme.ame(logit, _dd(frame), {"x1": 1.0}, inference="delta")
    first = executions.count
    steps = {"x1": 1.0, "x2": "sd", "x3": -0.5, "g": None, "h": None}
    table = fme.ame(logit, _dd(frame), steps, inference="delta")
    assert len(one) == 1 and len(table) == 3 + 4 + 3
    assert first <= 4 and executions.count - first == first
    _same(one, fme.ame(logit, frame, {"x1": 1.0}, inference="delta"))
    _same(table, fme.ame(logit, frame, steps, inference="delta"))


@pytest.mark.parametrize("hypothesis, budget", [(None, 4), ("pairwise", 3)])
def test_ame_by_groups_takes_four_computations(frame, logit, executions, hypothesis, budget):
    """The groups' keys with the set-up, every step and group in the pass, every group's quartiles in one
    round (none for pairwise differences, which have no quartiles)."""
    steps = {"x1": 1.0, "x2": 1.0, "x3": 1.0}
    table = fme.ame(logit, _dd(frame), steps, by="h", hypothesis=hypothesis, inference="delta")
    assert executions.count <= budget
    _same(table, fme.ame(logit, frame, steps, by="h", hypothesis=hypothesis, inference="delta"))


def test_came_takes_three_computations(frame, logit):
    """The chunks evaluated and kept on the workers with the sample (all evaluated rows here), the sample
    fetched, and the pass over the subspaces, which also takes the data's ranges; the same partition and
    figures as in memory."""
    counter = Executions()
    with dask.config.set(scheduler=counter):
        effects = fme.fme(logit, _dd(frame), {"x1": 1.0}, inference="delta")
        counter.count = 0
        part = fme.came(effects, features=["x2", "x3", "g"], n_partitions=4, random_state=0)
    assert counter.count <= 3
    ref = fme.came(
        fme.fme(logit, frame, {"x1": 1.0}, inference="delta"),
        features=["x2", "x3", "g"],
        n_partitions=4,
        random_state=0,
    )
    assert part.leaves["rule"].tolist() == ref.leaves["rule"].tolist()
    assert part.leaves["n"].tolist() == ref.leaves["n"].tolist()
    for c in ("came", "sd_fme", "std_error", "conf_low", "conf_high"):
        np.testing.assert_allclose(part.leaves[c], ref.leaves[c], rtol=1e-9)


def test_came_evaluates_twice_when_the_chunks_are_too_large_to_keep(frame, logit, monkeypatch):
    """Beyond ``KEEP_BYTES`` the pass evaluates every chunk anew (two computations): the same figures."""
    import fme._dask.came as dask_came

    effects = fme.fme(logit, _dd(frame), {"x1": 1.0}, inference="delta")
    kept = fme.came(effects, features=["x2", "x3", "g"], n_partitions=4, random_state=0)
    monkeypatch.setattr(dask_came, "KEEP_BYTES", 0)
    counter = Executions()
    with dask.config.set(scheduler=counter):
        again = fme.came(effects, features=["x2", "x3", "g"], n_partitions=4, random_state=0)
    assert counter.count == 2
    pd.testing.assert_frame_equal(again.leaves, kept.leaves)


def test_came_with_nlm_medians_in_one_round(frame, executions):
    """With NLMs the subspaces' medians are selected together: one round for all of them."""
    from sklearn.ensemble import GradientBoostingRegressor

    X = frame[["x1", "x2", "x3"]]
    model = GradientBoostingRegressor(n_estimators=20, max_depth=2, random_state=0).fit(X, X["x1"] ** 2 + X["x2"])
    effects = fme.fme(model, _dd(X), {"x1": 0.5}, nlm=True)
    effects.median_nlm  # noqa: B018 - the root's median, computed (and cached) before counting
    executions.count = 0
    part = fme.came(effects, features=["x1", "x2"], n_partitions=3, random_state=0)
    assert executions.count <= 5
    ref = fme.came(fme.fme(model, X, {"x1": 0.5}, nlm=True), features=["x1", "x2"], n_partitions=3, random_state=0)
    assert part.leaves["rule"].tolist() == ref.leaves["rule"].tolist()
    np.testing.assert_array_equal(part.leaves["median_nlm"], ref.leaves["median_nlm"])
    np.testing.assert_allclose(part.leaves["canlm"], ref.leaves["canlm"], rtol=1e-9)


def test_shipped_model_is_unpickled_once_per_process(frame, logit):
    """What a pass sends its workers (:class:`fme._dask.common.Shipped`): the model pickled apart from the plans
    and named by its pickle's digest, so a worker that unpickled the same bytes before reuses its copy; a model
    changed in place has other bytes and is unpickled anew. The plans still find their model inside."""
    import pickle

    import statsmodels.formula.api as smf

    from fme._dask import common

    common._KEPT.clear()
    plans = [{"model": logit, "step": 1.0}, {"model": logit, "step": 2.0}]
    first = pickle.loads(pickle.dumps(common.Shipped(plans, shared=(logit,))))
    again = pickle.loads(pickle.dumps(common.Shipped(plans[:1], shared=(logit,))))
    model = first.value[0]["model"]
    assert model is not logit and model is first.value[1]["model"] and model is again.value[0]["model"]
    assert [p["step"] for p in first.value] == [1.0, 2.0] and len(common._KEPT) == 1
    np.testing.assert_allclose(model.predict(frame.head(50)), logit.predict(frame.head(50)), rtol=0, atol=0)
    other = smf.logit("y ~ x1 + x2", data=frame).fit(disp=0)
    got = pickle.loads(pickle.dumps(common.Shipped([other], shared=(other,)))).value[0]
    assert got is not model and list(got.params.index) == list(other.params.index)
    third = smf.logit("y ~ x1", data=frame).fit(disp=0)
    pickle.loads(pickle.dumps(common.Shipped([third], shared=(third,))))
    assert len(common._KEPT) == common.KEPT_MODELS  # the least recently used model was let go
    assert pickle.loads(pickle.dumps(common.Shipped(plans, shared=(logit,)))).value[0]["model"] is not model


def test_a_model_refitted_in_place_is_shipped_anew(frame):
    """The same Python object fitted again (scikit-learn's fit returns itself): new bytes, a new copy."""
    import pickle

    from sklearn.linear_model import LinearRegression

    from fme._dask import common

    X = frame[["x1", "x2"]]
    model = LinearRegression().fit(X, frame["x3"])
    before = pickle.loads(pickle.dumps(common.Shipped([model], shared=(model,)))).value[0]
    model.fit(X, frame["y"])
    after = pickle.loads(pickle.dumps(common.Shipped([model], shared=(model,)))).value[0]
    assert after is not before
    np.testing.assert_array_equal(after.coef_, model.coef_)
    assert not np.array_equal(before.coef_, model.coef_)


def test_an_empty_first_chunk_costs_one_computation_more(frame, logit, executions):
    """The first rows come from the first chunk with the set-up's other reductions; an empty first chunk
    takes them from the next chunks (one more computation), and data without rows is a DataError."""
    from fme.exceptions import DataError

    parts = [frame.iloc[:0], frame.iloc[:1500], frame.iloc[1500:]]
    D = dd.from_delayed([dask.delayed(p) for p in parts], meta=frame.iloc[:0], verify_meta=False)
    res = fme.fme(logit, D, {"x1": 1.0}, inference="delta")
    assert executions.count == 4
    np.testing.assert_allclose(res.ame, fme.fme(logit, frame, {"x1": 1.0}, inference="delta").ame, rtol=RTOL)
    empty = dd.from_pandas(frame.iloc[:0], npartitions=1)
    with pytest.raises(DataError, match="`data` has no rows"):
        fme.fme(logit, empty, {"x1": 1.0}, inference="delta")


def test_parquet_files_with_a_column_selection(frame, logit, tmp_path):
    """Eight Parquet files read with a column selection (Dask may then combine files into fewer chunks than
    it announced), the first file without rows: the same AME as in memory."""
    cols = ["x1", "x2", "x3", "g", "h"]
    (tmp_path / "a").mkdir()
    frame.iloc[:0][cols + ["y"]].to_parquet(tmp_path / "a" / "part-0.parquet")
    for i, piece in enumerate(np.array_split(np.arange(len(frame)), 7), start=1):
        frame.iloc[piece][cols + ["y"]].to_parquet(tmp_path / "a" / f"part-{i}.parquet")
    data = dd.read_parquet(tmp_path / "a")[cols]
    res = fme.fme(logit, data, {"x1": 1.0}, inference="delta")
    ref = fme.fme(logit, frame, {"x1": 1.0}, inference="delta")
    np.testing.assert_allclose(res.ame, ref.ame, rtol=RTOL)
    table = fme.ame(logit, data, {"x2": 0.5}, by="g", inference="delta")
    np.testing.assert_allclose(
        table["ame"], fme.ame(logit, frame, {"x2": 0.5}, by="g", inference="delta")["ame"], rtol=RTOL
    )
