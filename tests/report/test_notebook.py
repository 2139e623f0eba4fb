"""Executed notebooks without run-specific bytes (fme.report._notebook)."""

from __future__ import annotations

import nbformat

from fme.report._notebook import stabilise


def _executed(tmp_path, name, t0, cell_id, chunks):
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {
        "start_time": t0,
        "end_time": t0,
        "duration": 1.5,
        "parameters": {"x": 1},
        "input_path": "in.ipynb",
    }
    params = nbformat.v4.new_code_cell("x = 1", id=cell_id)
    params.metadata["tags"] = ["injected-parameters"]
    params.metadata["papermill"] = {"start_time": t0, "end_time": t0, "duration": 0.01, "status": "completed"}
    params.metadata["execution"] = {"iopub.status.busy": t0}
    work = nbformat.v4.new_code_cell("print(1); print(2)", id="abc12345")
    work.outputs = [nbformat.v4.new_output("stream", name="stdout", text=c) for c in chunks]
    work.outputs.append(nbformat.v4.new_output("stream", name="stderr", text="warn\n"))
    nb.cells = [params, work]
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_two_runs_give_the_same_bytes(tmp_path):
    a = _executed(tmp_path, "a.ipynb", "2026-11-26T07:04:43Z", "6249f119", ["1\n", "2\n"])
    b = _executed(tmp_path, "b.ipynb", "2026-11-26T08:00:00Z", "340e051d", ["1\n2\n"])
    assert a.read_bytes() != b.read_bytes()
    stabilise(a)
    stabilise(b)
    assert a.read_bytes() == b.read_bytes()
    nb = nbformat.read(a, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["papermill"] == {"parameters": {"x": 1}, "input_path": "in.ipynb"}
    assert nb.cells[0].id == "injected-parameters" and "execution" not in nb.cells[0].metadata
    assert nb.cells[0].metadata["papermill"] == {"status": "completed"}
    # stdout joined in order, stderr kept apart
    assert [(o.name, o.text) for o in nb.cells[1].outputs] == [("stdout", "1\n2\n"), ("stderr", "warn\n")]
