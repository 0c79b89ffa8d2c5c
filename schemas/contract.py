"""Names, kinds, enums and bounds of the transcript dump contract, version 1.5.

This module is the single source of column names, dtypes and enum values: every other
module refers to them through it. The contract itself is ``docs/contract.md`` (a test holds
the two to each other).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

import polars as pl

CONTRACT_VERSION: Final = "1.5"


class Col(StrEnum):
    """Columns of a dump row (contract "Columns")."""

    RUN_ID = "run_id"
    EPISODE_ID = "episode_id"
    MODEL = "model"
    TASK = "task"
    CATEGORY = "category"
    TURN = "turn"
    ROLE = "role"
    KIND = "kind"
    ITEM_ID = "item_id"
    CONTENT = "content"
    EXPECTED = "expected"
    MATCH = "match"
    VALUE = "value"
    SOLVED = "solved"
    ROUND = "round"
    PARAMS = "params"
    STATUS = "status"
    TS = "ts"


# Contract 1.1 (backward compatible, README "Contract 1.1: instance_id"): on the
# episode_start row, the instance the episode faced. Episodes of one task with the same
# instance_id faced the same instance, whatever the model or the night. Optional: absent or
# null means not shared. Strings, or integers of any width (read as their decimal text).
INSTANCE_ID: Final = "instance_id"
# Contract 1.2 (backward compatible): on the episode_end row, the score the harness itself
# recorded for the episode; cogscore keeps it beside its own and counts where they differ.
REPORTED_SCORE: Final = "reported_score"
# Contract 1.2: on an answer row, the harness's own verdict on it (the task's grader).
VERDICT: Final = "verdict"
# Contract 1.3 (backward compatible): on a reply turn (role assistant), the usage of the model
# call that produced it: tokens sent and received, its cost in US dollars and how long the
# call took. Read on assistant rows only; absent or null: not recorded (never 0).
INPUT_TOKENS: Final = "input_tokens"
OUTPUT_TOKENS: Final = "output_tokens"
COST_USD: Final = "cost_usd"
LATENCY_MS: Final = "latency_ms"
USAGE_DTYPES: Final[dict[str, pl.DataType]] = {
    INPUT_TOKENS: pl.Int64(),
    OUTPUT_TOKENS: pl.Int64(),
    COST_USD: pl.Float64(),
    LATENCY_MS: pl.Float64(),
}
# Contract 1.4: the most one reply's call can record, per measure (``docs/contract.md``,
# "Usage": why these). A value above its bound, or negative, or NaN or infinite, is no
# call's: the episode's usage is refused (``usage_invalid``), its score kept. With every
# reply bounded, no sum of them reaches int64's or float64's limits in any table.
USAGE_MAXIMA: Final[dict[str, int | float]] = {
    INPUT_TOKENS: 1_000_000_000,
    OUTPUT_TOKENS: 1_000_000_000,
    COST_USD: 1_000.0,
    LATENCY_MS: 7 * 24 * 3600 * 1000.0,  # a week
}

# Contract 1.4 (backward compatible): on the episode_start row, when the run started whose
# whole result for its model and task the episode is (one run per model and task: a harness
# run file, a score table's row). Of one model's such episodes of one task on one night, the
# one started latest stands and the others are replaced (kept, never averaged with it).
# Absent or null: one of the night's episodes of the task, averaged with the others.
SINGLE_RUN_STARTED: Final = "single_run_started"
# Contract 1.5 (backward compatible): on the episode_start row, what the episode's source
# called it, as a JSON object of the source's own fields: a score table's model, task and
# category columns as it wrote them, its row's time and number (``row``); a harness run's
# model slug and registered task name. ``model`` and ``task`` are the names cogscore shows
# (a names file and the dump's names resolve them, ``docs/importing.md``); these are kept to
# write them back as published (``cogscore export``) and to say where a name came from.
SOURCE_NAMES: Final = "source_names"
OPTIONAL_DTYPES: Final[dict[str, pl.DataType]] = {
    INSTANCE_ID: pl.String(),
    REPORTED_SCORE: pl.Float64(),
    VERDICT: pl.Boolean(),
    **USAGE_DTYPES,
    SINGLE_RUN_STARTED: pl.Datetime("us", "UTC"),
    SOURCE_NAMES: pl.String(),
}
# The episode kinds that carry a formula's inputs. An episode with none of them and a
# reported score (a score table imported: ``cogscore import-scores``) is scored as reported.
INPUT_KINDS: Final = ("example", "item", "answer", "action", "feedback", "round_end")

# Columns the scorer adds to every row while reading.
FILE: Final = "file"
DUMP_DATE: Final = "dump_date"


class Category(StrEnum):
    ASSOCIATIVE_LEARNING = "associative_learning"
    CONCEPT_FORMATION = "concept_formation"
    LANGUAGE_LEARNING = "language_learning"
    OBSERVATIONAL_LEARNING = "observational_learning"
    RUNTIME_RL = "runtime_rl"
    PROCEDURAL_LEARNING = "procedural_learning"


# Contract 1.4 (backward compatible): the category of a task its publisher puts in none of the
# six (LearningBench's leaderboard calls three of its tasks ``unknown``). Only an episode
# scored as reported (a score table imported: no formula input) may have it; it counts in
# the overall score, in no category (``docs/decisions.md``).
UNCATEGORISED: Final = "uncategorised"
# Every value the contract's ``category`` column may take: the six, then ``uncategorised``.
CATEGORY_VALUES: Final = (*(c.value for c in Category), UNCATEGORISED)


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    ENVIRONMENT = "environment"


class Kind(StrEnum):
    EPISODE_START = "episode_start"
    MESSAGE = "message"
    EXAMPLE = "example"
    ITEM = "item"
    ANSWER = "answer"
    ACTION = "action"
    FEEDBACK = "feedback"
    ROUND_END = "round_end"
    EPISODE_END = "episode_end"


class Match(StrEnum):
    CONTAINS = "contains"
    INTEGER = "integer"
    NFC = "nfc"
    SEQUENCE = "sequence"
    # 1.2: the graders of the real benchmark's tasks (docs/contract.md gives their Python).
    UPPER_CONTAINS = "upper_contains"
    WORD = "word"
    ISOLATED_WORD = "isolated_word"
    NFC_WORDS = "nfc_words"
    INT_VALUE = "int_value"
    JSON_EQUAL = "json_equal"
    # 1.2: the answer's `verdict` is the verdict (a bespoke grader).
    RECORDED = "recorded"


# Words that, among the three before a `word` or `isolated_word` match, make it a negation
# (as the benchmark's graders list them; `\w+` splits "isn't" in two, so those never match).
NEGATIONS: Final = frozenset(
    {"not", "isn't", "isnt", "never", "no", "cannot", "can't", "cant", "neither", "without"}
)

# The kinds that are a function of (expected, answer) texts: all but `recorded`.
DECLARATIVE: Final = tuple(m for m in Match if m is not Match.RECORDED)


class Status(StrEnum):
    COMPLETED = "completed"
    ERROR = "error"


# Where an item's `match` is null, the category's default applies (contract "Matching").
DEFAULT_MATCH: Final[dict[Category, Match]] = {
    Category.ASSOCIATIVE_LEARNING: Match.CONTAINS,
    Category.CONCEPT_FORMATION: Match.CONTAINS,
    Category.LANGUAGE_LEARNING: Match.NFC,
    Category.OBSERVATIONAL_LEARNING: Match.SEQUENCE,
    Category.RUNTIME_RL: Match.CONTAINS,
    Category.PROCEDURAL_LEARNING: Match.CONTAINS,
}

# Contract 1.3: usage is read on the rows of this role; a reply turn (a row of this role and
# one of these kinds with content) that carries none is counted where the episode records
# usage elsewhere (``replies_without_usage``): an ``answer`` may be read out of a reply
# rather than be a call of its own, so it is not counted.
USAGE_ROLE: Final = Role.ASSISTANT
REPLY_KINDS: Final = (Kind.MESSAGE, Kind.ACTION)

# Categories that need at least one item (all but runtime RL).
NEEDS_ITEMS: Final = frozenset(set(Category) - {Category.RUNTIME_RL})

# The canonical dtype of every contract column after ingest.
DTYPES: Final[dict[Col, pl.DataType]] = {
    Col.RUN_ID: pl.String(),
    Col.EPISODE_ID: pl.String(),
    Col.MODEL: pl.String(),
    Col.TASK: pl.String(),
    Col.CATEGORY: pl.String(),
    Col.TURN: pl.Int64(),
    Col.ROLE: pl.String(),
    Col.KIND: pl.String(),
    Col.ITEM_ID: pl.String(),
    Col.CONTENT: pl.String(),
    Col.EXPECTED: pl.String(),
    Col.MATCH: pl.String(),
    Col.VALUE: pl.Float64(),
    Col.SOLVED: pl.Boolean(),
    Col.ROUND: pl.Int64(),
    Col.PARAMS: pl.String(),
    Col.STATUS: pl.String(),
    Col.TS: pl.Datetime("us", "UTC"),
}

REQUIRED: Final = (
    Col.RUN_ID,
    Col.EPISODE_ID,
    Col.MODEL,
    Col.TASK,
    Col.CATEGORY,
    Col.TURN,
    Col.ROLE,
    Col.KIND,
)
NULLABLE: Final = tuple(c for c in Col if c not in REQUIRED)

# The columns that must agree on every row of one episode.
EPISODE_CONSTANT: Final = (Col.MODEL, Col.TASK, Col.CATEGORY, Col.RUN_ID)


def canonical_schema() -> dict[str, pl.DataType]:
    """The row frame after ingest: contract columns but ``ts``, the optional columns
    (contract 1.1 to 1.5), ``ts`` (not scored: read for an episode's wall time alone), file,
    dump_date."""
    return {
        **{str(c): t for c, t in DTYPES.items() if c is not Col.TS},
        **OPTIONAL_DTYPES,
        Col.TS: DTYPES[Col.TS],
        FILE: pl.String(),
        DUMP_DATE: pl.String(),
    }
