"""Exclusion bookkeeping of fme() (fme._core.exclusions): per-row codes, notes, the ``excluded`` table, the
extrapolation policies and the error when no row is left."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._core.exclusions import check_evaluated, excluded_frame, extrapolation_exclusions, value_exclusions
from fme.effects import FMEOptions, resolve_plan
from fme.exceptions import DataError, ExtrapolationError
from fme.steps import Step, parse_steps


class AboveDetector:
    """Flags points whose x exceeds a fixed bound; explains with the value."""

    name = "above"

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self.explained: list[int] = []

    def fit(self, reference: pd.DataFrame) -> AboveDetector:
        return self

    def flag(self, points: pd.DataFrame) -> np.ndarray:
        return points["x"].to_numpy(dtype=float) > self.bound

    def explain(self, points: pd.DataFrame, flags: np.ndarray) -> list[str]:
        self.explained.append(len(points))
        return [f"x = {v:g} > {self.bound:g}" for v in points["x"]]


def _plan(data: pd.DataFrame, steps: dict, **kw):
    args = dict(
        nlm=False,
        nlm_method="auto",
        nlm_points=None,
        nlm_intervals=None,
        nlm_tol=None,
        nlm_max_level=None,
        nlm_flat_tol=None,
        nlm_linear_threshold=0.9,
        extrapolation=None,
        on_extrapolation=None,
        target_class=None,
        batch_size=None,
        inference="sample",
        bootstrap=None,
        conf_level=0.95,
    )
    args.update(kw)
    return resolve_plan(lambda d: d["x"].to_numpy(dtype=float), data, data, FMEOptions(**args)).with_steps(
        data, steps, data
    )


def test_value_exclusions_first_code_wins_in_step_order():
    data = pd.DataFrame(
        {
            "x": [0.0, np.nan, np.inf, -np.inf, 1.0, 2.0, 3.0],
            "g": pd.array(["b", "a", pd.NA, "b", "a", pd.NA, "b"], dtype="string"),
        },
        index=list("pqrstuv"),
    )
    steps = parse_steps(data, {"x": 1.0, "g": "a"})
    code, notes = value_exclusions(data, steps)
    # p evaluated; q missing x (not also 'already at a'); r, s infinite x; t at the level; u missing g; v evaluated
    np.testing.assert_array_equal(code, np.array([0, 1, 1, 1, 2, 1, 0], dtype=np.int8))
    assert code.dtype == np.int8
    ex = excluded_frame(code, notes, data.index)
    assert ex.index.tolist() == list("qrstu")
    assert ex["reason_type"].tolist() == ["missing", "missing", "missing", "at_level", "missing"]
    assert ex["point"].tolist() == [""] * 5
    assert ex["reason"].tolist() == [
        "missing value in x",
        "infinite value in x",
        "infinite value in x",
        "g already at level 'a'",
        "missing value in g",
    ]


def test_excluded_frame_of_no_exclusion_is_empty_with_the_columns():
    ex = excluded_frame(np.zeros(3, dtype=np.int8), [], pd.Index([10, 11, 12]))
    assert ex.empty and list(ex.columns) == ["reason_type", "point", "reason"]


@pytest.mark.parametrize("policy", ["exclude", "keep"])
def test_extrapolation_flags_x_and_x_plus_h_per_policy(policy):
    # x + 1 > 2.5 for x = 2, 3; x itself > 2.5 for x = 3
    data = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]}, index=[5, 6, 7, 8])
    det = AboveDetector(2.5)
    plan = _plan(data, {"x": 1.0}, extrapolation=det, on_extrapolation=policy)
    code = np.zeros(4, dtype=np.int8)
    notes: list = []
    cand, X, h, extra = extrapolation_exclusions(plan, data[["x"]], np.arange(4), code, notes)
    assert h is None
    assert det.explained == [1, 2]  # asked for the flagged points only: x at x = 3, x + h at x = 2, 3
    if policy == "keep":
        np.testing.assert_array_equal(cand, [0, 1, 2, 3])
        assert X.index.tolist() == [5, 6, 7, 8]
        np.testing.assert_array_equal(code, np.zeros(4))
        assert notes == []
        np.testing.assert_array_equal(extra["extrapolation"], [False, False, True, True])
        assert list(extra["extrapolation_point"]) == ["", "", "x+h", "x and x+h"]
    else:
        np.testing.assert_array_equal(cand, [0, 1])
        assert X.index.tolist() == [5, 6]
        np.testing.assert_array_equal(code, [0, 0, 3, 3])
        assert extra == {}
        ex = excluded_frame(code, notes, data.index)
        assert ex.index.tolist() == [7, 8]
        assert ex["point"].tolist() == ["x+h", "x and x+h"]
        assert ex["reason"].tolist() == ["x = 3 > 2.5", "x = 3 > 2.5 | x+h: x = 4 > 2.5"]


def test_extrapolation_shrink_gives_effective_steps_and_excludes_x_outside():
    data = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
    plan = _plan(data, {"x": 1.0}, extrapolation=AboveDetector(2.5), on_extrapolation="shrink")
    code = np.zeros(4, dtype=np.int8)
    notes: list = []
    cand, X, h, extra = extrapolation_exclusions(plan, data[["x"]], np.arange(4), code, notes)
    np.testing.assert_array_equal(cand, [0, 1, 2])  # x = 3 is itself outside: excluded, not shrunk
    np.testing.assert_array_equal(code, [0, 0, 0, 3])
    assert extra == {}
    assert set(h) == {"x"} and h["x"].shape == (3,)
    np.testing.assert_array_equal(h["x"][:2], [1.0, 1.0])
    # the largest step keeping 2 + h <= 2.5, found by bisection (40 halvings) from inside
    assert h["x"][2] <= 0.5 and h["x"][2] == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize(
    "policy, expected", [("exclude", {}), ("keep", {"extrapolation": (0, bool), "extrapolation_point": (0, object)})]
)
def test_extrapolation_without_candidates_gives_the_same_columns_empty(policy, expected):
    data = pd.DataFrame({"x": [np.nan, np.nan]})
    det = AboveDetector(0.0)
    plan = _plan(data.fillna(0.0), {"x": 1.0}, extrapolation=det, on_extrapolation=policy)
    cand, X, h, extra = extrapolation_exclusions(plan, data.iloc[:0], np.arange(0), np.ones(2, dtype=np.int8), [])
    assert cand.size == 0 and len(X) == 0 and h is None
    assert {k: (v.size, v.dtype) for k, v in extra.items()} == expected
    assert det.explained == []


def test_check_evaluated_names_the_cause_and_reads_the_reference_only_when_needed():
    data = pd.DataFrame({"x": [1.0, 4.0]})
    plan = _plan(data, {"x": 1.0})
    calls: list[int] = []

    def reference():
        calls.append(1)
        return data

    check_evaluated(plan, np.array([0, 3], dtype=np.int8), reference)
    assert calls == []
    with pytest.raises(DataError, match=r"^no row can be evaluated for the step x \+ 1: every row has a missing"):
        check_evaluated(plan, np.array([1, 2], dtype=np.int8), reference)
    assert calls == []
    with pytest.raises(
        ExtrapolationError,
        match=r"^all 2 rows are extrapolation points for the step x \+ 1 "
        r"\(reference range: x in \[1, 4\]\); use a smaller step",
    ):
        check_evaluated(plan, None, reference, counts=np.array([0, 0, 0, 2]))
    assert calls == [1]


def test_fme_excluded_equals_the_bookkeeping():
    # the public path: fme()'s excluded table is the workers' table, evaluated rows are the rest
    data = pd.DataFrame({"x": [0.0, np.nan, 1.0, 2.0, 3.0]}, index=list("abcde"))
    res = fme.fme(lambda d: 2 * d["x"].to_numpy(dtype=float), data, {"x": 1.0}, extrapolation=AboveDetector(2.5))
    assert res.results.index.tolist() == ["a", "c"]
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), [2.0, 2.0])
    assert res.excluded["reason_type"].tolist() == ["missing", "extrapolation", "extrapolation"]
    assert res.excluded.index.tolist() == ["b", "d", "e"]
    np.testing.assert_array_equal(res.positions, [0, 2])


def test_rows_at_a_level_the_model_never_saw_are_left_out_and_counted():
    """A OneHotEncoder(handle_unknown='ignore') predicts an unseen level silently as 'unknown': such rows are
    left out (reason_type 'unknown_level'), counted in summary(), on pandas and Dask data alike; a step to an
    unseen level is refused."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"x": rng.normal(size=300), "color": rng.choice(["red", "blue", "green"], 300)})
    y = d.x + (d.color == "red") * 1.4
    enc = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["color"]), remainder="passthrough")
    m = make_pipeline(enc, LinearRegression()).fit(d, y)
    e = d.copy()
    e.loc[:9, "color"] = "purple"
    r = fme.fme(m, e, {"color": "red"})
    unknown = r.excluded.index[r.excluded["reason_type"] == "unknown_level"]
    assert list(unknown) == list(range(10))
    np.testing.assert_allclose(r.results["fme"], 1.4, rtol=1e-12)  # every evaluated row: red against a known level
    assert "a level the fitted model never saw): 10" in r.summary()
    table = fme.ame(m, e, {"x": 1.0}, inference="sample")
    assert int(table["n"].iloc[0]) == 290 and int(table["n_excluded"].iloc[0]) == 10
    with pytest.raises(fme.StepError, match="never saw the level 'purple'"):
        fme.fme(m, e, {"color": "purple"})
    dd = pytest.importorskip("dask.dataframe")
    lazy = fme.fme(m, dd.from_pandas(e, npartitions=3), {"x": 1.0})
    assert lazy.n == 290 and "never saw): 10" in lazy.summary()


def test_value_exclusions_of_finite_floats_whose_sum_overflows_exclude_nothing():
    # the one summing pass overflows to inf; the element-wise check then clears the column
    data = pd.DataFrame({"x": [1e308, 1e308, -1e308, 1e308], "z": [np.nan, 1.0, 2.0, 3.0]})
    code, notes = value_exclusions(data, parse_steps(data, {"x": 1.0}))
    np.testing.assert_array_equal(code, np.zeros(4, dtype=np.int8))
    assert [(p.tolist(), pt, r) for p, pt, r in notes] == [
        ([], "", "missing value in x"),
        ([], "", "infinite value in x"),
    ]
    # a float32 column and a nullable Float64 one take the same route as before
    for col in (np.array([1.0, np.nan, np.inf, 2.0], dtype=np.float32), pd.array([1.0, None, np.inf, 2.0], "Float64")):
        code, _ = value_exclusions(pd.DataFrame({"x": col}), (Step("x", "numeric", 1.0),))
        np.testing.assert_array_equal(code, [0, 1, 1, 0])


def test_every_row_is_one_read_only_arange_per_row_count() -> None:
    from fme._core.exclusions import every_row

    a = every_row(1_000)
    np.testing.assert_array_equal(a, np.arange(1_000))
    assert a.dtype == np.int64 and not a.flags.writeable
    assert every_row(1_000) is a  # kept for the next call on the same rows
    b = every_row(7)
    np.testing.assert_array_equal(b, np.arange(7))
    with pytest.raises(ValueError, match="read-only"):
        b[0] = 5
    np.testing.assert_array_equal(every_row(1_000), np.arange(1_000))


@pytest.mark.parametrize(
    "index", [pd.RangeIndex(4), pd.Index([7, 3, 9, 1]), pd.Index(list("abcd")), pd.date_range("2020", periods=4)]
)
def test_an_empty_excluded_table_is_the_one_pandas_builds_and_each_is_its_own(index: pd.Index) -> None:
    """No row excluded: the table equals the one built from the (empty) text columns, and a table a user then
    writes to leaves the next one empty."""
    want = pd.DataFrame(
        {c: np.array([], dtype=object).astype(str) for c in ("reason_type", "point", "reason")},
        index=index[:0],
    )
    first = excluded_frame(np.zeros(4, dtype=np.int8), [], index)
    pd.testing.assert_frame_equal(first, want, check_exact=True)
    first.loc[index[0]] = ["missing", "x", "a user's row"]
    first.columns.name = "renamed"
    again = excluded_frame(np.zeros(4, dtype=np.int8), [], index)
    pd.testing.assert_frame_equal(again, want, check_exact=True)
    assert len(again) == 0 and again.columns.name is None
