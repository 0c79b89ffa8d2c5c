"""``cogscore explain``: from a score down to the turns that earned it.

An episode is found in ``episode_scores`` (by its id, or as the result a model's task stands
on: the standing as of the latest night, or a night's own; by its id, a run a later one
replaced too, from ``replaced_episodes``: contract 1.4), its transcript read from the dump
file the output scored it from (refused where that file changed since: its content digest
was recorded in the runs table, and is compared with one of the same kind), scored again
from those rows alone, and laid out: its turns in order, each graded item (expected, answer,
match kind, right or wrong, the harness's recorded verdict and whether they differ), the
formula (version, weights, description) and its components, the score written and the score
found again, and the harness's reported score. An imported score (formula version
``reported``: a score table's row) has no transcript: the table gave the score alone, and
nothing scores it again. As text, every value is whole (a long turn on the lines it has;
README: no value is ever cut) and a float is shown as a person reads it
(``flows.present.terminal.number``).

``read_transcripts`` does the reading for many episodes at once (the report's matrix): the
episodes grouped by dump file, each file checked and read once, the items of all its
episodes graded in one plan; ``explain`` is that read for one episode, scored again.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl

from flows.present.sources import run_lines, runs_of, shown_names, source_lines
from flows.present.terminal import number, printable
from flows.standings import TASK_STANDINGS
from flows.store import objects
from flows.store.catalog import EPISODE_SCORES, REJECTS, REPLACED_EPISODES
from flows.store.dumps import DumpFile, InputError, content_digest, is_night, read_schema, scan
from flows.store.location import Location
from flows.store.output import Output
from flows.store.prehash import digest_kind
from flows.store.state import OutputState
from schemas.columns import (
    AS_OF,
    COMPONENT_DTYPES,
    FORMULA_VERSION,
    REASONS,
    SCORE,
    STATUS,
    VERDICT_MISMATCHES,
)
from schemas.contract import DUMP_DATE, FILE, REPORTED_SCORE, SOURCE_NAMES, VERDICT, Col
from schemas.formulas import REPORTED
from transforms.episodes import SEGMENT, in_episode_order
from transforms.ingest import normalise
from transforms.items import item_verdicts
from transforms.matching import ANSWER, CORRECT, EXPECTED, MODE
from transforms.pipeline import score_rows
from transforms.registry import REGISTRY, resolve

# What an imported score's explanation says in place of its transcript (here and in the
# report's panel).
IMPORTED: Final = (
    "an imported score (formula version reported): the table it came from gave the score "
    "alone, so there is no transcript, item or component to show"
)
# The lines of a multi-line turn are shown below it, indented by this much.
INDENT: Final = " " * 6


class ExplainError(InputError):
    """The episode cannot be explained: not found, several found, or its transcript changed
    or is gone (exit 2, a message saying which)."""


@dataclass(frozen=True)
class Which:
    """The episode asked for: its id, or a model's task (on ``night``: that night's own
    episodes; else the night the model's standing on the task comes from)."""

    episode_id: str | None = None
    model: str | None = None
    task: str | None = None
    night: str | None = None

    def __post_init__(self) -> None:
        if self.night is not None and not is_night(self.night):
            raise ExplainError(f"--night {self.night!r} is not a date YYYY-MM-DD")


def explain(output: Output, which: Which, as_of: str | None = None) -> dict[str, Any]:
    """The explanation of one episode (see the module), as one JSON-ready object."""
    row = _episode_row(output, which, as_of)
    kept = row.get(SOURCE_NAMES)
    head = {
        **episode_header(row),
        SOURCE_NAMES: json.loads(kept) if kept else None,  # contract 1.5
        **runs_of(output, row, as_of),
    }
    if row[FORMULA_VERSION] == REPORTED:  # the score alone: nothing to read or score again
        none: dict[str, Any] = {"recomputed_score": None, "recomputed_equal": None}
        return {**head, **none, "turns": [], "items": []}
    episode = pl.DataFrame([row]).select(Col.EPISODE_ID, DUMP_DATE, FILE)
    read = read_transcripts(output, episode, output.state(as_of), keep_rows=True)
    if row[Col.EPISODE_ID] in read.unreadable:
        raise ExplainError(read.unreadable[row[Col.EPISODE_ID]])
    chosen = [f"{row[Col.CATEGORY]}/{row[Col.TASK]}={row[FORMULA_VERSION]}"]
    assert read.rows is not None
    again, _ = score_rows(read.rows.lazy(), resolve(chosen))
    found = again.collect()
    recomputed = found[SCORE][0] if found.height else None
    return {
        **head,
        "recomputed_score": recomputed,
        "recomputed_equal": recomputed is not None and _same(recomputed, row[SCORE]),
        "turns": read.turns.drop(Col.EPISODE_ID).to_dicts(),
        "items": read.items.drop(Col.EPISODE_ID).to_dicts(),
    }


def episode_header(row: dict[str, Any]) -> dict[str, Any]:
    """What an ``episode_scores`` row says of its episode: who, what, when, where from, its
    score, the formula (version, description, weights) and its components, the harness's
    reported score and the mismatches counted."""
    spec = REGISTRY.get((row[Col.CATEGORY], row[FORMULA_VERSION]))
    components = {str(c): row[c] for c in COMPONENT_DTYPES if c in row and row[c] is not None}
    return {
        "episode_id": row[Col.EPISODE_ID],
        "model": row[Col.MODEL],
        "task": row[Col.TASK],
        "category": row[Col.CATEGORY],
        "dump_date": row[DUMP_DATE],
        "file": row[FILE],
        "score": row[SCORE],
        "formula_version": row[FORMULA_VERSION],
        "formula": None if spec is None else spec.description,
        "weights": None if spec is None else dict(spec.weights),
        "components": components,
        "reported_score": row.get(REPORTED_SCORE),
        "score_mismatch": row.get("score_mismatch"),
        "verdict_mismatches": row.get(VERDICT_MISMATCHES),
    }


# The columns of a turn an explanation shows, in this order (those the rows have).
TURN_COLUMNS: Final = (
    Col.TURN,
    Col.ROLE,
    Col.KIND,
    Col.CONTENT,
    Col.ITEM_ID,
    Col.EXPECTED,
    Col.VALUE,
    Col.SOLVED,
    Col.ROUND,
)
# The columns of a graded item an explanation shows (``read_transcripts``).
ITEM_COLUMNS: Final = (
    "item_id", "turn", "expected", "answer", "match", "right", "harness_verdict", "differs"
)  # fmt: skip


@dataclass(frozen=True)
class Transcripts:
    """What ``read_transcripts`` found: every turn of the episodes read (``episode_id``
    first, then ``TURN_COLUMNS``; each episode's rows together, in turn order), their
    graded items (``episode_id``, then ``ITEM_COLUMNS``; by turn and item), why each episode
    not read could not be (its file gone, changed or never recorded), and (``keep_rows``)
    their canonical rows."""

    turns: pl.DataFrame
    items: pl.DataFrame
    unreadable: dict[str, str]
    rows: pl.DataFrame | None = None


def read_transcripts(
    output: Output,
    episodes: pl.DataFrame,
    state: OutputState,
    keep_rows: bool = False,
) -> Transcripts:
    """The transcripts of ``episodes`` (``episode_id``, ``dump_date``, ``file``: rows of
    ``episode_scores``) from the dump ``output`` was scored from, as ``state``
    (``Output.state``) records it: the episodes grouped by file, each file checked (its
    content digest against the one recorded) and read once, the items of all its episodes graded in
    one plan. A file that is gone or changed makes its episodes unreadable (with why), not
    the others."""
    turns, items, rows = [], [], []
    unreadable: dict[str, str] = {}
    for group in episodes.partition_by(DUMP_DATE, FILE, maintain_order=True):
        night, file = group[DUMP_DATE][0], group[FILE][0]
        ids = group[Col.EPISODE_ID].unique(maintain_order=True)
        try:
            dump_file = _scored_file(output, state, night, file)
        except ExplainError as error:
            unreadable.update(dict.fromkeys(ids.to_list(), str(error)))
            continue
        read = _transcripts(dump_file, ids)
        ordered = in_episode_order(read.lazy()).collect()
        turns.append(_turns(ordered))
        items.append(_items(ordered))
        if keep_rows:
            rows.append(read)
    if not turns:  # nothing read: the columns alone
        none = normalise(pl.LazyFrame(), {}, file="", partitions={}).clear()
        ordered = in_episode_order(none).collect()
        turns, items = [_turns(ordered)], [_items(ordered)]
    return Transcripts(
        pl.concat(turns), pl.concat(items), unreadable, pl.concat(rows) if rows else None
    )


def _items(ordered: pl.DataFrame) -> pl.DataFrame:
    """The graded items of the episodes of ``ordered`` (``in_episode_order``), as an
    explanation shows them: what was expected, the answer that counts, the match kind,
    right or wrong, the harness's recorded verdict and whether it differs."""
    episode = ordered.lazy().select(SEGMENT, Col.EPISODE_ID).unique(SEGMENT)
    right = pl.col(CORRECT).fill_null(False)
    return (
        item_verdicts(ordered.lazy())
        .join(episode, on=SEGMENT, how="left")
        .sort(SEGMENT, Col.TURN, Col.ITEM_ID)
        .select(
            Col.EPISODE_ID,
            pl.col(Col.ITEM_ID).alias("item_id"),
            pl.col(Col.TURN).alias("turn"),
            pl.col(EXPECTED).alias("expected"),
            pl.col(ANSWER).alias("answer"),
            pl.col(MODE).alias("match"),
            right.alias("right"),
            pl.col(VERDICT).alias("harness_verdict"),
            (pl.col(VERDICT).is_not_null() & (pl.col(VERDICT) != right))
            .fill_null(False)
            .alias("differs"),
        )
        .collect()
    )


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _episode_row(output: Output, which: Which, as_of: str | None) -> dict[str, Any]:
    """The ``episode_scores`` row asked for."""
    scores = output.scan(EPISODE_SCORES, as_of)
    if which.episode_id is not None:
        chosen = pl.col(Col.EPISODE_ID) == which.episode_id
        if which.night is not None:
            chosen &= pl.col(DUMP_DATE) == which.night
        what = f"episode {which.episode_id!r} " + (
            "on any night" if which.night is None else f"on {which.night}"
        )
    else:
        if which.model is None or which.task is None:
            raise ExplainError("name an episode (--episode ID) or a model's task (--model, --task)")
        model, task = shown_names(output, which.model, which.task, as_of)
        night = which.night or _standing_night(output, model, task, as_of)
        chosen = (pl.col(Col.MODEL) == model) & (pl.col(Col.TASK) == task)
        chosen &= pl.col(DUMP_DATE) == night
        what = f"episode of model {model!r} on task {task!r} on {night}"
    found = scores.filter(chosen).collect()
    if found.is_empty() and which.episode_id is not None:  # a run a later one replaced (1.4)
        found = output.scan(REPLACED_EPISODES, as_of).filter(chosen).collect()
    if found.is_empty():
        raise ExplainError(_not_scored(output, chosen, what, as_of))
    if found.height > 1:
        ids = ", ".join(f"{r[Col.EPISODE_ID]} ({r[DUMP_DATE]})" for r in found.head(10).to_dicts())
        more = f" and {found.height - 10} more" if found.height > 10 else ""
        raise ExplainError(
            f"{found.height} scored episodes match (an {what}): name one with --episode (and "
            f"--night): {ids}{more}"
        )
    return found.row(0, named=True)


def _not_scored(output: Output, chosen: pl.Expr, what: str, as_of: str | None) -> str:
    """Why no scored episode is ``chosen``: the rejects that match it (status, night and
    reasons: rejected episodes are not scored, never as 0), or that no table holds one."""
    rejects = output.scan(REJECTS, as_of).filter(chosen).collect()
    if rejects.is_empty():
        return f"no {what} in {output}: neither scored (episode_scores) nor rejected (rejects)"
    first = rejects.row(0, named=True)
    reasons = "; ".join(first[REASONS] or []) or "no reason recorded"
    one = f"{first[Col.EPISODE_ID]} ({first[STATUS]} on {first[DUMP_DATE]}: {reasons})"
    more = f", and {rejects.height - 1} more" if rejects.height > 1 else ""
    return (
        f"no scored {what} in {output}: rejected, not scored: {one}{more} (cogscore sql "
        f"{shlex.quote(str(output))} 'FROM rejects' lists every reject)"
    )


def _standing_night(output: Output, model: str, task: str, as_of: str | None) -> str:
    """The night a model's result on a task comes from, as the benchmark stands as of the
    latest night."""
    standing = output.scan(TASK_STANDINGS, as_of)
    latest = standing.select(pl.col(AS_OF).max()).collect().item()
    cell = standing.filter(
        (pl.col(AS_OF) == latest) & (pl.col(Col.MODEL) == model) & (pl.col(Col.TASK) == task)
    ).collect()
    if cell.is_empty():
        raise ExplainError(
            f"model {model!r} has no result on task {task!r} in the standing as of {latest} "
            f"of {output} (give --night for a night's own episodes)"
        )
    return str(cell[DUMP_DATE][0])


def _scored_file(output: Output, state: OutputState, night: str | None, file: str) -> DumpFile:
    """The dump file the output scored the night's episodes from, as it was then: refused
    where it is gone or its content changed since (its content digest is in the runs table,
    ``state``: the file is hashed again with the same kind)."""
    entry = state.nights.get(night) if night is not None else state.undated
    files = entry.files if entry is not None else ()
    recorded = next((f for f in files if f.file == file), None)
    if entry is None or recorded is None:
        raise ExplainError(f"the runs table of {output} records no input file {file!r} of {night}")
    root = str(entry.input or state.input or "")
    if "://" in root:  # an object: its ETag (what the run recorded), read without its content
        version = objects.version_of(Location.parse(root), file) or "(gone)"
        dump_file = DumpFile(f"{root.rstrip('/')}/{file}", file, version=version)
    else:
        dump_file = DumpFile(Path(root) / file, file)
    then = recorded.digest or ""
    try:
        now = content_digest(dump_file, digest_kind(then))  # like with like
    except Exception as error:  # gone, unreadable
        raise ExplainError(
            f"the transcript's file {dump_file.path} cannot be read ({error}): explain reads "
            "the dump the output was scored from"
        ) from None
    if now != then:
        raise ExplainError(
            f"the transcript's file {dump_file.path} changed since it was scored (content "
            f"digest {then or '(none recorded)'} then, {now} now): its turns are not the ones "
            "scored; "
            "score the night again to explain it"
        )
    return dump_file


def _transcripts(dump_file: DumpFile, episode_ids: pl.Series) -> pl.DataFrame:
    """The episodes' rows in the dump file, canonical (``transforms.ingest.normalise``)."""
    rows = normalise(
        scan(dump_file),
        read_schema(dump_file),
        file=dump_file.relative,
        partitions=dict(dump_file.partitions),
    )
    return rows.filter(pl.col(Col.EPISODE_ID).is_in(episode_ids.implode())).collect()


def _turns(ordered: pl.DataFrame) -> pl.DataFrame:
    """Every row of the episodes in order: turn, role, kind, content and what else it says."""
    return ordered.select(Col.EPISODE_ID, *TURN_COLUMNS)


def explanation_lines(found: dict[str, Any], out: str = "OUT") -> list[str]:
    """The explanation as text, every value whole: a turn's content on its line, or where it
    has several lines on its own lines below it (indented ``INDENT``); the terminal folds
    what is longer than its width. Control characters are shown as escapes (``printable``),
    floats as ``number`` shows them."""
    lines = [
        f"episode {printable(found['episode_id'])}: {printable(found['model'])} on "
        f"{printable(found['task'])} ({found['category']}), night {found['dump_date']}, "
        f"file {printable(found['file'])}",
    ]
    lines += source_lines(found)
    if found["formula_version"] == REPORTED:
        return [*lines, f"score {number(found['score'])}: {IMPORTED}", *run_lines(found, out)]
    score, again = _shown(found["score"], found["recomputed_score"])
    lines.append(
        f"score {score} (formula {found['category']}={found['formula_version']}: "
        f"{found['formula']}); scored again from these turns: {again} "
        f"({'equal' if found['recomputed_equal'] else 'DIFFERENT'})"
    )
    if found["components"]:
        parts = ", ".join(f"{k} {number(v)}" for k, v in found["components"].items())
        lines.append(f"components: {parts}")
    if found["weights"]:
        lines.append(
            "weights: " + ", ".join(f"{k} {number(v)}" for k, v in found["weights"].items())
        )
    if found["reported_score"] is not None:
        same = "equal" if not found["score_mismatch"] else "DIFFERENT"
        _, reported = _shown(found["score"], found["reported_score"])
        lines.append(f"the harness reported {reported} ({same})")
    lines += run_lines(found, out)
    if found["items"]:
        right = sum(item["right"] for item in found["items"])
        lines.append(f"items: {right} of {len(found['items'])} right")
        lines += [_item_line(item) for item in found["items"]]
    lines.append(f"turns ({len(found['turns'])}):")
    for turn in found["turns"]:
        lines += _turn_lines(turn)
    return lines


def _shown(score: float | None, other: float | None) -> tuple[str, str]:
    """A score and another beside it, as ``number`` shows them; where they differ by less
    than it shows, both in full (a difference is never hidden)."""
    a, b = number(score), number(other)
    return (repr(score), repr(other)) if a == b and not _equal(score, other) else (a, b)


def _equal(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and _same(a, b))


def _item_line(item: dict[str, Any]) -> str:
    """A graded item in one line, its expected answer and answer whole."""
    mark = "right" if item["right"] else "WRONG"
    harness = ""
    if item["harness_verdict"] is not None:
        said = "right" if item["harness_verdict"] else "wrong"
        harness = f"; the harness said {said}" + (" (DIFFERS)" if item["differs"] else "")
    return (
        f"  item {printable(item['item_id'])} (turn {item['turn']}, {item['match']}): "
        f"{mark}: expected {_text(item['expected'])}, answered {_text(item['answer'])}"
        f"{harness}"
    )


def _turn_lines(turn: dict[str, Any]) -> list[str]:
    """A turn: its number, role, kind and what else it says, then its content (whole)."""
    extra = [
        f"{k} {_text(v)}"
        for k, v in turn.items()
        if k not in (Col.TURN, Col.ROLE, Col.KIND, Col.CONTENT) and v is not None
    ]
    head = f"  [{turn.get(Col.TURN)}] {turn.get(Col.ROLE)} {turn.get(Col.KIND)}" + (
        f" ({', '.join(extra)})" if extra else ""
    )
    content = turn.get(Col.CONTENT)
    if not content:
        return [head]
    if "\n" not in content:
        return [f"{head}: {printable(content)}"]
    return [f"{head}:", *(INDENT + printable(line) for line in content.split("\n"))]


def _text(value: object) -> str:
    """A value on the terminal, whole: text made printable, a float as ``number`` shows it."""
    return number(value) if isinstance(value, float) else printable("" if value is None else value)
