"""What every row a run writes carries: ``scorer_version`` and the ``input_fingerprint`` of
its night's input files (``with_provenance``), and what the run records of where it ran
(``run_details``: the bootstrap, the libraries' versions, the commit, the platform).
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

from schemas.columns import INPUT_FINGERPRINT, SCORER_VERSION
from schemas.contract import DUMP_DATE
from transforms.aggregate import (
    Bootstrap,
)

LIBRARIES: Final = ("polars", "pyarrow", "pandera", "prefect", "numpy", "deltalake", "obstore")


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
