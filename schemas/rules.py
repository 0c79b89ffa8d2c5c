"""Codes of every reason an episode (or a file) is not scored.

Each code is stable (tables and tests key on it); the human message beside it in a
rejects row says the details (column, turn, item) in words a harness author understands.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Rule(StrEnum):
    # Rows
    NULL_REQUIRED = "null_required"
    UNKNOWN_CATEGORY = "unknown_category"
    UNKNOWN_ROLE = "unknown_role"
    UNKNOWN_KIND = "unknown_kind"
    UNKNOWN_MATCH = "unknown_match"
    NO_EPISODE_ID = "no_episode_id"
    # Episode identity
    DUPLICATE_TURN = "duplicate_turn"
    INCONSISTENT_FIELD = "inconsistent_field"
    DUPLICATE_EPISODE_ACROSS_FILES = "duplicate_episode_across_files"
    # Start and parameters
    MISSING_EPISODE_START = "missing_episode_start"
    MULTIPLE_EPISODE_START = "multiple_episode_start"
    PARAMS_NOT_OBJECT = "params_not_object"
    PARAMS_MISSING = "params_missing"
    PARAMS_WRONG_TYPE = "params_wrong_type"
    PARAMS_INVALID_VALUE = "params_invalid_value"
    # Items and answers
    ITEM_WITHOUT_ID = "item_without_id"
    DUPLICATE_ITEM_ID = "duplicate_item_id"
    EMPTY_EXPECTED = "empty_expected"
    INTEGER_EXPECTED_NOT_INTEGER = "integer_expected_not_integer"
    ANSWER_UNKNOWN_ITEM = "answer_unknown_item"
    RECORDED_WITHOUT_VERDICT = "recorded_without_verdict"
    UNCATEGORISED_NOT_REPORTED = "uncategorised_not_reported"  # contract 1.4
    NO_ITEMS = "no_items"
    TOO_MANY_ITEMS = "too_many_items"
    TOO_MANY_EXAMPLES = "too_many_examples"
    # Values and rounds
    NON_FINITE_VALUE = "non_finite_value"
    REPORTED_SCORE_OUT_OF_RANGE = "reported_score_out_of_range"
    ROUND_VALUE_OUT_OF_RANGE = "round_value_out_of_range"
    ROUND_MISSING_VALUE = "round_missing_value"
    ROUND_MISSING_NUMBER = "round_missing_number"
    DUPLICATE_ROUND = "duplicate_round"
    WRONG_ROUND_COUNT = "wrong_round_count"
    # Not the model's failure
    HARNESS_ERROR = "harness_error"
    # Whole files
    FILE_UNREADABLE = "file_unreadable"
    MISSING_COLUMN = "missing_column"
    WRONG_COLUMN_TYPE = "wrong_column_type"


# Contract 1.4: the code of an episode's usage refused (``episode_scores.usage_refused``: an
# assistant row's usage value beyond the contract's bounds, ``schemas.contract.USAGE_MAXIMA``).
# Not a ``Rule``: usage never decides whether an episode is scored (1.3 rejected the episode).
USAGE_INVALID: Final = "usage_invalid"
