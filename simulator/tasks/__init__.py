"""The simulated benchmark's tasks: at least one per category, each with its rule function.

Every expected answer, feedback value and round score is computed by the task's rule
function (``cue_statuses``, ``hidden_numeric_rule``, ``velmari_plural``, ``run_mealy``,
``shifted_group_op``, ``mastermind_score``, ``hanoi_on_goal``, ``inversions``), never
hard-coded. A model's answer comes from the rule *it* holds: the right one, or the
shallow one a trap suggests (a blocked cue read as a cause, a line through even inputs
only, the first vowel instead of the last, an aliased machine state, ordinary addition),
with slips on top; a guessing model answers at random. See ``simulator.models`` for the
knobs.

| category | task | hidden | graded |
|---|---|---|---|
| associative learning | ``blocking_log`` | which cues cause the effect | 6 items |
| concept formation | ``hidden_numeric_rule`` | ``a x + b``, ``+ c`` for odd x | 4 items |
| language learning | ``vowel_harmony_plural`` | suffix harmony, accent, -n- | 4 items |
| observational learning | ``hidden_state_machine`` | a 3-state Mealy machine | 4 items |
| observational learning | ``hidden_group_operation`` | ``x + y + k (mod 7)`` | 4 items |
| runtime RL | ``mastermind_classic`` | a 4-peg code of 6 colours | feedback |
| runtime RL | ``hanoi_hidden_goal`` | the goal peg of the tower | feedback |
| procedural learning | ``adjacent_swap_sort`` | (5 practice rounds) | rounds, 4 items |

Each category's tasks and rule functions are in the module named after it
(``simulator.tasks.associative_learning``, ``concept_formation``, ``language_learning``,
``observational_learning``, ``runtime_rl``, ``procedural_learning``); the task list is here.
The rule functions of ``blocking_log``, ``vowel_harmony_plural``, ``hidden_state_machine``,
``mastermind_classic`` and ``adjacent_swap_sort`` are also those of the example dump
(``examples/make_example_dump.py`` imports them from those modules).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from schemas.contract import Category
from simulator.tasks.associative_learning import play_blocking_log
from simulator.tasks.concept_formation import play_hidden_numeric_rule
from simulator.tasks.language_learning import play_vowel_harmony
from simulator.tasks.observational_learning import play_group_operation, play_mealy
from simulator.tasks.procedural_learning import play_swap_sort
from simulator.tasks.runtime_rl import play_hanoi, play_mastermind
from simulator.transcript import Transcript


@dataclass(frozen=True)
class Task:
    """A task: its name and category in the dump, and how one episode of it is played."""

    name: str
    category: Category
    play: Callable[[random.Random, Transcript], None]


TASKS: tuple[Task, ...] = (
    Task("blocking_log", Category.ASSOCIATIVE_LEARNING, play_blocking_log),
    Task("hidden_numeric_rule", Category.CONCEPT_FORMATION, play_hidden_numeric_rule),
    Task("vowel_harmony_plural", Category.LANGUAGE_LEARNING, play_vowel_harmony),
    Task("hidden_state_machine", Category.OBSERVATIONAL_LEARNING, play_mealy),
    Task("hidden_group_operation", Category.OBSERVATIONAL_LEARNING, play_group_operation),
    Task("mastermind_classic", Category.RUNTIME_RL, play_mastermind),
    Task("hanoi_hidden_goal", Category.RUNTIME_RL, play_hanoi),
    Task("adjacent_swap_sort", Category.PROCEDURAL_LEARNING, play_swap_sort),
)
