# Two commands do all the set-up on a fresh machine:
#   make run    the service on the embedded default (this project's docs, served locally, with Azurite)
#   make test   the whole test suite (lint, types, unit and integration tests with real servers)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test lint typecheck pytest bench eval clean

setup: $(STAMP) node_modules/.package-lock.json

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

run: setup
	$(BIN)/python tools/run_local.py $(ARGS)

test: setup lint typecheck pytest

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

pytest:
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python tools/bench.py --corpus ../shared/corpus/origin --eval ../shared/evals/dev-set.json

clean:
	rm -rf $(VENV) node_modules build .pytest_cache .mypy_cache .ruff_cache
