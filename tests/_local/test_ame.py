"""fme.ame in memory (fme._local.ame) beside fme.fme: the same AME from the same predictions, no more of them."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import fme
from tests.fixtures import ame_cases

N = 200_000
BETA = np.linspace(-1.0, 1.0, 10) / np.sqrt(10.0)


class Counting:
    """The cheap model tanh(X beta) of a DataFrame, counting its calls and the rows it is handed."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, df: pd.DataFrame) -> np.ndarray:
        self.calls.append(len(df))
        return np.tanh(df.to_numpy() @ BETA)


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(rng.normal(size=(N, 10)), columns=[f"x{j}" for j in range(10)])


def test_ame_calls_the_model_as_often_and_on_as_many_rows_as_fme() -> None:
    X = _data()
    by_fme, by_ame = Counting(), Counting()
    res = fme.fme(by_fme, X, {"x0": 1.0}, inference="sample")
    table = fme.ame(by_ame, X, {"x0": 1.0}, inference="sample")
    assert by_fme.calls == [N, N]  # f(x) and f(x + h), all rows at once
    assert by_ame.calls == by_fme.calls
    v = res.results["fme"].to_numpy()
    assert table["ame"].iloc[0] == float(np.mean(v))
    assert table["n"].iloc[0] == N and table["n_excluded"].iloc[0] == 0
    # the one-group sums' compiled passes: NumPy's own SD and quartiles, and the interval of the fixed model
    assert table["sd"].iloc[0] == float(np.std(v, ddof=1))
    assert [table["q25"].iloc[0], table["q75"].iloc[0]] == np.quantile(v, [0.25, 0.75]).tolist()
    assert table["std_error"].iloc[0] == res.tidy()["std_error"].iloc[0]
    # the same table by way of fme.fme: every column fme.ame prints, equal to the bit
    tidy = res.tidy()
    pd.testing.assert_frame_equal(pd.DataFrame(table[list(table.columns)]), tidy[list(table.columns)], check_exact=True)


def test_ame_never_predicts_more_rows_than_fme_with_rows_left_out() -> None:
    X = _data().iloc[:60_000].copy()
    X.loc[X.index[::7], "x0"] = np.nan  # a missing stepped value: the row is left out by both
    X.loc[X.index[3], "x0"] = np.inf
    by_fme, by_ame = Counting(), Counting()
    res = fme.fme(by_fme, X, {"x0": 0.5}, inference="sample")
    table = fme.ame(by_ame, X, {"x0": 0.5}, inference="sample")
    n_used = len(X) - len(X.index[::7]) - 1
    assert by_fme.calls == [n_used, n_used]
    assert sum(by_ame.calls) <= sum(by_fme.calls) and len(by_ame.calls) <= len(by_fme.calls)
    assert table["n"].iloc[0] == n_used and table["n_excluded"].iloc[0] == len(X) - n_used
    assert table["ame"].iloc[0] == float(np.mean(res.results["fme"].to_numpy()))


@pytest.mark.parametrize("name", sorted(ame_cases.cases()))
def test_ame_table_equals_its_pinned_reference_column_for_column(name: str) -> None:
    """Every column of each table exactly as the reference run gave it (floats compared with ==): the
    one-group sums, the quartiles and the skipped copies change no number."""
    call = ame_cases.cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ame_cases.as_json(call())
    want = json.loads((ame_cases.REFERENCE / f"{name}.json").read_text())
    assert got["columns"] == want["columns"]
    for c in want["columns"]:
        assert got["values"][c] == want["values"][c], c


def test_one_group_rows_take_the_compiled_sums_and_give_the_pinned_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    from fme._local import ame as local_ame

    seen: list[int] = []
    real = local_ame.one_group_sums
    monkeypatch.setattr(
        local_ame, "one_group_sums", lambda v, selected=None: (seen.append(v.size), real(v, selected))[1]
    )
    from fme.inference import one_group

    selections: list[int] = []
    select = one_group.quartiles
    monkeypatch.setattr(one_group, "quartiles", lambda v: (selections.append(v.size), select(v))[1])
    got = ame_cases.as_json(ame_cases.cases()["function_large"]())
    assert seen == [60_000, 60_000]  # both rows of the table
    assert selections == [60_000, 60_000]  # each row's quartiles selected once, from when its fMEs were known
    want = json.loads((ame_cases.REFERENCE / "function_large.json").read_text())
    assert got["columns"] == want["columns"]
    for c in want["columns"]:
        assert got["values"][c] == want["values"][c], c
