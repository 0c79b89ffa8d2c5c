"""The contract's rejection rules, one expression each.

Each rule is a ``RuleCheck``: a pure boolean expression over an episode's facts (the episode
breaks it), a message in words a harness author understands and, for a rule that single
rows break, the row condition (``row``) whose count per episode is the facts column the
check reads.

Two verdicts come from the same checks. ``with_status`` needs only whether *any* rule is
broken: the row conditions are folded into one count per episode and kind of row
(``problems``), which is what the fast passes over the rows aggregate. ``explain`` lists
every rule and reason; it runs on the few unscored episodes, whose detailed facts count
each row condition apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Final, Literal

import polars as pl

from schemas.columns import REASONS, RULES, STATUS, EpisodeStatus
from schemas.contract import (
    CATEGORY_VALUES,
    EPISODE_CONSTANT,
    NEEDS_ITEMS,
    REPORTED_SCORE,
    REQUIRED,
    UNCATEGORISED,
    Category,
    Col,
    Kind,
    Match,
    Role,
    Status,
)
from schemas.rules import Rule
from transforms.params import PARAMS_MESSAGE, PARAMS_RULE
from transforms.text import INTEGER_LITERAL, py_strip

# The episode's number in rows sorted by ``transforms.episodes.in_episode_order``: consecutive
# rows of one episode, in turn order. Rules on neighbouring rows need that order.
SEGMENT: Final = "segment"
# The episode's category where it is known and the same on every row, else null.
EPISODE_CATEGORY: Final = "episode_category"
UNKNOWN_ANSWERS: Final = "unknown_answers"
UNJUDGED_ANSWERS: Final = "unjudged_answers"
OTHER_FILES: Final = "other_files"
N_ROWS: Final = "n_rows"
N_STARTS: Final = "n_starts"
N_EXAMPLES: Final = "n_examples"
N_ITEMS: Final = "n_items"
N_ROUNDS: Final = "n_rounds"
# An episode's rows of the kinds that carry formula inputs (``INPUT_KINDS``), and its reported
# score (contract 1.2: the last non-null one on an episode_end row).
N_INPUTS: Final = "n_inputs"
REPORTED_LAST: Final = "reported_last"
HARNESS_ERRORS: Final = "harness_errors"
REPEATED_TURNS: Final = "repeated_turns"
REPEATED_ITEM_IDS: Final = "repeated_item_ids"
REPEATED_ROUNDS: Final = "repeated_rounds"

ENUMS: Final[dict[Col, list[str]]] = {
    Col.CATEGORY: list(CATEGORY_VALUES),  # contract 1.4: uncategorised (reported alone)
    Col.ROLE: list(Role),
    Col.KIND: [k.value for k in Kind],  # text: ``kind`` may be categorical (is_in of its values)
    Col.MATCH: list(Match),
}
_CF_LL: Final = [Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING]


def null_count(column: str) -> str:
    return f"null_{column}"


def distinct_count(column: str) -> str:
    return f"distinct_{column}"


def unknown_count(column: str) -> str:
    return f"unknown_{column}"


def changes(column: str) -> str:
    """The facts column counting rows whose ``column`` differs from the row before."""
    return f"changes_{column}"


@dataclass(frozen=True)
class RuleCheck:
    rule: Rule
    broken: pl.Expr
    message: pl.Expr
    row: pl.Expr | None = None  # a row-level rule: the condition a row breaks it by
    of_kind: Kind | None = None  # ... which only rows of this kind can meet


def problems(of_kind: Kind | None) -> str:
    """The fast facts column counting the rows (of one kind, or any) that break some
    row-level rule."""
    return f"problem_rows_{of_kind or 'any'}"


def is_kind(kind: Kind) -> pl.Expr:
    return pl.col(Col.KIND) == kind


def _n(column: str) -> pl.Expr:
    return pl.col(column).fill_null(0)


def _rows(count: str, what: str) -> pl.Expr:
    return pl.format("{} " + what, pl.col(count))


def _after_row_of_same_episode() -> pl.Expr:
    """True where the row before (in episode order) is of the same episode."""
    return pl.col(SEGMENT) == pl.col(SEGMENT).shift()


def _row_check(
    rule: Rule, count: str, row: pl.Expr, what: str, of_kind: Kind | None = None
) -> RuleCheck:
    """A rule that single rows break; ``count`` is the facts column counting them."""
    condition = row.fill_null(False).alias(count)
    return RuleCheck(rule, _n(count) > 0, _rows(count, what), condition, of_kind)


def episode_category() -> pl.Expr:
    """The category every row names, where it is one known category (no null, each row's
    that of the row before, and one of the contract's: the six or ``uncategorised``)."""
    category = pl.col(Col.CATEGORY)
    known = (
        (pl.col(null_count(Col.CATEGORY)) == 0)
        & (pl.col(changes(Col.CATEGORY)) == 0)
        & category.is_in(list(CATEGORY_VALUES))
    )
    return pl.when(known).then(category).alias(EPISODE_CATEGORY)


def _params_rule(rule: Rule) -> pl.Expr:
    return pl.col(PARAMS_RULE).fill_null("").str.split("|").list.contains(rule.value)


def reported_only() -> pl.Expr:
    """The episode is a reported score alone (contract 1.2; ``cogscore import-scores``): a
    finite reported score, no row of a kind that carries a formula's inputs, and one
    ``episode_start`` whose ``params`` are ``{}`` (JSON whitespace aside: no parameter for a
    formula to run with). Such an episode is scored as reported, so the rules about a
    formula's inputs (items, parameters, rounds) do not apply to it; every other rule does.
    (A runtime RL episode with its parameters and no action is a run the formula scores.)"""
    reported = pl.col(REPORTED_LAST)
    # ``{}`` with JSON whitespace around and within: a match, nothing rewritten per row.
    no_params = pl.col(Col.PARAMS).str.contains(r"^[ \t\n\r]*\{[ \t\n\r]*\}[ \t\n\r]*$")
    alone = reported.is_not_null() & reported.is_finite() & (_n(N_INPUTS) == 0)
    return (alone & (pl.col(N_STARTS) == 1) & no_params).fill_null(False)


# Rules about a formula's inputs: a reported score alone does not break them.
INPUT_RULES: Final = frozenset(
    {
        Rule.NO_ITEMS,
        Rule.TOO_MANY_ITEMS,
        Rule.TOO_MANY_EXAMPLES,
        Rule.WRONG_ROUND_COUNT,
        Rule.PARAMS_MISSING,
        Rule.PARAMS_WRONG_TYPE,
        Rule.PARAMS_INVALID_VALUE,
    }
)


def _params_ok() -> pl.Expr:
    """Parameters were read (a parameter that is invalid is null, so its checks are off)."""
    return (pl.col(N_STARTS) == 1) & ~_params_rule(Rule.PARAMS_NOT_OBJECT)


@cache
def checks() -> tuple[RuleCheck, ...]:
    """Every rule of the contract's "What is rejected" (and the README's decisions) but the
    whole-dump one (``transforms.duplicates``)."""
    category = pl.col(EPISODE_CATEGORY)
    item, round_end = is_kind(Kind.ITEM), is_kind(Kind.ROUND_END)
    value, expected = pl.col(Col.VALUE), pl.col(Col.EXPECTED)
    out = [
        _row_check(
            Rule.NULL_REQUIRED,
            null_count(c),
            pl.col(c).is_null(),
            f"row(s) have a null `{c}`, which may not be null",
        )
        for c in REQUIRED
        if c != Col.EPISODE_ID
    ]
    out += [
        _row_check(
            Rule(f"unknown_{c}"),
            unknown_count(c),
            pl.col(c).is_not_null() & ~pl.col(c).is_in(values),
            f"row(s) have a `{c}` the contract does not know",
        )
        for c, values in ENUMS.items()
    ]
    out += [
        # A row that differs from the row before breaks it, which the fast verdict counts;
        # with nulls between two values no neighbours differ, but then a null is a rule
        # broken too. The detailed facts count distinct values: exact for the reason.
        RuleCheck(
            Rule.INCONSISTENT_FIELD,
            _n(distinct_count(c)) > 1,
            pl.format(f"`{c}` differs within the episode ({{}} values)", pl.col(distinct_count(c))),
            (_after_row_of_same_episode() & (pl.col(c) != pl.col(c).shift()))
            .fill_null(False)
            .alias(changes(c)),
        )
        for c in EPISODE_CONSTANT
    ]
    out += [
        _row_check(  # in turn order, a repeated turn is its neighbour's (nulls last)
            Rule.DUPLICATE_TURN,
            REPEATED_TURNS,
            _after_row_of_same_episode() & (pl.col(Col.TURN) == pl.col(Col.TURN).shift()),
            "row(s) repeat a `turn` of the episode",
        ),
        RuleCheck(Rule.MISSING_EPISODE_START, _n(N_STARTS) == 0, pl.lit("no `episode_start` row")),
        RuleCheck(
            Rule.MULTIPLE_EPISODE_START,
            _n(N_STARTS) > 1,
            _rows(N_STARTS, "`episode_start` rows; exactly one is allowed"),
        ),
    ]
    out += [
        RuleCheck(rule, (pl.col(N_STARTS) == 1) & _params_rule(rule), pl.col(PARAMS_MESSAGE))
        for rule in (
            Rule.PARAMS_NOT_OBJECT,
            Rule.PARAMS_MISSING,
            Rule.PARAMS_WRONG_TYPE,
            Rule.PARAMS_INVALID_VALUE,
        )
    ]
    out += [
        _row_check(
            Rule.ITEM_WITHOUT_ID,
            "items_without_id",
            item & pl.col(Col.ITEM_ID).is_null(),
            "`item` row(s) have no `item_id`",
            Kind.ITEM,
        ),
        RuleCheck(
            Rule.DUPLICATE_ITEM_ID,
            _n(REPEATED_ITEM_IDS) > 0,
            _rows(REPEATED_ITEM_IDS, "`item` row(s) repeat an `item_id`"),
        ),
        _row_check(
            Rule.EMPTY_EXPECTED,
            "empty_expected",
            item & (py_strip(expected).fill_null("") == ""),
            "`item` row(s) have an `expected` that is null or blank",
            Kind.ITEM,
        ),
        _row_check(
            Rule.INTEGER_EXPECTED_NOT_INTEGER,
            "integer_not_literal",
            item
            & (pl.col(Col.MATCH) == Match.INTEGER)
            & expected.is_not_null()
            & ~py_strip(expected).str.contains(INTEGER_LITERAL),
            "`integer` item(s) have an `expected` that is not an integer literal",
            Kind.ITEM,
        ),
        RuleCheck(
            Rule.ANSWER_UNKNOWN_ITEM,
            _n(UNKNOWN_ANSWERS) > 0,
            _rows(UNKNOWN_ANSWERS, "`answer` row(s) name no item of the episode"),
        ),
        RuleCheck(
            Rule.RECORDED_WITHOUT_VERDICT,
            _n(UNJUDGED_ANSWERS) > 0,
            _rows(UNJUDGED_ANSWERS, "`answer` row(s) of a `recorded` item have no `verdict`"),
        ),
        RuleCheck(
            Rule.UNCATEGORISED_NOT_REPORTED,
            (category == UNCATEGORISED) & ~reported_only(),
            pl.lit(
                f"an `{UNCATEGORISED}` episode is a reported score alone (contract 1.4): no "
                "formula scores a task in no category, and this one has formula inputs, "
                "parameters or no finite reported score"
            ),
        ),
        RuleCheck(
            Rule.NO_ITEMS,
            category.is_in(list(NEEDS_ITEMS)) & (_n(N_ITEMS) == 0),
            pl.format("a {} episode needs items and has none", category),
        ),
        RuleCheck(
            Rule.TOO_MANY_ITEMS,
            category.is_in(_CF_LL) & _params_ok() & (pl.col(N_ITEMS) > pl.col("num_test_items")),
            pl.format(
                "{} items, more than num_test_items = {}",
                pl.col(N_ITEMS),
                pl.col("num_test_items"),
            ),
        ),
        RuleCheck(
            Rule.TOO_MANY_EXAMPLES,
            category.is_in(_CF_LL) & _params_ok() & (pl.col(N_EXAMPLES) > pl.col("max_examples")),
            pl.format(
                "{} examples, more than max_examples = {}",
                pl.col(N_EXAMPLES),
                pl.col("max_examples"),
            ),
        ),
        _row_check(
            Rule.NON_FINITE_VALUE,
            "non_finite_values",
            value.is_not_null() & ~value.is_finite(),
            "row(s) have a `value` that is NaN or infinite",
        ),
        _row_check(
            Rule.NON_FINITE_VALUE,
            "non_finite_reported_scores",
            is_kind(Kind.EPISODE_END)
            & pl.col(REPORTED_SCORE).is_not_null()
            & ~pl.col(REPORTED_SCORE).is_finite(),
            "`episode_end` row(s) have a `reported_score` that is NaN or infinite",
        ),
        _row_check(
            Rule.REPORTED_SCORE_OUT_OF_RANGE,
            "reported_scores_out_of_range",
            is_kind(Kind.EPISODE_END)
            & pl.col(REPORTED_SCORE).is_finite()
            & ((pl.col(REPORTED_SCORE) < 0.0) | (pl.col(REPORTED_SCORE) > 1.0)),
            "`episode_end` row(s) have a `reported_score` outside [0, 1] (another scale?)",
        ),
        _row_check(
            Rule.ROUND_VALUE_OUT_OF_RANGE,
            "rounds_out_of_range",
            round_end & ((value < 0.0) | (value > 1.0)),  # NaN sorts above 1 in polars
            "`round_end` value(s) lie outside [0, 1]",
            Kind.ROUND_END,
        ),
        _row_check(
            Rule.ROUND_MISSING_VALUE,
            "rounds_without_value",
            round_end & value.is_null(),
            "`round_end` row(s) have no `value`",
            Kind.ROUND_END,
        ),
        _row_check(
            Rule.ROUND_MISSING_NUMBER,
            "rounds_without_number",
            round_end & pl.col(Col.ROUND).is_null(),
            "`round_end` row(s) have no `round`",
            Kind.ROUND_END,
        ),
        RuleCheck(
            Rule.DUPLICATE_ROUND,
            _n(REPEATED_ROUNDS) > 0,
            _rows(REPEATED_ROUNDS, "`round_end` row(s) repeat a `round`"),
        ),
        RuleCheck(
            Rule.WRONG_ROUND_COUNT,
            (category == Category.PROCEDURAL_LEARNING)
            & _params_ok()
            & (pl.col(N_ROUNDS) != pl.col("practice_rounds")),
            pl.format(
                "{} `round_end` rows; practice_rounds = {}",
                pl.col(N_ROUNDS),
                pl.col("practice_rounds"),
            ),
        ),
    ]
    return tuple(
        replace(c, broken=c.broken & ~reported_only()) if c.rule in INPUT_RULES else c for c in out
    )


def row_checks(of_kind: Kind | Literal["all"] | None = "all") -> list[RuleCheck]:
    """The row-level checks (those of rows of one kind, or of any row, or all)."""
    rows = [c for c in checks() if c.row is not None]
    return rows if of_kind == "all" else [c for c in rows if c.of_kind == of_kind]


ROW_KINDS: Final = tuple(dict.fromkeys(c.of_kind for c in row_checks()))


def problem_row(of_kind: Kind | None, without: Sequence[str] = ()) -> pl.Expr:
    """True where a row breaks some row-level check of ``of_kind`` (for rows of that kind,
    or of any kind for None), named ``problems(of_kind)``; summed per episode. ``without``:
    the facts columns of checks left out (judged otherwise)."""
    conditions = [
        c.row
        for c in row_checks(of_kind)
        if c.row is not None and c.row.meta.output_name() not in without
    ]
    return pl.any_horizontal(conditions).alias(problems(of_kind))


HARNESS: Final = RuleCheck(
    Rule.HARNESS_ERROR,
    _n(HARNESS_ERRORS) > 0,
    pl.lit("harness error: an `episode_end` has status `error`"),
    (is_kind(Kind.EPISODE_END) & (pl.col(Col.STATUS) == Status.ERROR))
    .fill_null(False)
    .alias(HARNESS_ERRORS),
)
NO_EPISODE_ID: Final = RuleCheck(
    Rule.NO_EPISODE_ID,
    pl.col(Col.EPISODE_ID).is_null(),
    pl.format("{} row(s) have no `episode_id`", pl.col(N_ROWS)),
)


def with_status(episodes: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``status``: whether any rule is broken, from the facts of either pass (row-level
    rules through their ``problems`` counts alone).

    Rows without an episode_id form one bucket per file that is never an episode.
    """
    episode_level = [c.broken.fill_null(False) for c in checks() if c.row is None]
    rows = [_n(problems(kind)) > 0 for kind in ROW_KINDS]
    broken = pl.any_horizontal(*rows, *episode_level)
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


# Working columns of ``explain``: each episode's row, and the check a listed rule is of.
_ROW: Final = "__explained_row"
_CHECK: Final = "__check"


def explain(episodes: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``rules`` and ``reasons`` (empty for a scored episode) to detailed facts
    (``transforms.episodes.episode_facts(..., detailed=True)``): the rules each episode
    breaks, in the order of the checks (each rule once), and the reason each check gives.

    Each check's verdict and message is a column, the columns' values unpivoted and those
    of the checks broken gathered per episode: a list made of one element from each of 42
    checks in every row (``concat_list``) took 13 ms for 1,482 episodes, a list per field
    (rules and reasons) 26 of a reject plan's 73."""
    no_id = pl.col(Col.EPISODE_ID).is_null()
    # Rows without an episode_id break that rule alone; the others the checks they break.
    listed = [NO_EPISODE_ID, HARNESS, *checks()]
    broken = [no_id, *(c.broken.fill_null(False) & ~no_id for c in listed[1:])]
    names = [str(i) for i in range(len(listed))]
    numbered = episodes.with_row_index(_ROW).cache()
    flags = numbered.select(_ROW, *(b.alias(n) for b, n in zip(broken, names, strict=True)))
    messages = numbered.select(
        *(c.message.fill_null(c.rule.value).alias(n) for c, n in zip(listed, names, strict=True))
    )
    check = pl.col("variable").cast(pl.UInt32).alias(_CHECK)
    long = pl.concat(
        [
            flags.unpivot(index=_ROW, on=names).select(_ROW, check, pl.col("value")),
            messages.unpivot(on=names).select(pl.col("value").alias(REASONS)),
        ],
        how="horizontal",
    )
    rule = pl.col(_CHECK).replace_strict(range(len(listed)), [c.rule.value for c in listed])
    lists = (
        long.filter(pl.col("value"))
        .sort(_ROW, _CHECK)
        .group_by(_ROW, maintain_order=True)
        .agg(rule.unique(maintain_order=True).alias(RULES), pl.col(REASONS))
    )
    none = pl.lit(pl.Series([[]], dtype=pl.List(pl.String)))
    return (
        numbered.join(lists, on=_ROW, how="left", maintain_order="left")
        .with_columns(pl.col(RULES).fill_null(none), pl.col(REASONS).fill_null(none))
        .drop(_ROW)
    )
