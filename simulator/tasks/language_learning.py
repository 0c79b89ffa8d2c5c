"""Language learning: ``vowel_harmony_plural``, Velmari's plural by suffix harmony, accent and
-n- (rule function ``velmari_plural``; the trap: harmony with the first vowel).
"""

from __future__ import annotations

import random
import unicodedata

from schemas.contract import Match
from simulator.transcript import Transcript

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
