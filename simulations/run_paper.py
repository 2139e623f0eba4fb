"""Run every replication notebook and compare the reproduced numbers with the paper's.

Usage (from the repository root, with the project's venv)::

    .venv/bin/python simulations/run_paper.py [--out reports/paper] [--fast] [--svm-tol 1e-3]
                                               [--only 03_univariate_no_noise ...]

Executes ``simulations/*.ipynb`` with papermill (kernel: this interpreter,
registered as a kernel spec in a temporary folder, so no user or system
Jupyter configuration is touched), writes the executed notebooks, figures and
``numbers_*.json`` to ``<out>/<notebook>/``, then ``<out>/replication.md``,
``<out>/replication.html`` and ``<out>/replication.json`` with the table
section | quantity | paper | ours | match. Exits with status 1 when a number
does not equal the paper's at the paper's printed precision (or a notebook
fails), 0 otherwise. ``07_lime`` runs only when the ``lime`` package is
installed. ``--sync`` only rewrites the paired notebooks from their scripts.

Sources: the notebooks are kept as code
---------------------------------------
The source of each notebook is the jupytext percent-format script
``simulations/NN_name.py`` (``# %%`` starts a code cell, ``# %% [markdown]`` a
markdown cell; the cell tagged ``parameters`` holds papermill's annotated
parameters, ``name: type = default  # help``). Edit the script, never the
``.ipynb``: before running, :func:`sync_notebook` converts each script with
jupytext into the paired ``simulations/NN_name.ipynb`` that papermill executes
(rewritten only when its text changes), and ``tests/test_paper.py`` asserts the
committed ``.ipynb`` equal the conversion byte for byte, so the two cannot drift
(``python simulations/run_paper.py --sync`` refreshes them without running).

The conversion fixes what jupytext would otherwise vary, so that the executed
notebooks do not change when nothing but the tooling does:

* cell ids come from the scripts' cell headers (``# %% id="44f75899"``); a cell
  without one gets ``sha256(notebook name, position, source)[:8]``, so a new
  cell needs no hand-made id and its id is still reproducible;
* jupytext's own header section (``jupytext:``, e.g. ``comment_magics: false``,
  which keeps a markdown heading such as ``## rm + 1`` from being read as the
  shell magic ``rm``) is dropped; the notebook metadata is the header's
  ``kernelspec`` and ``language_info``, nothing else.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
KERNEL_NAME = "fme-paper"
# jupytext's bookkeeping in a script's header; not part of the notebook (see the module docstring)
_JUPYTEXT_KEY = "jupytext"


def scripts(only: list[str] | None = None) -> list[Path]:
    """The notebooks' sources, ``simulations/NN_name.py``, in run order (optionally a subset by name)."""
    paths = sorted(HERE.glob("[0-9][0-9]_*.py"))
    if only:
        wanted = set(only)
        paths = [p for p in paths if p.stem in wanted]
        missing = wanted - {p.stem for p in paths}
        if missing:
            raise SystemExit(f"unknown notebook(s): {sorted(missing)}")
    return paths


def notebooks(only: list[str] | None = None) -> list[Path]:
    """The paired notebooks papermill executes, ``simulations/NN_name.ipynb``, in run order."""
    return [p.with_suffix(".ipynb") for p in scripts(only)]


def script_to_notebook(script: Path) -> NotebookNode:
    """The notebook of a percent-format script (an ``nbformat`` v4 node), with ids and metadata fixed.

    Cell ids are taken from the ``id`` cell metadata of the script, else derived from the notebook's name,
    the cell's position and its source; the ``jupytext`` header section is dropped.
    """
    import jupytext
    import nbformat

    script = Path(script)
    nb = jupytext.read(script, fmt="py:percent")
    nb.metadata.pop(_JUPYTEXT_KEY, None)
    for i, cell in enumerate(nb.cells):
        given = cell.metadata.pop("id", None)
        cell.id = (
            given
            if given is not None
            else hashlib.sha256(f"{script.stem}\0{i}\0{cell.source}".encode()).hexdigest()[:8]
        )
    nbformat.validate(nb)  # also rejects duplicate or malformed ids
    return nb


def _ipynb_text(nb: NotebookNode) -> str:
    import jupytext

    return jupytext.writes(nb, fmt="ipynb") + "\n"  # jupytext.write ends the file with a newline


def notebook_text(script: Path) -> str:
    """The text of the ``.ipynb`` paired with ``script``, as :func:`sync_notebook` writes it."""
    return _ipynb_text(script_to_notebook(script))


def sync_notebook(script: Path) -> Path:
    """Write the ``.ipynb`` paired with ``script`` (only when its text changes); returns its path."""
    import jupytext

    target = Path(script).with_suffix(".ipynb")
    nb = script_to_notebook(script)
    if not target.is_file() or target.read_text(encoding="utf-8") != _ipynb_text(nb):
        jupytext.write(nb, target, fmt="ipynb")
    return target


def lime_available() -> bool:
    return importlib.util.find_spec("lime") is not None


def install_kernel(prefix: Path) -> str:
    """Register this interpreter as a Jupyter kernel under ``prefix`` (offline, repository-local).

    Sets ``JUPYTER_PATH`` so papermill finds it; returns the kernel name.
    """
    from ipykernel.kernelspec import install

    install(kernel_name=KERNEL_NAME, display_name="fme (paper replication)", prefix=str(prefix))
    share = str(prefix / "share" / "jupyter")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (share, os.environ.get("JUPYTER_PATH")) if p)
    return KERNEL_NAME


def run_notebook(path: Path, out: Path, parameters: dict, kernel: str, prepare_only: bool = False) -> Path:
    """Execute one notebook with papermill into ``out/<name>/``; returns the executed notebook's path."""
    import papermill as pm

    folder = out / path.stem
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    from fme.report._notebook import logged_kernel_manager, stabilise

    # output_dir "." (the kernel runs in the folder): the executed notebook does not name the checkout's path
    pm.execute_notebook(
        str(path),
        str(target),
        parameters={"output_dir": ".", **parameters},
        kernel_name=kernel,
        cwd=str(folder),
        progress_bar=False,
        prepare_only=prepare_only,
        kernel_manager_class=logged_kernel_manager(folder / "kernel.log"),
    )
    stabilise(target)  # no wall-clock times: same inputs, same notebook
    return target


def collect(out: Path, names: list[str] | None = None) -> tuple[dict, dict]:
    """Numbers and checks from the ``numbers_*.json`` under ``out`` (of the notebooks ``names``, default all)."""
    numbers, checks = {}, {}
    for f in sorted(out.glob("*/numbers_*.json")):
        if names is not None and f.parent.name not in names:
            continue
        rec = json.loads(f.read_text())
        numbers.update(rec["numbers"])
        checks[rec["notebook"]] = rec["checks"]
    return numbers, checks


def render(table: pd.DataFrame, notes: list[str], runs: list[dict], settings: str) -> tuple[str, str]:
    """Markdown and HTML of the replication table."""
    from fme.report.render import html_env

    shown = table[["section", "quantity", "paper", "ours", "ours_rounded", "match"]].copy()
    shown["match"] = shown["match"].map({True: "yes", False: "**NO**"})
    lines = [
        "# Replication of the paper's numbers",
        "",
        f"{int(table['match'].sum())} of {len(table)} printed numbers reproduced at the paper's printed "
        f"precision ({settings}).",
        "",
        "| section | quantity | paper | ours | ours (rounded) | match |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in shown.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in r) + " |")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    lines += ["", "## Notebooks", ""] + [
        f"- {r['name']}: {r['status']}" + (f" ({r['seconds']:.1f} s)" if "seconds" in r else "") for r in runs
    ]
    html = (
        html_env()
        .get_template("replication.html.j2")
        .render(
            rows=table.to_dict(orient="records"),
            n_match=int(table["match"].sum()),
            n_total=len(table),
            notes=notes,
            notebooks=runs,
            settings=settings,
        )
    )
    return "\n".join(lines) + "\n", html


def notes_from(checks: dict, table: pd.DataFrame) -> list[str]:
    notes = [
        "R's random number generator is not reproduced (numpy seeds): simulation numbers that depend on the "
        "sample (split points, the noisy SVM) differ from the paper's figures; those listed above depend only "
        "on the DGP and are exact.",
        "Table 3's afram (B) row is not reproduced: the vendored Boston data drops the B column.",
    ]
    boston = checks.get("06_boston", {})
    sens = boston.get("sensitivity")
    if sens:
        vals = ", ".join(
            f"tol={s['tol']:g}{'' if s['shrinking'] else ' (no shrinking)'}: {s['crim-5 CoV']:.5f}" for s in sens
        )
        notes.append(f"crim - 5 global CoV (paper 0.32) by SVM solver tolerance: {vals}.")
    return notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "reports" / "paper"), help="output folder")
    ap.add_argument("--fast", action="store_true", help="run the notebooks with fast=True (CI)")
    ap.add_argument(
        "--svm-tol",
        type=float,
        default=None,
        help="libsvm tolerance of the Boston SVM (default: the notebook's, kernlab's 1e-3)",
    )
    ap.add_argument("--only", nargs="*", help="run only these notebooks (names without .ipynb)")
    ap.add_argument(
        "--timings",
        action="store_true",
        help="write each notebook's wall time into replication.{md,html,json} (by default they are "
        "only printed, so that the same inputs give the same files)",
    )
    ap.add_argument(
        "--sync",
        action="store_true",
        help="only rewrite the paired .ipynb from the scripts (simulations/NN_name.py), run nothing",
    )
    args = ap.parse_args(argv)
    if args.sync:
        for script in scripts(args.only):
            print(sync_notebook(script).relative_to(ROOT))
        return 0

    sys.path.insert(0, str(ROOT))
    from fme.paper import compare_numbers

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    kernel_dir = tempfile.TemporaryDirectory(prefix="fme-kernel-")
    kernel = install_kernel(Path(kernel_dir.name))
    runs, failed = [], False
    t_all = time.perf_counter()
    for path in map(sync_notebook, scripts(args.only)):
        if path.stem == "07_lime" and not lime_available():
            runs.append({"name": path.stem, "status": "skipped (the lime package is not installed)", "seconds": 0.0})
            print(f"{path.stem}: skipped (lime not installed)")
            continue
        params = {"fast": bool(args.fast)}
        if path.stem == "06_boston" and args.svm_tol is not None:
            params["svm_tol"] = args.svm_tol
        t0 = time.perf_counter()
        try:
            run_notebook(path, out, params, kernel)
            status = "ok"
        except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
            status = f"FAILED: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}"
            failed = True
        runs.append({"name": path.stem, "status": status, "seconds": time.perf_counter() - t0})
        print(f"{path.stem}: {status} ({runs[-1]['seconds']:.1f} s)", flush=True)

    if not args.timings:
        runs = [{k: v for k, v in r.items() if k != "seconds"} for r in runs]
    numbers, checks = collect(out, [r["name"] for r in runs if r["status"] == "ok"])
    table = compare_numbers({k: v for k, v in numbers.items()})
    settings = f"SVM tol {args.svm_tol if args.svm_tol is not None else 1e-3:g}" + (", fast mode" if args.fast else "")
    notes = notes_from(checks, table)
    md, html = render(table, notes, runs, settings)
    (out / "replication.md").write_text(md)
    (out / "replication.html").write_text(html)
    (out / "replication.json").write_text(
        json.dumps(
            {"table": table.to_dict(orient="records"), "checks": checks, "notebooks": runs}, indent=2, default=str
        )
    )
    print(md)
    print(f"total {time.perf_counter() - t_all:.1f} s; wrote {out / 'replication.md'} and replication.html")
    if args.only:  # a partial run only judges the numbers its notebooks produce
        table = table[table["key"].isin(numbers)]
    mismatches = table[~table["match"]]
    if failed or len(mismatches):
        print(
            f"{len(mismatches)} number(s) differ from the paper; failed notebooks: "
            f"{[r['name'] for r in runs if r['status'].startswith('FAILED')]}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
