# The commands a newcomer needs. `make run` and `make test` are the two set-up commands of the README.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGE_FILES := $(wildcard packages/*/pyproject.toml apps/*/pyproject.toml)

.PHONY: install run test lint format clean clients demo bench bench-scheduler

install: $(STAMP)

# The same pins as `pip install -c constraints.txt -r requirements-dev.txt`, installed by uv (seconds, not minutes).
$(STAMP): requirements-dev.txt constraints.txt $(PACKAGE_FILES)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode -c constraints.txt -r requirements-dev.txt
	touch $(STAMP)

run: install  ## start the gateway on the embedded SQLite default (./data)
	$(BIN)/sublane serve

demo: install  ## the upstream simulator and a gateway wired to it, with accounts and a member key
	$(BIN)/python scripts/demo.py

test: install  ## lint, type-check and run every test through tox
	$(BIN)/tox run

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo --no-cache

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .tox .mypy_cache .ruff_cache .pytest_cache

clients:  ## the newest Codex CLI, Claude Code and Gemini CLI, for the end-to-end tests (docs/clients.md)
	npm install --prefix .cache/node-clients --no-audit --no-fund @openai/codex@0.171.0 @anthropic-ai/claude-code@2.1.332 @google/gemini-cli@0.61.0

bench: install  ## gateway vs direct-to-mock (and LiteLLM) on 2 pinned cores; BENCH_QUICK=1 for a short run
	$(BIN)/tox run -e bench

bench-scheduler: install  ## micro-benchmark: selection among 1,000 accounts
	$(BIN)/pytest -p no:cacheprovider packages/sublane-scheduler/bench/bench_selection.py --benchmark-columns=min,median,mean,max,rounds
