"""Every Python code block of README.md runs as pasted, in a fresh namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    """The ```python blocks of README.md, in order."""
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_readme_has_python_blocks():
    blocks = python_blocks()
    assert len(blocks) >= 2
    # the uncertainty examples define what they use (they once used ols, df, pipe, logit from nowhere)
    assert any("ols = smf.ols(" in b and "logit = smf.logit(" in b and "pipe = make_pipeline(" in b for b in blocks)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_block_runs_as_pasted(index, monkeypatch, tmp_path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("FME_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)  # a block must not depend on the checkout's working directory
    code = python_blocks()[index]
    exec(compile(code, f"README.md python block {index + 1}", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert out.strip(), "every README block prints its results"
