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

The rule functions of ``blocking_log``, ``vowel_harmony_plural``, ``hidden_state_machine``,
``mastermind_classic`` and ``adjacent_swap_sort`` are also those of the example dump
(``examples/make_example_dump.py`` imports them from here).
"""

from __future__ import annotations

import functools
import itertools
import random
import unicodedata
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from schemas.contract import Category, Match
from simulator.models import Strategy
from simulator.transcript import Transcript

# ============================================================ associative learning

CUES = ["Plex", "Vorn", "Tesk", "Quill", "Brim", "Dax", "Murl", "Sorn", "Kelp", "Zint"]
CONFIRMED, RULED_OUT, UNKNOWN = "CONFIRMED", "RULED OUT", "UNKNOWN"
YES, NO, UNDETERMINED = "YES", "NO", "UNDETERMINED"
STATUSES = (CONFIRMED, RULED_OUT, UNKNOWN)


def cue_statuses(cues: Sequence[str], trials: Sequence[tuple[tuple[str, ...], bool]]) -> dict:
    """The rule function: what the trial log proves about each cue (causes combine by OR).

    A trial without the effect rules out every cue in it; a trial with the effect confirms
    its cue when every other cue in it is ruled out; anything else stays UNKNOWN (a cue
    only ever seen beside a confirmed cause is blocked).

    >>> log = [(("A",), True), (("A", "B"), True), (("C",), False), (("C", "D"), True)]
    >>> cue_statuses("ABCD", log)
    {'A': 'CONFIRMED', 'B': 'UNKNOWN', 'C': 'RULED OUT', 'D': 'CONFIRMED'}
    """
    status = dict.fromkeys(cues, UNKNOWN)
    for present, effect in trials:
        if not effect:
            for cue in present:
                status[cue] = RULED_OUT
    changed = True
    while changed:
        changed = False
        for present, effect in trials:
            open_ = [c for c in present if status[c] != RULED_OUT]
            if effect and len(open_) == 1 and status[open_[0]] == UNKNOWN:
                status[open_[0]] = CONFIRMED
                changed = True
    return status


def predict_compound(statuses: Sequence[str]) -> str:
    if CONFIRMED in statuses:
        return YES
    return NO if all(s == RULED_OUT for s in statuses) else UNDETERMINED


def blocking_trials(rng: random.Random) -> tuple[list[str], list[tuple[tuple[str, ...], bool]]]:
    """Six cues and a shuffled trial log: two causes, two inert cues, one cue blocked by a
    cause it always appears with, and one decided by a single compound trial."""
    cues = rng.sample(CUES, 6)
    cause_a, cause_b, inert_a, inert_b, blocked, eliminated = cues
    trials: list[tuple[tuple[str, ...], bool]] = [
        ((cause_a,), True),
        ((cause_b,), True),
        ((inert_a,), False),
        ((inert_b,), False),
        ((cause_a, blocked), True),  # blocking: cause_a explains the effect
        ((inert_a, eliminated), rng.random() < 0.5),  # decided by `eliminated` alone
    ]
    trials = trials * 2
    rng.shuffle(trials)
    return cues, trials


def play_blocking_log(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    cues, trials = blocking_trials(rng)
    cause_a, cause_b, inert_a, inert_b, blocked, eliminated = cues
    truth = cue_statuses(cues, trials)

    sees_blocking = p.sees_through(rng)
    believed: dict[str, str] = {}
    for c in cues:
        if p.guesses:
            believed[c] = rng.choice(STATUSES)
            continue
        # the blocking error: a cue seen only with the effect is read as a cause
        believed[c] = CONFIRMED if c == blocked and not sees_blocking else truth[c]
        if p.slips(rng):
            believed[c] = rng.choice(STATUSES)
    pair = rng.sample(cues, 2)
    asked = rng.sample(cues, 4)
    n_unknown = sum(s == UNKNOWN for s in truth.values())
    claimed_unknown = (
        rng.randint(0, 4) if p.guesses else sum(s == UNKNOWN for s in believed.values())
    )

    log = "\n".join(
        f"Trial {i + 1:2d}: {' + '.join(cs)} -> {'EFFECT' if e else 'no effect'}"
        for i, (cs, e) in enumerate(trials)
    )
    tx.start({})
    tx.user(
        f"Decide for each cue whether this log confirms it as a cause, rules it out, or "
        f"leaves it unknown.\n{log}",
        "Below is a log of trials from a laboratory that studies which of six substances "
        "trigger a colour change in a reagent. In each trial some substances were added and "
        "the outcome was recorded. A substance that causes the effect does so on its own; "
        "several causes together still give one effect, and a substance that is not a "
        "cause never prevents the effect. Decide for each substance whether the log "
        "confirms it as a cause, rules it out, or leaves it unknown, and then answer the "
        f"questions that follow.\n\n{log}\n\nTake your time; the questions come one by one.",
    )
    tx.think(
        [
            f"{cause_a} and {cause_b} each produced the effect when presented alone.",
            f"{inert_a} and {inert_b} never did.",
            f"{blocked} only ever appeared together with {cause_a}, which already explains "
            "the effect, so the log says nothing about it.",
            f"{eliminated} appeared with {inert_a}; the outcome of that trial decides it.",
        ],
        n=len(trials),
    )
    questions: list[tuple[str, str, Match | None, str]] = [
        (
            f"What is the causal status of {c}? Answer {CONFIRMED}, {RULED_OUT} or {UNKNOWN}.",
            truth[c],
            None,
            f"{c} is {believed[c]}.",
        )
        for c in asked
    ]
    questions.append(
        (
            f"If {pair[0]} and {pair[1]} are presented together, will the effect occur? "
            f"Answer {YES}, {NO} or {UNDETERMINED}.",
            predict_compound([truth[c] for c in pair]),
            None,
            predict_compound([believed[c] for c in pair]),
        )
    )
    questions.append(
        (
            "How many of the six substances remain UNKNOWN? Answer with a number.",
            str(n_unknown),
            Match.INTEGER,
            str(claimed_unknown),
        )
    )
    why = {
        CONFIRMED: "{c} produced the effect in a trial where every other substance was ruled out.",
        RULED_OUT: "{c} was present in a trial without the effect, so it is not a cause.",
        UNKNOWN: "{c} only appeared next to a substance that already explains the effect.",
    }
    tx.review("the trial log")
    tx.env("Questions follow, one at a time.")
    for i, (question, expected, match, reply) in enumerate(questions):
        qid = f"q{i + 1}"
        tx.item(qid, expected, match, question)
        if i < 4 and not p.guesses:
            tx.say(why[believed[asked[i]]].format(c=asked[i]))
        elif not p.guesses:
            tx.say(
                tx.prose(
                    "Checking the log again.",
                    "Before answering this one I go back to the log: the compound and "
                    "counting questions depend on every cue at once, so one misread trial "
                    "would change the answer.",
                )
            )
        tx.answer(qid, reply)
    tx.end()


# ============================================================ concept formation


def hidden_numeric_rule(a: int, b: int, c: int, x: int) -> int:
    """The rule function: ``f(x) = a*x + b``, plus ``c`` for odd `x`.

    >>> [hidden_numeric_rule(3, 1, 5, x) for x in (0, 1, 2, 3)]
    [1, 9, 7, 15]
    """
    return a * x + b + (c if x % 2 else 0)


def play_hidden_numeric_rule(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    a, b = rng.randint(2, 7), rng.randint(-6, 9)
    c = rng.choice([-5, -4, -3, 3, 4, 5, 6])

    def f(x: int) -> int:
        return hidden_numeric_rule(a, b, c, x)

    params = {"initial_examples": 3, "max_examples": 12, "num_test_items": 4}
    evens = rng.sample(range(0, 40, 2), 3 + 5 + 2)
    odds = rng.sample(range(1, 40, 2), 1 + 3 + 2)
    shown = evens[:3]  # deceptive: even inputs only, so a line fits them exactly
    more = evens[3:8] + odds[1:4]
    rng.shuffle(more)
    requestable = [odds[0], *more]  # the first example asked for is odd
    tests = evens[8:] + odds[4:]
    rng.shuffle(tests)

    lo, hi = p.extra_examples
    extra = min(rng.randint(lo, hi), len(requestable))
    learned = extra > 0 and p.sees_through(rng, extra)
    tx.start(params)
    tx.user(
        "A hidden function f maps whole numbers to whole numbers. Reply REQUEST_EXAMPLE for "
        "another example or READY for the four test questions.",
        "A hidden function f maps whole numbers to whole numbers. You see three examples "
        "now and may ask for more, one at a time, by replying REQUEST_EXAMPLE (at most "
        f"{params['max_examples']} examples in total; the first four are free, each further "
        "one lowers your efficiency). When you are confident, reply READY and you will get "
        "four test questions of the form 'What is f(x)?'. Answer each with a whole number "
        "and nothing else.",
    )
    for x in shown:
        tx.example(f"f({x}) = {f(x)}")
    for x in requestable[:extra]:
        tx.say("REQUEST_EXAMPLE")
        tx.example(f"f({x}) = {f(x)}")
    facts = [f"The examples so far rise by {2 * a} for every step of 2, so the slope is {a}."]
    facts.append(f"Extending the line back gives f(0) = {b}.")
    if learned:
        facts.append(f"Odd inputs sit {c} off that line, so parity matters.")
    tx.think(facts, n=len(shown) + extra, closing="READY")
    tx.env("Test phase: four questions, no feedback.")
    tx.review("the examples")
    for i, x in enumerate(tests):
        qid = f"x{i + 1}"
        tx.item(qid, str(f(x)), Match.INTEGER, f"What is f({x})?")
        if p.guesses:
            got = rng.randint(-10, 6 * 40)
        else:
            got = f(x) if learned else a * x + b  # the line through the even examples
            if p.slips(rng):
                got += rng.choice([-a, a, 1, -1, 2])
        tx.answer(qid, str(got))
    tx.end()


# ============================================================ language learning

FRONT, BACK = "ei", "aou"
VOWELS = FRONT + BACK


def velmari_plural(root: str) -> str:
    """The rule function: plural suffix harmonises with the root's last vowel.

    Front last vowel: -é, back: -ó; vowel-final roots insert -n- first. Returned in NFC.

    >>> velmari_plural("tapik"), velmari_plural("lumo"), velmari_plural("seru")
    ('tapiké', 'lumonó', 'serunó')
    """
    last = [c for c in root if c in VOWELS][-1]
    suffix = "\u00e9" if last in FRONT else "\u00f3"
    form = root + ("n" if root[-1] in VOWELS else "") + suffix
    return unicodedata.normalize("NFC", form)


def plural_as_believed(root: str, *, last_vowel: bool, epenthesis: bool, accent: bool) -> str:
    """A model's version of the plural rule: harmony with the first vowel (the shallow
    reading) or the last, with or without the -n- and the accent. All True: the real rule.

    >>> plural_as_believed("tapik", last_vowel=False, epenthesis=True, accent=True)
    'tapikó'
    """
    vowels = [c for c in root if c in VOWELS]
    vowel = vowels[-1] if last_vowel else vowels[0]
    front, back = ("\u00e9", "\u00f3") if accent else ("e", "o")
    suffix = front if vowel in FRONT else back
    form = root + ("n" if epenthesis and root[-1] in VOWELS else "") + suffix
    return unicodedata.normalize("NFC", form)


def random_root(rng: random.Random) -> str:
    cons = "ptkmnlrsv"
    shape = rng.choice(["CVCV", "CVC", "CVCVC", "CVCCV"])
    return "".join(rng.choice(cons) if s == "C" else rng.choice(VOWELS) for s in shape)


def play_vowel_harmony(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    roots: list[str] = []
    while len(roots) < 3 + 11 + 4:
        r = random_root(rng)
        if r not in roots:
            roots.append(r)
    shown, pool, tests = roots[:3], roots[3:14], roots[14:]
    params = {"initial_examples": 3, "max_examples": 14}
    lo, hi = p.extra_examples
    extra = min(rng.randint(lo, hi), len(pool))
    seen = shown + pool[:extra]
    last_vowel = p.sees_through(rng, extra)
    epenthesis = not p.guesses and any(r[-1] in VOWELS for r in seen)  # seen it, learned it

    tx.start(params)
    tx.user(
        "Velmari is a constructed language. Learn how the plural is formed. Reply MORE for "
        "another example or READY for the test.",
        "Velmari is a constructed language spoken by nobody; it was made for this test. You "
        "will see singular nouns with their plurals and must learn how the plural is formed, "
        "then write the plural of new nouns that you have not seen. Spell each answer "
        "exactly, with its accent: a missing or wrong accent makes the form wrong. Reply "
        "MORE for another example (at most 14 in total; the first four are free) or READY "
        "for the test of four nouns.",
    )
    for r in shown:
        tx.example(f"{r} -> {velmari_plural(r)}")
    for r in pool[:extra]:
        tx.say("MORE")
        tx.example(f"{r} -> {velmari_plural(r)}")
    tx.think(
        [
            "The suffix vowel follows the last vowel of the root: e and i take an accented e, "
            "a, o and u take an accented o.",
            "Roots that end in a vowel add n before the suffix.",
        ],
        n=len(seen),
        closing="READY",
    )
    tx.env("Test phase: four nouns, no feedback.")
    tx.review("the singular and plural pairs")
    match = rng.choice([None, Match.NFC])
    for i, r in enumerate(tests):
        qid = f"w{i + 1}"
        truth = velmari_plural(r)
        if p.guesses:
            got = r + rng.choice(["", "n"]) + rng.choice(["\u00e9", "\u00f3", "e", "o"])
        else:
            accent = not p.slips(rng)
            got = plural_as_believed(r, last_vowel=last_vowel, epenthesis=epenthesis, accent=accent)
            if rng.random() < 0.3:
                got = unicodedata.normalize("NFD", got)  # a decomposed accent: still right
        tx.item(qid, truth, match, f"Plural of {r}?")
        tx.answer(qid, got)
    tx.end()


# ============================================================ observational learning

Mealy = dict[tuple[int, str], tuple[int, str]]


def random_mealy(rng: random.Random, states: int = 3) -> Mealy:
    return {(s, x): (rng.randrange(states), rng.choice("01")) for s in range(states) for x in "ab"}


def run_mealy(machine: Mealy, inputs: str) -> list[str]:
    """The rule function: the output symbols of a Mealy machine from state 0.

    >>> toggle = {(0, "a"): (1, "0"), (1, "a"): (0, "1"), (0, "b"): (0, "0"), (1, "b"): (1, "1")}
    >>> run_mealy(toggle, "aab")
    ['0', '1', '0']
    """
    state, out = 0, []
    for x in inputs:
        state, y = machine[(state, x)]
        out.append(y)
    return out


def play_mealy(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    machine = random_mealy(rng)
    aliased = dict(machine)  # the near miss: one transition goes to the wrong state
    key = rng.choice(sorted(aliased))
    aliased[key] = ((aliased[key][0] + 1) % 3, aliased[key][1])
    demos = ["".join(rng.choice("ab") for _ in range(rng.randint(4, 6))) for _ in range(6)]
    tests = ["".join(rng.choice("ab") for _ in range(rng.randint(6, 8))) for _ in range(4)]
    believed = machine if p.sees_through(rng) else aliased

    tx.start({})
    tx.user(
        "A hidden machine reads a and b and writes one bit per symbol. Predict its bits.",
        "A hidden machine reads a string of a and b, one symbol at a time, and writes one "
        "output bit for each symbol read. Its internal state is not shown, and two of its "
        "states may look alike for a step or two. Here are demonstrations of input strings "
        "and the bits the machine wrote; then predict the bits for new strings, separated "
        "by spaces.",
    )
    for d in demos:
        tx.example(f"{d} -> {' '.join(run_mealy(machine, d))}")
    tx.think(
        [
            "The first output bit depends only on the first symbol, so there is a start state.",
            "After 'ab' the outputs diverge from after 'ba': the machine has at least three "
            "states.",
            f"The transition on {key[1]!r} from state {key[0]} explains the longer demonstrations.",
        ],
        n=len(demos),
    )
    tx.env("Test phase: four new strings, no feedback.")
    tx.review("the demonstrations")
    match = rng.choice([None, Match.SEQUENCE])
    for i, t in enumerate(tests):
        qid = f"s{i + 1}"
        truth = run_mealy(machine, t)
        tx.item(qid, " ".join(truth), match, f"Input: {t}")
        if not p.guesses:
            trace, state = ["0"], 0
            for x in t:
                state = believed[(state, x)][0]
                trace.append(str(state))
            tx.say(f"Tracing {t}: states {' '.join(trace)}.")
        if p.guesses:
            got = [rng.choice("01") for _ in t]
        else:
            got = run_mealy(believed, t)
            if p.slips(rng):
                j = rng.randrange(len(got))
                got[j] = "1" if got[j] == "0" else "0"
        sep = rng.choice([" ", " ", "  ", "\t"])
        tx.answer(qid, sep.join(got) + rng.choice(["", "\n"]))
    tx.end()


def shifted_group_op(n: int, k: int, x: int, y: int) -> int:
    """The rule function: a cyclic group of order `n` written with identity ``-k``.

    >>> shifted_group_op(7, 3, 4, 0), shifted_group_op(7, 3, 4, 5)
    (0, 5)
    """
    return (x + y + k) % n


def _pair(rng: random.Random, pool: Sequence[int]) -> tuple[int, int]:
    x, y = rng.sample(pool, 2)
    return x, y


def play_group_operation(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    n, k = 7, rng.randint(1, 6)
    identity = (-k) % n
    others = [x for x in range(n) if x != identity]
    demos = [(identity, rng.choice(others)) for _ in range(3)]  # deceptive: look like +
    demos += [_pair(rng, others) for _ in range(5)]
    tests = [_pair(rng, others) for _ in range(4)]
    fooled = not p.sees_through(rng)

    tx.start({})
    tx.user(
        f"Symbols 0 to {n - 1} combine by a hidden operation *. Give results as one symbol.",
        f"The symbols 0 to {n - 1} are combined by a hidden operation written *. The "
        "operation is associative, has an identity element and every symbol has an inverse; "
        "it is not necessarily the operation you expect from the digits. Study the table "
        "entries below, then give the result of new combinations as a single symbol.",
    )
    for x, y in demos:
        tx.example(f"{x} * {y} = {shifted_group_op(n, k, x, y)}")
    tx.think(
        [
            f"The first entries look like addition modulo {n}.",
            f"But {demos[3][0]} * {demos[3][1]} is not their sum: the identity is {identity}, "
            f"not 0, so x * y = x + y + {k} (mod {n}).",
        ],
        n=len(demos),
    )
    tx.env("Test phase: four new combinations, no feedback.")
    tx.review("the table entries")
    for i, (x, y) in enumerate(tests):
        qid = f"g{i + 1}"
        truth = shifted_group_op(n, k, x, y)
        tx.item(qid, str(truth), Match.SEQUENCE, f"{x} * {y} = ?")
        if not p.guesses:
            shift = "" if fooled else f" + {k}"
            tx.say(f"{x} * {y} = {x} + {y}{shift} (mod {n}).")
        if p.guesses:
            got = rng.randrange(n)
        else:
            got = (x + y) % n if fooled else truth  # fooled by the first demonstrations
            if p.slips(rng):
                got = rng.randrange(n)
        tx.answer(qid, str(got))
    tx.end()


# ============================================================ runtime RL

COLORS = "RGBYOP"
CODES = ["".join(c) for c in itertools.product(COLORS, repeat=4)]
_CODE_INDEX = {code: i for i, code in enumerate(CODES)}


def mastermind_score(secret: str, guess: str) -> tuple[int, int]:
    """The rule function: (LOCK, DRIFT) = right colour right place, right colour elsewhere.

    >>> mastermind_score("RGBY", "RBGO")
    (1, 2)
    """
    lock = sum(s == g for s, g in zip(secret, guess, strict=True))
    common = sum(min(secret.count(c), guess.count(c)) for c in COLORS)
    return lock, common - lock


@functools.cache
def _mastermind_table() -> np.ndarray:
    """``mastermind_score`` of every (guess, secret) pair as ``5 * lock + drift`` (int8)."""
    codes = np.array([[COLORS.index(c) for c in code] for code in CODES], dtype=np.int8)
    lock = (codes[:, None, :] == codes[None, :, :]).sum(axis=2, dtype=np.int8)
    counts = np.stack([(codes == k).sum(axis=1, dtype=np.int8) for k in range(len(COLORS))], 1)
    common = np.minimum(counts[:, None, :], counts[None, :, :]).sum(axis=2, dtype=np.int8)
    table: np.ndarray = (5 * lock + (common - lock)).astype(np.int8)
    return table


def play_mastermind(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    secret = rng.choice(CODES)
    budget = 12
    params: dict[str, Any] = {"budget": budget, "min_explore": 7, "floor": 0.1}
    order_array = np.random.default_rng(rng.getrandbits(64)).permutation(len(CODES))
    candidates = order_array  # codes consistent with all feedback heeded so far
    table = _mastermind_table()
    best, best_fb = rng.choice(CODES), (-1, -1)
    tried: set[str] = set()

    tx.start(params)
    tx.user(
        f"Guess the secret 4-peg code (colours R G B Y O P). {budget} guesses.",
        "A secret code of four pegs is hidden; each peg is one of R G B Y O P and colours "
        "may repeat. Guess a code by replying with four letters and nothing else. After "
        "each guess you are told LOCK (right colour in the right place) and DRIFT (right "
        f"colour in the wrong place). You have {budget} guesses; solving it early scores "
        "higher, and a near miss still earns partial credit for the pegs you locked.",
    )
    tx.think(
        [
            f"There are {len(CODES)} possible codes and {budget} guesses.",
            "Each LOCK and DRIFT answer splits the remaining codes into at most 14 groups, so "
            "about five well-chosen guesses should suffice.",
            "A guess that repeats colours says less about which colours are present.",
        ],
        n=budget,
        closing="First guess follows.",
    )
    for step in range(budget):
        focused = True
        if p.strategy == Strategy.RANDOM or rng.random() >= p.focus:
            guess, focused = rng.choice(CODES), False  # a careless move: its feedback unheeded
        elif p.strategy == Strategy.PLAN:
            guess = CODES[int(candidates[0])]
        elif best_fb[0] < 0:
            guess = best
        else:  # greedy: a new code that fits the best feedback so far, ignoring the rest
            row = table[_CODE_INDEX[best]]
            fits = order_array[row[order_array] == 5 * best_fb[0] + best_fb[1]]
            guess = next((CODES[int(c)] for c in fits if CODES[int(c)] not in tried), best)
        if step % 3 == 1 and p.strategy != Strategy.RANDOM:
            tx.say(
                tx.prose(
                    f"{len(candidates)} codes remain possible.",
                    f"Best so far: {best} with LOCK {best_fb[0]}. {len(candidates)} codes are "
                    "still consistent with the feedback; I pick one that is consistent and "
                    "splits the rest well, rather than a random one.",
                )
            )
        lock, drift = mastermind_score(secret, guess)
        tx.action(guess)
        tx.feedback(lock / 4, lock == 4, f"LOCK {lock} DRIFT {drift}")
        if lock == 4:
            break
        tried.add(guess)
        if not focused:
            continue
        if (lock, drift) > best_fb:
            best, best_fb = guess, (lock, drift)
        row = table[_CODE_INDEX[guess]]
        candidates = candidates[row[candidates] == 5 * lock + drift]
    tx.end()


PEGS = "ABC"
HanoiState = tuple[int, ...]  # the peg of each disk, smallest disk first


def hanoi_moves(state: HanoiState) -> list[tuple[int, int]]:
    """The legal moves (from peg, to peg): a top disk onto an empty peg or a larger disk.

    >>> hanoi_moves((0, 0, 0))
    [(0, 1), (0, 2)]
    """
    tops = [min((d for d, peg in enumerate(state) if peg == q), default=None) for q in range(3)]
    moves = []
    for src, top in enumerate(tops):
        if top is None:
            continue
        for dst, under in enumerate(tops):
            if dst != src and (under is None or under > top):
                moves.append((src, dst))
    return moves


def hanoi_apply(state: HanoiState, move: tuple[int, int]) -> HanoiState:
    src, dst = move
    disk = min(d for d, peg in enumerate(state) if peg == src)
    return (*state[:disk], dst, *state[disk + 1 :])


def hanoi_picture(state: HanoiState) -> str:
    """The pegs with their disks, largest first: ``A[3,1] B[] C[2]``."""
    disks = range(len(state) - 1, -1, -1)
    return " ".join(
        f"{PEGS[q]}[{','.join(str(d + 1) for d in disks if state[d] == q)}]" for q in range(3)
    )


def hanoi_on_goal(state: HanoiState, goal: int) -> int:
    """The rule function: the disks on the goal peg (the progress feedback is this over n)."""
    return sum(peg == goal for peg in state)


@functools.cache
def hanoi_distances(disks: int, goal: int) -> dict[HanoiState, int]:
    """Fewest moves from every state to the whole tower on `goal` (breadth-first search).

    >>> hanoi_distances(3, 2)[(0, 0, 0)], hanoi_distances(4, 1)[(0, 0, 0, 0)]
    (7, 15)
    """
    target = (goal,) * disks
    dist = {target: 0}
    queue = deque([target])
    while queue:
        state = queue.popleft()
        for move in hanoi_moves(state):
            nxt = hanoi_apply(state, move)
            if nxt not in dist:
                dist[nxt] = dist[state] + 1
                queue.append(nxt)
    return dist


def play_hanoi(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    disks = rng.choice([3, 3, 4])
    goal = rng.choice([1, 2])
    optimum = 2**disks - 1
    budget = optimum + 8
    params: dict[str, Any] = {"budget": budget, "min_explore": optimum + 1, "floor": 0.1}
    state: HanoiState = (0,) * disks
    candidates = [1, 2]
    rng.shuffle(candidates)
    last: tuple[int, int] | None = None

    tx.start(params)
    tx.user(
        f"Move the {disks}-disk tower from peg A to the hidden goal peg (B or C). {budget} moves.",
        f"Towers of Hanoi with a hidden goal: {disks} disks lie on peg A, the smallest on top. "
        "Move one top disk at a time, never onto a smaller disk, by replying FROM->TO (for "
        "example A->C). The tower must end on one of the other two pegs, but which one is "
        "hidden. After every move you are told the share of disks that now sit on the goal "
        f"peg. You have {budget} moves.",
    )
    tx.think(
        [
            f"A tower of {disks} disks needs at least {optimum} moves.",
            "Where the smallest disk lands first tells me, through the feedback, whether that "
            "peg is the goal.",
            "Moving the smallest disk every other move, always in the same direction, keeps "
            "the recursion on track.",
        ],
        n=budget,
        closing="First move follows.",
    )
    for step in range(budget):
        moves = hanoi_moves(state)
        target = candidates[0]
        if p.strategy == Strategy.RANDOM or rng.random() >= p.focus:
            move = rng.choice(moves)
        elif p.strategy == Strategy.PLAN:
            dist = hanoi_distances(disks, target)
            move = min(moves, key=lambda m: dist[hanoi_apply(state, m)])
        else:  # greedy: onto the target peg if possible, else any move but straight back
            onto = [m for m in moves if m[1] == target]
            fresh = [m for m in moves if last is None or m != (last[1], last[0])]
            move = onto[0] if onto else rng.choice(fresh or moves)
        if step % 4 == 2 and p.strategy != Strategy.RANDOM:
            pegs = hanoi_picture(state)
            tx.say(
                tx.prose(
                    f"Aiming for peg {PEGS[target]}.",
                    f"Current position: {pegs}. The feedback so far fits goal peg "
                    f"{' or '.join(PEGS[c] for c in candidates)}; I am moving the tower "
                    f"towards {PEGS[target]} and will switch if the share stops rising.",
                )
            )
        state = hanoi_apply(state, move)
        last = move
        on_goal = hanoi_on_goal(state, goal)
        tx.action(f"{PEGS[move[0]]}->{PEGS[move[1]]}")
        tx.feedback(on_goal / disks, on_goal == disks, f"{on_goal}/{disks} disks on the goal peg")
        if on_goal == disks:
            break
        candidates = [c for c in candidates if hanoi_on_goal(state, c) == on_goal] or candidates
    tx.end()


# ============================================================ procedural learning


def inversions(xs: Sequence[int]) -> int:
    """The rule function: the fewest adjacent swaps that sort `xs`.

    >>> inversions([3, 1, 2]), inversions([1, 2, 3]), inversions([4, 3, 2, 1])
    (2, 0, 6)
    """
    return sum(xs[i] > xs[j] for i in range(len(xs)) for j in range(i + 1, len(xs)))


def bubble_swaps(xs: Sequence[int]) -> list[int]:
    xs, swaps = list(xs), []
    for end in range(len(xs) - 1, 0, -1):
        for i in range(end):
            if xs[i] > xs[i + 1]:
                xs[i], xs[i + 1] = xs[i + 1], xs[i]
                swaps.append(i)
    return swaps


def play_swap_sort(rng: random.Random, tx: Transcript) -> None:
    p = tx.profile
    params = {"practice_rounds": 5}
    tx.start(params)
    tx.user(
        "Five practice rounds: sort each list by swapping neighbours (index of the left "
        "element). Then four transfer questions without feedback.",
        "Practice: in each of five rounds you get a list of numbers and sort it by swapping "
        "neighbours, written as the index of the left element (0 swaps positions 0 and 1). "
        "A round scores the fewest possible swaps divided by the swaps you used, so every "
        "wasted swap costs. After each round you see your score. Afterwards come four "
        "transfer questions about new lists, without feedback: how many neighbour swaps "
        "sort them at the least.",
    )
    last_score = None
    for rnd in range(1, params["practice_rounds"] + 1):
        xs = rng.sample(range(10, 99), 6)
        swaps = bubble_swaps(xs)
        for _ in range(round(len(swaps) * p.waste(rnd) * rng.uniform(0.7, 1.3))):
            i = rng.randrange(len(xs) - 1)
            pos = rng.randrange(len(swaps) + 1)
            swaps[pos:pos] = [i, i]  # a swap undone right away
        best = inversions(xs)
        score = 1.0 if not swaps else best / len(swaps)
        tx.env(f"Round {rnd}: sort {xs}")
        recap = f"Last round scored {last_score:.2f}." if last_score is not None else ""
        tx.think(
            [
                recap or "First round.",
                "Bubble the largest number to the end, then the next, never swapping a "
                "pair that is already in order.",
            ],
            n=rnd,
            closing="Swaps follow.",
        )
        tx.say("Swaps: " + " ".join(map(str, swaps)))
        tx.round_end(rnd, round(score, 4), f"used {len(swaps)} swaps, fewest {best}")
        last_score = score
    for i in range(4):
        qid = f"t{i + 1}"
        xs = rng.sample(range(10, 99), 7)
        best = inversions(xs)
        if p.guesses:
            got = rng.randint(0, 21)
        elif rng.random() < p.transfer:
            got = best
        else:  # a half-learnt procedure: misplaced elements, or a miscount
            misplaced = sum(a != b for a, b in zip(xs, sorted(xs), strict=True))
            got = rng.choice([misplaced, best + rng.choice([-2, -1, 1, 3])])
        tx.item(qid, str(best), Match.INTEGER, f"Fewest neighbour swaps that sort {xs}?")
        tx.answer(qid, str(got))
    tx.end()


# ============================================================ the task list


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
