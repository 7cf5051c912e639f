# The commands the README gives. Each target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

$(VENV)/.bench-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@

lint: $(VENV)/.test-installed
	$(BIN)/ruff check survey tests benchmarks
	$(BIN)/ruff format --check survey tests benchmarks

test: lint
	$(BIN)/python -m pytest survey tests

bench: $(VENV)/.bench-installed
	$(BIN)/python benchmarks/estimators.py --markdown benchmarks/estimators.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
