"""One LearningBench harness run as contract rows (pure: no I/O, no harness).

How a run maps to rows (docs/importing.md; one run is one episode):

- ``episode_start`` (turn 0): the formula's parameters in ``params``, the task's name as
  ``instance_id`` (every run of a task faces the same instance: the task files seed their
  own randomness), the run's start time, as ``ts`` and as ``single_run_started`` (contract
  1.4: a harness run file is one run of its model on its task, whose later re-run on the
  same night replaces it rather than being averaged with it);
- concept formation and language learning: one ``example`` row per example the task counted
  (``examples_used`` as the task gave it to ``_concept_score``);
- every model call in the run file's order: what was sent as ``message`` rows (role
  ``user`` or ``system``), then the reply: an ``action`` (runtime RL: every call is a step,
  unreadable ones included) or an assistant ``message``; a call that failed has a reply row
  with null content; the request's usage (contract 1.3: its ``metrics``) on its reply row,
  the last it made (a call that failed before it has none of its own);
- runtime RL: one ``feedback`` row, after the ``step_y``-th action when the task says
  solved (``solved`` true), else after the last action; its ``value`` is the progress the
  task computed (best so far, noise free: computed inside the task, so the row carries the
  task's number and ``progress`` is ``max``);
- procedural learning: a ``round_end`` row per practice round with the round's score;
- every graded item: an ``item`` row (``expected``, ``match`` ``recorded``) and an
  ``answer`` row (the model's answer as the task read it, and the task's own ``verdict``);
- ``episode_end``: ``completed`` or ``error``, the score the harness recorded
  (``reported_score``), the run's end time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

import polars as pl

from schemas.contract import (
    COST_USD,
    DTYPES,
    INPUT_TOKENS,
    INSTANCE_ID,
    LATENCY_MS,
    OUTPUT_TOKENS,
    REPORTED_SCORE,
    SINGLE_RUN_STARTED,
    SOURCE_NAMES,
    USAGE_DTYPES,
    VERDICT,
    Category,
    Col,
    Kind,
    Match,
    Role,
    Status,
)

ROW_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{str(c): t for c, t in DTYPES.items()},
    INSTANCE_ID: pl.String(),
    REPORTED_SCORE: pl.Float64(),
    VERDICT: pl.Boolean(),
    **USAGE_DTYPES,
    SINGLE_RUN_STARTED: pl.Datetime("us", "UTC"),
    SOURCE_NAMES: pl.String(),
}
NANODOLLARS_PER_USD: Final = 1_000_000_000


@dataclass(frozen=True)
class Usage:
    """What one request cost, as contract 1.3 writes it on its reply row (None: not
    recorded). The harness records cost in nanodollars (integers: input and output apart),
    latency in whole milliseconds."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_nanodollars: int | None = None
    latency_ms: int | None = None

    def columns(self) -> dict[str, Any]:
        """The row's usage columns: tokens as they are, the cost in US dollars (float64, the
        nanodollars' nearest), the latency as float64 (exact: whole milliseconds)."""
        cost = self.cost_nanodollars
        return {
            INPUT_TOKENS: self.input_tokens,
            OUTPUT_TOKENS: self.output_tokens,
            COST_USD: None if cost is None else cost / NANODOLLARS_PER_USD,
            LATENCY_MS: None if self.latency_ms is None else float(self.latency_ms),
        }


class RecordedCall(Protocol):
    """A model call as the run file recorded it (``flows.importers.kaggle_files.Request``)."""

    @property
    def chat(self) -> str: ...
    @property
    def sent(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def reply(self) -> str | None: ...
    @property
    def usage(self) -> Usage | None: ...


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time as the harness writes it (``…Z``, up to nanoseconds)."""
    if not text:
        return None
    head, _, fraction = text.rstrip("Z").partition(".")
    micro = (fraction + "000000")[:6] if fraction else "000000"
    return datetime.fromisoformat(f"{head}.{micro}+00:00")


def episode_rows(
    *,
    run_id: str,
    episode_id: str,
    model: str,
    task: str,
    category: Category,
    start_time: str,
    end_time: str | None,
    requests: Sequence[RecordedCall],
    inputs: Mapping[str, Any],
    status: Status,
    reported_score: float | None,
    source_names: str | None = None,
) -> pl.DataFrame:
    """The contract rows of one run (``inputs``: what ``kaggle_capture.score_inputs`` gave,
    JSON-ready; ``model`` and ``task``: the names cogscore shows, ``source_names`` the run's
    own, contract 1.5). ``ValueError`` when the inputs cannot be written as rows."""
    rows: list[dict[str, Any]] = []

    def add(kind: Kind, role: Role | str, **values: Any) -> None:
        rows.append({str(Col.KIND): str(kind), str(Col.ROLE): str(role), **values})

    params = json.dumps(dict(inputs.get("params") or {}), sort_keys=True)
    add(Kind.EPISODE_START, Role.ENVIRONMENT, **{str(Col.PARAMS): params, "start": True})
    for _ in range(int(inputs.get("examples_used") or 0)):
        add(Kind.EXAMPLE, Role.ENVIRONMENT)
    rl = inputs.get("rl")
    reply_kind = Kind.ACTION if category is Category.RUNTIME_RL else Kind.MESSAGE
    actions = 0

    def feedback() -> None:
        assert rl is not None
        add(
            Kind.FEEDBACK,
            Role.ENVIRONMENT,
            **{str(Col.VALUE): float(rl["progress"]), str(Col.SOLVED): bool(rl["solved"])},
        )

    solved_after = int(rl["step_y"]) if rl is not None and rl["solved"] else None
    if solved_after is not None and solved_after <= 0:
        feedback()
    for request in requests:
        users = sum(1 for role, _ in request.sent if role == str(Role.USER))
        seen_users = 0
        for role, text in request.sent:
            add(Kind.MESSAGE, role, **{str(Col.CONTENT): text})
            if role == str(Role.USER):
                seen_users += 1
                if seen_users < users:  # a call that failed: no reply recorded
                    add(reply_kind, Role.ASSISTANT, **{str(Col.CONTENT): None})
                    actions += 1
                    if solved_after == actions:
                        feedback()
        usage = {} if request.usage is None else request.usage.columns()
        add(reply_kind, Role.ASSISTANT, **{str(Col.CONTENT): request.reply}, **usage)
        actions += 1
        if solved_after == actions:
            feedback()
    if rl is not None:
        if solved_after is not None and solved_after > actions:
            raise ValueError(
                f"the task counts {solved_after} steps to solve, the run has {actions} calls"
            )
        if solved_after is None:
            feedback()
    for number, value in enumerate(inputs.get("rounds") or [], start=1):
        add(
            Kind.ROUND_END,
            Role.ENVIRONMENT,
            **{str(Col.ROUND): number, str(Col.VALUE): float(value)},
        )
    items = list(inputs.get("items") or [])
    for item in items:
        add(
            Kind.ITEM,
            Role.ENVIRONMENT,
            **{
                str(Col.ITEM_ID): item["item_id"],
                str(Col.EXPECTED): item["expected"],
                str(Col.MATCH): Match.RECORDED.value,
            },
        )
    for item in items:
        add(
            Kind.ANSWER,
            Role.ASSISTANT,
            **{
                str(Col.ITEM_ID): item["item_id"],
                str(Col.CONTENT): item["answer"],
                VERDICT: bool(item["verdict"]),
            },
        )
    add(
        Kind.EPISODE_END,
        Role.ENVIRONMENT,
        **{str(Col.STATUS): str(status), REPORTED_SCORE: reported_score, "end": True},
    )
    started, ended = parse_time(start_time), parse_time(end_time)
    for turn, row in enumerate(rows):
        row[str(Col.TURN)] = turn
        row[str(Col.TS)] = started if row.pop("start", False) else None
        if row.pop("end", False):
            row[str(Col.TS)] = ended
        if turn == 0:
            row[INSTANCE_ID], row[SINGLE_RUN_STARTED] = task, started
            row[SOURCE_NAMES] = source_names
    constant = {
        str(Col.RUN_ID): run_id,
        str(Col.EPISODE_ID): episode_id,
        str(Col.MODEL): model,
        str(Col.TASK): task,
        str(Col.CATEGORY): str(category),
    }
    return pl.DataFrame(
        [{**constant, **row} for row in rows], schema=ROW_SCHEMA, orient="row"
    ).select(list(ROW_SCHEMA))
