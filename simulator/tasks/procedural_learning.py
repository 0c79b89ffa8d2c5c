"""Procedural learning: ``adjacent_swap_sort``, five practice rounds of sorting by neighbour
swaps, then four transfer items (rule function ``inversions``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from schemas.contract import Match
from simulator.transcript import Transcript


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
