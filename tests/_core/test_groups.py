"""One ``by=`` for every averaging verb and both engines (fme._core.groups): the same accepted labels, the same
errors, the same group order and numbering, a missing value a group of its own, listed last."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._core.groups import check_by, frame_groups, group_codes, GroupSpec
from fme.exceptions import FeatureError, NameClashError, ParameterError

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


VERBS = {
    "ame": lambda d, **kw: fme.ame(_model, d, {0: 1.0}, inference="sample", **kw).rename(columns={"ame": "estimate"}),
    "avg_predictions": lambda d, **kw: fme.avg_predictions(_model, d, inference="sample", **kw),
    "avg_slopes": lambda d, **kw: fme.avg_slopes(_model, d, [0], eps=1e-3, inference="sample", **kw),
    "avg_comparisons": lambda d, **kw: fme.avg_comparisons(_model, d, {0: 1.0}, inference="sample", **kw),
}


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


@pytest.mark.parametrize("by, error, message", [
    (99, FeatureError, r"by column\(s\) \[99\] are not columns of the data; use some of \['x', 7\]"),
    (["x", "nope"], FeatureError, r"by column\(s\) \['nope'\]"),
    ([["x"]], ParameterError, "by must be a column name or a list of column names"),
    ([], ParameterError, "by must be a column name"),
    ({"x": 1}, ParameterError, "by must be a column name"),
    (["x", "x"], ParameterError, "names a column twice"),
])
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


@pytest.mark.parametrize("engine", ["pandas", "dask"])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_groups_an_integer_labelled_column_with_missing_values_alike(verb, engine):
    data = _frame()
    use = data if engine == "pandas" else dd.from_pandas(data, npartitions=3, sort=False)
    hand = _by_hand(data, _expected(verb, data))
    for by in (2, [2]):
        out = VERBS[verb](use, by=by)
        assert out[2].iloc[:2].tolist() == ["a", "b"] and pd.isna(out[2].iloc[2]), out[2].tolist()
        np.testing.assert_allclose(out["estimate"].to_numpy(), hand["mean"].to_numpy(), rtol=1e-6)
        np.testing.assert_array_equal(out["n"].to_numpy(), hand["size"].to_numpy())


@pytest.mark.parametrize("engine", ["pandas", "dask"])
@pytest.mark.parametrize("verb", sorted(VERBS))
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
