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
