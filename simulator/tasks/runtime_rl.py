"""Runtime RL, played move by move with feedback: ``mastermind_classic``, a 4-peg code of 6
colours (rule function ``mastermind_score``), and ``hanoi_hidden_goal``, a tower moved to a
hidden goal peg (rule function ``hanoi_on_goal``).
"""

from __future__ import annotations

import functools
import itertools
import random
from collections import deque
from typing import Any

import numpy as np

from simulator.models import Strategy
from simulator.transcript import Transcript

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
