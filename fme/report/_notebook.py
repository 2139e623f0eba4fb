"""Running the analysis notebook: a kernel that logs its own output, and executed notebooks without
run-specific bytes (same inputs, same notebook).

papermill starts an ipykernel for each notebook; the kernel's own chatter ("Kernel is running over TCP
without encryption", "KeyboardInterrupt caught in kernel" at shutdown) is tool noise for a report build
or ``make paper``: :func:`logged_kernel_manager` sends it to a log file. Cell outputs (including Python
warnings raised by the analysis) are unaffected: they are captured in the executed notebook, and errors
still fail the run.

papermill and the Jupyter kernel stamp an executed notebook with wall-clock
times (``start_time``, ``end_time``, ``duration`` of the notebook and of each
cell, the kernel's ``execution`` timestamps), give the injected-parameters
cell a random id, and split a cell's printed output into as many stream
messages as the kernel happened to flush. :func:`stabilise` removes the
times, names that cell ``injected-parameters`` and joins consecutive
outputs of the same stream, so two runs of the same inputs write the same
bytes (the report's and the replication's executed notebooks). With ``roots``
({absolute folder: placeholder}) it also replaces the build machine's absolute
paths (the output folder, the config's folder, fme's and Python's installation)
in sources, outputs and papermill's metadata by placeholders, so the notebook
holds no path of the machine that built it. Everything else is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["stabilise", "logged_kernel_manager"]

_TIMES = ("start_time", "end_time", "duration")


def _join_streams(outputs: list) -> list:
    joined: list = []
    for out in outputs:
        prev = joined[-1] if joined else None
        if (
            prev is not None
            and out.get("output_type") == "stream"
            and prev.get("output_type") == "stream"
            and prev.get("name") == out.get("name")
        ):
            prev["text"] = "".join(prev["text"]) + "".join(out["text"])
        else:
            joined.append(out)
    return joined


def _scrub(value: Any, roots: list[tuple[str, str]]) -> Any:
    """``value`` (text, list, dict) with every root replaced by its placeholder, the longest root first."""
    if isinstance(value, str):
        for root, placeholder in roots:
            value = value.replace(root, placeholder)
        return value
    if isinstance(value, list):
        return [_scrub(v, roots) for v in value]
    if isinstance(value, dict):
        return type(value)((k, _scrub(v, roots)) for k, v in value.items())
    return value


def stabilise(path: str | Path, roots: dict[str, str] | None = None) -> None:
    """Rewrite the executed notebook at ``path`` without its run-specific bytes (see the module docstring);
    ``roots``: absolute folders and the placeholders that replace them."""
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    pairs = sorted(
        ((str(k).rstrip("/"), v) for k, v in (roots or {}).items() if str(k).rstrip("/")), key=lambda kv: -len(kv[0])
    )
    if pairs:
        nb.metadata = _scrub(nb.metadata, pairs)
        for cell in nb.cells:
            cell.source = _scrub(cell.source, pairs)
            if cell.cell_type == "code":
                cell.outputs = _scrub(cell.outputs, pairs)
    meta: Any = nb.metadata.get("papermill", {})
    for key in _TIMES:
        meta.pop(key, None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        pm = cell.metadata.get("papermill", {})
        for key in _TIMES:
            pm.pop(key, None)
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.id = "injected-parameters"
        if cell.cell_type == "code":
            cell.outputs = _join_streams(cell.outputs)
    nbformat.write(nb, path)


def logged_kernel_manager(log_path: str | Path) -> type:
    """A ``jupyter_client.AsyncKernelManager`` subclass whose kernels append stderr to ``log_path``.

    Pass it to ``papermill.execute_notebook(..., kernel_manager_class=...)``.
    """
    from jupyter_client.manager import AsyncKernelManager

    path = Path(log_path)

    class LoggedKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as log:  # the child keeps its own copy of the descriptor
                kw.setdefault("stderr", log)
                kw.setdefault("stdout", log)
                await super().start_kernel(**kw)

    return LoggedKernelManager
