"""One build per config of the matrix, shared by every check and cached for the session (:class:`Matrix`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .families import FAMILIES

__all__ = ["Build", "Matrix"]


class Build:
    """A built report of the matrix: its folder, config, outputs and the parsed ``results.json``/``build.json``."""

    def __init__(self, name: str, folder: Path, result: dict[str, Any], seconds: float) -> None:
        self.name, self.folder, self.seconds = name, folder, seconds
        self.config = folder / "c.yaml"
        self.out = Path(result["out_dir"])
        self.html_path = Path(result["html"])
        self.pdf_path = Path(result["pdf"]) if result.get("pdf") else None
        self.results = json.loads((self.out / "results.json").read_text(encoding="utf-8"))
        self.build_info = json.loads((self.out / "build.json").read_text(encoding="utf-8"))

    @property
    def html(self) -> str:
        return self.html_path.read_text(encoding="utf-8")


class Matrix:
    """Writes and builds each config once, on first use (a config that names another builds that one first)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.builds: dict[str, Build] = {}
        self.failures: dict[str, BaseException] = {}
        self._cluster: Any = None

    def scheduler(self) -> str:
        """The tcp address of a Dask scheduler started in this process (one in-process worker, one thread): the
        build's kernel, another process, reaches it through the config's ``scheduler:`` key."""
        if self._cluster is None:
            import distributed

            self._cluster = distributed.LocalCluster(
                n_workers=1,
                threads_per_worker=1,
                processes=False,
                protocol="tcp",
                host="127.0.0.1",
                dashboard_address=None,
            )
        return str(self._cluster.scheduler_address)

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def build(self, name: str) -> Build:
        if name in self.failures:
            raise self.failures[name]
        if name not in self.builds:
            try:
                self.builds[name] = self._build(name)
            except BaseException as exc:
                self.failures[name] = exc
                raise
        return self.builds[name]

    def _build(self, name: str) -> Build:
        from fme.report.build import build_report

        fam = FAMILIES[name]
        ctx: dict[str, Any] = {}
        if fam.needs is not None:
            ctx["previous"] = self.build(fam.needs).out / "results.json"
        if fam.scheduler:
            ctx["scheduler"] = self.scheduler()
        folder = self.root / name
        folder.mkdir()
        fam.write(folder, ctx)
        t = time.perf_counter()
        res = build_report(folder / "c.yaml", folder / "c", force=True, log=lambda s: None, progress=False)
        return Build(name, folder, res, time.perf_counter() - t)
