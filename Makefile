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

.PHONY: run test test-fast test-browser lint bench chromium pgbouncer r wrk clean messages translations errors-doc

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

# Debian's PgBouncer for the tests that run the app behind a pooler in transaction mode, as
# docs/deploy.md says (tests/test_transaction_pooling.py, tests/test_many_hosts.py).
pgbouncer:
	@if [ ! -x /usr/sbin/pgbouncer ]; then \
		echo "Installing Debian's pgbouncer for the pooling tests..."; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq pgbouncer >/dev/null; \
	fi

# Debian's R for the tests that load the exports in R as docs/exports.md says: base R reads the CSVs
# and runs the survey's script, foreign and haven the SPSS file, haven the Stata file (format 118),
# jsonlite the codebook. And the locales R may read a script in whose two-byte characters can end in
# the byte of a backslash (GBK, GB18030, Big5, Big5-HKSCS, Shift-JIS: Windows' code pages 936, 950 and
# 932 have the same bytes), in which tests/test_exports_trust.py runs the script with hostile labels.
R_PACKAGES := r-cran-foreign r-cran-haven r-cran-jsonlite
R_LOCALES := zh_CN.GBK:zh_CN:GBK zh_CN.GB18030:zh_CN:GB18030 zh_TW.BIG5:zh_TW:BIG5 \
	zh_HK.BIG5-HKSCS:zh_HK:BIG5-HKSCS ja_JP.SJIS:ja_JP:SHIFT_JIS
r:
	@SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	if ! command -v Rscript >/dev/null || ! Rscript -e "library(foreign); library(haven); library(jsonlite)" >/dev/null 2>&1 \
		|| ! command -v localedef >/dev/null; then \
		echo "Installing Debian's R (r-base-core, $(R_PACKAGES)) and locales for the export tests..."; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq r-base-core >/dev/null \
		&& DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(R_PACKAGES) locales >/dev/null; \
	fi; \
	for spec in $(R_LOCALES); do \
		name=$${spec%%:*}; rest=$${spec#*:}; source=$${rest%%:*}; charmap=$${rest#*:}; \
		if [ "$$(LC_ALL=$$name locale charmap 2>/dev/null)" != "$$charmap" ]; then \
			echo "Generating the locale $$name for the export tests..."; \
			$$SUDO localedef --no-warnings=ascii -i $$source -f $$charmap $$name; \
		fi; \
	done

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
	@echo "  Split ballots (randomized against direct, non-compliance):"
	@echo "                    http://$(HOST):$(PORT)/surveys/asking-honestly/results"
	@echo "  Sign in as 'demo' with password 'demo-password' (an administrator: Users at /admin/users)."
	@echo ""
	$(FLASK) run --host $(HOST) --port $(PORT)

lint: $(VENV)/.test-installed
	$(BIN)/ruff check survey tests benchmarks
	$(BIN)/ruff format --check survey tests benchmarks
	$(BIN)/lint-imports

# The tests run in a new random order each time (pytest-randomly); the seed is printed at the top and
# the bottom of the run, and `make test PYTEST_ARGS="--randomly-seed=N"` runs that order
# again (docs/testing.md). The 30 slowest tests are listed at the end: the suite must stay under 30 minutes
# on the 2-core CI machine, and that list says where its time goes.
PYTEST_ARGS ?=
test: lint chromium pgbouncer r node_modules/.installed
	$(BIN)/python -m pytest survey tests README.md --durations=30 $(PYTEST_ARGS)

# The suite in parts (docs/testing.md): tests/conftest.py marks each test `browser` or `postgresql` by
# the fixtures it uses, and `slow` marks those measured slow. `make test` still runs them all.
# test-fast: everything but the browser tests, the slow ones and the PostgreSQL cases, without lint or
# the browser's and R's installs (about a minute).
test-fast: $(VENV)/.test-installed
	$(BIN)/python -m pytest survey tests README.md -m "not browser and not slow and not postgresql" $(PYTEST_ARGS)

test-browser: $(VENV)/.test-installed chromium node_modules/.installed
	$(BIN)/python -m pytest tests -m browser $(PYTEST_ARGS)

# The translation template: every sentence marked for translation (N_, _, gettext) in survey/ and
# templates/ (babel.cfg), into messages.pot (not committed: it is made again whenever it is needed).
messages: $(VENV)/.installed
	$(BIN)/pybabel extract --no-location --sort-output --ignore-dirs ".* _* node_modules instance" -F babel.cfg -k N_ -o messages.pot .

# The respondent's catalogs (docs/translations.md): new respondent sentences merged into each
# survey/translations/<lang>/LC_MESSAGES/messages.po (empty, for the translator), and every
# messages.mo compiled again. The .mo files are committed, so a fresh clone runs without this step;
# tests/test_translations.py fails while a sentence lacks a translation or a .mo is stale.
translations: $(VENV)/.installed
	$(BIN)/python -m survey.platform.translations

# docs/errors.md, the table of every error code, from the catalog (survey/domain/messages.py).
errors-doc: $(VENV)/.installed
	$(BIN)/python -c "from survey.domain.messages import errors_table; open('docs/errors.md', 'w').write(errors_table())"

bench: $(VENV)/.bench-installed
	$(BIN)/python benchmarks/estimators.py --markdown benchmarks/estimators.md
	$(BIN)/python benchmarks/coverage_exact.py --before --markdown benchmarks/coverage_exact.md
	$(BIN)/python benchmarks/analysis.py --markdown benchmarks/analysis.md
	$(BIN)/python benchmarks/live.py --markdown benchmarks/live.md
	$(BIN)/python benchmarks/number_intervals.py --markdown benchmarks/number_intervals.md
	$(BIN)/python benchmarks/number_variance.py --markdown benchmarks/number_variance.md
	$(BIN)/python benchmarks/validation.py --markdown benchmarks/validation.md
	$(BIN)/python benchmarks/worst_case.py --markdown benchmarks/worst_case.md
	@$(MAKE) --no-print-directory chromium
	$(BIN)/python benchmarks/epsilon_audit.py --markdown benchmarks/epsilon_audit.md
	$(BIN)/python benchmarks/number_epsilon_audit.py --markdown benchmarks/number_epsilon_audit.md
	$(BIN)/python benchmarks/fuzz.py --markdown benchmarks/fuzz.md
	@$(MAKE) --no-print-directory wrk
	$(BIN)/python benchmarks/scale.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/scale.md
	$(BIN)/python benchmarks/held_ingest.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/held_ingest.md
	$(BIN)/python benchmarks/split_scale.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/split_scale.md
	$(BIN)/python benchmarks/number_scale.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/number_scale.md
	$(BIN)/python benchmarks/number_tally_shards.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/number_tally_shards.md
	$(BIN)/python benchmarks/scale_ingest.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/scale_ingest.md
	$(BIN)/python benchmarks/fold_readers.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/fold_readers.md
	$(BIN)/python benchmarks/respondent_page.py --markdown benchmarks/respondent_page.md
	$(BIN)/python benchmarks/browser_submission.py --postgresql $(BENCH_DATABASE_URL) --markdown benchmarks/browser_submission.md

clean:
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache .hypothesis
