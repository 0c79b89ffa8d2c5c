"""Associative learning: ``blocking_log``, which cues a trial log proves to cause the effect
(rule function ``cue_statuses``; the trap: a blocked cue read as a cause).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from schemas.contract import Match
from simulator.transcript import Transcript

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
