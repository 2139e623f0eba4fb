# Two commands from a machine with only Python 3.11+: `make test` and `make demo`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.fme-installed

.PHONY: test test-fast demo paper bench clean

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

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_fme.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
