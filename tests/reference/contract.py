"""The reference's own copy of the dump contract and of the decisions it needs.

Written from ``../shared/spec/dump-contract.md`` (columns, kinds, match modes, parameters
and their defaults, what is rejected) and docs/decisions.md, "Decisions where the contract
is silent" (minimums, rule codes): nothing here is imported from the scorer (``schemas``,
``transforms``, ``flows``), so a wrong number there cannot hide behind the same wrong number
here. ``test_pins.py`` pins these tables against the contract's text and against
``schemas``, so a change to either side fails a test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# --- contract "Columns" -----------------------------------------------------------------------

RUN_ID: Final = "run_id"
EPISODE_ID: Final = "episode_id"
MODEL: Final = "model"
TASK: Final = "task"
CATEGORY: Final = "category"
TURN: Final = "turn"
ROLE: Final = "role"
KIND: Final = "kind"
ITEM_ID: Final = "item_id"
CONTENT: Final = "content"
EXPECTED: Final = "expected"
MATCH: Final = "match"
VALUE: Final = "value"
SOLVED: Final = "solved"
ROUND: Final = "round"
PARAMS_COLUMN: Final = "params"
# Contract 1.1 (cogscore's README): an optional column, read on the episode_start row.
INSTANCE_ID: Final = "instance_id"
# Contract 1.2: optional; the harness's own score (read on the episode_end row) and its
# own verdict on an answer.
REPORTED_SCORE: Final = "reported_score"
VERDICT: Final = "verdict"
STATUS: Final = "status"
TS: Final = "ts"
COLUMNS: Final = (
    RUN_ID,
    EPISODE_ID,
    MODEL,
    TASK,
    CATEGORY,
    TURN,
    ROLE,
    KIND,
    ITEM_ID,
    CONTENT,
    EXPECTED,
    MATCH,
    VALUE,
    SOLVED,
    ROUND,
    PARAMS_COLUMN,
    STATUS,
    TS,
)
# Contract 1.3: optional, on assistant rows; the usage of the call that produced the reply
# (never scored: summed beside the score).
INPUT_TOKENS: Final = "input_tokens"
OUTPUT_TOKENS: Final = "output_tokens"
COST_USD: Final = "cost_usd"
LATENCY_MS: Final = "latency_ms"
USAGE_COLUMNS: Final = (INPUT_TOKENS, OUTPUT_TOKENS, COST_USD, LATENCY_MS)
# Contract 1.4, "Usage": the most one reply's call can record. A value outside [0, bound]
# (NaN and infinities included) refuses the episode's usage, code `usage_invalid`; the
# episode is scored all the same.
USAGE_MAXIMA: Final = {
    INPUT_TOKENS: 10**9,
    OUTPUT_TOKENS: 10**9,
    COST_USD: 1000.0,
    LATENCY_MS: 604_800_000.0,  # a week, in milliseconds
}
USAGE_INVALID: Final = "usage_invalid"
# Contract 1.4: optional, on episode_start; when the single run the episode is the whole
# result of started (the latest of a model's such runs of a task on a night stands).
SINGLE_RUN_STARTED: Final = "single_run_started"
# Contract 1.5: optional, on episode_start; the names the episode's source gave it (a JSON
# object, kept as written: never scored).
SOURCE_NAMES: Final = "source_names"
OPTIONAL_COLUMNS: Final = (
    INSTANCE_ID,
    REPORTED_SCORE,
    VERDICT,
    *USAGE_COLUMNS,
    SINGLE_RUN_STARTED,
    SOURCE_NAMES,
)
# "may be null: no"
REQUIRED: Final = (RUN_ID, EPISODE_ID, MODEL, TASK, CATEGORY, TURN, ROLE, KIND)
# "model, task, category or run_id differing within one episode" is a rejection.
EPISODE_CONSTANT: Final = (MODEL, TASK, CATEGORY, RUN_ID)

# Added by the reader: the file (relative to the dump root) and its hive dump_date.
FILE: Final = "file"
DUMP_DATE: Final = "dump_date"

# --- enum values ------------------------------------------------------------------------------

ASSOCIATIVE: Final = "associative_learning"
CONCEPT: Final = "concept_formation"
LANGUAGE: Final = "language_learning"
OBSERVATIONAL: Final = "observational_learning"
RUNTIME_RL: Final = "runtime_rl"
PROCEDURAL: Final = "procedural_learning"
CATEGORIES: Final = (ASSOCIATIVE, CONCEPT, LANGUAGE, OBSERVATIONAL, RUNTIME_RL, PROCEDURAL)
# Contract 1.4: a task in none of the six (a reported score alone; the overall counts it).
UNCATEGORISED: Final = "uncategorised"
ROLES: Final = ("system", "user", "assistant", "environment")

EPISODE_START: Final = "episode_start"
MESSAGE: Final = "message"
EXAMPLE: Final = "example"
ITEM: Final = "item"
ANSWER: Final = "answer"
ACTION: Final = "action"
FEEDBACK: Final = "feedback"
ROUND_END: Final = "round_end"
EPISODE_END: Final = "episode_end"
KINDS: Final = (
    EPISODE_START,
    MESSAGE,
    EXAMPLE,
    ITEM,
    ANSWER,
    ACTION,
    FEEDBACK,
    ROUND_END,
    EPISODE_END,
)

CONTAINS: Final = "contains"
INTEGER: Final = "integer"
NFC: Final = "nfc"
SEQUENCE: Final = "sequence"
# 1.2: the graders of the real benchmark's tasks
UPPER_CONTAINS: Final = "upper_contains"
WORD: Final = "word"
ISOLATED_WORD: Final = "isolated_word"
NFC_WORDS: Final = "nfc_words"
INT_VALUE: Final = "int_value"
JSON_EQUAL: Final = "json_equal"
RECORDED: Final = "recorded"  # 1.2: the answer's verdict is the verdict
MATCH_MODES: Final = (
    CONTAINS,
    INTEGER,
    NFC,
    SEQUENCE,
    UPPER_CONTAINS,
    WORD,
    ISOLATED_WORD,
    NFC_WORDS,
    INT_VALUE,
    JSON_EQUAL,
    RECORDED,
)

COMPLETED: Final = "completed"
ERROR: Final = "error"
STATUSES: Final = (COMPLETED, ERROR)

# "Where match is null the category's default applies: nfc for language learning, sequence
# for observational learning, contains everywhere else."
DEFAULT_MATCH: Final = {c: CONTAINS for c in CATEGORIES} | {LANGUAGE: NFC, OBSERVATIONAL: SEQUENCE}
# "a category that needs items (all but runtime RL) with none"
NEEDS_ITEMS: Final = frozenset(CATEGORIES) - {RUNTIME_RL}
CONCEPT_LIKE: Final = (CONCEPT, LANGUAGE)

# --- parameters (contract "Where each formula's inputs come from"; README for minimums) ----

INT: Final = "int"  # a JSON integer (not a bool, not 5.0) in the signed 32-bit range
FLOAT: Final = "float"  # a finite JSON number, integers accepted
PROGRESS_MODE: Final = "progress_mode"  # the string "max" or "last"
PROGRESS_MODES: Final = ("max", "last")
DERIVED: Final = "the number of items"  # num_test_items' default


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    required: bool
    default: float | int | str | None = None  # None: required, or DERIVED below
    minimum: int | None = None


_CONCEPT_PARAMS: Final = (
    Param("initial_examples", INT, required=True),
    Param("max_examples", INT, required=True),
    Param("free_threshold", INT, required=False, default=4),
    Param("num_test_items", INT, required=False, default=None),  # default: the number of items
)
PARAMS: Final[dict[str, tuple[Param, ...]]] = {
    ASSOCIATIVE: (),
    CONCEPT: _CONCEPT_PARAMS,
    LANGUAGE: _CONCEPT_PARAMS,
    OBSERVATIONAL: (),
    RUNTIME_RL: (
        Param("budget", INT, required=True, minimum=1),
        Param("min_explore", INT, required=False, default=7),
        Param("floor", FLOAT, required=False, default=0.10),
        Param("progress", PROGRESS_MODE, required=False, default="max"),
    ),
    PROCEDURAL: (Param("practice_rounds", INT, required=False, default=5, minimum=1),),
}

# --- rule codes (README and the contract's "What is rejected") --------------------------------


class Rule:
    """The code of every reason an episode (or a file) is not scored: plain strings."""

    NULL_REQUIRED = "null_required"
    UNKNOWN_CATEGORY = "unknown_category"
    UNKNOWN_ROLE = "unknown_role"
    UNKNOWN_KIND = "unknown_kind"
    UNKNOWN_MATCH = "unknown_match"
    NO_EPISODE_ID = "no_episode_id"
    DUPLICATE_TURN = "duplicate_turn"
    INCONSISTENT_FIELD = "inconsistent_field"
    DUPLICATE_EPISODE_ACROSS_FILES = "duplicate_episode_across_files"
    MISSING_EPISODE_START = "missing_episode_start"
    MULTIPLE_EPISODE_START = "multiple_episode_start"
    PARAMS_NOT_OBJECT = "params_not_object"
    PARAMS_MISSING = "params_missing"
    PARAMS_WRONG_TYPE = "params_wrong_type"
    PARAMS_INVALID_VALUE = "params_invalid_value"
    ITEM_WITHOUT_ID = "item_without_id"
    DUPLICATE_ITEM_ID = "duplicate_item_id"
    EMPTY_EXPECTED = "empty_expected"
    INTEGER_EXPECTED_NOT_INTEGER = "integer_expected_not_integer"
    ANSWER_UNKNOWN_ITEM = "answer_unknown_item"
    RECORDED_WITHOUT_VERDICT = "recorded_without_verdict"
    UNCATEGORISED_NOT_REPORTED = "uncategorised_not_reported"
    NO_ITEMS = "no_items"
    TOO_MANY_ITEMS = "too_many_items"
    TOO_MANY_EXAMPLES = "too_many_examples"
    NON_FINITE_VALUE = "non_finite_value"
    REPORTED_SCORE_OUT_OF_RANGE = "reported_score_out_of_range"
    ROUND_VALUE_OUT_OF_RANGE = "round_value_out_of_range"
    ROUND_MISSING_VALUE = "round_missing_value"
    ROUND_MISSING_NUMBER = "round_missing_number"
    DUPLICATE_ROUND = "duplicate_round"
    WRONG_ROUND_COUNT = "wrong_round_count"
    HARNESS_ERROR = "harness_error"
    FILE_UNREADABLE = "file_unreadable"
    MISSING_COLUMN = "missing_column"
    WRONG_COLUMN_TYPE = "wrong_column_type"


RULES: Final = frozenset(v for k, v in vars(Rule).items() if k.isupper())
FILE_RULES: Final = frozenset({Rule.FILE_UNREADABLE, Rule.MISSING_COLUMN, Rule.WRONG_COLUMN_TYPE})
