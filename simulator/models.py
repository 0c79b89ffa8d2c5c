"""Simulated models: four skill profiles and the reasoning voice of each.

A model is a name and a skill. The skill's ``Profile`` holds the knobs that the tasks of
``simulator.tasks`` read when they play an episode; the tasks never branch on a model's
name, only on these numbers (and on ``guesses`` and ``strategy``):

- ``random``: guesses every answer and moves at random; asks for a random number of examples.
- ``greedy``: commits to the first, shallowest hypothesis: asks for no extra examples, falls
  for blocking, deceptive demonstrations and aliased states, hill-climbs in interactive
  tasks, and practises at a flat, middling level.
- ``learner``: asks for several extra examples and learns from them, often (not always)
  sees through traps, explores before it exploits, and improves over practice rounds.
- ``near-oracle``: infers the rule almost always from few examples, plays interactive
  tasks by consistent hypotheses, and is good from the first practice round on.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Skill(StrEnum):
    RANDOM = "random"
    GREEDY = "greedy"
    LEARNER = "learner"
    NEAR_ORACLE = "near-oracle"


class Strategy(StrEnum):
    """How a model plays an interactive (runtime RL) task."""

    RANDOM = "random"  # any move
    HILL_CLIMB = "hill_climb"  # keep what scored best so far, change one thing at a time
    PLAN = "plan"  # keep the hypotheses consistent with all feedback, act on the first


@dataclass(frozen=True)
class Profile:
    """The knobs of one skill level (all probabilities are per episode, item or move)."""

    skill: Skill
    guesses: bool  # answers are uninformed guesses: no rule is inferred at all
    accuracy: float  # chance an answer applies the rule the model holds without a slip
    insight: float  # chance of seeing through a trap with only the initial evidence
    per_example: float  # insight gained per extra example requested
    extra_examples: tuple[int, int]  # examples requested beyond the initial ones (range)
    strategy: Strategy
    focus: float  # interactive tasks: chance a move follows the strategy, not a random move
    round_waste: tuple[float, ...]  # procedural: share of wasted moves in each practice round
    transfer: float  # procedural: chance a transfer test is answered by the practised procedure

    def sees_through(self, rng: random.Random, extra: int = 0) -> bool:
        """Whether the model sees through this episode's trap after `extra` more examples."""
        if self.guesses:
            return False
        return rng.random() < min(1.0, self.insight + self.per_example * extra)

    def slips(self, rng: random.Random) -> bool:
        return self.guesses or rng.random() >= self.accuracy

    def waste(self, round_index: int) -> float:
        """The share of wasted moves in practice round `round_index` (1-based)."""
        rates = self.round_waste
        return rates[min(round_index, len(rates)) - 1]


PROFILES: dict[Skill, Profile] = {
    Skill.RANDOM: Profile(
        skill=Skill.RANDOM,
        guesses=True,
        accuracy=0.0,
        insight=0.0,
        per_example=0.0,
        extra_examples=(0, 7),
        strategy=Strategy.RANDOM,
        focus=0.0,
        round_waste=(1.5, 1.5, 1.5, 1.5, 1.5),
        transfer=0.1,
    ),
    Skill.GREEDY: Profile(
        skill=Skill.GREEDY,
        guesses=False,
        accuracy=0.85,
        insight=0.12,
        per_example=0.0,
        extra_examples=(0, 0),
        strategy=Strategy.HILL_CLIMB,
        focus=0.9,
        round_waste=(0.45, 0.45, 0.45, 0.45, 0.45),
        transfer=0.45,
    ),
    Skill.LEARNER: Profile(
        skill=Skill.LEARNER,
        guesses=False,
        accuracy=0.9,
        insight=0.45,
        per_example=0.08,
        extra_examples=(3, 6),
        strategy=Strategy.PLAN,
        focus=0.7,
        round_waste=(0.9, 0.6, 0.35, 0.15, 0.05),
        transfer=0.75,
    ),
    Skill.NEAR_ORACLE: Profile(
        skill=Skill.NEAR_ORACLE,
        guesses=False,
        accuracy=0.97,
        insight=0.93,
        per_example=0.03,
        extra_examples=(1, 2),
        strategy=Strategy.PLAN,
        focus=0.97,
        round_waste=(0.04, 0.03, 0.03, 0.02, 0.02),
        transfer=0.95,
    ),
}


# What a call costs (contract 1.3's usage), in US dollars per million tokens sent and
# received: the more skilled, the dearer, as the models of a real leaderboard are.
PRICES: dict[Skill, tuple[float, float]] = {
    Skill.NEAR_ORACLE: (3.0, 15.0),
    Skill.LEARNER: (0.8, 4.0),
    Skill.GREEDY: (0.15, 0.6),
    Skill.RANDOM: (0.05, 0.2),
}


@dataclass(frozen=True)
class Model:
    """An evaluated model: the name written to the dump and its skill."""

    name: str
    skill: Skill

    @property
    def profile(self) -> Profile:
        return PROFILES[self.skill]

    @property
    def prices(self) -> tuple[float, float]:
        """US dollars per million input and output tokens."""
        return PRICES[self.skill]


DEFAULT_MODELS: tuple[Model, ...] = (
    Model("near-oracle-xl", Skill.NEAR_ORACLE),
    Model("learner-m", Skill.LEARNER),
    Model("greedy-s", Skill.GREEDY),
    Model("random-xs", Skill.RANDOM),
)


def parse_model(spec: str) -> Model:
    """``NAME=SKILL`` (e.g. ``my-model=learner``) as a Model.

    >>> parse_model("m1=near-oracle")
    Model(name='m1', skill=<Skill.NEAR_ORACLE: 'near-oracle'>)
    """
    name, sep, skill = spec.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"expected NAME=SKILL, got {spec!r}")
    try:
        return Model(name.strip(), Skill(skill.strip()))
    except ValueError:
        known = ", ".join(s.value for s in Skill)
        raise ValueError(f"unknown skill {skill!r} (known: {known})") from None


# --------------------------------------------------------------------------- voice

# Sentences a model adds around the facts it states when the transcript is bulky. ``{task}``
# is the task's title, ``{n}`` a number from the task state.
_MUSINGS: dict[Skill, tuple[str, ...]] = {
    Skill.NEAR_ORACLE: (
        "Before answering I will write down every hypothesis that is still consistent with "
        "the evidence and strike out the ones the log contradicts.",
        "The important thing in {task} is not to over-read coincidences: a pattern that holds "
        "only in the first few observations is not yet a rule.",
        "I count {n} observations that bear directly on the question; the others are "
        "redundant and only confirm what the first ones already settle.",
        "Let me check the candidate rule against each observation in turn rather than "
        "against a summary, since summaries hide the exceptions.",
        "A second pass over the evidence finds no observation that the rule fails to explain, "
        "so I will commit to it.",
        "Where the evidence does not decide a question I will say so explicitly instead of "
        "defaulting to the most frequent answer.",
        "I will keep the answers in the exact format the instructions ask for, one per "
        "question, and leave the reasoning here.",
        "The cheapest consistent explanation is also the one that predicts the held-out "
        "cases best, so I prefer it over more elaborate alternatives.",
        "One trap in tasks like {task} is that the first observations are chosen to make a "
        "simpler rule look right; I will check the later ones against that simpler rule "
        "explicitly and see where it breaks.",
        "It is worth separating what the evidence shows from what it merely fails to rule "
        "out. The first kind of statement I can answer with confidence; the second kind "
        "needs either more evidence or an explicit 'cannot tell'.",
        "To be safe I will also derive the answer a second way, from the structure of the "
        "rule rather than from the nearest example, and compare the two results.",
        "The {n} observations are enough to pin the rule down: each free parameter is "
        "fixed by at least two of them, and the remaining ones serve as checks.",
    ),
    Skill.LEARNER: (
        "My first impression was a simpler rule, but it does not fit all {n} observations, "
        "so I am revising it.",
        "I am not fully sure yet. More evidence would help, and asking for it costs a little "
        "but being wrong costs more.",
        "In the previous attempt at {task} I answered too quickly; this time I will compare "
        "each new observation with my current guess before moving on.",
        "The pattern seems to hold for most cases. There may be an exception I have not "
        "seen, which I will watch for.",
        "Let me restate what I have learned so far and check whether it explains the last "
        "observation too.",
        "I think the rule has two parts. I have the first part; the second part is less "
        "certain and I will test it on the next example.",
        "Working through it again more slowly: the earlier mistake came from ignoring the "
        "order of the observations.",
        "I notice I keep wanting to apply the first pattern I saw. Let me deliberately look "
        "for an observation that breaks it before I commit.",
        "Summarising: most of the {n} observations agree with my rule, one or two I cannot "
        "explain yet. I will go with the rule but keep those in mind.",
        "It helps to write the cases out in a table. Doing that, the exceptions line up in "
        "a way that suggests a second condition I had missed.",
        "I am getting more confident with each example. The last one fits the revised rule, "
        "which is a good sign that the revision is right.",
    ),
    Skill.GREEDY: (
        "The pattern is clear from the first observations, so I will go with it.",
        "No need for more evidence: the obvious reading of {task} explains what I see.",
        "I will answer directly; the first {n} observations are enough.",
        "This looks like the usual kind of rule, so I will apply it to every question.",
        "Moving on quickly to the answers.",
        "Same idea as before: the simplest rule that fits the first cases.",
        "There is no sign of anything unusual here, so I will not overthink it.",
    ),
    Skill.RANDOM: (
        "I am not sure what the rule is.",
        "There is a lot here. I will pick something plausible.",
        "Some of these answers are guesses.",
        "The observations look mixed to me; I cannot see a pattern.",
        "I will answer from first impressions.",
    ),
}

_LEADS: dict[Skill, tuple[str, ...]] = {
    Skill.NEAR_ORACLE: ("Let me reason step by step.", "Let me lay out the evidence first."),
    Skill.LEARNER: ("Thinking it over:", "Let me think about this carefully."),
    Skill.GREEDY: ("Quick read:", "Straightforward:"),
    Skill.RANDOM: ("Hmm.", "OK."),
}


def reasoning(
    rng: random.Random,
    skill: Skill,
    facts: Sequence[str],
    *,
    task: str,
    n: int,
    bulk: bool,
    closing: str = "Now the answers.",
) -> str:
    """An assistant's reasoning: a lead, the facts it states, and (bulk) its musings.

    A near-oracle states every fact, a learner all but one, a greedy model the first, a
    random model none. Deterministic for a given `rng` state.
    """
    kept = {
        Skill.NEAR_ORACLE: list(facts),
        Skill.LEARNER: list(facts[: max(1, len(facts) - 1)]),
        Skill.GREEDY: list(facts[:1]),
        Skill.RANDOM: [],
    }[skill]
    parts = [rng.choice(_LEADS[skill])]
    if bulk:
        bank = _MUSINGS[skill]
        count = min(len(bank), rng.randint(5, 8))
        musings = [m.format(task=task, n=n) for m in rng.sample(bank, count)]
        parts += [musings[0], *kept, *musings[1:]]
    else:
        parts += kept
    if closing:
        parts.append(closing)
    return " ".join(parts)
