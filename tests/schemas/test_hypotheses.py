"""``schemas.hypotheses``: a hypotheses file read as declared, or refused in one line that
names the file, the hypothesis, the key and the rule it breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.exits import ExitCode
from schemas.hypotheses import (
    Alternative,
    HypothesesError,
    Procedure,
    parse_hypotheses,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "learningbench-hypotheses.toml"

WILCOXON = """
[[hypothesis]]
id = "H4"
claim = "Thinking outperforms Instruct"
test = "wilcoxon"
scope = "concept_formation"
a = "Thinking"
b = "Instruct"
"""


def test_the_learningbench_example_declares_h3_and_h4_as_the_authors() -> None:
    h3, h4 = parse_hypotheses(EXAMPLE.read_text(), str(EXAMPLE))
    assert (h3.id, h3.test, h3.scope) == (
        "H3",
        Procedure.MANN_WHITNEY,
        ("concept_formation", "observational_learning"),
    )
    assert h3.scope_name == "concept_formation+observational_learning"
    assert (len(h3.a), len(h3.b)) == (8, 6)  # the authors' 8 vs 6 models
    assert (h4.id, h4.test, h4.scope, h4.scope_name) == (
        "H4",
        Procedure.WILCOXON,
        ("concept_formation",),
        "concept_formation",
    )
    assert h4.a == ("Qwen 3 Next 80B Thinking",) and h4.b == ("Qwen 3 Next 80B Instruct",)
    assert h3.alternative is h4.alternative is Alternative.TWO_SIDED  # the authors' default


def test_a_scope_is_overall_a_category_or_a_list_and_the_alternative_may_be_one_sided() -> None:
    (overall,) = parse_hypotheses(WILCOXON.replace('"concept_formation"', '"overall"'), "f")
    assert overall.scope == () and overall.scope_name == "overall"
    text = WILCOXON + 'alternative = "greater"\n'
    assert parse_hypotheses(text, "f")[0].alternative is Alternative.GREATER


def _with(key: str, value: str) -> str:
    """``WILCOXON`` with ``key`` set to ``value`` (TOML), or removed (``value`` empty)."""
    lines = [line for line in WILCOXON.splitlines() if not line.startswith(f"{key} =")]
    return "\n".join(lines) + (f"\n{key} = {value}\n" if value else "\n")


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("[[hypothesis]\n", "h.toml: not TOML", "line 1"),
        ("", "h.toml: declares no [[hypothesis]]", ""),
        ('title = "x"\n' + WILCOXON, "h.toml: unknown key 'title' at the top", ""),
        (_with("scope", ""), "hypothesis H4: key 'scope'", "missing"),
        (_with("scope", '"concept"'), "hypothesis H4: key 'scope'", "'concept' is not"),
        (_with("scope", '["overall", "runtime_rl"]'), "key 'scope'", "'overall' alone"),
        (_with("scope", '["runtime_rl", "runtime_rl"]'), "key 'scope'", "listed twice"),
        (_with("scope", "[]"), "key 'scope'", "non-empty list"),
        (_with("test", '"t-test"'), "key 'test'", "'t-test' is not one of wilcoxon"),
        (_with("alternative", '"less"'), "key 'alternative'", "'less' is not one of"),
        (_with("b", '"Thinking"'), "key 'b'", "the same model as a"),
        (_with("a", '["Thinking"]'), "key 'a'", "a model's name"),
        (_with("claim", '""'), "key 'claim'", "a non-empty string"),
        (_with("scop", '"overall"'), "key 'scop'", "unknown (keys: id, claim"),
        (_with("id", ""), "hypothesis #1: key 'id'", "missing"),
        (WILCOXON + WILCOXON, "hypothesis H4: key 'id'", "declared twice"),
        (
            _with("test", '"mann-whitney"'),
            "hypothesis H4: key 'a'",
            "a list of model names",
        ),
        (
            _with("test", '"mann-whitney"').replace('a = "Thinking"', 'a = ["x"]'),
            "key 'a'",
            "a group needs at least 2",
        ),
        (
            _with("test", '"mann-whitney"')
            .replace('a = "Thinking"', 'a = ["x", "y"]')
            .replace('b = "Instruct"', 'b = ["y", "z"]'),
            "key 'b'",
            "'y' is in a too",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_file_hypothesis_key_and_rule(
    text: str, where: str, message: str
) -> None:
    with pytest.raises(HypothesesError) as raised:
        parse_hypotheses(text, "h.toml")
    line = str(raised.value)
    assert line.startswith("h.toml: ") and where in line and message in line, line
    assert "\n" not in line  # one line
    assert raised.value.code is ExitCode.USAGE
