"""Planned hypotheses (``--hypotheses FILE``): the TOML file's schema, read into
``Hypothesis`` by ``parse_hypotheses``, and the ``hypotheses`` table, one row per standing
and hypothesis (``transforms.hypotheses`` tests them; README "Output: the tables",
``docs/comparisons.md`` "Planned hypotheses").

A file declares each hypothesis once, as the benchmark's authors plan theirs
(LearningBench's ``hypothesis_tests.md``)::

    [[hypothesis]]
    id = "H4"
    claim = "On concept formation, Qwen 3 Next 80B Thinking outperforms Qwen 3 Next 80B Instruct"
    test = "wilcoxon"            # or "mann-whitney"
    scope = "concept_formation"  # "overall", a category, or a list of categories
    a = "Qwen 3 Next 80B Thinking"
    b = "Qwen 3 Next 80B Instruct"
    alternative = "two-sided"    # the default (the authors'); or "greater": a above b

The claim is always that ``a`` scores higher than ``b``. ``wilcoxon``: one model each, paired
over the scope's tasks both have a result on; ``mann-whitney``: a list of models each (two
at least, none in both), each model's mean over its task scores in the scope.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final

import polars as pl

from schemas.columns import (
    AS_OF,
    CATEGORIES,
    PROVENANCE_RULES,
    Column,
    Table,
    count_column,
    real_column,
    text_column,
)
from schemas.comparisons import OVERALL, P_VALUE, REASON, SCOPE, VERDICT
from schemas.exits import ExitCode

# --- the table's columns ----------------------------------------------------------------------

ID: Final = "id"
CLAIM: Final = "claim"
TEST: Final = "test"
ALTERNATIVE: Final = "alternative"
A: Final = "a"  # the models the claim says score higher (wilcoxon: one)
B: Final = "b"
N: Final = "n"  # wilcoxon: the tasks paired (ties included); mann-whitney: the models
N_A_BETTER: Final = "n_a_better"  # wilcoxon: tasks a won; mann-whitney: pairs of models
N_B_BETTER: Final = "n_b_better"
MEAN_A: Final = "mean_a"
MEAN_B: Final = "mean_b"
ESTIMATE: Final = "estimate"  # mean_a - mean_b
STATISTIC: Final = "statistic"  # scipy's: the signed-rank statistic W, or a's U
P_ADJUSTED: Final = "p_adjusted"  # Benjamini-Hochberg over the file's hypotheses
ALPHA: Final = "alpha"  # the verdict's level: 1 - the run's --level


class Procedure(StrEnum):
    """A planned test (scipy.stats, called as LearningBench's authors call it)."""

    WILCOXON = "wilcoxon"  # wilcoxon(x, y, zero_method="wilcox"): paired over tasks
    MANN_WHITNEY = "mann-whitney"  # mannwhitneyu(x, y): two groups of models' means


class Alternative(StrEnum):
    """The test's alternative; the claim is always that ``a`` scores higher."""

    TWO_SIDED = "two-sided"  # the authors'
    GREATER = "greater"  # one-sided, in the claim's direction


class Verdict(StrEnum):
    """What a standing says of a hypothesis, at ``alpha`` after Benjamini-Hochberg."""

    SUPPORTED = "supported"  # significant, a above b
    NOT_SUPPORTED = "not supported"  # not significant
    CONTRADICTED = "contradicted"  # significant, b above a (a two-sided test)
    NOT_ESTIMABLE = "not estimable"  # no test: a model missing, too few, nothing differs


# The smallest samples a test is run on: the authors' (``30_hypothesis_tests.py``: a
# Wilcoxon test needs 3 pairs, a Mann-Whitney test 2 in each group).
MIN_PAIRS: Final = 3
MIN_GROUP: Final = 2
SCOPE_JOIN: Final = "+"  # a scope of several categories, as the table names it
REQUIRED: Final = (ID, CLAIM, TEST, SCOPE, A, B)
KEYS: Final = (*REQUIRED, ALTERNATIVE)
SECTION: Final = "hypothesis"  # [[hypothesis]]


HYPOTHESES_TABLE: Final = Table(
    "hypotheses",
    {
        AS_OF: text_column(nullable=True),
        ID: text_column(),
        CLAIM: text_column(),
        TEST: text_column(isin=tuple(t.value for t in Procedure)),
        SCOPE: text_column(),
        ALTERNATIVE: text_column(isin=tuple(a.value for a in Alternative)),
        A: Column(pl.List(pl.String())),
        B: Column(pl.List(pl.String())),
        N: count_column(),
        N_A_BETTER: count_column(nullable=True),
        N_B_BETTER: count_column(nullable=True),
        MEAN_A: real_column(nullable=True),
        MEAN_B: real_column(nullable=True),
        ESTIMATE: real_column(nullable=True),
        STATISTIC: real_column(nullable=True, ge=0.0),
        P_VALUE: real_column(nullable=True, unit=True),
        P_ADJUSTED: real_column(nullable=True, unit=True),
        ALPHA: real_column(unit=True),
        VERDICT: text_column(isin=tuple(v.value for v in Verdict)),
        REASON: text_column(nullable=True),
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    sort=(ID,),
    strict=True,
    ordered=True,
    unique=(AS_OF, ID),
)


# --- the file ----------------------------------------------------------------------------------


class HypothesesError(ValueError):
    """A hypotheses file that cannot be read as declared: one line naming the file, the
    hypothesis, the key and the rule broken (a usage error, exit 2)."""

    code: ClassVar[ExitCode] = ExitCode.USAGE


@dataclass(frozen=True)
class Hypothesis:
    """One planned hypothesis: ``a`` scores higher than ``b`` in ``scope`` (its categories;
    none: overall), by ``test``."""

    id: str
    claim: str
    test: Procedure
    scope: tuple[str, ...]
    a: tuple[str, ...]
    b: tuple[str, ...]
    alternative: Alternative = Alternative.TWO_SIDED

    @property
    def scope_name(self) -> str:
        """The scope as the table names it: ``overall``, a category, or categories joined
        by ``+``."""
        return SCOPE_JOIN.join(self.scope) if self.scope else OVERALL


def parse_hypotheses(text: str, source: str) -> tuple[Hypothesis, ...]:
    """The hypotheses ``text`` (the TOML of file ``source``) declares, in its order;
    ``HypothesesError`` names the first rule it breaks.

    >>> parse_hypotheses('''[[hypothesis]]
    ... id = "H"
    ... claim = "x beats y"
    ... test = "wilcoxon"
    ... scope = "overall"
    ... a = "x"
    ... b = "y"''', "h.toml")[0].scope_name
    'overall'
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HypothesesError(f"{source}: not TOML: {error}") from None
    others = sorted(set(document) - {SECTION})
    if others:
        raise HypothesesError(
            f"{source}: unknown key {others[0]!r} at the top: the file holds "
            f"[[{SECTION}]] tables only"
        )
    entries = document.get(SECTION)
    if not isinstance(entries, list) or not entries:
        raise HypothesesError(f"{source}: declares no [[{SECTION}]]")
    planned: list[Hypothesis] = []
    for number, entry in enumerate(entries, 1):
        hypothesis = _hypothesis(entry, f"{source}: {SECTION} #{number}", source)
        if any(h.id == hypothesis.id for h in planned):
            raise HypothesesError(f"{source}: {SECTION} {hypothesis.id}: key 'id': declared twice")
        planned.append(hypothesis)
    return tuple(planned)


def _hypothesis(entry: object, where: str, source: str) -> Hypothesis:
    if not isinstance(entry, Mapping):
        raise HypothesesError(f"{where}: not a table")
    ident = entry.get(ID)
    if isinstance(ident, str) and ident.strip():
        where = f"{source}: {SECTION} {ident}"

    def fail(key: str, rule: str) -> HypothesesError:
        return HypothesesError(f"{where}: key {key!r}: {rule}")

    for key in entry:
        if key not in KEYS:
            raise fail(key, f"unknown (keys: {', '.join(KEYS)})")
    for key in REQUIRED:
        if key not in entry:
            raise fail(key, "missing")
    for key in (ID, CLAIM):
        if not _text(entry[key]):
            raise fail(key, "a non-empty string")
    test = _choice(entry[TEST], Procedure, lambda rule: fail(TEST, rule))
    alternative = _choice(
        entry.get(ALTERNATIVE, Alternative.TWO_SIDED.value),
        Alternative,
        lambda rule: fail(ALTERNATIVE, rule),
    )
    scope = _scope(entry[SCOPE], lambda rule: fail(SCOPE, rule))
    if test is Procedure.WILCOXON:
        a, b = (_model(entry[key], lambda rule, k=key: fail(k, rule)) for key in (A, B))
        if a == b:
            raise fail(B, f"the same model as a ({a[0]!r}): nothing to compare")
    else:
        a, b = (_group(entry[key], lambda rule, k=key: fail(k, rule)) for key in (A, B))
        both = sorted(set(a) & set(b))
        if both:
            raise fail(B, f"{both[0]!r} is in a too: the groups must not overlap")
    return Hypothesis(entry[ID].strip(), entry[CLAIM].strip(), test, scope, a, b, alternative)


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _choice(value: object, kind: Any, fail: Any) -> Any:
    names = ", ".join(member.value for member in kind)
    if not isinstance(value, str) or value not in {member.value for member in kind}:
        raise fail(f"{value!r} is not one of {names}")
    return kind(value)


def _scope(value: object, fail: Any) -> tuple[str, ...]:
    """``overall`` (no category), a category, or a list of distinct categories."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise fail("'overall', a category, or a non-empty list of categories")
    for name in names:
        if name != OVERALL and name not in CATEGORIES:
            raise fail(f"{name!r} is not 'overall' or a category ({', '.join(CATEGORIES)})")
    if OVERALL in names:
        if len(names) > 1:
            raise fail("'overall' is every category: list categories, or 'overall' alone")
        return ()
    if len(set(names)) < len(names):
        raise fail("a category is listed twice")
    return tuple(names)


def _model(value: object, fail: Any) -> tuple[str, ...]:
    if not _text(value):
        raise fail("a wilcoxon test compares two models: a model's name (a string)")
    assert isinstance(value, str)
    return (value,)


def _group(value: object, fail: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(_text(v) for v in value):
        raise fail("a mann-whitney test compares two groups: a list of model names")
    if len(value) < MIN_GROUP:
        raise fail(f"{len(value)} model(s): a group needs at least {MIN_GROUP}")
    if len(set(value)) < len(value):
        raise fail("a model is listed twice")
    return tuple(value)
