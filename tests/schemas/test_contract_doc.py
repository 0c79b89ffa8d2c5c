"""docs/contract.md is the spec: every column, kind, role, match kind, status, category,
parameter and rule code it names exists in ``schemas/``, and ``schemas/`` has nothing the
document does not name."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from schemas.contract import (
    CATEGORY_VALUES,
    CONTRACT_VERSION,
    OPTIONAL_DTYPES,
    REPLY_KINDS,
    USAGE_DTYPES,
    USAGE_MAXIMA,
    USAGE_ROLE,
    Category,
    Col,
    Kind,
    Match,
    Role,
    Status,
)
from schemas.params import PARAMS
from schemas.rules import USAGE_INVALID, Rule

DOC = Path(__file__).parents[2] / "docs" / "contract.md"


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def section(text: str, heading: str) -> str:
    start = text.index(f"{heading}\n")
    level = heading.split(" ")[0]
    following = re.search(rf"\n#{{1,{len(level)}}} ", text[start + 1 :])
    return text[start : start + 1 + following.start()] if following else text[start:]


def first_table(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_version_is_the_schemas(doc: str) -> None:
    assert doc.splitlines()[0] == f"# The transcript dump contract, version {CONTRACT_VERSION}"


def test_columns(doc: str) -> None:
    columns = section(doc, "## Columns")
    assert [ticked(r[0])[0] for r in first_table(columns)] == [c.value for c in Col]
    optional = section(doc, "### Optional columns (1.1, 1.2, 1.3, 1.4, 1.5)")
    assert [ticked(r[0])[0] for r in first_table(optional)] == list(OPTIONAL_DTYPES)


def test_usage(doc: str) -> None:
    """Contract 1.3: the usage columns, their types and the rows they are read on; what a
    reply turn is."""
    rows = {
        ticked(r[0])[0]: r
        for r in first_table(section(doc, "### Optional columns (1.1, 1.2, 1.3, 1.4, 1.5)"))
    }
    for column, dtype in USAGE_DTYPES.items():
        assert rows[column][1].startswith(f"{str(dtype).lower()} ("), column
        assert rows[column][2] == f"role `{USAGE_ROLE}`" and rows[column][3] == "1.3", column
    usage = " ".join(section(doc, "## Usage (1.3)").split())
    kinds = " or ".join(f"`{k}`" for k in REPLY_KINDS)
    assert f"A **reply turn** is an `{USAGE_ROLE}` row of kind {kinds} with content" in usage


def test_usage_bounds(doc: str) -> None:
    """Contract 1.4: the bounds table is ``USAGE_MAXIMA``, column by column and value by
    value; a value beyond refuses the usage under the code the scorer writes, and the rule
    codes of rejects do not list it (usage never rejects an episode)."""
    bounds = section(doc, "### Bounds (1.4)")
    rows = {ticked(r[0])[0]: r[1] for r in first_table(bounds)}
    assert list(rows) == list(USAGE_MAXIMA)
    for column, bound in USAGE_MAXIMA.items():
        written = int(rows[column]) if USAGE_DTYPES[column].is_integer() else float(rows[column])
        assert written == bound and type(written) is type(bound), column
    assert f"`{USAGE_INVALID}`" in bounds and f"`{USAGE_INVALID}: turn " in bounds
    codes = [ticked(r[0])[0] for r in first_table(section(doc, "### Rule codes"))]
    assert USAGE_INVALID not in codes


def test_enums(doc: str) -> None:
    rows = {ticked(r[0])[0]: r for r in first_table(section(doc, "## Columns"))}
    assert ticked(rows["category"][3])[:-1] == [c.value for c in Category]
    assert ticked(rows["category"][3]) == list(CATEGORY_VALUES)  # 1.4: uncategorised last
    assert ticked(rows["role"][3]) == [r.value for r in Role]
    assert ticked(rows["status"][3])[1:] == [s.value for s in Status]  # after `episode_end`
    kinds = first_table(section(doc, "## Kinds"))
    assert [ticked(r[0])[0] for r in kinds] == [k.value for k in Kind]
    matching = section(doc, "## Matching an answer to an item")
    assert re.findall(r"^- `(\w+)`", matching, flags=re.M) == [m.value for m in Match]


def test_parameters(doc: str) -> None:
    named: dict[str, list[str]] = {}
    for row in first_table(section(doc, "## Where each formula's inputs come from")):
        for who in row[0].split(", "):
            named[who] = re.findall(r"`(\w+)` \(", row[2])
    words = {c: c.value.replace("_", " ").replace("runtime rl", "runtime RL") for c in Category}
    for category, params in PARAMS.items():
        assert named[words[category]] == [p.name for p in params], category


def test_rule_codes(doc: str) -> None:
    codes = [ticked(r[0])[0] for r in first_table(section(doc, "### Rule codes"))]
    assert sorted(codes) == sorted(r.value for r in Rule) and len(codes) == len(set(codes))
