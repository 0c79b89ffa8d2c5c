"""Concept formation: ``hidden_numeric_rule``, ``a x + b`` plus ``c`` for odd x (the trap: a
line through even inputs only).
"""

from __future__ import annotations

import random

from schemas.contract import Match
from simulator.transcript import Transcript


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
