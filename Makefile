# Everything a fresh machine with Python 3.11+ and make needs: `make demo`, `make test`.
PYTHON ?= python3
UV_VERSION := 0.13.9
UV := .tools/bin/uv
VENV := .venv
BIN := $(VENV)/bin

# Prefect: no telemetry; its temporary server needs 15-25 s on a cold start here (default 20 s).
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 120

.PHONY: setup test lint browser demo demo-real demo-leaderboard kaggle-check bench mutants clean

setup: $(VENV)/.synced

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

# With the extra `kaggle` (kaggle-benchmarks, the LearningBench harness, ~880 MB): the
# importer's tests replay real runs through it, in CI as everywhere.
$(VENV)/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --quiet --compile-bytecode --extra kaggle
	touch $@

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The report's browser test needs Debian's Chromium: installed here where missing (as root).
browser:
	@if ! command -v chromium >/dev/null; then \
	  if command -v apt-get >/dev/null; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else echo "chromium is missing and cannot be installed here: the report's browser test will fail"; fi; \
	fi

test: lint browser
	$(BIN)/python -m pytest

# Two simulated nights for four models, then the nightly job twice: first as a Prefect flow on
# Prefect's temporary API (no server to start; it costs 15-25 s to start), then as
# `--engine auto` runs it without PREFECT_API_URL (in this process, about a second): the
# second run finds nothing new.
demo: setup
	rm -rf demo-out demo-dump
	$(BIN)/cogscore simulate --out demo-dump --date 2026-11-30 --episodes 600 --seed 1
	$(BIN)/cogscore simulate --out demo-dump --date 2026-12-01 --episodes 600 --seed 2
	$(BIN)/cogscore nightly demo-dump --out demo-out --engine prefect
	$(BIN)/cogscore nightly demo-dump --out demo-out
	$(BIN)/cogscore report demo-out --html demo-out/report.html
	@echo "tables: demo-out/ (Delta; try: $(BIN)/cogscore sql demo-out 'FROM leaderboard')"
	@echo "report: demo-out/report.html (open it in a browser; it needs no network)"
	@echo "status: $(BIN)/cogscore status demo-out demo-dump; history: $(BIN)/cogscore history demo-out"

# The 13 real LearningBench runs of ../shared/learningbench: replayed through their task
# files under the real harness (`import-kaggle` runs the task files), scored nightly, the
# twelve models shown as they stand (each ran one task, on five different days) on the
# terminal and in the report. The run with no task file is reported, not imported.
LEARNINGBENCH ?= ../shared/learningbench
demo-real: setup
	rm -rf demo-real-out demo-real-dump
	$(BIN)/cogscore import-kaggle $(LEARNINGBENCH)/kaggle_runs --tasks $(LEARNINGBENCH)/tasks --out demo-real-dump
	$(BIN)/cogscore nightly demo-real-dump --out demo-real-out --engine local
	$(BIN)/cogscore sql demo-real-out "SELECT task, model, score, reported_score FROM episode_scores ORDER BY task"
	$(BIN)/cogscore explain demo-real-out --model openai/gpt-5.4-2026-03-05 --task codon_table_translation_obs_learning
	$(BIN)/cogscore report demo-real-out --html demo-real-out/report.html
	@echo "rows: demo-real-dump/; tables: demo-real-out/; report: demo-real-out/report.html"

# LearningBench's published leaderboard (its 1,890 scores, one run per model and task) as it
# is: each score on the day it was run (`eval_date`: ten nights), through `import-scores`
# (its categories as published: the three tasks it calls `unknown` are in none, and the
# task files' folder, associative, is said), a run, the published ranking reproduced on the
# terminal as the standing as of the last day (each model's latest result on every task)
# with intervals, rank intervals and tiers, then each category's own leaderboard, two
# pairwise comparisons, and the report (the pairwise matrix of every verdict).
demo-leaderboard: setup
	rm -rf demo-leaderboard
	$(BIN)/cogscore import-scores $(LEARNINGBENCH)/leaderboard/leaderboard_flat.csv --tasks $(LEARNINGBENCH)/tasks --out demo-leaderboard/dump
	$(BIN)/cogscore score demo-leaderboard/dump --out demo-leaderboard/out
	$(BIN)/cogscore compare demo-leaderboard/out --models "Gemini 3.1 Pro Preview" --models "GLM-5" --models "GPT-5.4 nano"
	$(BIN)/cogscore compare demo-leaderboard/out --scope concept_formation --models "Qwen 3 Next 80B Thinking" --models "Qwen 3 Next 80B Instruct"
	$(BIN)/cogscore report demo-leaderboard/out --html demo-leaderboard/report.html
	@echo "rows: demo-leaderboard/dump/; tables: demo-leaderboard/out/; report: demo-leaderboard/report.html"

# Every one of the 135 LearningBench tasks under the real harness with three scripted models
# (unreadable, random answers of the schema asked for, partly right), imported, each score
# compared with the task's own (about 8 minutes here; prints the counts and every exception).
kaggle-check: setup
	$(BIN)/python -m benchmarks.kaggle_scripted

# Performance figures of the README and docs/ (dumps cached under benchmarks/data/, ~3 GB;
# --large: ~40 M and ~106 M rows in one night, and eight nights of 100,000 episodes;
# before_after --night: issue 30's nights end to end against 584feea, f5f6264 and main).
bench: setup
	$(BIN)/python -m benchmarks.run --repeat 5 --large
	$(BIN)/python -m benchmarks.before_after
	$(BIN)/python -m benchmarks.before_after --night
	$(BIN)/python -m benchmarks.ceiling
	$(BIN)/python -m benchmarks.scale

# Mutation testing of the formula and statistics code (not in CI): every mutant, each in a
# scratch copy, runs only the tests that cover its module. See tests/MUTANTS.md (the scores,
# the survivors, how long it takes).
mutants: setup
	nice -n 10 $(BIN)/python scripts/mutants.py --jobs 2 --json mutants.json

clean:
	rm -rf .tools $(VENV) demo-out demo-dump demo-real-out demo-real-dump .pytest_cache .mypy_cache .ruff_cache .hypothesis
