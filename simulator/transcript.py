"""The rows of one simulated episode as a harness would log them.

A ``Transcript`` collects rows (dicts keyed by contract column name, a missing key meaning
null) in turn order and keeps a clock: every row gets ``DT``, the microseconds since the
episode started, from which ``simulator.dump`` derives ``ts``. Identity columns (run_id,
episode_id, model, task, category) are not set here: the dump writer adds them.

Texts come from templates and the task state. ``bulk`` makes the system prompt, the task
instructions and the model's reasoning as long as a real harness's (a few kB per
episode); without it every text is a short line. The clock and the texts draw from their
own random stream, so the task's rows and the model's answers do not depend on ``bulk``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any, TypeAlias

from schemas.contract import Col, Kind, Role, Status
from simulator.models import Model, Profile, reasoning

Row: TypeAlias = dict[str, Any]

DT = "_dt_us"  # microseconds since the episode's first row (not a contract column)

_SYSTEM_SHORT = "You are taking part in a learning benchmark. Answer in the requested format."

_SYSTEM_BULK = (
    "You are taking part in a learning benchmark. Each task hides a rule, a process or a "
    "goal that you must discover from the evidence you are given or that you gather "
    "yourself. The benchmark measures how you learn, not what you already know: every "
    "language, symbol set and rule in it was constructed for this evaluation, so prior "
    "knowledge will not help and may mislead you.\n\n"
    "Rules of the session:\n"
    "1. Answer every question in the exact format requested. Do not add commentary on the "
    "same line as an answer; put your reasoning in a separate message before it.\n"
    "2. Where a task lets you ask for more examples, each request is logged. The first few "
    "examples are free; further ones reduce your efficiency score. Ask only when the "
    "evidence you have does not settle the question.\n"
    "3. In interactive tasks every action counts against a step budget. Feedback after an "
    "action is exact; it never lies, but it may be partial.\n"
    "4. In practice rounds you receive corrective feedback after each round. Use it: the "
    "transfer questions that follow the practice get no feedback at all.\n"
    "5. If an instruction is ambiguous, choose the most literal reading and say which one "
    "you chose.\n\n"
    "Your transcript is graded automatically against answers computed by the task's rule "
    "function. Partial credit exists only where the task says so. Session: {session}. "
    "Model under evaluation: {model}. Task: {task}."
)


_USER_FOOTER = (
    "\n\nReply format: plain text, one reply per turn. The harness strips leading and "
    "trailing whitespace and compares your reply with the expected answer as described "
    "above. Replies longer than 2,000 characters are truncated. If you need to think, do it "
    "in a separate message before your reply; such messages are kept in the transcript but "
    "are not graded. Time limit per turn: 120 s."
)


class Transcript:
    """Rows of one episode in turn order, with a clock and a text style."""

    def __init__(
        self, text_rng: random.Random, model: Model, task: str, *, session: str, bulk: bool
    ) -> None:
        self.rows: list[Row] = []
        self.text = text_rng
        self.model = model
        self.profile: Profile = model.profile
        self.task = task
        self.session = session
        self.bulk = bulk
        self._clock = 0

    # ----------------------------------------------------------------- plumbing

    def add(self, kind: Kind, role: Role, **cols: Any) -> Row:
        """Append a row; its turn is its position, its time a plausible delay later."""
        content = cols.get(Col.CONTENT)
        if self.rows:
            if role == Role.ASSISTANT:  # a model: latency plus generation time per character
                chars = len(content) if isinstance(content, str) else 8
                self._clock += self.text.randint(300_000, 2_000_000) + 9_000 * chars
            else:
                self._clock += self.text.randint(2_000, 250_000)
        row: Row = {Col.TURN: len(self.rows), Col.KIND: kind.value, Col.ROLE: role.value, DT: 0}
        for key, value in cols.items():
            row[str(key)] = value.value if isinstance(value, Kind | Role | Status) else value
        row[DT] = self._clock
        self.rows.append(row)
        return row

    def prose(self, short: str, long: str) -> str:
        return long if self.bulk else short

    # ----------------------------------------------------------------- kinds

    def start(self, params: Mapping[str, Any]) -> None:
        """The ``episode_start`` row, then the system prompt."""
        self.add(Kind.EPISODE_START, Role.ENVIRONMENT, **{Col.PARAMS: json.dumps(dict(params))})
        text = _SYSTEM_BULK.format(session=self.session, model=self.model.name, task=self.task)
        self.add(Kind.MESSAGE, Role.SYSTEM, **{Col.CONTENT: self.prose(_SYSTEM_SHORT, text)})

    def user(self, short: str, long: str = "") -> None:
        """The task's instructions (bulk: the long version and the harness's format notes)."""
        text = self.prose(short, (long or short) + _USER_FOOTER)
        self.add(Kind.MESSAGE, Role.USER, **{Col.CONTENT: text})

    def env(self, text: str) -> None:
        self.add(Kind.MESSAGE, Role.ENVIRONMENT, **{Col.CONTENT: text})

    def say(self, text: str) -> None:
        """An assistant message (a request, a remark)."""
        self.add(Kind.MESSAGE, Role.ASSISTANT, **{Col.CONTENT: text})

    def think(self, facts: list[str], *, n: int, closing: str = "Now the answers.") -> None:
        """The model's reasoning: its voice, the facts it noticed, its musings (bulk)."""
        text = reasoning(
            self.text,
            self.profile.skill,
            facts,
            task=self.task.replace("_", " "),
            n=n,
            bulk=self.bulk,
            closing=closing,
        )
        self.say(text)

    def review(self, what: str) -> None:
        """A last look at the evidence before the graded answers."""
        self.think([f"Final check of {what} before answering."], n=len(self.rows), closing="")

    def example(self, text: str) -> None:
        self.add(Kind.EXAMPLE, Role.ENVIRONMENT, **{Col.CONTENT: text})

    def item(self, item_id: str, expected: str, match: str | None, question: str) -> None:
        cols = {Col.ITEM_ID: item_id, Col.EXPECTED: expected, Col.CONTENT: question}
        if match is not None:
            cols[Col.MATCH] = match
        self.add(Kind.ITEM, Role.ENVIRONMENT, **cols)

    def answer(self, item_id: str, text: str) -> None:
        self.add(Kind.ANSWER, Role.ASSISTANT, **{Col.ITEM_ID: item_id, Col.CONTENT: text})

    def action(self, text: str) -> None:
        self.add(Kind.ACTION, Role.ASSISTANT, **{Col.CONTENT: text})

    def feedback(self, value: float, solved: bool, text: str) -> None:
        cols = {Col.VALUE: value, Col.SOLVED: solved, Col.CONTENT: text}
        self.add(Kind.FEEDBACK, Role.ENVIRONMENT, **cols)

    def round_end(self, round_index: int, value: float, text: str) -> None:
        cols = {Col.ROUND: round_index, Col.VALUE: value, Col.CONTENT: text}
        self.add(Kind.ROUND_END, Role.ENVIRONMENT, **cols)

    def end(self) -> None:
        self.add(Kind.EPISODE_END, Role.ENVIRONMENT, **{Col.STATUS: Status.COMPLETED.value})
