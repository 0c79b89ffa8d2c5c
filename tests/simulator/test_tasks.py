"""The simulator's rule functions on hand-checked cases, and the episodes its tasks play."""

from __future__ import annotations

import json
import random
import unicodedata

import pytest

from schemas.contract import NEEDS_ITEMS, Category, Col, Kind, Match, Role, Status
from simulator.models import DEFAULT_MODELS, PROFILES, Model, Skill, parse_model
from simulator.tasks import TASKS
from simulator.tasks.associative_learning import (
    CONFIRMED,
    NO,
    RULED_OUT,
    UNDETERMINED,
    UNKNOWN,
    YES,
    cue_statuses,
    predict_compound,
)
from simulator.tasks.concept_formation import hidden_numeric_rule
from simulator.tasks.language_learning import plural_as_believed, random_root, velmari_plural
from simulator.tasks.observational_learning import run_mealy, shifted_group_op
from simulator.tasks.procedural_learning import bubble_swaps, inversions
from simulator.tasks.runtime_rl import (
    CODES,
    _mastermind_table,
    hanoi_apply,
    hanoi_distances,
    hanoi_moves,
    hanoi_on_goal,
    mastermind_score,
)
from simulator.transcript import DT, Transcript

# ------------------------------------------------------------------ associative learning


def test_blocking_leaves_the_blocked_cue_unknown() -> None:
    log = [
        (("Plex",), True),  # Plex alone: a cause
        (("Plex", "Vorn"), True),  # Vorn only beside Plex: blocked
        (("Tesk",), False),  # Tesk: ruled out
        (("Tesk", "Dax"), True),  # Dax beside a ruled-out cue: confirmed
        (("Murl", "Sorn"), False),  # both ruled out by one trial without the effect
    ]
    assert cue_statuses(["Plex", "Vorn", "Tesk", "Dax", "Murl", "Sorn", "Kelp"], log) == {
        "Plex": CONFIRMED,
        "Vorn": UNKNOWN,
        "Tesk": RULED_OUT,
        "Dax": CONFIRMED,
        "Murl": RULED_OUT,
        "Sorn": RULED_OUT,
        "Kelp": UNKNOWN,  # never seen
    }


def test_confirmation_propagates_through_later_eliminations() -> None:
    # Brim is confirmed only once Quill is ruled out by a trial listed later.
    log = [(("Quill", "Brim"), True), (("Quill",), False)]
    assert cue_statuses(["Quill", "Brim"], log) == {"Quill": RULED_OUT, "Brim": CONFIRMED}


def test_compound_prediction() -> None:
    assert predict_compound([CONFIRMED, UNKNOWN]) == YES
    assert predict_compound([RULED_OUT, RULED_OUT]) == NO
    assert predict_compound([RULED_OUT, UNKNOWN]) == UNDETERMINED


# ------------------------------------------------------------------ concept formation


def test_hidden_numeric_rule() -> None:
    # f(x) = 2x - 3, plus 4 for odd x
    assert [hidden_numeric_rule(2, -3, 4, x) for x in range(5)] == [-3, 3, 1, 7, 5]


# ------------------------------------------------------------------ language learning


@pytest.mark.parametrize(
    ("root", "plural"),
    [
        ("tapik", "tapik\u00e9"),  # last vowel i: front, accented e
        ("kasol", "kasol\u00f3"),  # last vowel o: back, accented o
        ("piran", "piran\u00f3"),  # first vowel i, last a: the last one decides
        ("lume", "lumen\u00e9"),  # vowel-final: -n- before the suffix
        ("seru", "serun\u00f3"),
    ],
)
def test_velmari_plural(root: str, plural: str) -> None:
    assert velmari_plural(root) == plural
    assert unicodedata.is_normalized("NFC", velmari_plural(root))


def test_the_believed_plural_with_every_part_is_the_rule() -> None:
    rng = random.Random(3)
    for _ in range(300):
        root = random_root(rng)
        full = plural_as_believed(root, last_vowel=True, epenthesis=True, accent=True)
        assert full == velmari_plural(root)
    assert plural_as_believed("piran", last_vowel=False, epenthesis=True, accent=True) == (
        "piran\u00e9"  # the shallow reading: harmony with the first vowel
    )
    assert plural_as_believed("lume", last_vowel=True, epenthesis=False, accent=False) == "lumee"


# ------------------------------------------------------------------ observational learning


def test_mealy_machine_output() -> None:
    # A parity machine: outputs 1 after an odd number of a's so far; b repeats the parity.
    parity = {(0, "a"): (1, "1"), (1, "a"): (0, "0"), (0, "b"): (0, "0"), (1, "b"): (1, "1")}
    assert run_mealy(parity, "aabab") == ["1", "0", "0", "1", "1"]
    assert run_mealy(parity, "") == []


def test_shifted_group_operation_is_a_group_with_a_hidden_identity() -> None:
    n = 7
    for k in range(1, n):
        identity = (-k) % n
        for x in range(n):
            assert shifted_group_op(n, k, identity, x) == x  # identity
            assert any(shifted_group_op(n, k, x, y) == identity for y in range(n))  # inverse
            for y in range(n):
                for z in range(n):  # associative
                    left = shifted_group_op(n, k, shifted_group_op(n, k, x, y), z)
                    assert left == shifted_group_op(n, k, x, shifted_group_op(n, k, y, z))
    assert shifted_group_op(7, 2, 3, 4) == 2  # 3 + 4 + 2 = 9 = 2 (mod 7), not 0


# ------------------------------------------------------------------ runtime RL


@pytest.mark.parametrize(
    ("secret", "guess", "lock_drift"),
    [
        ("RGBY", "RGBY", (4, 0)),
        ("RGBY", "YBGR", (0, 4)),
        ("RRGG", "GGRR", (0, 4)),
        ("RRGG", "RGRG", (2, 2)),
        ("RRRR", "RGBY", (1, 0)),  # one R locked; the other R's are not in the guess
        ("OPOP", "RGBY", (0, 0)),
        ("RGBB", "BBBR", (1, 2)),  # B at 3 locked; B and R elsewhere
    ],
)
def test_mastermind_score(secret: str, guess: str, lock_drift: tuple[int, int]) -> None:
    assert mastermind_score(secret, guess) == lock_drift
    assert mastermind_score(guess, secret) == lock_drift  # symmetric


def test_the_vectorised_mastermind_table_agrees_with_the_rule() -> None:
    table = _mastermind_table()
    rng = random.Random(1)
    for _ in range(2000):
        i, j = rng.randrange(len(CODES)), rng.randrange(len(CODES))
        lock, drift = mastermind_score(CODES[j], CODES[i])
        assert table[i, j] == 5 * lock + drift


def test_hanoi_rules() -> None:
    assert hanoi_moves((0, 0, 0)) == [(0, 1), (0, 2)]
    # disk 1 on A, disk 2 on B, disk 3 on C: 1 may go anywhere, 2 onto 3 only
    assert sorted(hanoi_moves((0, 1, 2))) == [(0, 1), (0, 2), (1, 2)]
    assert hanoi_apply((0, 0, 0), (0, 2)) == (2, 0, 0)
    assert hanoi_on_goal((2, 0, 2), 2) == 2
    assert hanoi_distances(3, 2)[(0, 0, 0)] == 7
    assert hanoi_distances(4, 1)[(0, 0, 0, 0)] == 15
    assert hanoi_distances(3, 1)[(1, 1, 1)] == 0
    assert hanoi_distances(3, 1)[(0, 1, 1)] == 1  # only the smallest disk is off the goal


# ------------------------------------------------------------------ procedural learning


@pytest.mark.parametrize(
    ("xs", "fewest"), [([1, 2, 3], 0), ([3, 1, 2], 2), ([4, 3, 2, 1], 6), ([2, 1, 4, 3], 2)]
)
def test_inversions_are_the_fewest_neighbour_swaps(xs: list[int], fewest: int) -> None:
    assert inversions(xs) == fewest
    swaps = bubble_swaps(xs)
    assert len(swaps) == fewest
    ys = list(xs)
    for i in swaps:
        ys[i], ys[i + 1] = ys[i + 1], ys[i]
    assert ys == sorted(xs)


# ------------------------------------------------------------------ models


def test_profiles() -> None:
    assert [m.skill for m in DEFAULT_MODELS] == list(reversed(Skill))
    learner = PROFILES[Skill.LEARNER]
    waste = [learner.waste(r) for r in range(1, 6)]
    assert waste == sorted(waste, reverse=True) and waste[0] > waste[-1]
    assert PROFILES[Skill.LEARNER].extra_examples > PROFILES[Skill.NEAR_ORACLE].extra_examples
    assert parse_model("x=greedy") == Model("x", Skill.GREEDY)
    with pytest.raises(ValueError, match="unknown skill"):
        parse_model("x=genius")


# ------------------------------------------------------------------ the episodes


def _play(model: Model, task_index: int, seed: int, *, bulk: bool = True) -> list[dict]:
    task = TASKS[task_index]
    tx = Transcript(random.Random(f"{seed}:text"), model, task.name, session="s", bulk=bulk)
    task.play(random.Random(seed), tx)
    return tx.rows


def test_every_category_has_a_task() -> None:
    assert {t.category for t in TASKS} == set(Category)
    assert len({t.name for t in TASKS}) == len(TASKS)


@pytest.mark.parametrize("task_index", range(len(TASKS)))
def test_tasks_play_well_formed_episodes(task_index: int) -> None:
    task = TASKS[task_index]
    for model in DEFAULT_MODELS:
        for seed in range(5):
            rows = _play(model, task_index, seed)
            kinds = [r[Col.KIND] for r in rows]
            assert kinds[0] == Kind.EPISODE_START and kinds.count(Kind.EPISODE_START) == 1
            assert kinds[-1] == Kind.EPISODE_END and rows[-1][Col.STATUS] == Status.COMPLETED
            assert [r[Col.TURN] for r in rows] == list(range(len(rows)))
            clock = [r[DT] for r in rows]
            assert clock == sorted(clock)
            assert isinstance(json.loads(rows[0][Col.PARAMS]), dict)
            assert {r[Col.ROLE] for r in rows} <= set(Role)
            items = [r for r in rows if r[Col.KIND] == Kind.ITEM]
            answers = [r for r in rows if r[Col.KIND] == Kind.ANSWER]
            assert len({r[Col.ITEM_ID] for r in items}) == len(items)
            assert {r[Col.ITEM_ID] for r in answers} <= {r[Col.ITEM_ID] for r in items}
            assert all(r[Col.EXPECTED].strip() for r in items)
            if task.category in NEEDS_ITEMS:
                assert items
            else:
                assert Kind.ACTION in kinds and Kind.FEEDBACK in kinds
            for r in items:
                if r.get(Col.MATCH) == Match.INTEGER:
                    int(r[Col.EXPECTED])


def test_items_carry_what_the_rule_function_computes() -> None:
    near_oracle = DEFAULT_MODELS[0]
    rows = _play(near_oracle, [t.name for t in TASKS].index("vowel_harmony_plural"), 4)
    for r in rows:
        if r[Col.KIND] == Kind.ITEM:
            root = r[Col.CONTENT].removeprefix("Plural of ").removesuffix("?")
            assert r[Col.EXPECTED] == velmari_plural(root)
        if r[Col.KIND] == Kind.EXAMPLE:
            root, plural = r[Col.CONTENT].split(" -> ")
            assert plural == velmari_plural(root)
    rows = _play(near_oracle, [t.name for t in TASKS].index("adjacent_swap_sort"), 4)
    for r in rows:
        if r[Col.KIND] == Kind.ITEM:
            xs = json.loads(r[Col.CONTENT].split("sort ")[1].rstrip("?"))
            assert r[Col.EXPECTED] == str(inversions(xs))


def test_bulk_changes_only_the_texts() -> None:
    for task_index in range(len(TASKS)):
        bulky = _play(DEFAULT_MODELS[1], task_index, 9, bulk=True)
        short = _play(DEFAULT_MODELS[1], task_index, 9, bulk=False)
        strip = {Col.CONTENT, DT}
        assert [{k: v for k, v in r.items() if k not in strip} for r in bulky] == [
            {k: v for k, v in r.items() if k not in strip} for r in short
        ]
        size = sum(len(r.get(Col.CONTENT) or "") for r in bulky)
        assert size > 2 * sum(len(r.get(Col.CONTENT) or "") for r in short)
