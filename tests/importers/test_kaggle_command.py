"""``cogscore import-kaggle`` as a user runs it: --help says the task files are run, --json
prints the summary, --strict exits 3 when a run was not imported, a missing RUNS exits 2;
RUNS and DUMP_ROOT on S3 (the local moto server) give the bytes a local import gives."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flows.importers.kaggle import import_runs
from flows.store.location import Location
from flows.store.objects import get_bytes
from tests.learningbench import RUNS, TASKS
from tests.s3server import S3Server

# One run with a task file and the one without.
CHOSEN = ("google_gemini-2.5-flash", "zai_glm-5")


def _cogscore(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TERM": "dumb", **(env or {})},
        cwd=Path(__file__).parents[2],
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for model in CHOSEN:
        shutil.copytree(RUNS / model, root / model)
    return root


def test_help_says_the_task_files_are_run() -> None:
    done = _cogscore("import-kaggle", "--help")
    assert done.returncode == 0, done.stderr
    assert "RUNS" in done.stdout and "ARE RUN" in " ".join(done.stdout.split())


def test_json_summary_and_strict_exit(runs: Path, tmp_path: Path) -> None:
    done = _cogscore(
        "import-kaggle",
        str(runs),
        "--tasks",
        str(TASKS),
        "--out",
        str(tmp_path),
        "--json",
        "--strict",
    )
    assert done.returncode == 3, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert (summary["runs"], summary["imported"], summary["rejected"]) == (2, 1, 1)
    assert summary["reasons"] == {"no_task_file": 1}
    assert len(list(tmp_path.rglob("*.parquet"))) == summary["files_written"] == 1
    again = _cogscore(
        "import-kaggle", str(runs), "--tasks", str(TASKS), "--out", str(tmp_path), "--json"
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.strip().splitlines()[-1])["files_written"] == 0


def test_a_missing_runs_folder_is_refused(tmp_path: Path) -> None:
    done = _cogscore(
        "import-kaggle", str(tmp_path / "nowhere"), "--tasks", str(TASKS), "--out", str(tmp_path)
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ")


def test_runs_and_dump_on_s3_give_the_local_bytes(
    runs: Path, tmp_path: Path, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    bucket = s3_server.create_bucket()
    source = Location.parse(f"s3://{bucket}/runs")
    client = s3_server.client()
    for path in sorted(runs.rglob("*.run.json")):
        client.put_object(
            Bucket=bucket, Key=f"runs/{path.relative_to(runs)}", Body=path.read_bytes()
        )
    remote = import_runs(source, TASKS, Location.parse(f"s3://{bucket}/dump"))
    local = import_runs(Location.parse(str(runs)), TASKS, Location.parse(str(tmp_path)))
    assert [(r.outcome, r.file) for r in remote.runs] == [(r.outcome, r.file) for r in local.runs]
    for run in remote.runs:
        if run.file is not None:
            data = get_bytes(Location.parse(f"s3://{bucket}/dump"), run.file)
            assert data == (tmp_path / run.file).read_bytes()
