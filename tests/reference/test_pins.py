"""Pins: the reference's own tables (``tests/reference/contract.py``) against the contract's
text, and the scorer's (``schemas``) against the reference's.

The reference imports nothing from the scorer, so the property tests compare two
implementations that read their numbers from two places; these pins make sure that the two
places say what the contract says. A change to a default, a minimum, a required flag, an
enum value or a rule code on either side fails here.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from schemas import contract as schema_contract
from schemas.params import PARAMS as SCHEMA_PARAMS
from schemas.params import PROGRESS_MODES as SCHEMA_PROGRESS_MODES
from schemas.rules import USAGE_INVALID as SCHEMA_USAGE_INVALID
from schemas.rules import Rule as SchemaRule
from tests.reference import contract as ref

CHECKOUT = Path(__file__).resolve().parents[2]
# The project's own copy of the contract (1.4; it began as ../shared/spec/dump-contract.md).
CONTRACT = CHECKOUT / "docs" / "contract.md"
DECISIONS = CHECKOUT / "docs" / "decisions.md"  # what the contract leaves open


def _section(text: str, heading: str) -> str:
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _table(section: str) -> list[list[str]]:
    """The body rows of the first markdown table in ``section``, cells stripped."""
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in rows[2:]]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@pytest.fixture(scope="module")
def contract() -> str:
    if not CONTRACT.exists():
        pytest.fail(f"the dump contract is missing: {CONTRACT}")
    return CONTRACT.read_text()


@pytest.fixture(scope="module")
def columns(contract: str) -> dict[str, list[str]]:
    return {_ticked(r[0])[0]: r for r in _table(_section(contract, "Columns"))}


# --- the reference against the contract's text ------------------------------------------------


def test_columns_and_nullability_are_the_contracts(columns: dict[str, list[str]]) -> None:
    assert tuple(columns) == ref.COLUMNS
    assert tuple(name for name, row in columns.items() if row[2] == "no") == ref.REQUIRED


def test_enum_values_are_the_contracts(contract: str, columns: dict[str, list[str]]) -> None:
    assert tuple(_ticked(columns["category"][3])) == (*ref.CATEGORIES, ref.UNCATEGORISED)
    assert tuple(_ticked(columns["role"][3])) == ref.ROLES
    assert tuple(_kinds(contract)) == ref.MATCH_MODES
    assert tuple(_ticked(columns["status"][3])[1:]) == ref.STATUSES  # after `episode_end`
    kinds = tuple(_ticked(r[0])[0] for r in _table(_section(contract, "Kinds")))
    assert kinds == ref.KINDS


def _kinds(contract: str) -> list[str]:
    """The match kinds, as the bullets of "Matching an answer to an item" name them."""
    section = _section(contract, "Matching an answer to an item")
    return re.findall(r"^- `(\w+)`", section, flags=re.M)


def test_optional_columns_are_the_contracts(contract: str) -> None:
    section = _section(contract, "Columns").split("### Optional columns", 1)[1]
    assert tuple(_ticked(r[0])[0] for r in _table(section)) == ref.OPTIONAL_COLUMNS


def test_episode_constant_fields_are_the_contracts(contract: str) -> None:
    rule = re.search(
        r"`turn` repeated within an episode; (.*) differing within one episode", contract
    )
    assert rule is not None
    assert set(_ticked(rule.group(1))) == set(ref.EPISODE_CONSTANT)


def test_default_match_modes_are_the_contracts(contract: str) -> None:
    sentence = re.search(
        r"Where `match` is null the category's default applies: ([^.]*)\.", contract
    )
    assert sentence is not None
    named = {"language learning": ref.LANGUAGE, "observational learning": ref.OBSERVATIONAL}
    said: dict[str, str] = {}
    for mode, who in re.findall(r"`(\w+)` for ([a-z ]+?)(?:,|$)", sentence.group(1)):
        said[named[who]] = mode
    everywhere_else = re.search(r"`(\w+)` everywhere else", sentence.group(1))
    assert everywhere_else is not None
    expected = {c: said.get(c, everywhere_else.group(1)) for c in ref.CATEGORIES}
    assert expected == ref.DEFAULT_MATCH
    assert (
        "(all but runtime RL)" in contract
        and set(ref.CATEGORIES) - {ref.RUNTIME_RL} == ref.NEEDS_ITEMS
    )


CATEGORY_ROWS = {
    "associative learning": (ref.ASSOCIATIVE,),
    "concept formation, language learning": (ref.CONCEPT, ref.LANGUAGE),
    "observational learning": (ref.OBSERVATIONAL,),
    "runtime RL": (ref.RUNTIME_RL,),
    "procedural learning": (ref.PROCEDURAL,),
}


def _contract_params(contract: str) -> dict[str, list[tuple[str, str, bool, Any]]]:
    """(name, type, required, default) per category, from the parameters column."""
    out: dict[str, list[tuple[str, str, bool, Any]]] = {}
    for row in _table(_section(contract, "Where each formula's inputs come from")):
        params: list[tuple[str, str, bool, Any]] = []
        cell = row[2]
        for name, inside in re.findall(r"`(\w+)` \(([^()]*(?:\([^()]*\)[^()]*)*)\)", cell):
            typed = re.fullmatch(r"(int|float)(?:, default:? (.+))?", inside)
            if typed is not None:
                kind, default = typed.groups()
                if default is None:
                    params.append((name, kind, True, None))
                elif default == "the number of items":
                    params.append((name, kind, False, ref.DERIVED))
                else:
                    params.append(
                        (name, kind, False, int(default) if kind == "int" else float(default))
                    )
            else:  # progress: (`max` default, or `last`)
                modes = _ticked(inside)
                assert "default" in inside and modes
                params.append((name, ref.PROGRESS_MODE, False, modes[0]))
                assert tuple(modes) == ref.PROGRESS_MODES
        for category in CATEGORY_ROWS[row[0]]:
            out[category] = params
    return out


def test_parameters_defaults_and_required_flags_are_the_contracts(contract: str) -> None:
    said = _contract_params(contract)
    mine = {
        category: [
            (
                p.name,
                p.type,
                p.required,
                ref.DERIVED if (p.default is None and not p.required) else p.default,
            )
            for p in params
        ]
        for category, params in ref.PARAMS.items()
    }
    assert mine == said
    for category, params in said.items():  # 0.10 and 0.1 are one value: check the type too
        for (_, _, _, want), p in zip(params, ref.PARAMS[category], strict=True):
            if want != ref.DERIVED:
                assert type(p.default) is type(want), (category, p.name)


def test_parameter_minimums_are_the_readmes() -> None:
    """docs/decisions.md: `budget` must be at least 1 and `practice_rounds` at least 1."""
    decisions = " ".join(
        _section(DECISIONS.read_text(), "Decisions where the contract is silent").split()
    )
    said = dict(re.findall(r"`(\w+)` (?:must be )?at least (\d+)", decisions))
    mine = {p.name: p.minimum for ps in ref.PARAMS.values() for p in ps if p.minimum is not None}
    assert mine == {name: int(v) for name, v in said.items()}


def test_usage_bounds_are_the_contracts(contract: str) -> None:
    """Contract 1.4's bounds table, read here without the scorer's help, is the reference's
    copy, and so is the code a refusal carries."""
    bounds = contract.split("### Bounds (1.4)\n", 1)[1].split("\n## ", 1)[0]
    said = {_ticked(r[0])[0]: r[1] for r in _table(bounds)}
    assert said == {column: f"{bound:.15g}" for column, bound in ref.USAGE_MAXIMA.items()}
    assert f"`{ref.USAGE_INVALID}`" in bounds


def test_rule_codes_cover_the_contracts_rejections() -> None:
    """Every rule code is lower snake case and unique; ``test_every_row_rule_is_tested`` (the
    reference) and ``test_rule_codes_are_the_scorers`` (below) tie it to both sides."""
    names = [v for k, v in vars(ref.Rule).items() if k.isupper()]
    assert len(names) == len(set(names)) == len(ref.RULES)
    assert all(re.fullmatch(r"[a-z_]+", n) for n in names)


# --- the scorer's schemas against the reference ------------------------------------------------


def test_rule_codes_are_the_scorers() -> None:
    assert {r.value for r in SchemaRule} == ref.RULES
    assert SCHEMA_USAGE_INVALID == ref.USAGE_INVALID


def test_usage_bounds_are_the_scorers() -> None:
    assert schema_contract.USAGE_MAXIMA == ref.USAGE_MAXIMA
    for column, bound in ref.USAGE_MAXIMA.items():  # 1000 and 1000.0 are one value
        assert type(schema_contract.USAGE_MAXIMA[column]) is type(bound), column


def test_schema_enums_are_the_references() -> None:
    s = schema_contract
    assert tuple(c.value for c in s.Col) == ref.COLUMNS
    assert tuple(c.value for c in s.REQUIRED) == ref.REQUIRED
    assert tuple(c.value for c in s.EPISODE_CONSTANT) == ref.EPISODE_CONSTANT
    assert tuple(c.value for c in s.Category) == ref.CATEGORIES
    assert tuple(r.value for r in s.Role) == ref.ROLES
    assert tuple(k.value for k in s.Kind) == ref.KINDS
    assert tuple(m.value for m in s.Match) == ref.MATCH_MODES
    assert tuple(x.value for x in s.Status) == ref.STATUSES
    assert {c.value: m.value for c, m in s.DEFAULT_MATCH.items()} == ref.DEFAULT_MATCH
    assert {c.value for c in s.NEEDS_ITEMS} == ref.NEEDS_ITEMS
    assert (s.FILE, s.DUMP_DATE) == (ref.FILE, ref.DUMP_DATE)
    assert tuple(s.OPTIONAL_DTYPES) == ref.OPTIONAL_COLUMNS


def _as_tuple(p: Any) -> tuple[Any, ...]:
    default = p.default
    return (p.name, str(p.type), p.required, type(default).__name__, default, p.minimum)


@pytest.mark.parametrize("category", ref.CATEGORIES)
def test_schema_params_are_the_references(category: str) -> None:
    """Every default, minimum, type and required flag of ``schemas/params.py``."""
    schema = {c.value: params for c, params in SCHEMA_PARAMS.items()}
    assert [_as_tuple(p) for p in schema[category]] == [_as_tuple(p) for p in ref.PARAMS[category]]
    assert tuple(SCHEMA_PROGRESS_MODES) == ref.PROGRESS_MODES
