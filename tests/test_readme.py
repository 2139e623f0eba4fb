"""README.md stays short, every Python code block of it runs as pasted, in a fresh namespace, and prints exactly
the output the README shows under it (the ```text block that follows it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    """The ```python blocks of README.md, in order."""
    return [code for code, _ in blocks_with_output()]


def blocks_with_output() -> list[tuple[str, str | None]]:
    """(code, printed output or None) of each ```python block; the output is the ```text block that follows
    the code block with at most one paragraph of prose between them."""
    text = README.read_text(encoding="utf-8")
    fence = re.compile(r"^```(\w*)\n(.*?)^```\n", flags=re.S | re.M)
    found = [(m.group(1), m.group(2), m.start(), m.end()) for m in fence.finditer(text)]
    out = []
    for i, (lang, body, _, end) in enumerate(found):
        if lang != "python":
            continue
        output = None
        if i + 1 < len(found) and found[i + 1][0] == "text":
            between = text[end : found[i + 1][2]]
            if between.count("\n\n") <= 2:
                output = found[i + 1][1]
        out.append((body, output))
    return out


def test_readme_is_short_and_shows_output():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move detail into docs/ (the user guide)"
    blocks = blocks_with_output()
    assert blocks, "the README shows one example"
    assert all(output is not None for _, output in blocks), "every README example shows what it prints"


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", text):
        assert (README.parent / target).exists(), f"README.md links to {target}, which does not exist"


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_block_prints_what_the_readme_shows(index, monkeypatch, tmp_path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("FME_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)  # a block must not depend on the checkout's working directory
    code, expected = blocks_with_output()[index]
    exec(compile(code, f"README.md python block {index + 1}", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert out.strip(), "every README block prints its results"
    if expected is not None:
        assert out.rstrip("\n") == expected.rstrip("\n"), "README.md shows output the code no longer prints"
