# Two entry points for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two layers: `make demo` needs only the runtime set; `make test` adds the dev tools.
RUNTIME := $(VENV)/.runtime-installed
STAMP := $(VENV)/.dev-installed

.PHONY: demo demo-rag test test-fast lint typecheck docs unit bench bench-stats container-test browser-test try-action clean

$(RUNTIME): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e .
	touch $@

$(STAMP): $(RUNTIME)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

demo: $(RUNTIME)
	$(BIN)/casegate run --mode replay --out .casegate/demo-results.json
	@echo
	@echo "--- the committed candidate variant (shorter prompt, cheaper model label) against the baseline:"
	$(BIN)/casegate run -c casegate.candidate.yml --out .casegate/demo-candidate.json --quiet
	$(BIN)/casegate compare baselines/support.json .casegate/demo-candidate.json --format text
	$(BIN)/casegate compare baselines/support.json .casegate/demo-candidate.json --format markdown \
		--out .casegate/demo-report.md
	@echo "(markdown PR report: .casegate/demo-report.md; 'casegate gate' on this pair exits 1: block)"
	@echo
	@echo "--- the suite's committed history (history/support.jsonl):"
	$(BIN)/casegate history trend

# The agent example (examples/agent, docs/checks.md "Agent trajectories"): trajectory, retrieval and
# overlap metrics on a scripted stand-in agent, replayed from its committed recordings (no
# keys, no network); its "be fast" candidate drops a step and calls a forbidden tool.
.PHONY: demo-agent
AGENT := examples/agent
AGENT_OUT ?= .casegate
demo-agent: $(RUNTIME)
	$(BIN)/casegate run -c $(AGENT)/casegate.yml --mode replay --out $(AGENT_OUT)/agent-results.json
	@echo
	@echo "--- the candidate agent (a 'be fast' prompt) against the committed baseline:"
	$(BIN)/casegate run -c $(AGENT)/casegate.candidate.yml --mode replay --quiet \
		--out $(AGENT_OUT)/agent-candidate.json
	$(BIN)/casegate compare -c $(AGENT)/casegate.yml $(AGENT)/baseline.json \
		$(AGENT_OUT)/agent-candidate.json --format text
	@echo "('casegate gate' on this pair exits 1: block)"
# The RAG example (examples/rag, docs/judge.md "Graded judge and RAG metrics"): BM25 over docs/, a
# stand-in generator that returns its contexts, and a stand-in judge for the graded judge and
# the RAG metrics, replayed from committed recordings (no keys, no network).
RAG := examples/rag
demo-rag: $(RUNTIME)
	$(BIN)/casegate run -c $(RAG)/casegate.yml --mode replay --out $(AGENT_OUT)/rag-results.json
	@echo
	@echo "--- the candidate (a chattier prompt, one passage retrieved) against the baseline:"
	$(BIN)/casegate run -c $(RAG)/casegate.candidate.yml --mode replay --quiet \
		--out $(AGENT_OUT)/rag-candidate.json
	$(BIN)/casegate compare -c $(RAG)/casegate.yml $(RAG)/baselines/rag.json \
		$(AGENT_OUT)/rag-candidate.json --format text
	@echo "('casegate gate' on this pair exits 1: block; the judge is a word-overlap stand-in,"
	@echo " calibrated on 8 labels, and the report says it is below the bar)"

test: lint typecheck docs unit

lint: $(STAMP)
	$(BIN)/ruff check gate tests bench examples docs
	$(BIN)/ruff format --check gate tests bench examples docs
	$(BIN)/check-jsonschema --builtin-schema vendor.github-actions action.yml
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/actionlint .github/workflows/*.yml
	$(BIN)/hadolint Dockerfile

# The docs site (mkdocs.yml), built --strict: a broken link, a missing page or a warning
# fails it. The config and CLI references are generated from the code as it builds.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

typecheck: $(STAMP)
	$(BIN)/mypy

# Two workers a core: the tests make their own folders, ports and sandbox users, and many
# spend their time waiting on a child process (the Action's entrypoint, a sandboxed run), so
# on 2 cores 4 workers finish in 0.8x the time of 2 (6 were slower again).
WORKERS := $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) * 2 )))
unit: $(STAMP)
	$(BIN)/pytest -n $(WORKERS) -m "not browser"

# The inner loop: lint, types and every test but the end-to-end attack suites.
test-fast: lint typecheck
	$(BIN)/pytest -n $(WORKERS) -m "not slow and not browser"

bench: $(STAMP)
	$(BIN)/python bench/replay_speed.py
	$(BIN)/python bench/live_throughput.py
	$(BIN)/python bench/noise_simulation.py

# The Action image's pinned runtime set: what a clean venv installs under constraints.txt.
requirements.lock: pyproject.toml constraints.txt
	rm -rf .lock-venv && $(PY) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -c constraints.txt .
	{ echo "# The Action image's runtime dependencies, pinned (no dev tools)."; \
	  echo "# Regenerate with \`make requirements.lock\` after changing pyproject.toml or constraints.txt."; \
	  .lock-venv/bin/pip freeze --exclude casegate; } > $@
	rm -rf .lock-venv

# A pull request from BRANCH of the repository at REPO, judged by the Action's entrypoint
# against the loopback GitHub of the tests: the log, the sticky comment, the outputs, offline
# (docs/action.md "Try it on your machine").
CONFIG ?= casegate.yml
# The values reach the shell as environment variables ("$$BRANCH"), never as text of the
# command: a branch may be named x`cmd` (backticks are allowed in git ref names).
try-action: export REPO := $(REPO)
try-action: export BRANCH := $(BRANCH)
try-action: export CONFIG := $(CONFIG)
try-action: $(RUNTIME)
	@test -n "$$REPO" -a -n "$$BRANCH" || { echo "usage: make try-action REPO=PATH BRANCH=NAME [CONFIG=casegate.yml]"; exit 2; }
	$(BIN)/python -m tests.fakes.try_action "$$REPO" "$$BRANCH" --config "$$CONFIG"

# Build the Action's image and run it as the runner does, on a Docker engine started by hand.
container-test: $(STAMP)
	$(BIN)/python tests/container/run.py

# The HTML viewer in Debian's headless Chromium (tests/reporting/browser/), opened from
# file:// as from a CI artifact; installs chromium and its driver when missing (as root).
browser-test: $(STAMP)
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends chromium chromium-driver; }
	$(BIN)/pytest -p no:xdist -m browser tests/reporting/browser

clean:
	rm -rf $(VENV) .casegate .pytest_cache .mypy_cache .ruff_cache

# The noise-aware gate's level and power (bench/stats_simulation.py): every row through
# casegate's own decisions, 3,000 comparisons each, with Clopper-Pearson intervals.
bench-stats: $(STAMP)
	$(BIN)/python bench/stats_simulation.py 3000
