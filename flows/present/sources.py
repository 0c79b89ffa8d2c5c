"""What ``cogscore explain`` says of where an episode came from: the model and task asked
for by any name a source gave them (a harness slug, a table's slug or display name; a
task's slug or registered name), the names its source gave it (contract 1.5's
``source_names``), and the runs it replaced or that replaced it (contract 1.4)."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from flows.present.terminal import number, printable
from flows.store.catalog import EPISODE_SCORES, REPLACED_EPISODES
from flows.store.output import Output
from schemas.columns import FORMULA_VERSION, REPLACED_BY, SCORE
from schemas.contract import DUMP_DATE, FILE, SINGLE_RUN_STARTED, SOURCE_NAMES, Col
from schemas.formulas import REPORTED
from schemas.names import HARNESS_MODEL, HARNESS_TASK
from transforms.names import model_by_rule, task_by_rule

# The fields of ``source_names`` that name a model, and a task (a harness run's, a table's).
MODEL_FIELDS = (HARNESS_MODEL, "model_name", "model_slug")
TASK_FIELDS = (HARNESS_TASK, "task_slug")


def shown_names(output: Output, model: str, task: str, as_of: str | None) -> tuple[str, str]:
    """The model and task cogscore shows that ``model`` and ``task`` name: themselves where
    OUT holds them so; else the one whose source gave it that name, or that name by the
    rule (``openai/gpt-5.4-2026-03-05`` and ``gpt-5.4-2026-03-05`` are ``GPT-5.4`` where
    the published table is imported; ``codon-table-translation-obs-learning`` is
    ``codon_table_translation_obs_learning``). A name nothing matches is left as it is (the
    explanation then says that no such episode is scored)."""
    scores = output.scan(EPISODE_SCORES, as_of)
    return (
        _shown(scores, Col.MODEL, model, MODEL_FIELDS, model_by_rule),
        _shown(scores, Col.TASK, task, TASK_FIELDS, task_by_rule),
    )


def _shown(
    scores: pl.LazyFrame, column: str, asked: str, fields: tuple[str, ...], rule: Any
) -> str:
    if not scores.filter(pl.col(column) == asked).head(1).collect().is_empty():
        return asked
    named = scores.select(column, SOURCE_NAMES).unique().collect()
    found: dict[str, set[str]] = {}
    for shown, text in named.iter_rows():
        kept = json.loads(text) if text else {}
        for name in (shown, *(str(kept[f]) for f in fields if kept.get(f))):
            found.setdefault(name, set()).add(shown)
    for key in (asked, rule(asked)):
        hits = found.get(key, set()) | {s for n, s_ in found.items() if rule(n) == key for s in s_}
        if len(hits) == 1:
            return hits.pop()
    return asked


def source_lines(found: dict[str, Any]) -> list[str]:
    """What its source called the episode, where that is not what cogscore shows."""
    kept = found.get(SOURCE_NAMES) or {}
    said = [f"{k} {printable(str(v))}" for k, v in kept.items() if v is not None]
    return [f"as its source wrote it: {', '.join(said)}"] if said else []


def runs_of(output: Output, row: dict[str, Any], as_of: str | None) -> dict[str, Any]:
    """Contract 1.4: when the episode's single run started (null: not a single run), the
    episode that replaced it (null: it stands, or is not a single run) and when that one
    started, and the episodes it replaced, earliest first: the earlier runs of its model and
    task on its night, or the same run recorded twice (the same start: a table's row of a
    harness run), kept in ``replaced_episodes``, never averaged with it."""
    night = pl.col(DUMP_DATE) == row[DUMP_DATE]
    replaced = output.scan(REPLACED_EPISODES, as_of).filter(
        (pl.col(REPLACED_BY) == row[Col.EPISODE_ID]) & night
    )
    earlier = replaced.select(Col.EPISODE_ID, SINGLE_RUN_STARTED, SCORE, FILE, FORMULA_VERSION)
    by = row.get(REPLACED_BY)
    standing = None
    if by is not None:
        stands = output.scan(EPISODE_SCORES, as_of).filter((pl.col(Col.EPISODE_ID) == by) & night)
        found = stands.select(SINGLE_RUN_STARTED, FORMULA_VERSION).collect()
        standing = found.row(0, named=True) if found.height else None
    return {
        SINGLE_RUN_STARTED: row.get(SINGLE_RUN_STARTED),
        REPLACED_BY: by,
        "replaced_by_started": None if standing is None else standing[SINGLE_RUN_STARTED],
        "replaced": earlier.sort(SINGLE_RUN_STARTED, Col.EPISODE_ID).collect().to_dicts(),
    }


def run_lines(found: dict[str, Any], out: str) -> list[str]:
    """What an explanation says of a single run (contract 1.4): when it started, that a later
    run replaced it, or which earlier runs it replaced; a run recorded twice (the same
    start), that the other record is the same run, and how to explain it."""
    started = found.get(SINGLE_RUN_STARTED)
    if started is None:
        return []
    lines = [f"a single run of its model and task, started {started}"]
    by = found.get(REPLACED_BY)
    if by is not None and found.get("replaced_by_started") == started:
        lines.append(
            f"REPLACED by episode {printable(by)}, the same run (started at the same instant) "
            "as a score table published it: the table's score stands, this record of it is "
            "kept (replaced_episodes) for its turns"
        )
    elif by is not None:
        lines.append(
            f"REPLACED by episode {printable(by)}, a later run of this model "
            "and task on this night, which stands: this one is kept (replaced_episodes), "
            "never averaged with it"
        )
    for earlier in found.get("replaced") or []:
        what = (
            f"episode {printable(earlier[Col.EPISODE_ID])} (started "
            f"{earlier[SINGLE_RUN_STARTED]}, score {number(earlier[SCORE])}, file "
            f"{printable(earlier[FILE])})"
        )
        if earlier[SINGLE_RUN_STARTED] == started and found.get(FORMULA_VERSION) == REPORTED:
            lines.append(
                f"the same run as recorded by its harness, with its turns: {what}, kept "
                f"beside this score (cogscore explain {printable(out)} --episode "
                f"{printable(earlier[Col.EPISODE_ID])} --night {found[DUMP_DATE]})"
            )
        else:
            lines.append(
                f"it replaced {what}: an earlier run of this model and task on this night, "
                "kept, never averaged with this one"
            )
    return lines
