"""A plain-Python score of imported LearningBench rows, written from the task files' own
scoring code (not from cogscore's scorer), to check that the rows carry every input a task's
formula used: the score computed here from the rows must equal the score the task returned.

Standing alone: its column names, kinds and formulas are its own copies (from the contract's
text and the task files), so a change to the importer's names fails here.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

# The 4 procedural tasks that still score with the previous formula (their files:
# ``sum(learning_scores) / 5 * 0.5 + (1.0 if test_passed else 0.0) * 0.5``).
OLD_PROCEDURAL = frozenset(
    {
        "boolean_circuit_proc_learning",
        "grammar_induction_proc_learning",
        "lights_out_variant_proc_learning",
        "voting_protocol_proc_learning",
    }
)


def _verdicts(rows: list[dict[str, Any]]) -> list[bool]:
    items = [r["item_id"] for r in rows if r["kind"] == "item"]
    answers: dict[str, tuple[int, bool]] = {}
    for r in rows:
        if r["kind"] == "answer":
            previous = answers.get(r["item_id"])
            if previous is None or r["turn"] > previous[0]:
                answers[r["item_id"]] = (r["turn"], bool(r["verdict"]))
    return [answers.get(i, (0, False))[1] for i in items]


def _concept(right: int, used: int, p: dict[str, Any]) -> float:
    accuracy = right / p["num_test_items"]
    if accuracy == 0:
        return 0.0
    free = max(p["initial_examples"], p["free_threshold"])
    if p["max_examples"] <= free or used <= free:
        efficiency = 1.0
    else:
        efficiency = max(0.0, 1.0 - (used - free) / (p["max_examples"] - free))
    return accuracy * (0.40 + 0.60 * efficiency)


def _rl(rows: list[dict[str, Any]], p: dict[str, Any]) -> float:
    actions, step_y, solved, values = 0, None, False, []
    for r in sorted(rows, key=lambda r: r["turn"]):
        if r["kind"] == "action":
            actions += 1
        elif r["kind"] == "feedback":
            if r["value"] is not None:
                values.append(r["value"])
            if r["solved"] and step_y is None:
                solved, step_y = True, actions
    progress = max(0.0, min(1.0, float(max(values) if values else 0.0)))
    budget, free, floor = p["budget"], p["min_explore"], p["floor"]
    if solved:
        assert step_y is not None
        step_y = max(1, min(step_y, budget))
        if step_y <= free:
            eff = 1.0
        else:
            paid = budget - free
            eff = max(floor, 1.0 - (1.0 - floor) * ((step_y - free) / paid)) if paid > 0 else 1.0
    else:
        eff = 0.0
    return round(0.55 * float(solved) + 0.25 * eff + 0.20 * progress, 4)


def _slope(scores: list[float]) -> float:
    n = len(scores)
    if n < 2:
        return 0.5
    x_mean, y_mean = (n - 1) / 2.0, sum(scores) / n
    num = sum((i - x_mean) * (s - y_mean) for i, s in enumerate(scores))
    den = sum((i - x_mean) ** 2 for i in range(n))
    if den == 0:
        return 0.5
    normalised = max(-1.0, min(1.0, (num / den) / (1.0 / (n - 1))))
    return round((normalised + 1.0) / 2.0, 4)


def _procedural(task: str, rounds: list[float], test: float) -> float:
    if task in OLD_PROCEDURAL:
        return sum(rounds) / 5 * 0.5 + test * 0.5
    n = len(rounds)
    k = max(1, n // 2)
    asymptote = sum(rounds[-k:]) / k
    if asymptote < 1e-9 and test < 1e-9:
        return 0.0
    weights = list(range(1, n + 1))
    consistency = sum(s * w for s, w in zip(rounds, weights, strict=True)) / sum(weights)
    raw = 0.30 * test + 0.25 * asymptote + 0.25 * _slope(rounds) + 0.20 * consistency
    return round(raw, 4)


def reference_score(frame: pl.DataFrame) -> float:
    """The task's score from one episode's rows."""
    rows = frame.sort("turn").to_dicts()
    category, task = rows[0]["category"], rows[0]["task"]
    params = json.loads(next(r["params"] for r in rows if r["kind"] == "episode_start"))
    verdicts = _verdicts(rows)
    if category in ("associative_learning", "observational_learning"):
        return sum(verdicts) / len(verdicts)
    if category in ("concept_formation", "language_learning"):
        used = sum(1 for r in rows if r["kind"] == "example")
        return _concept(sum(verdicts), used, params)
    if category == "runtime_rl":
        return _rl(rows, params)
    rounds = [
        r["value"] for r in sorted(rows, key=lambda r: r["round"] or 0) if r["kind"] == "round_end"
    ]
    return _procedural(task, rounds, sum(verdicts) / len(verdicts))
