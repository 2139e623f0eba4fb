"""One ``by=`` for every averaging verb and both engines (fme._core.groups): the same accepted labels, the same
errors, the same group order and numbering, a missing value a group of its own, listed last."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._core.groups import GroupSpec, check_by, frame_groups, group_codes, group_means
from fme.exceptions import FeatureError, NameClashError, ParameterError
from fme.levels import dgp as dgp_level
from fme.levels import learner as learner_level
from fme.levels.learner import learner_splits

dd = pytest.importorskip("dask.dataframe")


def _frame(n: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    g = rng.choice(np.array(["b", "a", None], dtype=object), size=n, p=[0.45, 0.4, 0.15])
    return pd.DataFrame({0: rng.normal(size=n), 1: rng.normal(size=n), 2: g, "w": rng.uniform(0.5, 2.0, n)})


def _model(d: pd.DataFrame) -> np.ndarray:
    # f = 2 x0 + x0 x1: the fME of x0 + 1 and the derivative in x0 are both 2 + x1, exactly
    return (2.0 * d[0] + d[0] * d[1]).to_numpy(dtype=float)


def _by_hand(data: pd.DataFrame, values: np.ndarray) -> pd.DataFrame:
    """Per group of column 2 (missing last): the mean of ``values`` and the count, by pandas alone."""
    key = data[2].fillna("~missing")  # '~' sorts after the letters, as the missing group does
    out = pd.DataFrame({"k": key, "v": values}).groupby("k", sort=True)["v"].agg(["mean", "size"])
    return out.reset_index(drop=True)


def _learner(d: pd.DataFrame, **kw) -> pd.DataFrame:
    # every split's "fit" is the model itself: ame_full is the model's AME per group of all rows
    t = fme.learner_ame(lambda X, y: _model, d, np.zeros(len(d)), {0: 1.0}, repeats=3, random_state=1, **kw)
    return t.rename(columns={"ame_full": "estimate"})


def _dgp(d: pd.DataFrame, **kw) -> pd.DataFrame:
    from sklearn.linear_model import LinearRegression, LogisticRegression

    # model_ame is the model's AME over each group's moved rows (every row: no detector)
    t = fme.dgp_ame(
        d,
        _model(d),
        {0: 1.0},
        model=_model,
        outcome_learner=LinearRegression(),
        ratio_learner=LogisticRegression(),
        folds=2,
        extrapolation=None,
        **kw,
    )
    return t.rename(columns={"model_ame": "estimate"})


VERBS = {
    "ame": lambda d, **kw: fme.ame(_model, d, {0: 1.0}, inference="sample", **kw).rename(columns={"ame": "estimate"}),
    "avg_predictions": lambda d, **kw: fme.avg_predictions(_model, d, inference="sample", **kw),
    "avg_slopes": lambda d, **kw: fme.avg_slopes(_model, d, [0], eps=1e-3, inference="sample", **kw),
    "avg_comparisons": lambda d, **kw: fme.avg_comparisons(_model, d, {0: 1.0}, inference="sample", **kw),
    "learner_ame": _learner,
    "dgp_ame": _dgp,
}
#: The levels of an effect take pandas data only.
IN_MEMORY = ("learner_ame", "dgp_ame")
CASES = [
    (verb, engine)
    for verb in sorted(VERBS)
    for engine in ("pandas", "dask")
    if engine == "pandas" or verb not in IN_MEMORY
]
#: The column counting each group's rows (the learner table has none: its groups' rows differ by split).
COUNT = {"learner_ame": None}


def _expected(verb: str, data: pd.DataFrame) -> np.ndarray:
    if verb == "avg_predictions":
        return _model(data)
    return 2.0 + data[1].to_numpy()


@pytest.mark.parametrize("by", [None, "x", 2.5, ("x", "y")])
def test_check_by_accepts_labels_of_any_hashable_type(by):
    cols = pd.Index(["x", "y", 2.5, 7])
    expected = [] if by is None else list(by) if isinstance(by, tuple) else [by]
    assert check_by(cols, by) == expected
    assert check_by(cols, 7) == [7] and check_by(cols, [7, "x"]) == [7, "x"]


@pytest.mark.parametrize(
    "by, error, message",
    [
        (99, FeatureError, r"by column\(s\) \[99\] are not columns of the data; use some of \['x', 7\]"),
        (["x", "nope"], FeatureError, r"by column\(s\) \['nope'\]"),
        ([["x"]], ParameterError, "by must be a column name or a list of column names"),
        ([], ParameterError, "by must be a column name"),
        ({"x": 1}, ParameterError, "by must be a column name"),
        (["x", "x"], ParameterError, "names a column twice"),
    ],
)
def test_check_by_refuses_with_the_librarys_errors(by, error, message):
    with pytest.raises(error, match=message):
        check_by(pd.Index(["x", 7]), by)


def test_check_by_refuses_a_name_of_the_tables_own_columns():
    with pytest.raises(NameClashError, match="by column 'estimate'"):
        check_by(pd.Index(["estimate", "x"]), "estimate", ["estimate", "n"])


def test_groups_are_sorted_with_missing_last_and_numbered_alike_in_memory_and_by_matching():
    data = _frame()
    codes, spec = frame_groups(data, [2])
    assert spec.keys[2].tolist()[:2] == ["a", "b"] and pd.isna(spec.keys[2].iloc[2]) and spec.n_groups == 3
    # the Dask engine matches a chunk's rows to the keys: the same codes as the in-memory numbering
    np.testing.assert_array_equal(group_codes(data.iloc[50:120], spec), codes[50:120])
    np.testing.assert_array_equal(group_codes(data, GroupSpec([], pd.DataFrame(index=[0]))), np.zeros(len(data)))


def test_group_means_leave_out_nan_and_unmatched_rows_and_round_as_nanmean():
    codes = np.array([1, 0, -1, 1, 0, 2, 2])
    values = np.array([1.0, 2.0, 3.0, 4.0, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(group_means(values, codes, 4), [2.0, 2.5, np.nan, np.nan])
    v = np.random.default_rng(0).normal(size=1001)
    v[5] = np.nan
    assert group_means(v, np.zeros(1001, dtype=np.int64), 1)[0] == np.nanmean(v)  # the very float


@pytest.mark.parametrize("verb, engine", CASES)
def test_every_verb_groups_an_integer_labelled_column_with_missing_values_alike(verb, engine):
    data = _frame()
    use = data if engine == "pandas" else dd.from_pandas(data, npartitions=3, sort=False)
    hand = _by_hand(data, _expected(verb, data))
    for by in (2, [2]):
        out = VERBS[verb](use, by=by)
        assert out[2].iloc[:2].tolist() == ["a", "b"] and pd.isna(out[2].iloc[2]), out[2].tolist()
        np.testing.assert_allclose(out["estimate"].to_numpy(), hand["mean"].to_numpy(), rtol=1e-6)
        count = COUNT.get(verb, "n")
        if count is not None:
            np.testing.assert_array_equal(out[count].to_numpy(), hand["size"].to_numpy())


def test_the_learner_level_averages_each_splits_group_means_in_the_same_order():
    data = _frame()
    out = _learner(data, by=2)
    values = _expected("learner_ame", data)
    # the mean over the splits of each group's mean on the split's test rows, missing group last
    per_split = [
        _by_hand(data.iloc[test], values[test])["mean"].to_numpy() for _, test in learner_splits(len(data), 3, 0.5, 1)
    ]
    np.testing.assert_allclose(out["ame"].to_numpy(), np.mean(per_split, axis=0), rtol=1e-10)
    assert out["n_splits"].tolist() == [3, 3, 3]
    # a list of steps groups fme.fme's rows itself: the same groups in the same order, the same figures
    listed = fme.learner_ame(
        lambda X, y: _model, data, np.zeros(len(data)), [{0: 1.0}], repeats=3, random_state=1, by=2
    )
    assert listed[2].iloc[:2].tolist() == ["a", "b"] and pd.isna(listed[2].iloc[2])
    np.testing.assert_allclose(listed["ame"].to_numpy(), out["ame"].to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(listed["ame_full"].to_numpy(), out["estimate"].to_numpy(), rtol=1e-10)


@pytest.mark.parametrize("verb, module", [("learner_ame", learner_level), ("dgp_ame", dgp_level)])
def test_the_levels_refuse_a_by_named_like_a_column_of_their_table(verb, module):
    with pytest.raises(NameClashError, match="by column 'ame' has the name of one of fme's output columns"):
        VERBS[verb](_frame(60).rename(columns={"w": "ame"}), by="ame")
    # every column of the table but the by column is reserved
    renamed = {"learner_ame": {"estimate": "ame_full"}, "dgp_ame": {"estimate": "model_ame"}}[verb]
    table = VERBS[verb](_frame(60), by=2).rename(columns=renamed)
    assert set(table.columns) - {2} <= set(module.RESERVED), set(table.columns) - set(module.RESERVED)


@pytest.mark.parametrize("verb, engine", CASES)
def test_every_verb_refuses_a_bad_by_with_the_same_error(verb, engine):
    data = _frame(60)
    use = data if engine == "pandas" else dd.from_pandas(data, npartitions=2, sort=False)
    with pytest.raises(FeatureError, match=r"by column\(s\) \[99\] are not columns of the data; use some of \[0, 1, 2"):
        VERBS[verb](use, by=99)
    with pytest.raises(ParameterError, match="by must be a column name or a list of column names"):
        VERBS[verb](use, by=[[2]])


@pytest.mark.parametrize("verb", ["ame", "avg_predictions", "avg_slopes"])
def test_weights_give_the_weighted_group_means(verb):
    data = _frame()
    values, w = _expected(verb, data), data["w"].to_numpy()
    key = data[2].fillna("~missing")
    frame = pd.DataFrame({"k": key, "vw": values * w, "w": w}).groupby("k", sort=True).sum()
    hand = (frame["vw"] / frame["w"]).to_numpy()
    for use in (data, dd.from_pandas(data, npartitions=3, sort=False)):
        out = VERBS[verb](use, by=2, wts="w")
        np.testing.assert_allclose(out["estimate"].to_numpy(), hand, rtol=1e-6)
