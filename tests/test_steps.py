"""Steps: validation of every bad step (class + message), numeric / categorical /
mixed steps, missing values and at-level rows, index and input preservation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme.exceptions import DataError, FeatureError, StepError
from fme.steps import Step, apply_steps, parse_steps, stack_path, step_size
from tests.conftest import CallRecorder


def lin(d):
    return 3.0 * d["x1"].to_numpy(dtype=float) - 2.0 * d["x2"].to_numpy(dtype=float)


@pytest.fixture
def frame():
    rng = np.random.default_rng(7)
    n = 12
    return pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "k": np.arange(n, dtype=np.int64),
            "cat": pd.Categorical(list("abcabcabcabc"), categories=["a", "b", "c", "d"]),
            "s": pd.array(list("uvuvuvuvuvuv"), dtype="str"),
            "flag": np.array([True, False] * 6),
        },
        index=[f"r{i}" for i in rng.permutation(n)],
    )


# ------------------------------------------------------------ bad steps
@pytest.mark.parametrize(
    "steps, exc, phrases",
    [
        ({"nope": 1}, FeatureError, ["unknown feature 'nope'", "not a column"]),
        ({}, StepError, ["`steps` is empty", "name at least one feature"]),
        ([("x1", 1)], StepError, ["must be a dict"]),
        ({"x1": 0}, StepError, ["'x1'", "is 0", "non-zero step"]),
        ({"x1": 0.0}, StepError, ["'x1'", "is 0"]),
        ({"x1": np.nan}, StepError, ["'x1'", "nan", "finite number"]),
        ({"x1": float("inf")}, StepError, ["'x1'", "inf", "finite number"]),
        ({"x1": -np.inf}, StepError, ["'x1'", "finite number"]),
        ({"x1": "b"}, StepError, ["'x1' is numeric", "level-like 'b'"]),
        ({"x1": None}, StepError, ["'x1' is numeric", "real number"]),
        ({"cat": 1.0}, StepError, ["'cat' is categorical", "a numeric step 1.0", "['a', 'b', 'c', 'd']"]),
        ({"cat": "z"}, StepError, ["'cat' is categorical", "level 'z'"]),
        ({"s": "w"}, StepError, ["'s' is categorical", "['u', 'v']"]),
        ({"x1": 1.0, "s": 2}, StepError, ["'s' is categorical", "numeric step 2"]),
    ],
)
def test_bad_steps(frame, steps, exc, phrases):
    before = frame.copy(deep=True)
    with pytest.raises(exc) as info:
        fme.fme(lin, frame, steps)
    assert isinstance(info.value, (ValueError, TypeError))
    for phrase in phrases:
        assert phrase in str(info.value)
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize(
    "data, phrase",
    [
        (pd.DataFrame({"x1": [], "x2": []}), "has no rows"),
        (np.ones((3, 2)), r"numpy array of shape \(3, 2\) without feature_names: pass a pandas DataFrame"),
        ({"x1": [1.0]}, "must be a pandas DataFrame"),
        (pd.DataFrame(index=[0, 1]), "no columns"),
    ],
)
def test_bad_data(data, phrase):
    with pytest.raises(DataError, match=phrase):
        fme.fme(lin, data, {"x1": 1})


def test_duplicate_columns_rejected():
    d = pd.DataFrame(np.ones((2, 2)), columns=["x1", "x1"])
    with pytest.raises(DataError, match="duplicated column names"):
        fme.fme(lin, d, {"x1": 1})


def test_step_on_feature_the_model_does_not_use(gbr, df):
    with pytest.raises(FeatureError, match="'k'.*not inputs of the model"):
        fme.fme(gbr, df, {"k": 1})


def test_numeric_rules(frame):
    sd = float(np.std(frame["x1"], ddof=1))
    res = fme.fme(lin, frame, {"x1": "-2*sd"})
    assert res.steps[0].value == pytest.approx(-2 * sd, rel=1e-14)
    np.testing.assert_allclose(res.results["fme"].to_numpy(), 3.0 * -2 * sd, rtol=1e-12)
    assert step_size(frame, "x1", "unit", -0.5) == -0.5
    q = np.quantile(frame["x2"], [0.25, 0.75])
    assert step_size(frame, "x2", "iqr") == pytest.approx(q[1] - q[0], rel=1e-14)
    with pytest.raises(StepError, match="no spread"):
        step_size(frame.assign(c0=1.0), "c0", "sd")


# ------------------------------------------------------------ categorical and mixed steps
def test_categorical_at_level_rows_not_evaluated(frame):
    def f(d):
        return d["x1"].to_numpy() + d["cat"].map({"a": 0.0, "b": 10.0, "c": 100.0, "d": 1000.0}).to_numpy(float)

    res = fme.fme(f, frame, {"cat": "b"})
    not_b = frame.index[frame["cat"] != "b"]
    assert res.results.index.equals(not_b)
    expected = 10.0 - frame.loc[not_b, "cat"].map({"a": 0.0, "c": 100.0}).to_numpy(float)
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)
    ex = res.excluded
    assert set(ex.index) == set(frame.index[frame["cat"] == "b"])
    assert (ex["reason_type"] == "at_level").all()
    assert ex["reason"].str.contains("already at level 'b'").all()
    assert res.n == 8 and res.n_excluded == 4
    assert "already at the target level): 4" in res.summary()
    # a level no row has (but the dtype knows) is evaluated for all rows
    res_d = fme.fme(f, frame, {"cat": "d"})
    assert res_d.n == len(frame)


def test_string_and_bool_levels(frame):
    def f(d):
        return (d["s"] == "v").to_numpy(float) * 5.0 + d["flag"].to_numpy(float) * 2.0

    res = fme.fme(f, frame, {"s": "v"})
    assert res.n == 6 and (res.results["fme"] == 5.0).all()
    res_b = fme.fme(f, frame, {"flag": False})
    assert res_b.results.index.equals(frame.index[frame["flag"]])
    assert (res_b.results["fme"] == -2.0).all()
    res_m = fme.fme(f, frame, {"s": "u", "flag": True, "x1": 1.0})
    at = (frame["s"] == "u") | frame["flag"]
    assert res_m.results.index.equals(frame.index[~at])
    assert (res_m.results["fme"] == -5.0 + 2.0).all()


def test_every_row_at_level(frame):
    with pytest.raises(DataError, match="no row can be evaluated.*already at the target level"):
        fme.fme(lin, frame.assign(s="u"), {"s": "u"})


@pytest.mark.parametrize("dtype", ["string", "str", "object", "category"])
def test_missing_values_in_categorical_step(frame, dtype):
    s = pd.Series(["u", None, "v", "u", None, "v", "u", "v", "u", "v", "u", "v"], index=frame.index, dtype=dtype)
    data = frame.assign(s=s)
    before = data.copy(deep=True)

    def f(d):
        return (d["s"] == "v").to_numpy(dtype=float, na_value=0.0) * 1.0

    res = fme.fme(f, data, {"s": "v"})
    ex = res.excluded
    assert sorted(ex["reason_type"]) == ["at_level"] * 5 + ["missing"] * 2
    assert set(ex.index[ex["reason_type"] == "missing"]) == set(data.index[s.isna()])
    assert res.n == 5
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), 1.0)
    pd.testing.assert_frame_equal(data, before)


def test_missing_values_in_nullable_boolean_step(frame):
    data = frame.assign(flag=pd.array([True, False, None] * 4, dtype="boolean"))
    res = fme.fme(lambda d: d["flag"].astype(float).to_numpy(), data, {"flag": True})
    counts = res.excluded["reason_type"].value_counts()
    assert counts["missing"] == 4 and counts["at_level"] == 4
    assert (res.results["fme"] == 1.0).all()


def test_missing_values_in_numeric_step_are_counted(frame):
    data = frame.copy()
    data.loc[data.index[[1, 4]], "x1"] = np.nan
    data.loc[data.index[2], "x2"] = np.nan  # not stepped in the first call
    rec = CallRecorder(lambda d: np.nan_to_num(lin(d)))
    res = fme.fme(rec, data, {"x1": 1.0})
    missing = res.excluded[res.excluded["reason_type"] == "missing"]
    assert list(missing.index) == list(data.index[[1, 4]])
    assert missing["reason"].str.contains("x1").all()
    assert res.n == 10 and rec.lengths == [10, 10]
    assert "missing or infinite value in a stepped feature): 2" in res.summary()
    res2 = fme.fme(rec, data, {"x1": 1.0, "x2": 1.0})
    assert set(res2.excluded.index) == set(data.index[[1, 2, 4]])


def test_index_preserved_and_input_unchanged(frame):
    shuffled = frame.iloc[[5, 0, 11, 3, 7, 1, 2, 4, 6, 8, 9, 10]]
    before = shuffled.copy(deep=True)
    res = fme.fme(lin, shuffled, {"x1": 0.5, "x2": -1.0}, nlm=True)
    assert list(res.results.index) == list(shuffled.index)
    assert list(res.predictions.index) == list(shuffled.index)
    np.testing.assert_allclose(res.results["fme"], 3.5, rtol=1e-13)
    np.testing.assert_allclose(res.results["nlm"], 1.0, atol=1e-12)
    pd.testing.assert_frame_equal(shuffled, before)
    pd.testing.assert_frame_equal(res.feature_values, shuffled)
    ints = frame.set_axis(np.array([40, 3, 17, 8, 99, 0, 5, 61, 2, 7, 11, 23]))
    res_i = fme.fme(lin, ints, {"cat": "a"})
    assert list(res_i.results.index) == [3, 17, 99, 0, 61, 2, 11, 23]


# ------------------------------------------------------------ low-level helpers
def test_parse_steps_resolves_levels(frame):
    steps = parse_steps(frame, {"x1": 2, "cat": "c", "flag": True})
    assert steps == (Step("x1", "numeric", 2.0), Step("cat", "categorical", "c"), Step("flag", "categorical", True))
    assert steps[0].describe() == "x1 + 2" and steps[1].describe() == "cat -> 'c'"
    assert Step("x", "numeric", -1.5, "-1*sd").describe() == "x - 1.5 (-1*sd)"


def test_apply_steps_and_stack_path(frame):
    steps = parse_steps(frame, {"x1": 2.0, "k": -1, "cat": "d"})
    out = apply_steps(frame, steps)
    np.testing.assert_array_equal(out["x1"].to_numpy(), frame["x1"].to_numpy() + 2.0)
    np.testing.assert_array_equal(out["k"].to_numpy(), frame["k"].to_numpy() - 1.0)
    assert out["cat"].dtype == frame["cat"].dtype and (out["cat"] == "d").all()
    assert out.index.equals(frame.index) and out["s"].dtype == frame["s"].dtype
    num = tuple(s for s in steps if s.is_numeric)
    ts = np.array([0.25, 0.5])
    st = stack_path(frame, num, ts)
    assert len(st) == 2 * len(frame)
    np.testing.assert_allclose(st["x1"].to_numpy()[len(frame) :], frame["x1"].to_numpy() + 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(st["k"].to_numpy()[: len(frame)], frame["k"].to_numpy() - 0.25)
    assert st["cat"].dtype == frame["cat"].dtype
    np.testing.assert_array_equal(st["x2"].to_numpy(), np.tile(frame["x2"].to_numpy(), 2))


def test_level_known_only_from_reference_data(frame):
    def f(d):
        return (d["s"] == "v").to_numpy(dtype=float) * 4.0

    sub = frame[frame["s"] == "u"]
    with pytest.raises(StepError, match=r"'s' is categorical: give one of its levels \['u'\]"):
        fme.fme(f, sub, {"s": "v"})
    res = fme.fme(f, sub, {"s": "v"}, reference_data=frame)
    assert res.n == len(sub) and (res.results["fme"] == 4.0).all()
    with pytest.raises(StepError, match=r"levels \['u', 'v'\], not level 'w'"):
        fme.fme(f, sub, {"s": "w"}, reference_data=frame)


def test_categorical_dtype_levels_come_from_its_categories(frame):
    data = frame.assign(cat=pd.Categorical(["a"] * len(frame), categories=["a"]))
    ref = frame.assign(cat=pd.Categorical(["a", "b"] * (len(frame) // 2)))
    with pytest.raises(StepError, match=r"'cat' is categorical: give one of its levels \['a'\], not level 'b'"):
        fme.fme(lin, data, {"cat": "b"}, reference_data=ref)


def test_boolean_feature_needs_a_boolean_level() -> None:
    X = pd.DataFrame({"x": [1.0, 2.0], "b": [True, False]})
    with pytest.raises(fme.StepError, match="boolean"):
        fme.fme(lambda d: d["x"], X, {"b": 1})
    res = fme.fme(lambda d: d["x"] + d["b"], X, {"b": True})
    assert res.results["fme"].tolist() == [1.0]


# ------------------------------------------------------------------ columns that cannot be stepped
def _lin(d):
    return d["a"].to_numpy(dtype=float)


def test_complex_column_cannot_be_stepped():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "z": np.array([1 + 1j, 2, 3])})
    with pytest.raises(StepError, match="feature 'z' is complex-valued: a step would drop its imaginary part"):
        fme.fme(_lin, X, {"z": 1.0})


def test_object_column_mixing_numbers_and_text_refuses_numeric_step():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "o": pd.Series([1, 2, 3, "n/a"], dtype=object)})
    with pytest.raises(
        StepError,
        match=r"feature 'o' is an object column holding numbers.*the numeric step 1 would "
        r"be read as a move to the level 1.*pd.to_numeric\(data\['o'\], errors='coerce'\)",
    ):
        fme.fme(_lin, X, {"o": 1})
    # a text level of the same column is a legitimate categorical step
    assert fme.fme(_lin, X, {"o": "n/a"}).n == 3


def test_text_in_reference_datas_stepped_feature():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    ref = pd.DataFrame({"a": ["low", "high", "low"]})
    with pytest.raises(
        DataError,
        match=r"feature 'a' is numeric in the data but str in reference_data \(values such "
        r"as \['low', 'high'\]\).*pd.to_numeric\(reference_data\['a'\]",
    ):
        fme.fme(_lin, X, {"a": 1.0}, reference_data=ref, extrapolation="envelope")


def test_infinite_stepped_value_is_left_out_and_counted():
    X = pd.DataFrame({"a": [1.0, np.inf, 3.0, -np.inf, np.nan]})
    res = fme.fme(lambda d: d["a"].to_numpy() ** 2, X, {"a": 1.0})
    assert list(res.results.index) == [0, 2]
    np.testing.assert_allclose(res.results["fme"], [3.0, 7.0])
    assert res.excluded["reason"].tolist() == ["infinite value in a", "infinite value in a", "missing value in a"]
    assert "excluded (missing or infinite value in a stepped feature): 3" in res.summary()


def test_step_so_large_predictions_overflow_names_the_step():
    X = pd.DataFrame({"a": [1.0, 2.0]})
    with pytest.raises(
        fme.PredictionError,
        match=r"non-finite prediction\(s\) at f\(x \+ h\) for the step a \+ 1e\+300"
        r".*overflow from a step too large",
    ):
        fme.fme(lambda d: d["a"].to_numpy() ** 2, X, {"a": 1e300})


def test_an_unknown_rule_name_is_named_as_such():
    import fme

    d = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(fme.StepError, match=r"unknown step rule 'sdd' in '2\*sdd'; the rules are sd, iqr, mad, unit"):
        fme.fme(lambda X: X["x"], d, {"x": "2*sdd"}, inference="sample")
    with pytest.raises(fme.StepError, match="level-like 'red'"):
        fme.fme(lambda X: X["x"], d, {"x": "red"}, inference="sample")


def test_min_step_fraction_is_the_share_shrinking_keeps():
    """fme.steps.MIN_STEP_FRACTION is what on_extrapolation='shrink' keeps: a row needing a step of less than
    this share of h is left out, one needing exactly this share keeps it."""
    from fme.steps import MIN_STEP_FRACTION

    assert MIN_STEP_FRACTION == 0.01
    # x + s * 4 <= 10: x = 9.96 needs s = 0.01 exactly (kept), x = 9.97 less (left out)
    data = pd.DataFrame({"x": [0.0, 9.96, 9.97, 10.0]})
    res = fme.fme(
        lambda d: d["x"].to_numpy() ** 2,
        data,
        {"x": 4.0},
        extrapolation="envelope",
        on_extrapolation="shrink",
        inference="sample",
    )
    assert res.extrapolated.index.tolist() == [2, 3]
    assert res.extrapolated["reason"].tolist() == [f"no step of at least {MIN_STEP_FRACTION:g} h stays inside"] * 2
    np.testing.assert_allclose(res.results["step_x"] / 4.0, [1.0, MIN_STEP_FRACTION], rtol=1e-9)


# ------------------------------------------------------------ all-float frames: one block, row ranges on threads
def _float_frame(n: int, p: int, blocks: bool) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    cols = {f"x{j}": rng.normal(size=n) * 10.0 ** rng.integers(-5, 6) for j in range(p)}
    if blocks:  # one block per column (pandas interleaves them into a fresh array)
        frame = pd.DataFrame(index=pd.RangeIndex(n))
        for name, values in cols.items():
            frame[name] = values
        return frame
    return pd.DataFrame(np.column_stack(list(cols.values())), columns=list(cols))


@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("k", [1, 3])
def test_float_x_plus_h_is_x_plus_h_to_the_bit_on_any_threads(
    monkeypatch: pytest.MonkeyPatch, blocks: bool, k: int
) -> None:
    from fme._utils import threads

    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(threads, "MIN_CELLS_PER_THREAD", 50)
    frame = _float_frame(1_003, 4, blocks)
    before = frame.copy()
    h = {"x2": np.random.default_rng(4).normal(size=len(frame))}
    steps = (Step("x0", "numeric", 0.1), Step("x2", "numeric", 1.0))
    out = apply_steps(frame, steps, h)
    pd.testing.assert_frame_equal(frame, before)  # the caller's frame untouched
    want = frame.to_numpy().copy()
    want[:, 0] += 0.1
    want[:, 2] += h["x2"]
    np.testing.assert_array_equal(out.to_numpy(), want)
    assert out.index.equals(frame.index) and list(out.columns) == list(frame.columns)
    assert not np.shares_memory(out.to_numpy(), frame.to_numpy())
    out.iloc[0, 1] = 1e300  # its own memory: writing to it leaves the caller's frame as it was
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize("k", [1, 3])
def test_float_path_stack_is_x_plus_t_h_to_the_bit_on_any_threads(monkeypatch: pytest.MonkeyPatch, k: int) -> None:
    from fme._utils import threads

    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(threads, "MIN_CELLS_PER_THREAD", 50)
    frame = _float_frame(517, 3, False)
    ts = np.array([0.0, 0.3, 0.7, 1.0])
    h = {"x1": np.linspace(-2.0, 3.0, len(frame))}
    steps = (Step("x1", "numeric", 1.0), Step("x2", "numeric", 0.25), Step("x2", "numeric", -3.0))
    got = stack_path(frame, steps, ts, h, buffer=np.full(10_000, np.nan)).to_numpy()
    x = frame.to_numpy()
    want = np.concatenate([x] * ts.size)
    want[:, 1] = np.concatenate([x[:, 1] + t * h["x1"] for t in ts])
    want[:, 2] = np.concatenate([(x[:, 2] + t * 0.25) + t * -3.0 for t in ts])  # the steps in their order
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [2, 3, 1_000, 20_001])
def test_iqr_and_mad_rules_equal_numpy_and_scipy(n: int) -> None:
    """The selections behind ``iqr`` and ``mad`` give np.quantile's and scipy's median_abs_deviation's numbers,
    on odd and even counts, ties and missing or infinite values (left out)."""
    from scipy import stats as sps

    rng = np.random.default_rng(n)
    for x in (rng.normal(size=n), rng.integers(0, 4, size=n).astype(float), rng.standard_cauchy(n)):
        x[: max(1, n // 50)] = np.nan
        if n > 3:
            x[-1] = np.inf
        data = pd.DataFrame({"x": x})
        kept = x[np.isfinite(x)]
        if kept.size < 2:
            continue
        q25, q75 = np.quantile(kept, [0.25, 0.75])
        assert step_size(data, "x", "iqr") == float(q75 - q25)
        assert step_size(data, "x", "mad") == float(sps.median_abs_deviation(kept, scale=1.0))


# ------------------------------------------------------------ x + h written beside the caller's work
@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_x_plus_h_written_beside_is_apply_steps_to_the_bit_and_leaves_its_scratch_free(
    monkeypatch: pytest.MonkeyPatch, blocks: bool, k: int
) -> None:
    from fme import steps as steps_module
    from fme._utils import threads
    from fme._utils.memory import Scratch

    for module in (threads, steps_module):
        monkeypatch.setattr(module, "thread_count", lambda: k)
        monkeypatch.setattr(module, "MIN_CELLS_PER_THREAD", 4_096)  # many chunks, the helper's and the caller's
    frame = _float_frame(140_003, 4, blocks)  # a block large enough to be kept (fme._utils.memory.MIN_CELLS)
    before = frame.copy()
    h = {"x2": np.random.default_rng(5).normal(size=len(frame))}
    steps = (Step("x0", "numeric", 0.1), Step("x2", "numeric", 1.0), Step("x2", "numeric", -0.25))
    scratch = Scratch()
    done = steps_module.moving(frame, steps, h, scratch)
    got = done()
    pd.testing.assert_frame_equal(got, apply_steps(frame, steps, h))
    pd.testing.assert_frame_equal(frame, before)
    del got, done
    assert scratch.give_back()  # nothing but the holder refers to the block: kept for the next call


def test_x_plus_h_is_written_before_the_callers_work_without_copy_on_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without copy-on-write a model writing into its input could write into the block x + h is read from:
    x + h is then written at once, before the caller's work."""
    from fme import steps as steps_module

    monkeypatch.setattr(steps_module, "thread_count", lambda: 2)
    monkeypatch.setattr(steps_module, "MIN_CELLS_PER_THREAD", 50)
    monkeypatch.setattr(steps_module, "copy_on_write", lambda: False)
    started: list[str] = []
    monkeypatch.setattr(steps_module, "chunks_beside", lambda *a, **k: started.append("beside"))
    frame = _float_frame(500, 3, False)
    steps = (Step("x1", "numeric", 2.0),)
    done = steps_module.moving(frame, steps)
    assert not started  # written here, not handed to a helper
    pd.testing.assert_frame_equal(done(), apply_steps(frame, steps))
