"""Progress bars: on a terminal only, switched off by progress=False or FME_PROGRESS=0."""

from __future__ import annotations

import io
import sys

import pytest

from fme._progress import progress_bar, progress_enabled


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
    from conftest import make_regression_frame

    frame = make_regression_frame(n=200, seed=1)
    X = frame[["x1", "x2", "x3"]]
    model = LinearRegression().fit(X, frame["y"])
    res = fme.fme(model, X, {"x1": 1.0}, bootstrap={"X": X, "y": frame["y"], "n_resamples": 3, "random_state": 0,
                                                    "progress": progress})
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
