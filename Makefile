# Two entry points for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench container-test clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/casegate run --mode replay --out .casegate/demo-results.json

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check gate tests bench examples
	$(BIN)/ruff format --check gate tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python bench/replay_speed.py

clean:
	rm -rf $(VENV) .casegate .pytest_cache .mypy_cache .ruff_cache
