"""The warehouse tables of a run: aggregates and provenance (written through
``flows.store.output``).

Every table is per ``dump_date`` (a night is the unit of reporting) and carries
``scorer_version`` and the ``input_fingerprint`` of its night's input files.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from dataclasses import asdict
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import polars as pl

from flows.store.output import CATEGORY_SCORES, MODEL_COMPARISONS, MODEL_SCORES, TASK_SCORES
from schemas.columns import INPUT_FINGERPRINT, SCORER_VERSION
from schemas.contract import DUMP_DATE
from transforms.aggregate import (
    Bootstrap,
    category_scores,
    model_scores,
    task_replicates,
    task_scores,
)
from transforms.compact import plain
from transforms.compare.night import night_comparisons

LIBRARIES: Final = ("polars", "pyarrow", "pandera", "prefect", "numpy", "deltalake", "obstore")


def aggregate(
    scores: pl.DataFrame, bootstrap: Bootstrap, sums: pl.DataFrame | None = None
) -> dict[str, pl.DataFrame]:
    """Task, category and model scores of the episode scores, with their intervals; the
    models' rank intervals and tiers, and every pair of models compared. ``sums``: the
    files' component sums (``transforms.aggregate.component_sums``), where ``scores`` holds
    only the slim columns."""
    lazy = scores.lazy()
    task_reps = task_replicates(lazy, bootstrap)  # the task intervals only
    tasks = task_scores(lazy, task_reps, bootstrap, None if sums is None else sums.lazy())
    # Per task and up: few rows, as text (the episodes' keys may be compact).
    task_frame = plain(tasks.collect())
    return {TASK_SCORES: task_frame, **above_tasks(task_frame, scores, bootstrap)}


def above_tasks(
    tasks: pl.DataFrame, scores: pl.DataFrame, bootstrap: Bootstrap
) -> dict[str, pl.DataFrame]:
    """The category and model scores of task scores ``tasks`` (text keys), with their
    intervals, ranks and tiers, and the pairwise comparisons, from the episode scores
    ``scores`` behind them (a night's, or a standing's)."""
    categories = category_scores(tasks.lazy())
    models = model_scores(tasks.lazy(), categories)
    category_frame, model_frame = pl.collect_all([categories, models])
    night = night_comparisons(model_frame, category_frame, scores, bootstrap)
    return {
        CATEGORY_SCORES: night.categories,
        MODEL_SCORES: night.models,
        MODEL_COMPARISONS: night.comparisons,
    }


def with_provenance(
    table: pl.DataFrame,
    scorer_version: str,
    fingerprints: Mapping[str | None, str],
    night: str = DUMP_DATE,
) -> pl.DataFrame:
    """``table`` with ``scorer_version`` and the input fingerprint of each row's night (its
    ``night`` column: ``dump_date``, or a standing's ``as_of``)."""
    nights = pl.col(night).replace_strict(
        {k: v for k, v in fingerprints.items() if k is not None},
        default=fingerprints.get(None, ""),
        return_dtype=pl.String,
    )
    return table.with_columns(
        pl.lit(scorer_version).alias(SCORER_VERSION), nights.alias(INPUT_FINGERPRINT)
    )


PROJECT_ROOT: Final = Path(__file__).resolve().parents[1]


@cache
def git_commit(top: Path = PROJECT_ROOT) -> str:
    """The commit of cogscore's own checkout, where it runs from one: ``top`` must be the
    root of a git work tree (not a folder inside another repository, as site-packages of a
    virtual environment kept in some project would be) whose ``pyproject.toml`` is
    cogscore's. Installed elsewhere: "unknown" (the version says what ran)."""
    pyproject = top / "pyproject.toml"
    if not (top / ".git").exists() or not pyproject.is_file():
        return "unknown"
    if 'name = "cogscore"' not in pyproject.read_text(errors="replace"):
        return "unknown"
    try:
        out = subprocess.run(
            ["git", "-C", str(top), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def environment() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions


def run_details(bootstrap: Bootstrap) -> dict[str, Any]:
    """What a run records beside its counts: the code and libraries that ran, and how."""
    return {
        "cogscore_commit": git_commit(),
        "libraries": environment(),
        "bootstrap": {
            **asdict(bootstrap),
            "method": "tasks: percentile, episodes resampled within each (dump_date, "
            "model, category, task); categories and models: t intervals of the "
            "two-level design (tasks a sample, episodes within them); ranks: "
            "percentile, tasks resampled within categories, the same draw for every "
            "model (a category of one task: its instances)",
        },
    }
