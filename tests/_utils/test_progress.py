"""Progress bars: on a terminal only, switched off by progress=False or FME_PROGRESS=0."""

from __future__ import annotations

import io
import sys

import pytest

from fme._utils.progress import progress_bar, progress_enabled


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal(monkeypatch):
    monkeypatch.delenv("FME_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_enabled() is False
    monkeypatch.setattr(sys, "stderr", _TTY())
    assert progress_enabled() is True
    assert progress_enabled(False) is False


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_env_switch_turns_progress_off(monkeypatch, value):
    monkeypatch.setattr(sys, "stderr", _TTY())
    monkeypatch.setenv("FME_PROGRESS", value)
    assert progress_enabled() is False
    assert progress_enabled(True) is True  # an explicit argument wins


def test_bar_wraps_only_when_enabled(monkeypatch):
    items = [1, 2, 3]
    assert progress_bar(items, total=3, progress=False) is items
    bar = progress_bar(items, total=3, progress=True)
    assert bar is not items and list(bar) == items
    assert progress_bar(items, total=1, progress=True) is items  # one item: nothing to show


def _stability_and_bootstrap(progress=None) -> None:
    from sklearn.linear_model import LinearRegression

    import fme
    from tests.conftest import make_regression_frame

    frame = make_regression_frame(n=200, seed=1)
    X = frame[["x1", "x2", "x3"]]
    model = LinearRegression().fit(X, frame["y"])
    res = fme.fme(
        model,
        X,
        {"x1": 1.0},
        bootstrap={"X": X, "y": frame["y"], "n_resamples": 3, "random_state": 0, "progress": progress},
    )
    part = fme.came(fme.fme(lambda d: d["x1"].to_numpy() ** 2, X, {"x1": 1.0}), maxdepth=2)
    fme.partition_stability(part, n_subsamples=3, progress=progress)
    assert res.inference == "bootstrap"


def test_bootstrap_and_stability_refits_show_a_bar_on_a_terminal(monkeypatch):
    monkeypatch.delenv("FME_PROGRESS", raising=False)
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    _stability_and_bootstrap()
    text = tty.getvalue()
    assert "bootstrap refits" in text and "stability refits" in text
    monkeypatch.setenv("FME_PROGRESS", "0")  # switched off on a terminal too
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    _stability_and_bootstrap()
    assert "refits" not in tty.getvalue()
    tty = _TTY()  # progress=True wins over the environment
    monkeypatch.setattr(sys, "stderr", tty)
    _stability_and_bootstrap(progress=True)
    assert "bootstrap refits" in tty.getvalue() and "stability refits" in tty.getvalue()


# ----------------------------------------------------------------- NLM batches on the pandas path
def _capture(monkeypatch, fn):
    """``fn()``'s value and what it wrote to a terminal-like standard error."""
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    return fn(), tty.getvalue()


def test_nlm_batches_show_a_bar_when_on_and_give_the_same_values(monkeypatch):
    import numpy as np
    import pandas as pd
    from sklearn.svm import SVR

    import fme
    from tests.conftest import make_regression_frame

    monkeypatch.delenv("FME_PROGRESS", raising=False)
    frame = make_regression_frame(n=400, seed=2)
    X = frame[["x1", "x2", "x3"]]
    svr = SVR().fit(X, frame["y"])
    runs = {}
    for progress in (True, False, None):  # None: the terminal decides, FME_PROGRESS=0 switches it off
        if progress is None:
            monkeypatch.setenv("FME_PROGRESS", "0")
        runs[progress] = _capture(
            monkeypatch,
            lambda p=progress: fme.fme(
                svr,
                X,
                {"x1": 3.0},
                nlm=True,
                nlm_method="gauss-kronrod",
                nlm_tol=1e-15,
                nlm_budget=200,
                batch_size=150,
                progress=p,
            ),
        )
    (on, text_on), (off, text_off), (env, text_env) = runs[True], runs[False], runs[None]
    # a tolerance no row meets: the 21 nodes in batches of 150 rows, then refinement rounds of more than
    # 150 x 21 points (the budget of 200 per row: 177 x 400 points over at most 12 rounds) have a bar
    assert "NLM Gauss-Kronrod, 21 nodes" in text_on and "NLM refinement, round 1" in text_on
    assert "fME x1 + 3" in text_on  # f(x), f(x + h) in 3 batches of 150 rows
    assert text_off == "" and text_env == ""
    pd.testing.assert_frame_equal(on.results, off.results)
    pd.testing.assert_frame_equal(on.results, env.results)
    # fixed rules: the batches of f(x), f(x + h) and the stacked nodes
    res, text = _capture(
        monkeypatch,
        lambda: fme.fme(svr, X, {"x1": 0.5}, nlm=True, nlm_method="gauss-legendre", batch_size=100, progress=True),
    )
    assert "fME x1 + 0.5" in text
    np.testing.assert_array_equal(
        res.results["nlm"], fme.fme(svr, X, {"x1": 0.5}, nlm=True, nlm_method="gauss-legendre").results["nlm"]
    )


def test_exact_nlm_chunks_show_a_bar_when_on(monkeypatch):
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingRegressor

    from fme._adapters.predictor import make_predictor
    from fme._nlm.exact import exact_nlm, tree_thresholds
    from fme._nlm.tree_paths import read_forest, traverse_nlm
    from tests.conftest import make_regression_frame

    frame = make_regression_frame(n=300, seed=4)
    X = frame[["x1", "x2", "x3"]]
    model = HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, frame["y"])
    shifts = {"x1": np.full(len(X), 0.8)}
    f0 = model.predict(X)
    f1 = model.predict(X.assign(x1=X["x1"] + 0.8))
    forest = read_forest(model, None)
    # 10 trees, 500 entries per chunk: 50 rows per chunk, 6 chunks
    out = {
        p: _capture(
            monkeypatch, lambda p=p: traverse_nlm(forest, X, shifts, f0, f1, entry_budget=500, n_threads=2, progress=p)
        )
        for p in (True, False)
    }
    assert "exact NLM (tree traversal" in out[True][1] and out[False][1] == ""
    for a, b in zip(out[True][0], out[False][0]):
        np.testing.assert_array_equal(a, b)
    thresholds = tree_thresholds(model, ["x1"], list(X.columns))
    predictor = make_predictor(model)
    out = {
        p: _capture(
            monkeypatch, lambda p=p: exact_nlm(predictor, X, shifts, thresholds, f0, f1, cell_budget=600, progress=p)
        )
        for p in (True, False)
    }
    assert "exact NLM (segment midpoints" in out[True][1] and out[False][1] == ""
    for a, b in zip(out[True][0], out[False][0]):
        np.testing.assert_array_equal(a, b)
