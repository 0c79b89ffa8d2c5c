"""The contract's rejection rules, one expression each over the episode facts.

Each rule is a ``RuleCheck``: a pure boolean expression (the episode breaks it) and a
message expression in words a harness author understands. ``judge`` gathers every rule an
episode breaks into ``rules`` (codes) and ``reasons`` (messages), and sets ``status``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import polars as pl

from schemas.contract import EPISODE_CONSTANT, NEEDS_ITEMS, REQUIRED, Category, Col
from schemas.rules import Rule
from schemas.tables import REASONS, RULES, STATUS, EpisodeStatus
from transforms.episodes import distinct_count, null_count, unknown_count
from transforms.params import PARAMS_MESSAGE, PARAMS_RULE

# The episode's category where it is known and the same on every row, else null.
EPISODE_CATEGORY: Final = "episode_category"
UNKNOWN_ANSWERS: Final = "unknown_answers"
OTHER_FILES: Final = "other_files"

_CF_LL: Final = [Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING]


@dataclass(frozen=True)
class RuleCheck:
    rule: Rule
    broken: pl.Expr
    message: pl.Expr


def _n(column: str) -> pl.Expr:
    return pl.col(column).fill_null(0)


def episode_category() -> pl.Expr:
    """The category every row names, where it is one known category."""
    known = (
        (pl.col(null_count(Col.CATEGORY)) == 0)
        & (pl.col(unknown_count(Col.CATEGORY)) == 0)
        & (pl.col(distinct_count(Col.CATEGORY)) == 1)
    )
    return pl.when(known).then(pl.col(Col.CATEGORY)).alias(EPISODE_CATEGORY)


def _params_rule(rule: Rule) -> pl.Expr:
    return pl.col(PARAMS_RULE).fill_null("").str.split("|").list.contains(rule.value)


def _params_ok() -> pl.Expr:
    """Parameters were read (a parameter that is invalid is null, so its checks are off)."""
    return (pl.col("n_starts") == 1) & ~_params_rule(Rule.PARAMS_NOT_OBJECT)


def _rows(count: str, what: str) -> pl.Expr:
    return pl.format("{} " + what, pl.col(count))


def checks() -> list[RuleCheck]:
    """Every rule of the contract's "What is rejected" (and the README's decisions)."""
    category = pl.col(EPISODE_CATEGORY)
    out = [
        RuleCheck(
            Rule.NULL_REQUIRED,
            _n(null_count(c)) > 0,
            _rows(null_count(c), f"row(s) have a null `{c}`, which may not be null"),
        )
        for c in REQUIRED
        if c != Col.EPISODE_ID
    ]
    out += [
        RuleCheck(
            Rule(f"unknown_{c}"),
            _n(unknown_count(c)) > 0,
            _rows(unknown_count(c), f"row(s) have a `{c}` the contract does not know"),
        )
        for c in (Col.CATEGORY, Col.ROLE, Col.KIND, Col.MATCH)
    ]
    out += [
        RuleCheck(
            Rule.INCONSISTENT_FIELD,
            _n(distinct_count(c)) > 1,
            pl.format(f"`{c}` differs within the episode ({{}} values)", pl.col(distinct_count(c))),
        )
        for c in EPISODE_CONSTANT
    ]
    out += [
        RuleCheck(
            Rule.DUPLICATE_TURN,
            _n("repeated_turns") > 0,
            _rows("repeated_turns", "row(s) repeat a `turn` of the episode"),
        ),
        RuleCheck(
            Rule.DUPLICATE_EPISODE_ACROSS_FILES,
            pl.col(OTHER_FILES).is_not_null(),
            pl.format("the episode_id also appears in {}", pl.col(OTHER_FILES)),
        ),
        RuleCheck(
            Rule.MISSING_EPISODE_START, pl.col("n_starts") == 0, pl.lit("no `episode_start` row")
        ),
        RuleCheck(
            Rule.MULTIPLE_EPISODE_START,
            pl.col("n_starts") > 1,
            _rows("n_starts", "`episode_start` rows; exactly one is allowed"),
        ),
    ]
    out += [
        RuleCheck(rule, (pl.col("n_starts") == 1) & _params_rule(rule), pl.col(PARAMS_MESSAGE))
        for rule in (
            Rule.PARAMS_NOT_OBJECT,
            Rule.PARAMS_MISSING,
            Rule.PARAMS_WRONG_TYPE,
            Rule.PARAMS_INVALID_VALUE,
        )
    ]
    out += [
        RuleCheck(
            Rule.ITEM_WITHOUT_ID,
            _n("items_without_id") > 0,
            _rows("items_without_id", "`item` row(s) have no `item_id`"),
        ),
        RuleCheck(
            Rule.DUPLICATE_ITEM_ID,
            _n("repeated_item_ids") > 0,
            _rows("repeated_item_ids", "`item` row(s) repeat an `item_id`"),
        ),
        RuleCheck(
            Rule.EMPTY_EXPECTED,
            _n("empty_expected") > 0,
            _rows("empty_expected", "`item` row(s) have an `expected` that is null or blank"),
        ),
        RuleCheck(
            Rule.INTEGER_EXPECTED_NOT_INTEGER,
            _n("integer_not_literal") > 0,
            _rows(
                "integer_not_literal",
                "`integer` item(s) have an `expected` that is not an integer literal",
            ),
        ),
        RuleCheck(
            Rule.ANSWER_UNKNOWN_ITEM,
            _n(UNKNOWN_ANSWERS) > 0,
            _rows(UNKNOWN_ANSWERS, "`answer` row(s) name no item of the episode"),
        ),
        RuleCheck(
            Rule.NO_ITEMS,
            category.is_in(list(NEEDS_ITEMS)) & (_n("n_items") == 0),
            pl.format("a {} episode needs items and has none", category),
        ),
        RuleCheck(
            Rule.TOO_MANY_ITEMS,
            category.is_in(_CF_LL) & _params_ok() & (pl.col("n_items") > pl.col("num_test_items")),
            pl.format(
                "{} items, more than num_test_items = {}",
                pl.col("n_items"),
                pl.col("num_test_items"),
            ),
        ),
        RuleCheck(
            Rule.TOO_MANY_EXAMPLES,
            category.is_in(_CF_LL) & _params_ok() & (pl.col("n_examples") > pl.col("max_examples")),
            pl.format(
                "{} examples, more than max_examples = {}",
                pl.col("n_examples"),
                pl.col("max_examples"),
            ),
        ),
        RuleCheck(
            Rule.NON_FINITE_VALUE,
            _n("non_finite_values") > 0,
            _rows("non_finite_values", "row(s) have a `value` that is NaN or infinite"),
        ),
        RuleCheck(
            Rule.ROUND_VALUE_OUT_OF_RANGE,
            _n("rounds_out_of_range") > 0,
            _rows("rounds_out_of_range", "`round_end` value(s) lie outside [0, 1]"),
        ),
        RuleCheck(
            Rule.ROUND_MISSING_VALUE,
            _n("rounds_without_value") > 0,
            _rows("rounds_without_value", "`round_end` row(s) have no `value`"),
        ),
        RuleCheck(
            Rule.ROUND_MISSING_NUMBER,
            _n("rounds_without_number") > 0,
            _rows("rounds_without_number", "`round_end` row(s) have no `round`"),
        ),
        RuleCheck(
            Rule.DUPLICATE_ROUND,
            _n("repeated_rounds") > 0,
            _rows("repeated_rounds", "`round_end` row(s) repeat a `round`"),
        ),
        RuleCheck(
            Rule.WRONG_ROUND_COUNT,
            (category == Category.PROCEDURAL_LEARNING)
            & _params_ok()
            & (pl.col("n_rounds") != pl.col("practice_rounds")),
            pl.format(
                "{} `round_end` rows; practice_rounds = {}",
                pl.col("n_rounds"),
                pl.col("practice_rounds"),
            ),
        ),
    ]
    return out


HARNESS: Final = RuleCheck(
    Rule.HARNESS_ERROR,
    _n("harness_errors") > 0,
    pl.lit("harness error: an `episode_end` has status `error`"),
)
NO_EPISODE_ID: Final = RuleCheck(
    Rule.NO_EPISODE_ID,
    pl.col(Col.EPISODE_ID).is_null(),
    pl.format("{} row(s) have no `episode_id`", pl.col("n_rows")),
)


def judge(episodes: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``rules``, ``reasons`` and ``status`` to every episode's facts.

    Rows without an episode_id form one bucket per file that is never an episode: it
    gets only ``no_episode_id``.
    """
    return explain(with_status(episodes))


def with_status(episodes: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``status`` only: whether any rule is broken is a cheap boolean; the lists of
    rules and reasons (``explain``) cost ~40 string columns per episode, so they are built
    for the few unscored episodes only."""
    broken = pl.any_horizontal(c.broken.fill_null(False) for c in checks())
    status = (
        pl.when(pl.col(Col.EPISODE_ID).is_null())
        .then(pl.lit(EpisodeStatus.REJECTED))
        .when(HARNESS.broken)
        .then(pl.lit(EpisodeStatus.HARNESS_ERROR))
        .when(broken)
        .then(pl.lit(EpisodeStatus.REJECTED))
        .otherwise(pl.lit(EpisodeStatus.SCORED))
    )
    return episodes.with_columns(status.alias(STATUS))


def explain(episodes: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``rules`` and ``reasons`` (empty for a scored episode) to judged facts."""
    episode_checks = [HARNESS, *checks()]

    def listed(field: str, checks_: list[RuleCheck]) -> pl.Expr:
        values = [
            pl.when(c.broken.fill_null(False)).then(
                pl.lit(c.rule.value) if field == RULES else c.message.fill_null(c.rule.value)
            )
            for c in checks_
        ]
        return pl.concat_list(values).list.drop_nulls()

    no_id = pl.col(Col.EPISODE_ID).is_null()
    rules_ = (
        pl.when(no_id)
        .then(listed(RULES, [NO_EPISODE_ID]))
        .otherwise(listed(RULES, episode_checks).list.unique(maintain_order=True))
    )
    reasons = (
        pl.when(no_id)
        .then(listed(REASONS, [NO_EPISODE_ID]))
        .otherwise(listed(REASONS, episode_checks))
    )
    return episodes.with_columns(rules_.alias(RULES), reasons.alias(REASONS))
