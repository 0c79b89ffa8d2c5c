# Everything a fresh machine with Python 3.11+ and make needs: `make demo`, `make test`.
PYTHON ?= python3
UV_VERSION := 0.13.9
UV := .tools/bin/uv
VENV := .venv
BIN := $(VENV)/bin

# Prefect: no telemetry; its temporary server needs 15-25 s on a cold start here (default 20 s).
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 120

.PHONY: setup test lint demo clean

setup: $(VENV)/.synced

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

$(VENV)/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --quiet
	touch $@

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

demo: setup
	rm -rf demo-out
	$(BIN)/cogscore score examples/dump --out demo-out

clean:
	rm -rf .tools $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache .hypothesis
