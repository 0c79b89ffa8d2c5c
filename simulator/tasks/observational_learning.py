"""Observational learning: ``hidden_state_machine``, a 3-state Mealy machine (rule function
``run_mealy``; the trap: an aliased state), and ``hidden_group_operation``, ``x + y + k
(mod 7)`` (rule function ``shifted_group_op``; the trap: ordinary addition).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from schemas.contract import Match
from simulator.transcript import Transcript

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
