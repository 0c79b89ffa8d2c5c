"""A synthetic benchmark of the real one's size with long transcripts: 14 models × 135 tasks
(LearningBench's tasks per category), one episode each, every message long and each
episode's user prompt very long (as LearningBench's longest turns), holding markup that must
stay text. Built from a clean simulated dump (``simulator``): its episodes renamed to the
models and tasks of the grid, their messages lengthened; answers are left as they are, so
every episode scores as simulated."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import polars as pl

from schemas.contract import Col, Kind, Role
from simulator import simulate

MODELS: Final = tuple(f"model-{i:02d}" for i in range(14))
# LearningBench's 135 tasks per category (NOTICE.md), over the simulator's eight tasks.
TASKS_PER_SIMULATED: Final = {
    "blocking_log": 20,
    "hidden_numeric_rule": 18,
    "vowel_harmony_plural": 26,
    "hidden_state_machine": 15,
    "hidden_group_operation": 15,
    "mastermind_classic": 15,
    "hanoi_hidden_goal": 15,
    "adjacent_swap_sort": 11,
}
MARKUP: Final = "</script><img src=x onerror=alert(9)><b>not bold</b> "
MESSAGE_CHARS: Final = 2_000  # added to every message
PROMPT_CHARS: Final = 60_000  # added to each episode's user prompt


def filler(chars: int) -> str:
    line = "The quick brown fox learns a hidden rule from the examples. " + MARKUP
    return (line * (chars // len(line) + 1))[:chars]


def stress_dump(root: Path, night: str) -> Path:
    """The dump (``root``, one night) of the grid; returns its file."""
    episodes = sum(TASKS_PER_SIMULATED.values()) * len(MODELS)
    assert episodes == 135 * 14
    (path,) = simulate(root, date=night, episodes=3_200, seed=7, rejects=0, harness_errors=0)
    rows = pl.read_parquet(path)
    per_task = pl.DataFrame(
        {Col.TASK: list(TASKS_PER_SIMULATED), "tasks": list(TASKS_PER_SIMULATED.values())}
    )
    index = pl.col(Col.EPISODE_ID).cum_count().over(Col.TASK) - 1
    grid = (
        rows.select(Col.EPISODE_ID, Col.TASK)
        .unique(Col.EPISODE_ID, maintain_order=True)
        .join(per_task, on=Col.TASK)
        .with_columns(index.alias("j"))
        .filter(pl.col("j") < pl.col("tasks") * len(MODELS))
        .select(
            Col.EPISODE_ID,
            pl.col("j")
            .mod(len(MODELS))
            .replace_strict(dict(enumerate(MODELS)), return_dtype=pl.String)
            .alias("new_model"),
            pl.format(
                "{}-{}", Col.TASK, (pl.col("j") // len(MODELS)).cast(pl.String).str.zfill(2)
            ).alias("new_task"),
        )
    )
    assert grid.height == episodes
    message = pl.col(Col.KIND) == Kind.MESSAGE
    prompt = message & (pl.col(Col.ROLE) == Role.USER)
    longer = (
        pl.when(prompt)
        .then(pl.concat_str(Col.CONTENT, pl.lit(" " + filler(PROMPT_CHARS))))
        .when(message)
        .then(pl.concat_str(Col.CONTENT, pl.lit(" " + filler(MESSAGE_CHARS))))
        .otherwise(pl.col(Col.CONTENT))
    )
    rows.join(grid, on=Col.EPISODE_ID, how="inner", maintain_order="left").with_columns(
        pl.col("new_model").alias(Col.MODEL),
        pl.col("new_task").alias(Col.TASK),
        longer.alias(Col.CONTENT),
    ).drop("new_model", "new_task").write_parquet(path)
    (root / path.parent.name / "_simulation.json").unlink(missing_ok=True)
    return path
