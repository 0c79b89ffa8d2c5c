"""Write the example dump of the demo: two nights, three models, every category.

    python examples/make_example_dump.py [--out examples/dump]

The output is deterministic (every episode draws from its own ``random.Random`` seeded by
its night, model, task and instance). Expected answers are computed by the tasks' rule
functions (imported from the modules of ``simulator.tasks``, which the dump simulator shares);
the three models differ in skill:

- ``oracle-large`` reasons correctly almost always and asks for few examples;
- ``learner-medium`` falls for blocking and deceptive demonstrations, asks for more
  examples, and improves over the practice rounds of procedural tasks;
- ``random-small`` guesses.

Each night also holds two episodes that break a contract rule and one harness error
(``EXPECTED_REJECTS`` in ``build_rows``' second result).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl

from examples.dumpkit import (
    Row,
    action,
    answer,
    episode,
    episode_end,
    example,
    feedback,
    item,
    message,
    round_end,
    write_dump,
)
from schemas.contract import FILE, Category, Col, Kind, Match, Role, Status
from schemas.rules import Rule

# The tasks' rule functions live in the simulator (simulator/tasks/), which reuses them.
from simulator.tasks.associative_learning import (
    CONFIRMED,
    NO,
    RULED_OUT,
    UNDETERMINED,
    UNKNOWN,
    YES,
    blocking_trials,
    cue_statuses,
    predict_compound,
)
from simulator.tasks.language_learning import random_root as _root
from simulator.tasks.language_learning import velmari_plural
from simulator.tasks.observational_learning import random_mealy, run_mealy
from simulator.tasks.procedural_learning import bubble_swaps, inversions
from simulator.tasks.runtime_rl import CODES, mastermind_score

SEED = 20261201
NIGHTS = ("2026-11-30", "2026-12-01")
DEFAULT_OUT = Path(__file__).resolve().parent / "dump"

ORACLE, LEARNER, RANDOM = "oracle", "learner", "random"


@dataclass(frozen=True)
class Model:
    name: str
    level: str  # ORACLE, LEARNER or RANDOM


MODELS = (
    Model("oracle-large", ORACLE),
    Model("learner-medium", LEARNER),
    Model("random-small", RANDOM),
)


@dataclass
class Task:
    """One generated task instance: what `episode` needs besides identity."""

    name: str
    category: Category
    params: dict[str, Any]
    turns: list[Row]


def _system(text: str) -> Row:
    return message(Role.SYSTEM, text)


SYSTEM_PROMPT = (
    "You are taking part in a learning benchmark. Each task hides a rule, a process or a "
    "goal that you must discover from the evidence you are given or that you gather. "
    "Answer every question in the exact format requested; do not add commentary on the "
    "same line as the answer. Your transcript is graded automatically."
)


# ============================================================ associative learning


def task_blocking_log(rng: random.Random, model: Model) -> Task:
    cues, trials = blocking_trials(rng)
    cause_a, cause_b, inert_a, inert_b, blocked, eliminated = cues
    truth = cue_statuses(cues, trials)
    log = "\n".join(
        f"Trial {i + 1:2d}: {' + '.join(p)} -> {'EFFECT' if e else 'no effect'}"
        for i, (p, e) in enumerate(trials)
    )
    pair = rng.sample(cues, 2)
    asked = rng.sample(cues, 4)
    n_unknown = sum(s == UNKNOWN for s in truth.values())

    believed = dict(truth)
    for c in cues:
        if model.level == RANDOM:
            believed[c] = rng.choice([CONFIRMED, RULED_OUT, UNKNOWN])
        elif model.level == LEARNER and truth[c] == UNKNOWN and rng.random() < 0.6:
            believed[c] = CONFIRMED  # the blocking error
        elif rng.random() > (0.97 if model.level == ORACLE else 0.9):
            believed[c] = rng.choice([CONFIRMED, RULED_OUT, UNKNOWN])
    believed_unknown = sum(s == UNKNOWN for s in believed.values())
    if model.level == RANDOM:
        believed_unknown = rng.randint(0, 4)

    # (item id, question, expected, match, the model's answer)
    questions: list[tuple[str, str, str, Match | None, str]] = [
        (
            f"q{i + 1}",
            f"What is the causal status of {c}? Answer {CONFIRMED}, {RULED_OUT} or {UNKNOWN}.",
            truth[c],
            None,
            believed[c],
        )
        for i, c in enumerate(asked)
    ]
    questions.append(
        (
            "q5",
            f"If {pair[0]} and {pair[1]} are presented together, will the effect occur? "
            f"Answer {YES}, {NO} or {UNDETERMINED}.",
            predict_compound([truth[c] for c in pair]),
            None,
            predict_compound([believed[c] for c in pair]),
        )
    )
    questions.append(
        (
            "q6",
            "How many of the six cues remain UNKNOWN? Answer with a number.",
            str(n_unknown),
            Match.INTEGER,
            str(believed_unknown),
        )
    )

    turns = [
        _system(SYSTEM_PROMPT),
        message(
            Role.USER,
            "Below is a log of trials. In each trial some cues were presented and the "
            "outcome was recorded. A cue causes the effect on its own; several causes "
            "together still give one effect. Decide for each cue whether the log confirms "
            f"it as a cause, rules it out, or leaves it unknown.\n{log}",
        ),
        message(
            Role.ASSISTANT,
            _reasoning(
                rng,
                model,
                [
                    f"{cause_a} and {cause_b} each produced the effect when presented alone.",
                    f"{inert_a} and {inert_b} never did.",
                    f"{blocked} only ever appeared together with {cause_a}, which already "
                    "explains the effect, so the log says nothing about it.",
                    f"{eliminated} appeared with {inert_a}; the outcome of that trial decides it.",
                ],
            ),
        ),
    ]
    for qid, text, expected, match, reply in questions:
        turns.append(item(qid, expected, match, content=text))
        turns.append(answer(qid, reply))
    turns.append(episode_end())
    return Task("blocking_log", Category.ASSOCIATIVE_LEARNING, {}, turns)


def _reasoning(rng: random.Random, model: Model, facts: list[str]) -> str:
    if model.level == RANDOM:
        return (
            "I will go through the evidence quickly. The pattern is not obvious to me, so I "
            "will answer from first impressions of the log and hope most of them hold up. "
            "Some answers are guesses."
        )
    kept = facts if model.level == ORACLE else facts[: max(1, len(facts) - 1)]
    lead = "Let me reason step by step." if model.level == ORACLE else "Thinking it over:"
    return " ".join([lead, *kept, "Now the answers."])


# ============================================================ concept formation


def task_linear_rule(rng: random.Random, model: Model) -> Task:
    a, b = rng.randint(2, 7), rng.randint(-6, 9)

    def f(x: int) -> int:  # the hidden rule
        return a * x + b

    params = {"initial_examples": 3, "max_examples": 12, "num_test_items": 4}
    xs = rng.sample(range(0, 25), 3 + 9 + 4)
    shown, pool, tests = xs[:3], xs[3:12], xs[12:]
    extra = {ORACLE: rng.randint(0, 1), LEARNER: rng.randint(2, 5), RANDOM: rng.randint(4, 9)}
    turns = [
        _system(SYSTEM_PROMPT),
        message(
            Role.USER,
            "A hidden function f maps whole numbers to whole numbers. You see three "
            "examples now and may ask for more, one at a time, by replying REQUEST_EXAMPLE "
            f"(at most {params['max_examples']} examples in total; the first few are free, "
            "more cost efficiency). Reply READY when you want the four test questions.",
        ),
        *[example(f"f({x}) = {f(x)}") for x in shown],
    ]
    for x in pool[: extra[model.level]]:
        turns.append(message(Role.ASSISTANT, "REQUEST_EXAMPLE"))
        turns.append(example(f"f({x}) = {f(x)}"))
    turns.append(
        message(
            Role.ASSISTANT,
            f"READY. The differences between examples are constant, so f is linear; "
            f"the slope looks like {a if model.level != RANDOM else rng.randint(1, 9)}.",
        )
    )
    right = {ORACLE: 0.97, LEARNER: 0.6 + 0.08 * extra[LEARNER], RANDOM: 0.05}[model.level]
    for i, x in enumerate(tests):
        qid = f"x{i + 1}"
        turns.append(item(qid, str(f(x)), Match.INTEGER, content=f"What is f({x})?"))
        got = f(x) if rng.random() < right else f(x) + rng.choice([-a, a, 1, -1, b])
        turns.append(answer(qid, str(got)))
    turns.append(episode_end())
    return Task("linear_rule", Category.CONCEPT_FORMATION, params, turns)


# ============================================================ language learning


def task_vowel_harmony(rng: random.Random, model: Model) -> Task:
    roots: list[str] = []
    while len(roots) < 3 + 7 + 4:
        r = _root(rng)
        if r not in roots:
            roots.append(r)
    shown, pool, tests = roots[:3], roots[3:10], roots[10:]
    params = {"initial_examples": 3, "max_examples": 10}
    extra = {ORACLE: rng.randint(1, 2), LEARNER: rng.randint(3, 5), RANDOM: rng.randint(0, 7)}
    turns = [
        _system(SYSTEM_PROMPT),
        message(
            Role.USER,
            "Velmari is a constructed language. You will see singular nouns with their "
            "plurals and must learn how the plural is formed, then write the plural of new "
            "nouns. Spell the answer exactly, with its accent. Reply MORE for another "
            "example (at most ten in total) or READY for the test.",
        ),
        *[example(f"{r} -> {velmari_plural(r)}") for r in shown],
    ]
    for r in pool[: extra[model.level]]:
        turns.append(message(Role.ASSISTANT, "MORE"))
        turns.append(example(f"{r} -> {velmari_plural(r)}"))
    turns.append(
        message(
            Role.ASSISTANT,
            "READY. The suffix vowel follows the last vowel of the root: e and i take an "
            "accented e, a, o and u take an accented o, and roots ending in a vowel add n "
            "before the suffix."
            if model.level != RANDOM
            else "READY. I think it adds a vowel at the end.",
        )
    )
    match = rng.choice([None, Match.NFC])
    for i, r in enumerate(tests):
        qid = f"w{i + 1}"
        truth = velmari_plural(r)
        if model.level == ORACLE:
            got = truth if rng.random() < 0.95 else r + "e"
            if rng.random() < 0.5:
                got = unicodedata.normalize("NFD", got)  # decomposed accent: still right
        elif model.level == LEARNER:
            roll = rng.random()
            if roll < 0.65:
                got = truth
            elif roll < 0.85:
                got = truth.replace("\u00e9", "e").replace("\u00f3", "o")  # lost the accent
            else:
                got = (
                    truth.replace("\u00e9", "\u00f3")
                    if "\u00e9" in truth
                    else truth.replace("\u00f3", "\u00e9")
                )  # wrong harmony
        else:
            got = r + rng.choice(["", "n"]) + rng.choice(["\u00e9", "\u00f3", "e", "o"])
        turns.append(item(qid, truth, match, content=f"Plural of {r}?"))
        turns.append(answer(qid, got))
    turns.append(episode_end())
    return Task("vowel_harmony_plural", Category.LANGUAGE_LEARNING, params, turns)


# ============================================================ observational learning


def task_mealy(rng: random.Random, model: Model) -> Task:
    machine = random_mealy(rng)
    wrong = dict(machine)  # the learner's near miss: one transition aliased
    key = rng.choice(sorted(wrong))
    wrong[key] = ((wrong[key][0] + 1) % 3, wrong[key][1])
    demos = ["".join(rng.choice("ab") for _ in range(rng.randint(4, 6))) for _ in range(6)]
    tests = ["".join(rng.choice("ab") for _ in range(rng.randint(6, 8))) for _ in range(4)]
    turns = [
        _system(SYSTEM_PROMPT),
        message(
            Role.USER,
            "A hidden machine reads a string of a and b, one symbol at a time, and writes "
            "one output bit for each symbol read. Its internal state is not shown. Here are "
            "demonstrations of input strings and the bits the machine wrote; then predict "
            "the bits for new strings, separated by spaces.",
        ),
        *[example(f"{d} -> {' '.join(run_mealy(machine, d))}") for d in demos],
    ]
    match = rng.choice([None, Match.SEQUENCE])
    for i, t in enumerate(tests):
        qid = f"s{i + 1}"
        truth = run_mealy(machine, t)
        if model.level == ORACLE:
            got = truth if rng.random() < 0.9 else run_mealy(wrong, t)
        elif model.level == LEARNER:
            got = run_mealy(wrong, t) if rng.random() < 0.5 else truth
        else:
            got = [rng.choice("01") for _ in t]
        sep = rng.choice([" ", " ", "  ", "\t"])
        turns.append(item(qid, " ".join(truth), match, content=f"Input: {t}"))
        turns.append(answer(qid, sep.join(got) + rng.choice(["", "\n"])))
    turns.append(episode_end())
    return Task("hidden_state_machine", Category.OBSERVATIONAL_LEARNING, {}, turns)


def _pair(rng: random.Random, pool: Sequence[int]) -> tuple[int, int]:
    x, y = rng.sample(pool, 2)
    return x, y


def task_group_operation(rng: random.Random, model: Model) -> Task:
    n, k = 7, rng.randint(1, 6)

    def op(x: int, y: int) -> int:  # the rule function: a shifted cyclic group
        return (x + y + k) % n

    identity = (-k) % n
    others = [x for x in range(n) if x != identity]
    demos = [(identity, rng.choice(others)) for _ in range(3)]  # deceptive: look like +
    demos += [_pair(rng, others) for _ in range(5)]
    tests = [_pair(rng, others) for _ in range(4)]
    turns = [
        _system(SYSTEM_PROMPT),
        message(
            Role.USER,
            f"The symbols 0 to {n - 1} are combined by a hidden operation written *. "
            "Study the table entries below, then give the result of new combinations as "
            "a single symbol.",
        ),
        *[example(f"{x} * {y} = {op(x, y)}") for x, y in demos],
    ]
    for i, (x, y) in enumerate(tests):
        qid = f"g{i + 1}"
        truth = op(x, y)
        if model.level == ORACLE:
            got = truth
        elif model.level == LEARNER:
            got = (x + y) % n if rng.random() < 0.4 else truth  # fooled by the first demos
        else:
            got = rng.randrange(n)
        turns.append(item(qid, str(truth), Match.SEQUENCE, content=f"{x} * {y} = ?"))
        turns.append(answer(qid, str(got)))
    turns.append(episode_end())
    return Task("hidden_group_operation", Category.OBSERVATIONAL_LEARNING, {}, turns)


# ============================================================ runtime RL


def task_mastermind(rng: random.Random, model: Model) -> Task:
    secret = rng.choice(CODES)
    budget = 12
    params: dict[str, Any] = {"budget": budget, "min_explore": 7, "floor": 0.1}
    candidates = list(CODES)
    rng.shuffle(candidates)
    turns = [
        _system(SYSTEM_PROMPT),
        message(
            Role.USER,
            "A secret code of four pegs is hidden; each peg is one of R G B Y O P and "
            "colours may repeat. Guess a code by replying with four letters. After each "
            "guess you are told LOCK (right colour in the right place) and DRIFT (right "
            f"colour in the wrong place). You have {budget} guesses.",
        ),
    ]
    for step in range(budget):
        explore = {ORACLE: 0.0, LEARNER: 0.5, RANDOM: 1.0}[model.level]
        guess = rng.choice(CODES) if rng.random() < explore else candidates[0]
        lock, drift = mastermind_score(secret, guess)
        if step % 3 == 1 and model.level != RANDOM:
            turns.append(
                message(
                    Role.ASSISTANT,
                    f"{len(candidates)} codes are still consistent with the feedback so "
                    "far; I pick one of them that splits the rest well.",
                )
            )
        turns.append(action(guess))
        turns.append(feedback(lock / 4, lock == 4, content=f"LOCK {lock} DRIFT {drift}"))
        if lock == 4:
            break
        candidates = [c for c in candidates if mastermind_score(c, guess) == (lock, drift)]
    turns.append(episode_end())
    return Task("mastermind_classic", Category.RUNTIME_RL, params, turns)


# ============================================================ procedural learning


def task_swap_sort(rng: random.Random, model: Model) -> Task:
    params = {"practice_rounds": 5}
    turns = [
        _system(SYSTEM_PROMPT),
        message(
            Role.USER,
            "Practice: in each of five rounds you get a list of numbers and sort it by "
            "swapping neighbours, written as the index of the left element (0 swaps "
            "positions 0 and 1). A round scores the fewest possible swaps divided by the "
            "swaps you used. Afterwards, four transfer questions without feedback.",
        ),
    ]
    for rnd in range(1, params["practice_rounds"] + 1):
        xs = rng.sample(range(10, 99), 6)
        swaps = bubble_swaps(xs)
        waste_rate = {
            ORACLE: 0.05,
            LEARNER: max(0.0, 1.1 - 0.25 * rnd),
            RANDOM: 1.5,
        }[model.level]
        for _ in range(round(len(swaps) * waste_rate * rng.uniform(0.7, 1.3))):
            i = rng.randrange(len(xs) - 1)
            pos = rng.randrange(len(swaps) + 1)
            swaps[pos:pos] = [i, i]  # a swap undone right away
        best = inversions(xs)
        score = 1.0 if not swaps else best / len(swaps)
        turns.append(message(Role.ENVIRONMENT, f"Round {rnd}: sort {xs}"))
        turns.append(message(Role.ASSISTANT, "Swaps: " + " ".join(map(str, swaps))))
        turns.append(
            round_end(rnd, round(score, 4), content=f"used {len(swaps)} swaps, fewest {best}")
        )
    right = {ORACLE: 0.95, LEARNER: 0.75, RANDOM: 0.1}[model.level]
    for i in range(4):
        qid = f"t{i + 1}"
        xs = rng.sample(range(10, 99), 7)
        best = inversions(xs)
        got = best if rng.random() < right else best + rng.choice([-2, -1, 1, 3])
        turns.append(
            item(
                qid,
                str(best),
                Match.INTEGER,
                content=f"What is the fewest number of neighbour swaps that sorts {xs}?",
            )
        )
        turns.append(answer(qid, f" {got}"))
    turns.append(episode_end())
    return Task("adjacent_swap_sort", Category.PROCEDURAL_LEARNING, params, turns)


# ============================================================ the dump

# (task generator, instances per model and night)
TASKS: list[tuple[Callable[[random.Random, Model], Task], int]] = [
    (task_blocking_log, 2),
    (task_linear_rule, 2),
    (task_vowel_harmony, 2),
    (task_mealy, 2),
    (task_group_operation, 1),
    (task_mastermind, 3),
    (task_swap_sort, 2),
]


def _rng(*key: object) -> random.Random:
    return random.Random(":".join(map(str, (SEED, *key))))


def _episode_id(*key: object) -> str:
    return "ep-" + hashlib.sha256(":".join(map(str, key)).encode()).hexdigest()[:12]


def _renumber(rows: list[Row]) -> None:
    """Turns 0..n-1 in list order, one second apart."""
    t0 = rows[0][Col.TS]
    for turn, r in enumerate(rows):
        r[Col.TURN] = turn
        r[Col.TS] = t0 + timedelta(seconds=turn)


def _bump_integer(rows: list[Row]) -> None:
    """Harness bug: an integer ground truth formatted as a float."""
    target = next(r for r in rows if r.get(Col.MATCH) == Match.INTEGER)
    target[Col.EXPECTED] = f"{target[Col.EXPECTED]}.0"


def _uncapped_examples(rows: list[Row]) -> None:
    """Harness bug: the example cap was not enforced (12 examples, max_examples 10)."""
    first_item = next(i for i, r in enumerate(rows) if r[Col.KIND] == Kind.ITEM)
    shown = [r for r in rows if r[Col.KIND] == Kind.EXAMPLE]
    extra: list[Row] = []
    for i in range(12 - len(shown)):
        again = shown[i % len(shown)]
        extra.append({**rows[first_item - 1], Col.CONTENT: "MORE"})
        extra.append({**again, Col.CONTENT: f"{again[Col.CONTENT]} (again)"})
    rows[first_item:first_item] = extra
    _renumber(rows)


def _lost_round(rows: list[Row]) -> None:
    """Harness bug: the third practice round was not logged."""
    rows[:] = [r for r in rows if not (r[Col.KIND] == Kind.ROUND_END and r[Col.ROUND] == 3)]


def _retried_message(rows: list[Row]) -> None:
    """Harness bug: a retried request logged twice under the same turn."""
    i = next(i for i, r in enumerate(rows) if r[Col.KIND] == Kind.MESSAGE and i > 0)
    rows.insert(i + 1, dict(rows[i]))


def _crash(reason: str, after: int) -> Callable[[list[Row]], None]:
    """Harness failure: the run stopped after `after` answers or feedbacks."""

    def crash(rows: list[Row]) -> None:
        done = [i for i, r in enumerate(rows) if r[Col.KIND] in (Kind.ANSWER, Kind.FEEDBACK)]
        cut = done[after - 1] + 1
        rows[cut:] = [{**rows[-1], Col.CONTENT: reason, Col.STATUS: Status.ERROR}]
        _renumber(rows)

    return crash


@dataclass(frozen=True)
class Problem:
    """An episode that a harness bug or failure spoiled; `rules` are the expected codes."""

    model: str
    task: Callable[[random.Random, Model], Task]
    spoil: Callable[[list[Row]], None]
    rules: frozenset[str]


PROBLEMS: dict[str, list[Problem]] = {
    NIGHTS[0]: [
        Problem(
            "learner-medium",
            task_linear_rule,
            _bump_integer,
            frozenset({Rule.INTEGER_EXPECTED_NOT_INTEGER}),
        ),
        Problem(
            "random-small",
            task_vowel_harmony,
            _uncapped_examples,
            frozenset({Rule.TOO_MANY_EXAMPLES}),
        ),
        Problem(
            "oracle-large",
            task_mastermind,
            _crash("harness error: environment server timed out after 30 s", after=3),
            frozenset({Rule.HARNESS_ERROR}),
        ),
    ],
    NIGHTS[1]: [
        Problem("learner-medium", task_swap_sort, _lost_round, frozenset({Rule.WRONG_ROUND_COUNT})),
        Problem("oracle-large", task_mealy, _retried_message, frozenset({Rule.DUPLICATE_TURN})),
        Problem(
            "learner-medium",
            task_blocking_log,
            _crash("harness error: model API rate limited (HTTP 429), giving up", after=2),
            frozenset({Rule.HARNESS_ERROR}),
        ),
    ],
}


def _episode(night: str, model_index: int, task: Task, key: Sequence[object], n: int) -> list[Row]:
    """The rows of one episode; `n` numbers the episodes of the night (start times)."""
    return episode(
        task.category,
        episode_id=_episode_id(*key),
        model=MODELS[model_index].name,
        task=task.name,
        run_id=f"nightly-{night}",
        params=task.params,
        file=f"dump_date={night}/part-{model_index}.parquet",
        turns=task.turns,
        ts=datetime.fromisoformat(night).replace(hour=1, tzinfo=UTC) + timedelta(seconds=90 * n),
    )


def build_rows() -> tuple[list[Row], dict[tuple[str | None, str], set[str]]]:
    """All rows of the example dump and the rules expected per unscored (episode, file)."""
    rows: list[Row] = []
    expected: dict[tuple[str | None, str], set[str]] = {}
    for night in NIGHTS:
        n = 0
        for mi, model in enumerate(MODELS):
            for gen, count in TASKS:
                for k in range(count):
                    key = (night, model.name, gen.__name__, k)
                    rows += _episode(night, mi, gen(_rng(*key), model), key, n)
                    n += 1
        for pi, problem in enumerate(PROBLEMS[night]):
            mi = next(i for i, m in enumerate(MODELS) if m.name == problem.model)
            pkey = (night, problem.model, problem.task.__name__, "problem", pi)
            built = _episode(night, mi, problem.task(_rng(*pkey), MODELS[mi]), pkey, n)
            n += 1
            problem.spoil(built)
            rows += built
            expected[(built[0][Col.EPISODE_ID], built[0][FILE])] = set(problem.rules)
    return rows, expected


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)
    out: Path = args.out
    for old in sorted(out.glob("dump_date=*/*.parquet")):  # replace an earlier run's files
        old.unlink()
    rows, expected = build_rows()
    paths: list[Path] = []
    for i, night in enumerate(NIGHTS):
        night_rows = [r for r in rows if r[FILE].startswith(f"dump_date={night}/")]
        # The second night's harness writes turn as int64: files may differ in width.
        paths += write_dump(night_rows, out, turn_type=pl.Int32 if i == 0 else pl.Int64)
    episodes = {(r[Col.EPISODE_ID], r[FILE]) for r in rows}
    size = sum(p.stat().st_size for p in paths)
    print(
        f"wrote {len(rows)} rows, {len(episodes)} episodes ({len(expected)} not scorable) "
        f"in {len(paths)} files, {size / 1024:.0f} KiB, under {out}"
    )


if __name__ == "__main__":
    main()
