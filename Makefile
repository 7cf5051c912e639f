# The commands the README gives. Each target installs what it needs first, so that a fresh
# machine needs nothing but Python 3.11+, make, npm and (for the browser tests) apt.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
FLASK := $(BIN)/flask --app survey
HOST ?= 127.0.0.1
PORT ?= 5000
CHROMIUM := /usr/bin/chromium
# The PostgreSQL server the scale benchmark creates its databases on.
BENCH_DATABASE_URL ?= $(or $(TEST_DATABASE_URL),postgresql://postgres@127.0.0.1:5432/test)

.PHONY: run test lint bench chromium r wrk clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

$(VENV)/.bench-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@ $(VENV)/.installed $(VENV)/.test-installed

node_modules/.installed: package.json
	npm install --no-audit --no-fund --silent
	touch $@

# Debian's Chromium for the browser tests (Playwright cannot download browsers here).
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
		echo "Installing Debian's chromium for the browser tests..."; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# Debian's R for the tests that load the exports in R as docs/exports.md says (base R reads the CSV
# and, with its recommended package foreign, the SPSS file).
r:
	@if ! command -v Rscript >/dev/null || ! Rscript -e "library(foreign)" >/dev/null 2>&1; then \
		echo "Installing Debian's R (r-base-core, r-cran-foreign) for the export tests..."; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq r-base-core r-cran-foreign >/dev/null; \
	fi

# Debian's wrk, the load generator of the ingest benchmark.
wrk:
	@if ! command -v wrk >/dev/null; then \
		echo "Installing Debian's wrk for the ingest benchmark..."; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wrk >/dev/null; \
	fi

run: $(VENV)/.installed
	$(FLASK) init-db
	$(FLASK) demo --if-empty --host http://$(HOST):$(PORT)
	@echo ""
	@echo "Serving on http://$(HOST):$(PORT)  (Ctrl+C to stop)"
	@echo "  Respondent page:  http://$(HOST):$(PORT)/s/health-and-habits"
	@echo "  Results:          http://$(HOST):$(PORT)/surveys/health-and-habits/results"
	@echo "  Sign in as 'demo' with password 'demo-password' (an administrator: Users at /admin/users)."
	@echo ""
	$(FLASK) run --host $(HOST) --port $(PORT)

lint: $(VENV)/.test-installed
	$(BIN)/ruff check survey tests benchmarks
	$(BIN)/ruff format --check survey tests benchmarks
	$(BIN)/lint-imports

test: lint chromium r node_modules/.installed
	$(BIN)/python -m pytest survey tests README.md

bench: $(VENV)/.bench-installed
	$(BIN)/python benchmarks/estimators.py --markdown benchmarks/estimators.md
	$(BIN)/python benchmarks/analysis.py --markdown benchmarks/analysis.md
	$(BIN)/python benchmarks/live.py --markdown benchmarks/live.md
	$(BIN)/python benchmarks/worst_case.py --markdown benchmarks/worst_case.md
	@$(MAKE) --no-print-directory chromium
	$(BIN)/python benchmarks/epsilon_audit.py --markdown benchmarks/epsilon_audit.md
	$(BIN)/python benchmarks/fuzz.py --markdown benchmarks/fuzz.md
	@$(MAKE) --no-print-directory wrk
	$(BIN)/python benchmarks/scale.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/scale.md

clean:
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache .hypothesis
