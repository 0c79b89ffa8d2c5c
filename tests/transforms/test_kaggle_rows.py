"""One harness run as contract rows (``transforms.kaggle_rows``), on hand-made runs."""

from __future__ import annotations

import json
from dataclasses import dataclass

import polars as pl
import pytest

from schemas.contract import Category, Status
from tests.importers.kaggle_reference import reference_score
from transforms.kaggle_rows import Usage, episode_rows


@dataclass(frozen=True)
class Call:
    chat: str
    sent: tuple[tuple[str, str], ...]
    reply: str | None
    usage: Usage | None = None  # contract 1.3: none recorded


def _rows(category: Category, calls: list[Call], inputs: dict, **kw: object) -> pl.DataFrame:
    return episode_rows(
        run_id="t-run_id_Run_1_m",
        episode_id="t-run_id_Run_1_m@2026-04-13T03:58:33.214679Z",
        model="m",
        task="t",
        category=category,
        start_time="2026-04-13T03:58:33.214679Z",
        end_time="2026-04-13T03:59:06.117403123Z",
        requests=calls,
        inputs=inputs,
        status=kw.get("status", Status.COMPLETED),  # type: ignore[arg-type]
        reported_score=kw.get("reported"),  # type: ignore[arg-type]
    )


def _rl_inputs(solved: bool, step_y: int, progress: float) -> dict:
    params = {"budget": 5, "min_explore": 1, "floor": 0.1, "progress": "max"}
    return {"params": params, "rl": {"solved": solved, "step_y": step_y, "progress": progress}}


@pytest.mark.parametrize("step_y", [1, 2, 3])
def test_a_solved_run_gets_its_solving_feedback_after_the_task_s_step(step_y: int) -> None:
    calls = [Call("c", (("user", f"p{i}"),), f"r{i}") for i in range(3)]
    rows = _rows(Category.RUNTIME_RL, calls, _rl_inputs(True, step_y, 1.0))
    kinds = rows["kind"].to_list()
    feedback = kinds.index("feedback")
    assert kinds[:feedback].count("action") == step_y
    assert rows["solved"][feedback] is True
    # the formula's efficiency for step_y, budget 5, one free step
    eff = 1.0 if step_y <= 1 else max(0.1, 1.0 - 0.9 * ((step_y - 1) / 4))
    assert reference_score(rows) == round(0.55 + 0.25 * eff + 0.20 * 1.0, 4)


def test_an_unsolved_run_gets_one_feedback_with_the_task_s_progress_after_the_last_action() -> None:
    calls = [Call("c", (("user", "p"),), "r"), Call("c", (("user", "q"),), None)]
    rows = _rows(Category.RUNTIME_RL, calls, _rl_inputs(False, 2, 0.375))
    assert rows["kind"].to_list()[-2:] == ["feedback", "episode_end"]
    assert rows.filter(pl.col("kind") == "action").height == 2
    assert reference_score(rows) == round(0.20 * 0.375, 4)


def test_a_solved_step_beyond_the_calls_cannot_be_written() -> None:
    calls = [Call("c", (("user", "p"),), "r")]
    with pytest.raises(ValueError, match="2 steps"):
        _rows(Category.RUNTIME_RL, calls, _rl_inputs(True, 2, 1.0))


def test_a_request_holding_two_prompts_is_a_failed_call_then_a_reply() -> None:
    calls = [Call("c", (("user", "p1"), ("system", "s"), ("user", "p2")), "r")]
    rows = _rows(
        Category.ASSOCIATIVE_LEARNING,
        calls,
        {"items": [{"item_id": "q", "expected": "A", "answer": "A", "verdict": True}]},
    )
    body = rows.filter(pl.col("kind") == "message").select("role", "content").rows()
    assert body == [
        ("user", "p1"),
        ("assistant", None),
        ("system", "s"),
        ("user", "p2"),
        ("assistant", "r"),
    ]


def test_items_answers_verdicts_and_the_reported_score() -> None:
    items = [
        {"item_id": "q1", "expected": "A", "answer": "a", "verdict": True},
        {"item_id": "q2", "expected": "[1, 2]", "answer": None, "verdict": False},
    ]
    rows = _rows(
        Category.OBSERVATIONAL_LEARNING,
        [Call("c", (("user", "p"),), "r")],
        {"items": items},
        reported=0.5,
    )
    item_rows = rows.filter(pl.col("kind") == "item")
    assert item_rows.select("item_id", "expected", "match").rows() == [
        ("q1", "A", "recorded"),
        ("q2", "[1, 2]", "recorded"),
    ]
    answers = rows.filter(pl.col("kind") == "answer")
    assert answers.select("item_id", "content", "verdict").rows() == [
        ("q1", "a", True),
        ("q2", None, False),
    ]
    end = rows.filter(pl.col("kind") == "episode_end")
    assert end.select("status", "reported_score").rows() == [("completed", 0.5)]
    assert reference_score(rows) == 0.5
    assert rows["turn"].to_list() == list(range(rows.height))
    assert rows.filter(pl.col("kind") == "episode_start")["instance_id"].to_list() == ["t"]
    start_ts, end_ts = rows["ts"][0], rows["ts"][-1]
    assert (start_ts.microsecond, end_ts.microsecond) == (214679, 117403)


def test_examples_rounds_and_params_as_the_task_used_them() -> None:
    params = {"initial_examples": 4, "max_examples": 14, "free_threshold": 4, "num_test_items": 4}
    items = [
        {"item_id": str(i), "expected": "IN", "answer": "IN", "verdict": i < 3} for i in range(4)
    ]
    rows = _rows(
        Category.CONCEPT_FORMATION,
        [Call("c", (("user", "p"),), "r")],
        {"params": params, "items": items, "examples_used": 9},
    )
    assert rows.filter(pl.col("kind") == "example").height == 9
    assert json.loads(rows["params"][0]) == params
    assert reference_score(rows) == 3 / 4 * (0.40 + 0.60 * (1.0 - (9 - 4) / (14 - 4)))
