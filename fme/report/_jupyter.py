"""A Jupyter kernel manager whose kernel writes its stderr to a log file, not to the terminal.

papermill starts an ipykernel for each notebook; the kernel's own chatter ("Kernel is running over TCP
without encryption", "KeyboardInterrupt caught in kernel" at shutdown) is tool noise for a report build
or ``make paper``. Cell outputs (including Python warnings raised by the analysis) are unaffected: they
are captured in the executed notebook, and errors still fail the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["logged_kernel_manager"]


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
