"""Tests of fme._utils.frames: result tables print the estimate and its interval first, within the width."""

from __future__ import annotations

import numpy as np
import pandas as pd

import fme
from fme._utils.frames import ReadableFrame, display_order


def test_display_order_puts_labels_estimate_and_interval_first():
    cols = ["term", "g", "estimate", "std_error", "statistic", "p_value", "conf_low", "conf_high", "n"]
    assert display_order(cols) == [
        "term",
        "g",
        "estimate",
        "conf_low",
        "conf_high",
        "std_error",
        "p_value",
        "statistic",
        "n",
    ]
    assert display_order(["a", "b"]) == ["a", "b"]  # no estimate: as it stands


def _wide(n_rows: int = 3) -> ReadableFrame:
    rng = np.random.default_rng(0)
    cols = {"feature": ["x"] * n_rows, "level": [None] * n_rows, "ame": rng.normal(size=n_rows)}
    cols.update(
        {
            name: rng.normal(size=n_rows)
            for name in ("std_error", "statistic", "p_value", "conf_low", "conf_high", "sd", "q25", "q75")
        }
    )
    cols["covers"] = ["model uncertainty"] * n_rows
    return ReadableFrame(cols)


def test_repr_fits_the_terminal_and_names_what_it_leaves_out(monkeypatch):
    frame = _wide()
    monkeypatch.setenv("COLUMNS", "60")
    with pd.option_context("display.width", 60, "display.max_columns", 0):
        text = repr(frame)
    assert max(len(line) for line in text.splitlines()) <= 60 and "..." not in text
    assert text.splitlines()[0].split()[:5] == ["feature", "ame", "conf_low", "conf_high", "std_error"]
    note = " ".join(text.split("\n\n")[-1].split())
    assert note.startswith("[3 rows x 12 columns] not shown: level (empty),") and note.endswith("covers")
    assert list(frame.columns)[:3] == ["feature", "level", "ame"]


def test_repr_keeps_pandas_view_when_everything_fits():
    frame = _wide()
    with pd.option_context("display.width", None, "display.max_columns", None):
        assert repr(frame) == repr(pd.DataFrame(frame)[display_order(list(frame.columns))])


def test_to_string_reorders_unless_columns_are_named():
    frame = _wide()
    assert frame.to_string().splitlines()[0].split()[:4] == ["feature", "level", "ame", "conf_low"]
    assert frame.to_string(columns=["sd", "ame"]).splitlines()[0].split() == ["sd", "ame"]


def test_operations_keep_the_view_and_the_order():
    frame = _wide()
    for out in (frame.copy(), frame.iloc[[1, 0]], frame.sort_values("ame"), frame[["ame", "feature", "conf_low"]]):
        assert type(out) is ReadableFrame
    assert list(frame[["ame", "feature", "conf_low"]].columns) == ["ame", "feature", "conf_low"]
    pd.testing.assert_frame_equal(pd.DataFrame(frame.copy()), pd.DataFrame(frame))


def test_came_leaves_print_the_came_and_its_interval_first(monkeypatch):
    rng = np.random.default_rng(3)
    d = pd.DataFrame({"x": rng.uniform(-2, 2, 200), "z": rng.uniform(-1, 1, 200)})
    eff = fme.fme(lambda f: f["x"] ** 2 * np.where(f["z"] > 0, 2.0, 1.0), d, {"x": 1.0}, inference="sample")
    part = fme.came(eff, honest=False, n_partitions=2)
    monkeypatch.setenv("COLUMNS", "80")
    with pd.option_context("display.width", 80, "display.max_columns", 0):
        text = repr(part.leaves)
    header = text.splitlines()[0].split()
    assert header[header.index("came") : header.index("came") + 5] == [
        "came",
        "conf_low",
        "conf_high",
        "std_error",
        "p_value",
    ]
    assert "..." not in text and max(len(line) for line in text.splitlines()) <= 80
    assert list(part.leaves.columns)[:3] == ["node", "n", "came"]
