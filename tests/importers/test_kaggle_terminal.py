"""The import's report never cuts a value: not in a pipe or a cron log (each row one line,
however long), not on a ``TERM=dumb`` terminal, and not on a narrow terminal either (a long
value folds onto the next lines, whole)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

RUN = "zai_glm-5/deceptive_stack_machine_obs_learning-run_id_Run_1_zai_glm-5.run.json"
DETAIL = "no task file registers the task name 'deceptive_stack_machine_obs_learning'"
WARNING = "dump_date=2026-04-15 was complete already " + "and long " * 20
PRINT = f"""
from flows.importers.kaggle_report import ImportReport, RunReport
from flows.present.imports import print_report
from schemas.kaggle import Outcome
run = RunReport({RUN!r}, Outcome.REJECTED, reasons=["no_task_file"], detail={DETAIL!r})
print_report(ImportReport([run], 1.0, warnings=[{WARNING!r}]))
"""
CHECKOUT = Path(__file__).parents[2]


def _printed(env: dict[str, str], terminal: bool) -> str:
    """What the report prints to a pipe, or to a terminal (a pseudo-terminal) of 40 columns."""
    env = {**os.environ, "COLUMNS": "40", "LINES": "20", **env}
    command = [sys.executable, "-c", PRINT]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=CHECKOUT)
        assert done.returncode == 0, done.stderr
        return done.stdout
    main, side = pty.openpty()
    process = subprocess.Popen(command, stdout=side, stderr=side, env=env, cwd=CHECKOUT)
    os.close(side)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 1 << 16)
        except OSError:  # the terminal's other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert process.wait() == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _column(text: str, number: int) -> str:
    """The text of a table column's cells, folded pieces joined."""
    rows = [line.split("│") for line in text.splitlines() if line.startswith("│")]
    return "".join(cells[number + 1].strip() for cells in rows)


def test_a_pipe_gets_every_value_whole_on_one_line() -> None:
    for term in ("xterm-256color", "dumb"):
        text = _printed({"TERM": term}, terminal=False)
        assert "…" not in text
        [row] = [line for line in text.splitlines() if RUN in line]
        assert DETAIL in row
        assert f"warning: {WARNING}" in text.splitlines()


def test_a_dumb_terminal_gets_every_value_whole_on_one_line() -> None:
    text = _printed({"TERM": "dumb"}, terminal=True)
    assert "…" not in text
    [row] = [line for line in text.splitlines() if RUN in line]
    assert DETAIL in row


def test_a_narrow_terminal_folds_long_values_and_cuts_none() -> None:
    text = _printed({"TERM": "xterm-256color"}, terminal=True)
    assert "…" not in text
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)  # its colours
    assert _column(plain, 0) == RUN
    assert max(len(line) for line in plain.splitlines() if line.startswith("│")) <= 40
