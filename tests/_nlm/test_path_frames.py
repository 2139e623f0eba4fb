"""The level-0 nodes one at a time (fme._nlm.path_frames): the same points and NLMs as the stacked frames, the
frames a model keeps left as they were handed, and the calls it gets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._nlm import path_frames
from fme._utils.memory import release_memory

N = 3_000


@pytest.fixture(autouse=True)
def _no_kept_memory():
    release_memory()
    yield
    release_memory()


def _data(n: int = N, cols: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(rng.normal(size=(n, cols)), columns=[f"x{j}" for j in range(cols)])


def _model(df: pd.DataFrame) -> np.ndarray:
    # column by column, not a matrix product: BLAS may round a row differently by its place in the batch, and
    # the two routes batch the nodes differently
    z = df["x0"] - 0.5 * df["x1"] + 0.25 * df["x2"] + 2.0 * df["x3"]
    return (np.tanh(z) + 0.1 * z**3).to_numpy()


def _nlm(model, X, steps, monkeypatch, node_rows: int, **kw) -> pd.DataFrame:
    monkeypatch.setattr(path_frames, "NODE_BY_NODE_ROWS", node_rows)
    return fme.fme(model, X, steps, nlm=True, inference="sample", **kw).results


@pytest.mark.parametrize(
    ("steps", "kw"),
    [
        ({"x0": 1.0}, {}),
        ({"x0": 0.5, "x3": -1.0}, {}),
        ({"x1": 2.5}, {"extrapolation": "envelope", "on_extrapolation": "shrink"}),  # per-row steps
    ],
    ids=["one", "two", "shrunk"],
)
def test_the_nodes_one_at_a_time_give_the_stacked_frames_numbers(monkeypatch, steps, kw):
    X = _data()
    stacked = _nlm(_model, X, steps, monkeypatch, node_rows=10**9, **kw)
    one_by_one = _nlm(_model, X, steps, monkeypatch, node_rows=1, **kw)
    pd.testing.assert_frame_equal(stacked, one_by_one, check_exact=True)
    assert one_by_one["nlm"].notna().all()
    if "on_extrapolation" in kw:
        assert one_by_one["step_x1"].nunique() > 1  # some rows' steps were shrunk


def test_the_nodes_go_one_call_per_node_with_every_rows_chunk(monkeypatch):
    X = _data()
    shapes: list[tuple[int, int]] = []

    def counted(df: pd.DataFrame) -> np.ndarray:
        shapes.append(df.shape)
        return _model(df)

    _nlm(counted, X, {"x0": 1.0}, monkeypatch, node_rows=1)
    assert shapes[2:23] == [(N, 4)] * 21  # after f(x) and f(x + h): one call per node, every row
    shapes.clear()
    _nlm(counted, X, {"x0": 1.0}, monkeypatch, node_rows=1, batch_size=50)  # the points of 50 rows' 21 nodes
    assert shapes.count((1050, 4)) == 21 * 2 and shapes.count((N - 2 * 1050, 4)) == 21
    shapes.clear()
    _nlm(counted, X, {"x0": 1.0}, monkeypatch, node_rows=10**9)
    assert shapes[2] == (21 * N, 4)  # stacked: the 21 nodes of every row in one call


def test_a_model_keeping_its_inputs_keeps_each_node_as_it_was_handed(monkeypatch):
    X = _data(400)
    kept: list[pd.DataFrame] = []

    def keeper(df: pd.DataFrame) -> np.ndarray:
        kept.append(df)
        return _model(df)

    res = _nlm(keeper, X, {"x0": 1.0}, monkeypatch, node_rows=1)
    nodes = path_frames_nodes()
    for k, t in enumerate(nodes):
        frame = kept[2 + k]  # f(x), f(x + h), then the nodes in order
        np.testing.assert_array_equal(frame["x0"].to_numpy(), t * 1.0 + X["x0"].to_numpy())
        np.testing.assert_array_equal(frame[["x1", "x2", "x3"]].to_numpy(), X[["x1", "x2", "x3"]].to_numpy())
    reference = _nlm(_model, X, {"x0": 1.0}, monkeypatch, node_rows=10**9)
    pd.testing.assert_frame_equal(res, reference, check_exact=True)


def test_predictions_that_view_the_frame_are_taken_before_it_is_rewritten(monkeypatch):
    X = _data(400)

    def linear_in_x0(df: pd.DataFrame) -> np.ndarray:
        return df.to_numpy()[:, 0]  # a view of the frame: f = x0, a straight path

    res = _nlm(linear_in_x0, X, {"x0": 1.0}, monkeypatch, node_rows=1)
    stacked = _nlm(linear_in_x0, X, {"x0": 1.0}, monkeypatch, node_rows=10**9)
    pd.testing.assert_frame_equal(res, stacked, check_exact=True)
    np.testing.assert_allclose(res["nlm"].to_numpy(), 1.0, atol=1e-12)


def path_frames_nodes() -> np.ndarray:
    """The 21 Gauss-Kronrod nodes on [0, 1] of level 0."""
    from fme.nlm import gauss_kronrod_rules

    return gauss_kronrod_rules(1)[0].nodes


@pytest.mark.parametrize("method", ["gauss-legendre", "simpson38", "gauss-kronrod"])
def test_stacked_frames_a_model_keeps_are_not_written_again(monkeypatch, method):
    """Stacked frames share one block from batch to batch (and call to call) only while the model keeps none."""
    X = _data(300)
    kept: list[pd.DataFrame] = []

    def keeper(df: pd.DataFrame) -> np.ndarray:
        kept.append(df.copy() if len(kept) % 2 else df)  # every other frame kept as handed, the rest as copies
        return _model(df)

    def copies(df: pd.DataFrame) -> np.ndarray:
        kept.append(df.copy())
        return _model(df)

    monkeypatch.setattr(path_frames, "NODE_BY_NODE_ROWS", 10**9)
    kw = {"nlm": True, "nlm_method": method, "batch_size": 40, "inference": "sample"}
    got = fme.fme(keeper, X, {"x0": 1.0}, **kw).results
    handed = [f for i, f in enumerate(kept) if i % 2 == 0]
    kept.clear()
    want = fme.fme(copies, X, {"x0": 1.0}, **kw).results
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert len(handed) > 4
    for frame, copy in zip(handed, kept[::2], strict=True):  # each kept frame still holds what it was handed
        pd.testing.assert_frame_equal(frame, copy, check_exact=True)


@pytest.mark.parametrize("node_rows", [1, 10**9], ids=["one-at-a-time", "stacked"])
def test_a_model_writing_into_its_input_changes_no_later_node(monkeypatch, node_rows):
    """The unmoved columns of a node's frame serve the next nodes: a model that overwrites its input (pandas'
    in-place writes) must write into a copy, and every NLM equals a clean model's."""
    X = _data(500)

    def overwriting(df: pd.DataFrame) -> np.ndarray:
        out = _model(df)
        df.iloc[:, :] = -1.0e3
        df.loc[:, "x1"] *= 2.0
        return out

    got = _nlm(overwriting, X, {"x0": 1.0}, monkeypatch, node_rows=node_rows)
    want = _nlm(_model, X, {"x0": 1.0}, monkeypatch, node_rows=node_rows)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("k", [1, 3])
def test_refinement_points_on_any_threads_are_x_plus_t_h_to_the_bit(monkeypatch, k):
    """Any (row, t) pairs, gathered by ranges on ``k`` threads: every point x_row + t h_row as NumPy writes it,
    the unmoved columns the rows' own values, and the caller's frame untouched."""
    from fme._utils import threads
    from fme.steps import Step

    monkeypatch.setattr(threads, "thread_count", lambda: k)
    monkeypatch.setattr(path_frames, "rows_per_thread", lambda cells: 8)
    X = _data(500, 5)
    before = X.copy()
    h = {"x3": np.linspace(-1.0, 2.0, len(X))}
    paths = path_frames.PathFrames(None, X, (Step("x1", "numeric", 0.5), Step("x3", "numeric", 1.0)), h, "")
    rng = np.random.default_rng(2)
    rows = rng.integers(0, len(X), size=997)
    t = rng.random(997)
    got = paths.frame(rows, t)
    x = X.to_numpy()
    want = x[rows].copy()
    want[:, 1] = x[rows, 1] + t * 0.5
    want[:, 3] = x[rows, 3] + t * h["x3"][rows]
    np.testing.assert_array_equal(got.to_numpy(), want)
    assert list(got.columns) == list(X.columns)
    pd.testing.assert_frame_equal(X, before)
