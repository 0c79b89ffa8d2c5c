"""One model, whatever its source calls it (``transforms.names``): a harness slug, a score
table's ``model_slug`` and ``model_name`` join by the rule (the vendor prefix off, ``@`` as
``-``) or a names file's row; a name that matches nothing is a new model, said so."""

from __future__ import annotations

import pytest

from transforms.names import NameError_, Names, model_by_rule, read_names, task_by_rule


def test_a_harness_slug_joins_the_tables_slug_by_the_rule() -> None:
    names = Names()
    table = names.resolve(["claude-haiku-4-5-20251001"], "Claude Haiku 4.5")
    assert table == "Claude Haiku 4.5" and names.new == {
        table: ["claude-haiku-4-5-20251001", "Claude Haiku 4.5"]
    }
    names.new.clear()
    assert names.resolve(["anthropic/claude-haiku-4-5@20251001"]) == table
    assert names.new == {}  # a known model, never a second row


def test_a_names_file_joins_what_the_rule_does_not() -> None:
    given = read_names("alias,model\ngoogle/gemma-4-26b-a4b,Gemma 4 26B A4B\n", "f")
    names = Names(given=given)
    table = names.resolve(["gemma-4-26b-a4b-it"], "Gemma 4 26B A4B")
    assert names.resolve(["google/gemma-4-26b-a4b"]) == table
    assert list(names.new) == [table]
    without = Names(dump=dict(names.dump))
    without.dump.pop("google/gemma-4-26b-a4b")
    assert without.resolve(["google/gemma-4-26b-a4b"]) == "gemma-4-26b-a4b"
    assert list(without.new) == ["gemma-4-26b-a4b"]  # new, and said so


def test_names_of_two_models_or_a_file_that_renames_a_held_one_are_refused() -> None:
    names = Names()
    names.resolve(["gpt-5.4-2026-03-05"], "GPT-5.4")
    names.resolve(["gpt-5.4-mini-2026-03-17"], "GPT-5.4 mini")
    with pytest.raises(NameError_, match="two models"):
        names.resolve(["gpt-5.4-2026-03-05"], "GPT-5.4 mini")
    with pytest.raises(NameError_, match="does not rename"):
        Names(dump=dict(names.dump), given={"GPT-5.4": "GPT 5.4"})
    with pytest.raises(NameError_, match="header"):
        read_names("name,model\na,b\n", "f")


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("openai/gpt-5.4-2026-03-05", "gpt-5.4-2026-03-05"),
        ("anthropic/claude-haiku-4-5@20251001", "claude-haiku-4-5-20251001"),
        ("gpt-5.4-2026-03-05", "gpt-5.4-2026-03-05"),
    ],
)
def test_the_rule(source: str, shown: str) -> None:
    assert model_by_rule(source) == shown


def test_a_tasks_slug_is_its_harness_name() -> None:
    slug = "codon-table-translation-obs-learning"
    assert task_by_rule(slug) == task_by_rule(slug.replace("-", "_"))
