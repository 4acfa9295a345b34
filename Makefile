# Two entry points for a fresh machine: `make demo` (main job) and `make test` (test suite).
# Each creates .venv if missing and installs the project, its models and the demo MCP servers.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export CMAKE_BUILD_PARALLEL_LEVEL := 2

.PHONY: setup demo test bench bench-slow clean

setup: $(VENV)/.installed .servers/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

.servers/.installed: scripts/install_servers.sh
	bash scripts/install_servers.sh .servers
	touch $@

demo: setup
	$(BIN)/nexus demo

test: setup
	$(BIN)/python -m pytest

bench: setup   # the benchmarks behind the README's tables, held to tests/bench/figures.json
	$(BIN)/python -m pytest -m slow tests/bench/test_figures.py

bench-slow: setup
	$(BIN)/python -m pytest -m slow

clean:
	rm -rf $(VENV) .servers .nexus-cache
