# Two commands from a machine with only Python 3.11+: `make test` and `make demo`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.fme-installed

.PHONY: test test-fast demo paper report bench clean

REPORT_CONFIGS := $(wildcard reports/*.yaml)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

demo: $(STAMP)
	$(BIN)/python -m fme demo

# Reproduce the paper (simulations/*.ipynb via papermill) into reports/paper/; exits non-zero on a mismatch.
# The SVM is solved to convergence (tol 1e-6): see reports/paper/replication.md for the tol sensitivity.
paper: $(STAMP)
	$(BIN)/python simulations/run_paper.py --svm-tol 1e-6

# Interpretation reports: reports/<name>.yaml -> reports/<name>/report.{qmd,html,pdf};
# `fme report` skips configs whose inputs (config, data, package) are unchanged.
report: $(STAMP)
	$(BIN)/python -m fme report $(REPORT_CONFIGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_fme.py
	$(BIN)/python benchmarks/bench_ctree.py
	$(BIN)/python benchmarks/bench_hull.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
