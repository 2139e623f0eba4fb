"""Sphinx extension: the ``pyexec`` directive runs a Python block at build time and shows its printed output.

The guide's and the getting-started page's examples are written once, as code; what the page shows under each
is what that code printed in this build, so a page cannot show output that the code no longer gives. Each
block runs in a fresh namespace in a temporary working directory (as a reader pastes it into a new script);
an exception fails the build. Warnings the block raises are shown under its output, one line each.

```{pyexec}
import fme
print(fme.__version__)
```
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
import traceback
import warnings

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


def run_block(code: str, name: str) -> str:
    """Run ``code`` in a fresh namespace and a temporary directory; its stdout, stderr and warnings."""
    import matplotlib

    matplotlib.use("Agg")
    out = io.StringIO()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        os.chdir(tmp)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compile(code, name, "exec"), {"__name__": "__main__"})
        except Exception as exc:  # noqa: BLE001 - reported with the block's traceback
            raise ExtensionError(f"{name} failed:\n{traceback.format_exc()}") from exc
        finally:
            os.chdir(cwd)
            import matplotlib.pyplot as plt

            plt.close("all")
    text = out.getvalue().rstrip()
    for w in caught:
        text += f"\n{w.category.__name__}: {w.message}"
    return text.strip("\n")


class PyExec(SphinxDirective):
    has_content = True
    option_spec = {"hide-output": directives.flag}

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        if os.environ.get("FME_DOCS_SKIP_EXEC"):  # a quick draft build while editing: code only, nothing run
            return [nodes.literal_block(code, code, language="python")]
        name = f"{self.env.docname}.md, pyexec block at line {self.lineno}"
        start = time.perf_counter()
        output = run_block(code, name)
        logger.info(f"[pyexec] {name}: {time.perf_counter() - start:.1f} s")
        source = nodes.literal_block(code, code, language="python")
        result: list[nodes.Node] = [source]
        if output and "hide-output" not in self.options:
            caption = nodes.paragraph(text="Output (printed when this page was built):")
            caption["classes"].append("pyexec-caption")
            block = nodes.literal_block(output, output, language="none")
            block["classes"].append("pyexec-output")
            result += [caption, block]
        return result


def setup(app):  # noqa: ANN001, ANN201
    app.add_directive("pyexec", PyExec)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
