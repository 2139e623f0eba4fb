# Two commands from a machine with only Python 3.11+: `make test` and `make demo`.
#
# Set-up (first run only, ~1 min): a bootstrap venv `.tools/` gets uv (pinned with hashes in
# requirements-tools.lock, installed by pip); uv then makes `.venv/` hold exactly the packages of
# requirements.lock (every package pinned, with hashes) plus fme itself (editable, built offline with the
# locked setuptools). pyproject.toml keeps lower bounds for `pip install forward-marginal-effects`; `make lock` refreshes the lock
# (and environment.yml from it); `make test-latest` runs the suite against the newest releases.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TOOLS  := .tools
UV     := $(TOOLS)/bin/uv
LOCK   := requirements.lock
STAMP  := $(VENV)/.fme-installed
SETUP_LOG := $(VENV)/setup.log
LATEST := .venv-latest

.PHONY: lint test test-fast test-latest demo docs paper report bench lock clean

REPORT_CONFIGS := $(wildcard reports/*.yaml)

$(UV): requirements-tools.lock
	@test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	@$(TOOLS)/bin/python -m pip install --disable-pip-version-check --require-hashes \
		-r requirements-tools.lock > $(TOOLS)/setup.log 2>&1 || { cat $(TOOLS)/setup.log; exit 1; }
	@touch $(UV)

# uv's and setuptools' own chatter (resolution, the editable-install banner) goes to the set-up log.
$(STAMP): $(LOCK) pyproject.toml $(UV)
	@echo "Setting up $(VENV) from $(LOCK) (first run: about a minute; log in $(SETUP_LOG)) ..."
	@test -x $(BIN)/python || $(UV) venv --quiet --python $(PYTHON) $(VENV)
	@$(UV) pip sync --python $(BIN)/python --require-hashes $(LOCK) > $(SETUP_LOG) 2>&1 \
		|| { cat $(SETUP_LOG); exit 1; }
	@$(UV) pip install --python $(BIN)/python --no-deps --no-build-isolation -e . >> $(SETUP_LOG) 2>&1 \
		|| { cat $(SETUP_LOG); exit 1; }
	@touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

# ruff (lint and format check; configuration in pyproject.toml) and mypy, strict on the computing layers.
lint: $(STAMP)
	$(BIN)/ruff check fme tests benchmarks simulations
	$(BIN)/ruff format --check fme tests benchmarks simulations
	$(BIN)/mypy

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# The suite against today's newest releases in a separate venv (not run by CI): drift shows here first.
# The lock-equality test is left out: it checks the locked environment, which this one is not by design.
test-latest: $(UV)
	@test -x $(LATEST)/bin/python || $(UV) venv --quiet --python $(PYTHON) $(LATEST)
	$(UV) pip install --quiet --python $(LATEST)/bin/python --upgrade --refresh -e '.[test]'
	$(LATEST)/bin/python -m fme.report.analysis.environment --diff $(LOCK)
	$(LATEST)/bin/python -m pytest -q -m "not lock"

demo: $(STAMP)
	$(BIN)/python -m fme demo

# The documentation site, docs/_build/html (Sphinx; configuration in docs/conf.py), built from scratch offline:
# every warning is an error (-W) and every reference is checked (-n); the gallery's and the guide's examples run.
DOCS_OUT := docs/_build/html
docs: $(STAMP)
	rm -rf docs/_build docs/gallery docs/api/generated docs/api/modules
	$(BIN)/python -m sphinx -W -n --keep-going -q -b html docs $(DOCS_OUT)
	@echo "Site: $(DOCS_OUT)/index.html"

# Refresh the lock to the newest releases that satisfy pyproject.toml, for every platform and
# Python >= 3.11, and regenerate environment.yml from it. Review the diff, then run `make test`.
lock: $(UV)
	printf 'setuptools>=77\n' | $(UV) pip compile --quiet --upgrade --universal --python-version 3.11 \
		--generate-hashes --extra test --extra lint --extra docs --custom-compile-command "make lock" pyproject.toml - -o $(LOCK)
	printf 'uv==%s\n' "$$($(UV) --version | cut -d' ' -f2)" | $(UV) pip compile --quiet --universal \
		--python-version 3.11 --generate-hashes --custom-compile-command "make lock" - -o requirements-tools.lock
	$(MAKE) --no-print-directory $(STAMP)
	$(BIN)/python -m fme.report.analysis.environment --conda $(LOCK) > environment.yml

# Reproduce the paper into reports/paper/ (the percent scripts simulations/NN_name.py, converted by jupytext to
# the paired .ipynb, run by papermill); exits non-zero on a mismatch.
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
	rm -rf $(VENV) $(LATEST) $(TOOLS) .pytest_cache build *.egg-info docs/_build docs/gallery
