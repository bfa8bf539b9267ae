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
	@echo
	@echo "--- the committed candidate variant (shorter prompt, cheaper model label) against the baseline:"
	$(BIN)/casegate run -c casegate.candidate.yml --out .casegate/demo-candidate.json --quiet
	$(BIN)/casegate compare baselines/support.json .casegate/demo-candidate.json --format text
	$(BIN)/casegate compare baselines/support.json .casegate/demo-candidate.json --format markdown \
		--out .casegate/demo-report.md
	@echo "(markdown PR report: .casegate/demo-report.md; 'casegate gate' on this pair exits 1: block)"

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
	$(BIN)/python bench/live_throughput.py

clean:
	rm -rf $(VENV) .casegate .pytest_cache .mypy_cache .ruff_cache
