"""What an operator is told (issue 27): no night, model or failure passes silently, every
command answers quickly where it can, and the exit code, the run record, ``history`` and
``status`` agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flows import runs

ROOT = Path(__file__).parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"
# pandera (pandas with it) takes about 2 s to import, Prefect about 2 s more. (DuckDB loads
# pandas for itself: `sql` pays for that, as DuckDB's own cost.)
HEAVY = ("pandera", "prefect")


@pytest.fixture(scope="module")
def scored_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scored") / "out"
    runs.score(EXAMPLE_DUMP, out)
    return out


def modules_imported_by(args: list[str]) -> list[str]:
    """The heavy modules a fresh process has imported after running ``cogscore ARGS``."""
    code = (
        "import sys\n"
        "from flows.cli import app\n"
        "try:\n"
        f"    app({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"')))


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["formulas"],
        ["status", "{out}"],
        ["history", "{out}"],
        ["sql", "{out}", "SELECT count(*) FROM model_scores"],
        ["compare", "{out}"],
    ],
)
def test_quick_commands_import_neither_pandera_nor_prefect(
    args: list[str], scored_out: Path
) -> None:
    """Only the commands that validate tables or run flows may pay for pandera or Prefect."""
    assert modules_imported_by([a.format(out=scored_out) for a in args]) == []
