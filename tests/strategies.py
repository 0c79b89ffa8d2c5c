"""Hypothesis strategies for transcript dumps (contract version 1).

``dumps()`` draws the rows of a whole dump (a list of row dicts, as ``tests.dumps`` builds
them, each with its ``FILE``) over one to three files, with episodes of all six categories.
Most episodes are valid, so that their scores get compared; the others carry one or more
perturbations that break the contract's rules (``PERTURBATIONS``). Rows are shuffled, and
turn numbers have gaps and may be negative, so that every "by turn" rule is exercised.

Text is deliberately awkward: Unicode case-folding look-alikes (ſ, K, İ, ı, ß, ς/σ/Σ),
composed and decomposed accents, CJK, whitespace that only Python's ``str.isspace`` knows
(``\\x1c``-``\\x1f``, ``\\x85``, ``\\xa0``, ``\\u3000``), regex metacharacters and integer
literals with signs, leading zeros and non-ASCII digits.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import polars as pl
from hypothesis import strategies as st

from schemas.contract import (
    COST_USD,
    DEFAULT_MATCH,
    EPISODE_CONSTANT,
    FILE,
    INPUT_TOKENS,
    INSTANCE_ID,
    LATENCY_MS,
    OUTPUT_TOKENS,
    REPORTED_SCORE,
    REQUIRED,
    USAGE_DTYPES,
    USAGE_MAXIMA,
    VERDICT,
    Category,
    Col,
    Kind,
    Match,
    Role,
    Status,
)
from schemas.params import PARAMS
from tests.dumps import (
    Row,
    action,
    answer,
    episode,
    episode_end,
    episode_start,
    example,
    feedback,
    item,
    message,
    round_end,
)

Draw = Callable[[st.SearchStrategy[Any]], Any]

INT32_MAX = 2**31 - 1  # the largest valid int parameter (README)

# Files of a dump: plain and hive-partitioned (two dump_date values).
FILES = (
    "part-0.parquet",
    "dump_date=2026-11-30/part-0.parquet",
    "dump_date=2026-12-01/part-1.parquet",
)

# ------------------------------------------------------------------------------------ text

# str.isspace() is true for all of these (and Rust's char::is_whitespace is not for \x1c-\x1f).
WHITESPACE = (
    " ",
    "\t",
    "\n",
    "\r",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2000",
    "\u2028",
    "\u202f",
    "\u3000",
)
# Look like separators, but str.isspace() is false for them.
NOT_WHITESPACE = ("\u200b", "\u180e", "\ufeff", "\u2060")

ASCII_WORDS = (
    "yes",
    "YES",
    "Yes",
    "unknown",
    "UNKNOWN",
    "Plex",
    "s",
    "S",
    "k",
    "K",
    "i",
    "I",
    "ss",
    "SS",
    "strasse",
    "$5 (",
    ".*",
    "\\",
    "a+b",
    "[x]",
    "^$",
    "|",
    "(?i)",
    "{2}",
    "0",
    "1",
    "42",
    "a",
    "b",
)
UNICODE_WORDS = (
    "\u017f",  # ſ LATIN SMALL LETTER LONG S
    "\u212a",  # K KELVIN SIGN
    "\u0130",  # İ
    "\u0131",  # ı
    "ß",
    "ẞ",
    "ς",
    "σ",
    "Σ",
    "ΣΑΣ",
    "é",  # composed
    "e\u0301",  # decomposed
    "\u0301",  # a lone combining mark
    "a\u0308\u0323",  # two combining marks, non-canonical order
    "中文",
    "日本語",
    "한국어",
    "\u212b",  # Å ANGSTROM SIGN (NFC: Å)
    "Å",
    "ﬁ",
    "ǅ",
    "µ",
    "μ",
    "Straße",
    "STRASSE",
    "kotomó",
    "\u2126",  # Ω OHM SIGN
)
WORDS = ASCII_WORDS + UNICODE_WORDS

# Look-alike replacements a model's answer might contain instead of the expected letters.
LOOKALIKES = {
    "s": ("\u017f", "S"),
    "S": ("\u017f", "s"),
    "k": ("\u212a", "K"),
    "K": ("\u212a", "k"),
    "i": ("\u0130", "\u0131", "I"),
    "I": ("\u0131", "\u0130"),
    "ss": ("ß", "ẞ", "SS"),
    "ß": ("ss", "SS", "ẞ"),
    "σ": ("ς", "Σ"),
    "ς": ("σ", "Σ"),
    "Σ": ("σ", "ς"),
    "é": ("e\u0301", "É"),
    "Å": ("\u212b", "A\u030a"),
}
# Other scripts' digits (str.isdigit() is true; the contract's literal is ASCII only).
DIGIT_SCRIPTS = ("٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "०१२३४५६७८९")


@functools.cache  # a strategy built once is validated once: generation is faster
def whitespace(min_size: int = 0, max_size: int = 3) -> st.SearchStrategy[str]:
    """A run of Python whitespace."""
    return st.lists(st.sampled_from(WHITESPACE), min_size=min_size, max_size=max_size).map("".join)


@functools.cache
def separator() -> st.SearchStrategy[str]:
    """Between two words: whitespace, or now and then a look-alike that is not whitespace."""
    return whitespace(1, 2) | st.sampled_from(NOT_WHITESPACE)


@functools.cache
def words(max_size: int = 4) -> st.SearchStrategy[str]:
    """A few awkward words joined by (Python) whitespace."""
    return st.lists(
        st.tuples(st.sampled_from(WORDS), separator()), min_size=1, max_size=max_size
    ).map(lambda pairs: "".join(w + s for w, s in pairs).rstrip(" "))


@functools.cache
def any_text() -> st.SearchStrategy[str]:
    """Arbitrary text: the full Unicode range, or pieces of the awkward words and spaces."""
    pieces = st.lists(st.sampled_from(WORDS + WHITESPACE + NOT_WHITESPACE), max_size=6)
    return st.text(max_size=12) | words() | pieces.map("".join)


_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)


@st.composite
def integer_literal(draw: Draw) -> str:
    """An ASCII integer literal with an optional sign and leading zeros."""
    sign = draw(st.sampled_from(["", "", "+", "-"]))
    zeros = "0" * draw(st.sampled_from([0, 1, 2, 3, 40]))
    number = draw(st.integers(0, 10**3) | st.integers(0, 10**25) | st.integers(0, 10**45))
    return sign + zeros + str(number)


@st.composite
def same_integer(draw: Draw, literal: str) -> str:
    """Another spelling of the integer ``literal`` (an ASCII literal), or a near miss."""
    stripped = literal.strip()
    negative = stripped.startswith("-")
    digits = stripped.lstrip("+-").lstrip("0") or "0"
    sign = "-" if negative else draw(st.sampled_from(["", "+"]))
    spelled = sign + "0" * draw(st.integers(0, 2)) + digits
    how = draw(st.sampled_from(["same", "same", "flip", "script", "off", "decorate", "underscore"]))
    if how == "flip":
        spelled = ("" if negative else "-") + digits
    elif how == "script":
        script = draw(st.sampled_from(DIGIT_SCRIPTS))
        spelled = spelled.translate(str.maketrans("0123456789", script))
    elif how == "off":
        spelled = str(int(digits) + draw(st.sampled_from([1, -1, 10])))
    elif how == "decorate":
        spelled = draw(st.sampled_from(["{}.0", "= {}", "{} apples", "0x{}", "{}e0"])).format(
            spelled
        )
    elif how == "underscore" and len(digits) > 1:
        spelled = sign + digits[0] + "_" + digits[1:]
    return draw(whitespace()) + spelled + draw(whitespace())


def _swap_lookalikes(text: str, choose: Callable[[Sequence[str]], str]) -> str:
    out = text
    for plain, alikes in LOOKALIKES.items():
        if plain in out:
            out = out.replace(plain, choose(alikes), 1)
    return out


@st.composite
def variant(draw: Draw, text: str) -> str:
    """``text`` as a model might give it: case changed, look-alikes, decomposed, embedded
    in a sentence, cut short, re-spaced, padded with Python-only whitespace."""
    out = text
    for how in draw(
        st.lists(
            st.sampled_from(
                ["case", "lookalike", "nfd", "nfc", "embed", "substring", "respace", "pad"]
            ),
            max_size=3,
        )
    ):
        if how == "case":
            change = draw(st.sampled_from(["upper", "lower", "swapcase", "casefold", "title"]))
            out = getattr(out, change)()
        elif how == "lookalike":
            out = _swap_lookalikes(out, lambda alikes: draw(st.sampled_from(alikes)))
        elif how in ("nfd", "nfc"):
            out = unicodedata.normalize(how.upper(), out)
        elif how == "embed":
            before = draw(st.sampled_from(["", "The answer is ", "Plex is ", "=> ", "（", "¿"]))
            after = draw(st.sampled_from(["", ".", " (blocked)", "\u0301", "!", " 中"]))
            out = before + out + after
        elif how == "substring" and out:
            start = draw(st.integers(0, len(out) - 1))
            out = out[start : draw(st.integers(start, len(out)))]
        elif how == "respace":
            out = "".join(
                draw(whitespace(1, 3)) if c.isspace() else c for c in out
            )  # same tokens, other separators
        elif how == "pad":
            out = draw(whitespace()) + out + draw(whitespace())
    return out


def json_value() -> st.SearchStrategy[Any]:
    """A value a harness's structured answer holds (what ``json.dumps`` writes)."""
    scalars = (
        st.integers(-(10**40), 10**40)
        | st.integers(-20, 20)
        | st.booleans()
        | st.none()
        | st.floats(allow_nan=True)
        | st.sampled_from([0.0, -0.0, 1.0, 3.0, 1e16])
        | st.text(max_size=6)
        | st.sampled_from(["3", "+03", " 3", "-0", "3.0", "٣", "1_000", "yes", "ſ"])
    )
    return scalars | st.lists(scalars, max_size=3)


@st.composite
def json_text(draw: Draw, value: Any = None, *, fresh: bool = True) -> str:
    """``value`` (or a fresh one) as JSON, now and then spaced or not JSON at all."""
    if fresh:
        value = draw(json_value())
    how = draw(st.sampled_from(["dumps", "dumps", "dumps", "spaced", "broken"]))
    text = json.dumps(value)
    if how == "spaced":
        return draw(st.sampled_from([" ", "\n", "", "\t"])) + json.dumps(value, indent=1)
    if how == "broken":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))] or "'x'"
    return text


@st.composite
def json_answer(draw: Draw, expected: str) -> str:
    """Another JSON spelling of ``expected``'s value (as int, float, string, bool), or
    another value."""
    try:
        value = json.loads(expected)
    except ValueError:
        return draw(json_text())
    how = draw(st.sampled_from(["same", "str", "float", "bool", "other"]))
    if how == "str" and not isinstance(value, (list, str)):
        return json.dumps(str(value))
    if how == "float" and isinstance(value, int) and not isinstance(value, bool):
        return json.dumps(float(value)) if abs(value) < 2**60 else json.dumps(value)
    if how == "bool" and value in (0, 1):
        return json.dumps(bool(value))
    if how == "other":
        return draw(json_text())
    return draw(json_text(value, fresh=False))


WORD_TOKENS: Final = ["UNKNOWN", "NO", "YES", "Plex", "-7", "ruled out", "K", "ſ", "a_b"]


@st.composite
def word_answer(draw: Draw, expected: str) -> str:
    """The token in a sentence: negated or not, inside a longer word, with punctuation."""
    token = draw(st.sampled_from([expected, expected.lower(), expected.upper()]))
    before = draw(
        st.sampled_from(
            [
                "",
                "it is ",
                "not ",
                "it is not ",
                "Not ",
                "never really ",
                "no, it is ",
                "cannot be ",
                "isn't ",
                "x",
                "-",
                "I can't say: ",
                "neither A nor B, but ",
            ]
        )
    )
    after = draw(st.sampled_from(["", ".", "s", " (blocked)", "x", "-1", "\u0301"]))
    return draw(whitespace()) + before + token + after + draw(whitespace())


@functools.cache
def expected_text(mode: Match) -> st.SearchStrategy[str]:
    """A valid ``expected`` for a match mode (non-blank; an integer literal for ``integer``)."""
    if mode in (Match.INT_VALUE, Match.JSON_EQUAL):
        return st.builds(json.dumps, json_value())
    if mode in (Match.WORD, Match.ISOLATED_WORD):
        return st.sampled_from(WORD_TOKENS) | words().filter(lambda s: s.strip() != "")
    if mode is Match.INTEGER:
        return st.builds(
            lambda pad, lit, pad2: pad + lit + pad2, whitespace(), integer_literal(), whitespace()
        )
    return (words() | st.text(min_size=1, max_size=8)).filter(lambda s: s.strip() != "")


@st.composite
def answer_text(draw: Draw, expected: str, mode: Match) -> str | None:
    """An answer to an item: right, a variant of right, wrong, arbitrary, or null."""
    how = draw(st.sampled_from(["exact", "variant", "variant", "variant", "other", "null"]))
    if how == "null":
        return None
    if how == "exact":
        return expected
    if how == "other":
        return draw(any_text())
    if mode is Match.INTEGER and _INTEGER.fullmatch(expected.strip()) and draw(st.booleans()):
        return draw(same_integer(expected))
    if mode in (Match.INT_VALUE, Match.JSON_EQUAL) and draw(st.integers(0, 3)) > 0:
        return draw(json_answer(expected))
    if mode in (Match.WORD, Match.ISOLATED_WORD) and draw(st.integers(0, 3)) > 0:
        return draw(word_answer(expected))
    return draw(variant(expected))


# ----------------------------------------------------------------------------- episodes


@functools.cache
def _modes(category: Category) -> st.SearchStrategy[Match | None]:
    """An item's ``match``: often null (the category default) or the default itself, else
    any mode (every mode is legal in every category)."""
    default = DEFAULT_MATCH[category]
    return st.sampled_from([None, None, default, *Match])


@st.composite
def items_and_answers(draw: Draw, category: Category) -> list[Row]:
    """1-4 graded items and their answers (0-2 per item; the one with the highest turn
    counts), items mostly before the answers."""
    items, answers = [], []
    for i in range(draw(st.integers(1, 4))):
        item_id = draw(st.sampled_from([f"q{i}", f"é{i}", f"Q{i}", f"{i}"]))  # distinct per i
        mode = draw(_modes(category))
        effective = mode or DEFAULT_MATCH[category]
        expected = draw(expected_text(effective))
        items.append(item(item_id, expected, match=mode))
        for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
            reply = answer(item_id, draw(answer_text(expected, effective)))
            # Contract 1.2: the harness's own verdict; a `recorded` item's is the verdict
            # (mostly given: an answer without one is rejected), a declarative one's is
            # compared with the kind's.
            given = [True, False, True, False, None] if mode is Match.RECORDED else [None, None]
            reply[VERDICT] = draw(st.sampled_from([*given, True, False]))
            answers.append(reply)
    turns = items + draw(st.permutations(answers))
    if draw(st.integers(0, 4)) == 4:
        turns = draw(st.permutations(turns))  # answers before their items are legal
    return turns


@functools.cache
def chatter() -> st.SearchStrategy[Row]:
    """A ``message`` row: part of the transcript, ignored by scoring."""
    return st.builds(
        lambda role, text: message(role, text), st.sampled_from(list(Role)), any_text()
    )


@st.composite
def halfway_progress(draw: Draw) -> float:
    """A progress p for which ``0.20 * p`` (alone, or after 0.55 + 0.25) lies at or next to a
    5th-decimal half-way point, where ``round(x, 4)`` is decided by the last bits."""
    k = draw(st.integers(0, 1999))
    p = (k + 0.5) / 2000.0
    for _ in range(draw(st.integers(0, 3))):
        p = math.nextafter(p, draw(st.sampled_from([math.inf, -math.inf])))
    return p


@functools.cache
def progress_value() -> st.SearchStrategy[float | None]:
    """A feedback ``value``: in [0, 1], outside it (legal, clamped), null, or near a tie."""
    return st.one_of(
        st.none(),
        st.sampled_from([0.0, 1.0, 0.5, 0.25, 0.1, 0.3, -0.0, -0.5, 1.5, 2.0]),
        st.floats(0.0, 1.0),
        st.floats(-1.0, 2.0, allow_nan=False),
        halfway_progress(),
    )


@st.composite
def concept_episode(draw: Draw, category: Category) -> tuple[Any, list[Row]]:
    """Concept formation / language learning: examples, then the test items."""
    body = draw(items_and_answers(category))
    n_items = sum(r[Col.KIND] == Kind.ITEM for r in body)
    initial = draw(st.integers(-2, 6))
    maximum = draw(st.integers(0, 16))
    params: dict[str, Any] = {"initial_examples": initial, "max_examples": maximum}
    if draw(st.booleans()):
        params["free_threshold"] = draw(st.integers(-3, 8))
    if draw(st.booleans()):
        params["num_test_items"] = draw(st.integers(n_items, n_items + 4) | st.just(INT32_MAX))
    if draw(st.integers(0, 5)) == 5:
        params["seed"] = draw(st.integers(0, 99))  # unknown keys are ignored
    # examples_used around the free threshold and at max_examples (never above: valid)
    free = max(initial, params.get("free_threshold", 4))
    near = sorted(n for n in {0, free - 1, free, free + 1, maximum} if 0 <= n <= maximum)
    n_examples = draw(st.sampled_from(near) | st.integers(0, maximum))
    text = st.sampled_from(["f(1) = 5", "tiki -> tikinmé", "a b -> 0 1"])
    turns = [example(draw(text)) for _ in range(n_examples)] + body
    if draw(st.booleans()):
        turns.insert(0, draw(chatter()))
    return params, turns


@st.composite
def runtime_rl_episode(draw: Draw) -> tuple[Any, list[Row]]:
    """Actions and feedback; solving feedback possibly before any action; progress values
    outside [0, 1] and near rounding ties."""
    params: dict[str, Any] = {"budget": draw(st.integers(1, 20) | st.just(INT32_MAX))}
    if draw(st.integers(0, 3)) > 0:  # mostly below the default 7: efficiency decays
        params["min_explore"] = draw(st.integers(-3, 5) | st.integers(-3, 15))
    if draw(st.booleans()):
        params["floor"] = draw(
            st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 0, 1, -0.5, 1.5, -0.0])
            | st.floats(-2.0, 2.0, allow_nan=False)
        )
    if draw(st.booleans()):
        params["progress"] = draw(st.sampled_from(["max", "last"]))
    # Actions, each followed by 0-2 feedback rows; the first solving feedback (if any) comes
    # after action `solve_at` (0: before any action). Later feedback may solve again.
    n_actions = draw(st.integers(0, 14))
    solve_at = draw(st.none() | st.integers(0, n_actions))
    later = st.sampled_from([False, False, None, True])
    events: list[Row] = []
    if solve_at == 0:
        events.append(feedback(draw(progress_value()), True))
    for i in range(1, n_actions + 1):
        events.append(action(draw(st.sampled_from(["up", "left", "RGBY", "中"]))))
        for j in range(draw(st.sampled_from([1, 1, 0, 2]))):
            solving = i == solve_at and j == 0
            unsolved = st.sampled_from([False, None]) if solve_at is None or i < solve_at else later
            events.append(feedback(draw(progress_value()), True if solving else draw(unsolved)))
    if draw(st.integers(0, 6)) == 6:
        events.append(round_end(1, draw(st.floats(0.0, 1.0))))  # legal in any category
    return params, events


@functools.cache
def round_score() -> st.SearchStrategy[float]:
    tiny = [5e-324, 1e-10, 0.9999999999999999]  # denormal; below the zero guard's epsilon
    return st.sampled_from(
        [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0, 1 / 3, 2 / 3, *tiny]
    ) | st.floats(0.0, 1.0)


@st.composite
def round_scores(draw: Draw, n: int) -> list[float]:
    """n round scores: random, or shaped (rising or falling steeply: trajectory clipped;
    all zero: the zero guard; flat)."""
    shape = draw(st.sampled_from(["random", "random", "rising", "falling", "zero", "flat"]))
    if shape == "random":
        return list(draw(st.lists(round_score(), min_size=n, max_size=n)))
    if shape in ("rising", "falling"):
        steps = [i / (n - 1) if n > 1 else 1.0 for i in range(n)]
        return steps if shape == "rising" else steps[::-1]
    return [0.0 if shape == "zero" else draw(round_score())] * n


@st.composite
def procedural_episode(draw: Draw) -> tuple[Any, list[Row]]:
    """1..7 practice rounds (numbered 1..n or by any distinct integers), then transfer items."""
    params: dict[str, Any] = {}
    if draw(st.integers(0, 3)) > 0:
        params["practice_rounds"] = draw(st.integers(1, 7))
    n = params.get("practice_rounds", 5)
    scores = draw(round_scores(n))
    if draw(st.booleans()):
        numbers = list(range(1, n + 1))
    else:
        numbers = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n, unique=True))
    rounds = [round_end(r, s) for r, s in zip(numbers, scores, strict=True)]
    if draw(st.booleans()):
        rounds = draw(st.permutations(rounds))  # turn order is not round order
    return params, rounds + draw(items_and_answers(Category.PROCEDURAL_LEARNING))


@st.composite
def episode_body(draw: Draw, category: Category) -> tuple[Any, list[Row]]:
    """(params, turns in order) of a valid episode of ``category``."""
    if category in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING):
        params, turns = draw(concept_episode(category))
    elif category is Category.RUNTIME_RL:
        params, turns = draw(runtime_rl_episode())
    elif category is Category.PROCEDURAL_LEARNING:
        params, turns = draw(procedural_episode())
    else:
        params = draw(st.sampled_from([{}, {}, {"seed": 7}]))
        turns = draw(items_and_answers(category))
        if category is Category.OBSERVATIONAL_LEARNING:
            turns = [example("a b -> 0 1")] * draw(st.integers(0, 2)) + turns
    if draw(st.booleans()):
        # status `error` is a harness error (never scored); "ERROR" and null are not
        status = st.sampled_from([*[Status.COMPLETED] * 4, None, "ERROR", Status.ERROR])
        turns = [*turns, episode_end(draw(status))]
        if draw(st.booleans()):  # contract 1.2: the score the harness recorded
            reported = st.sampled_from([0.0, 1.0, 0.5, 0.25, 0.55]) | st.floats(0.0, 1.0)
            turns[-1][REPORTED_SCORE] = draw(reported)
    return params, turns


# ------------------------------------------------------------------------- perturbations

BAD_PARAMS = (
    None,
    "",
    "[1, 2]",
    '"text"',
    "{seed: 7}",
    '{"budget": 5',
    "null",
    "[" * 5000,  # deeper than json's recursion limit
)


@st.composite
def bad_params(draw: Draw, category: Category, params: Any) -> Any:
    """``params`` made invalid: not an object, a parameter missing, of the wrong type or
    value, non-finite, huge; or valid-looking JSON text with duplicate keys."""
    base = dict(params) if isinstance(params, dict) else {}
    how = draw(st.sampled_from(["not_object", "drop", "set", "set", "set", "dup_keys"]))
    if how == "not_object" or (not base and how == "drop"):
        return draw(st.sampled_from(BAD_PARAMS))
    if how == "drop":
        base.pop(draw(st.sampled_from(sorted(base))))
        return base
    # mostly one of the category's own parameters (from schemas.params), now and then another
    own = [p.name for p in PARAMS[category]]
    every = sorted({p.name for ps in PARAMS.values() for p in ps})
    name = draw(st.sampled_from(own * 3 + every))
    raw = draw(
        st.sampled_from(
            [
                "true",
                "5.0",
                '"5"',
                "null",
                "[]",
                "0",
                "-1",
                "2147483647",
                "2147483648",
                "-2147483648",
                "-2147483649",
                "9223372036854775808",
                "1" + "0" * 5000,  # beyond int()'s digit limit
                "NaN",
                "Infinity",
                "-Infinity",
                "1e400",
                '"max"',
                '"last"',
                '"MAX"',
                "1.5",
                "1E1",
                "-0.0",
                "1e308",
            ]
        )
    )
    if how == "dup_keys":
        text = json.dumps(base)
        return "{" + f'"{name}": {raw}, ' + text[1:] if base else "{" + f'"{name}": {raw}' + "}"
    body = json.dumps(base)[1:-1]
    return "{" + (body + ", " if body else "") + f'"{name}": {raw}' + "}"


def _new_turn(rows: list[Row]) -> int:
    turns = [r[Col.TURN] for r in rows if isinstance(r.get(Col.TURN), int)]
    return max(turns, default=0) + 1


def _pick(draw: Draw, rows: list[Row], kind: Kind | None = None) -> Row | None:
    candidates = [r for r in rows if kind is None or r.get(Col.KIND) == kind]
    return draw(st.sampled_from(candidates)) if candidates else None


def _added(rows: list[Row], new: Row) -> None:
    if not rows:
        return
    template = rows[0]
    identity = {str(c): template.get(c) for c in (Col.EPISODE_ID, *EPISODE_CONSTANT)}
    rows.append({**identity, FILE: template.get(FILE), **new, Col.TURN: _new_turn(rows)})


def _null_required(draw: Draw, rows: list[Row]) -> None:
    r = _pick(draw, rows)
    if r is not None:
        r[draw(st.sampled_from([c for c in REQUIRED if c != Col.EPISODE_ID]))] = None


def _unknown_enum(draw: Draw, rows: list[Row]) -> None:
    column = draw(st.sampled_from([Col.CATEGORY, Col.ROLE, Col.KIND, Col.MATCH]))
    r = (column == Col.MATCH and _pick(draw, rows, Kind.ITEM)) or _pick(draw, rows)
    if r is not None:
        r[column] = draw(st.sampled_from(["bogus", "", "Item", "item ", "ITEM", "runtime-rl"]))


def _duplicate_turn(draw: Draw, rows: list[Row]) -> None:
    if len(rows) > 1:
        a, b = draw(st.permutations(rows))[:2]
        a[Col.TURN] = b[Col.TURN]


def _null_episode_id(draw: Draw, rows: list[Row]) -> None:
    r = _pick(draw, rows)
    if r is not None:
        r[Col.EPISODE_ID] = None


def _inconsistent(draw: Draw, rows: list[Row]) -> None:
    r = _pick(draw, rows)
    if r is not None:
        column = draw(st.sampled_from(EPISODE_CONSTANT))
        other = draw(st.sampled_from(list(Category))) if column == Col.CATEGORY else "other"
        r[column] = other


def _relabel(draw: Draw, rows: list[Row]) -> None:
    """Every row names another (valid) category: its params and items may not fit."""
    other = draw(st.sampled_from(list(Category)))
    for r in rows:
        r[Col.CATEGORY] = other


def _drop_start(draw: Draw, rows: list[Row]) -> None:
    rows[:] = [r for r in rows if r.get(Col.KIND) != Kind.EPISODE_START]


def _second_start(draw: Draw, rows: list[Row]) -> None:
    _added(rows, episode_start(draw(st.sampled_from([{}, {"budget": 3}, None]))))


def _harness_error(draw: Draw, rows: list[Row]) -> None:
    _added(rows, episode_end(Status.ERROR))


def _non_finite(draw: Draw, rows: list[Row]) -> None:
    non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
    if draw(st.integers(0, 3)) == 3:  # a reported score (read on episode_end rows only)
        _added(rows, episode_end(Status.COMPLETED, **{REPORTED_SCORE: draw(non_finite)}))
        return
    r = _pick(draw, rows)
    if r is not None:
        r[Col.VALUE] = draw(non_finite)


def _bad_usage(draw: Draw, rows: list[Row]) -> None:
    """Contract 1.4: on an assistant row, a usage value no call can have (negative, not
    finite, or above the most one reply can record: its bound, or far above it)."""
    column = draw(st.sampled_from(list(USAGE_DTYPES)))
    bound = USAGE_MAXIMA[column]
    if USAGE_DTYPES[column] == pl.Int64():
        above = st.sampled_from([int(bound) + 1, 5 * 10**18, 2**63 - 1])
        bad: Any = draw(st.integers(-(10**6), -1) | above)
    else:
        above = st.sampled_from([bound * (1 + 1e-15), 1e9, 1e15, 1e308])
        bad = draw(st.sampled_from([math.nan, math.inf, -math.inf, -0.5, -1e-300]) | above)
    mine = [r for r in rows if r.get(Col.ROLE) == Role.ASSISTANT]
    if mine:
        draw(st.sampled_from(mine))[column] = bad
    else:
        _added(rows, message(Role.ASSISTANT, "thinking", **{column: bad}))


@functools.cache
def usage_values() -> st.SearchStrategy[dict[str, Any]]:
    """Contract 1.3: some of a call's usage (costs whose sums depend on the order added);
    1.4: now and then the most one reply can record (its bound, which is kept)."""
    cost = st.sampled_from([0.1, 0.2, 0.3, 1e-9, 3.5e-5]) | st.floats(0.0, 100.0)

    def at_most(column: str) -> st.SearchStrategy[Any]:
        return st.just(USAGE_MAXIMA[column])

    return st.fixed_dictionaries(
        {},
        optional={
            INPUT_TOKENS: st.integers(0, 10**6) | at_most(INPUT_TOKENS),
            OUTPUT_TOKENS: st.integers(0, 10**5) | at_most(OUTPUT_TOKENS),
            COST_USD: cost | at_most(COST_USD),
            LATENCY_MS: st.sampled_from([0.5, 1.0, 1234.0])
            | st.floats(0.0, 1e6)
            | at_most(LATENCY_MS),
        },
    )


def _unknown_answer(draw: Draw, rows: list[Row]) -> None:
    _added(rows, answer(draw(st.sampled_from([None, "nope", "Q0", "q0 "])), "x"))


def _duplicate_item(draw: Draw, rows: list[Row]) -> None:
    r = _pick(draw, rows, Kind.ITEM)
    item_id = r.get(Col.ITEM_ID) if r is not None else None
    _added(rows, item(draw(st.sampled_from([item_id, None])), "x"))


def _bad_expected(draw: Draw, rows: list[Row]) -> None:
    r = _pick(draw, rows, Kind.ITEM)
    if r is None:
        return
    if draw(st.booleans()):
        r[Col.EXPECTED] = draw(st.sampled_from([None, "", " \t", "\x1c\u3000", "\x85"]))
    else:
        r[Col.MATCH] = Match.INTEGER
        r[Col.EXPECTED] = draw(st.sampled_from(["3.0", "٣", "１２", "1_000", "+-1", "- 1", "x"]))


def _bad_round(draw: Draw, rows: list[Row]) -> None:
    rounds = [r for r in rows if r.get(Col.KIND) == Kind.ROUND_END]
    how = draw(st.sampled_from(["null_round", "null_value", "repeat", "low", "high", "count"]))
    if how == "null_round":
        _added(rows, round_end(None, 0.5))
    elif how == "null_value":
        _added(rows, round_end(999, None))
    elif how == "repeat" and rounds:
        _added(rows, round_end(draw(st.sampled_from(rounds))[Col.ROUND], 0.5))
    elif how == "low":
        _added(rows, round_end(998, draw(st.sampled_from([-0.1, -5e-324, -1.0]))))
    elif how == "high":
        _added(rows, round_end(998, draw(st.sampled_from([1.0000000000000002, 7.0]))))
    elif rounds and draw(st.booleans()):  # one round too few for procedural learning
        rows.remove(draw(st.sampled_from(rounds)))
    else:  # one round too many for procedural learning
        _added(rows, round_end(997, 0.5))


def _too_many(draw: Draw, rows: list[Row]) -> None:
    """More examples than max_examples or items than num_test_items (concept formation and
    language learning reject these; other categories take them)."""
    start = _pick(draw, rows, Kind.EPISODE_START)
    try:
        params = json.loads(start[Col.PARAMS]) if start else {}
    except (TypeError, ValueError, RecursionError):
        params = {}
    params = params if isinstance(params, dict) else {}
    if draw(st.booleans()):
        limit = params.get("max_examples")
        extra = limit + 1 if isinstance(limit, int) and 0 <= limit < 30 else 3
        for _ in range(extra):
            _added(rows, example())
    else:
        limit = params.get("num_test_items")
        extra = limit + 1 if isinstance(limit, int) and 0 <= limit < 10 else 2
        for i in range(extra):
            _added(rows, item(f"extra{i}", "x"))


Perturbation = Callable[[Draw, list[Row]], None]
PERTURBATIONS: dict[str, Perturbation] = {
    "null_required": _null_required,
    "unknown_enum": _unknown_enum,
    "duplicate_turn": _duplicate_turn,
    "null_episode_id": _null_episode_id,
    "inconsistent": _inconsistent,
    "relabel": _relabel,
    "drop_start": _drop_start,
    "second_start": _second_start,
    "harness_error": _harness_error,
    "non_finite": _non_finite,
    "bad_usage": _bad_usage,
    "unknown_answer": _unknown_answer,
    "duplicate_item": _duplicate_item,
    "bad_expected": _bad_expected,
    "bad_round": _bad_round,
    "too_many": _too_many,
}
BAD_PARAMS_NAME = "bad_params"  # drawn with the others; applied before the rows are built


@functools.cache
def perturbation_names(category: Category) -> st.SearchStrategy[list[str]]:
    """1-3 perturbations, weighted towards those that matter for the category."""
    weighted = [*PERTURBATIONS, BAD_PARAMS_NAME, BAD_PARAMS_NAME]
    if category in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING):
        weighted += ["too_many"] * 3
    elif category is Category.PROCEDURAL_LEARNING:
        weighted += ["bad_round"] * 3
    elif category is Category.RUNTIME_RL:
        weighted += ["non_finite"] * 2
    return st.lists(st.sampled_from(sorted(weighted)), min_size=1, max_size=3)


# --------------------------------------------------------------------------------- dumps


@st.composite
def turn_numbers(draw: Draw, n: int) -> list[int]:
    """n increasing turn numbers, with gaps, possibly starting below zero."""
    start = draw(st.integers(-3, 3))
    gaps = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    out, turn = [], start
    for gap in gaps:
        out.append(turn)
        turn += gap
    return out


@st.composite
def episodes(
    draw: Draw,
    category: Category,
    episode_id: str | None,
    file: str,
    *,
    perturb: bool = True,
) -> list[Row]:
    """The rows of one episode: valid, or (when ``perturb``) sometimes broken."""
    params, turns = draw(episode_body(category))
    names: list[str] = []
    if perturb and draw(st.integers(0, 4)) >= 3:  # mostly valid: most episodes get scored
        names = draw(perturbation_names(category))
    if BAD_PARAMS_NAME in names:
        params = draw(bad_params(category, params))
    rows = episode(
        category,
        episode_id=episode_id,
        file=file,
        params=params,
        model=draw(st.sampled_from(["m1", "m2", "mé"])),
        # boolean_circuit_proc_learning: a task with a formula version of its own (v4)
        task=draw(st.sampled_from(["hanoi_two", "t", "中", "boolean_circuit_proc_learning"])),
        turns=turns,
    )
    for row_, turn in zip(rows, draw(turn_numbers(len(rows))), strict=True):
        row_[Col.TURN] = turn
    # Contract 1.1: the instance, on the episode_start row (other rows' value is ignored).
    instance = draw(st.sampled_from([None, "i1", "i2", "ï 3"]))
    for row_ in rows:
        if row_.get(Col.KIND) == Kind.EPISODE_START:
            row_[INSTANCE_ID] = instance
        elif draw(st.integers(0, 9)) == 9:
            row_[INSTANCE_ID] = "ignored"
    # Contract 1.3: usage on some rows (any role: it is read on assistant rows only).
    if draw(st.integers(0, 2)) == 2:
        for row_ in rows:
            if draw(st.integers(0, 2)) > 0:
                row_.update(draw(usage_values()))
    # The harness's times of the start and end (the wall time, read where usage is): some
    # missing, some ends before their start.
    for row_ in rows:
        if row_.get(Col.KIND) in (Kind.EPISODE_START, Kind.EPISODE_END) and draw(st.booleans()):
            row_[Col.TS] = draw(st.datetimes(_EARLIEST, _LATEST, timezones=st.just(UTC)))
    for name in names:
        if name != BAD_PARAMS_NAME:
            PERTURBATIONS[name](draw, rows)
    return rows


_EARLIEST: Final = datetime(2026, 12, 1)  # st.datetimes' bounds: naive, the zone drawn apart
_LATEST: Final = datetime(2026, 12, 2)


@st.composite
def dumps(
    draw: Draw,
    *,
    categories: Sequence[Category] = tuple(Category),
    max_episodes: int = 6,
    perturb: bool = True,
) -> list[Row]:
    """The rows of a dump: 1-3 files, 1..max_episodes episodes, rows shuffled.

    With ``perturb``: some episodes break rules, an episode id may be reused in another file
    (or in the same one), and a file may hold rows without an episode_id.
    """
    files = draw(st.lists(st.sampled_from(FILES), min_size=1, max_size=3, unique=True))
    rows: list[Row] = []
    bodies: list[list[Row]] = []
    for i in range(draw(st.integers(1, max_episodes))):
        category = draw(st.sampled_from(list(categories)))
        file = draw(st.sampled_from(files))
        episode_id = draw(st.sampled_from([f"e{i}", f"é{i}", f"E{i} ", "" if i == 0 else f"e{i}"]))
        body = draw(episodes(category, episode_id, file, perturb=perturb))
        bodies.append(body)
        rows += body
    if perturb and draw(st.integers(0, 3)) == 3:
        # An episode id reused: in another file (every copy rejected) or in the same one
        # (one episode with repeated turns and starts).
        copied = draw(st.sampled_from(bodies))
        target = draw(st.sampled_from(files))
        rows += [{**r, FILE: target} for r in copied]
    if perturb and draw(st.integers(0, 5)) == 5:
        rows += draw(
            episodes(
                draw(st.sampled_from(list(categories))),
                None,
                draw(st.sampled_from(files)),
                perturb=False,
            )
        )
    return draw(st.permutations(rows))


@functools.cache
def formulas() -> st.SearchStrategy[dict[str, str]]:
    """A formula selection: procedural learning v1 or v2 (the others have one version)."""
    return st.sampled_from(
        [{}, {Category.PROCEDURAL_LEARNING: "v1"}, {Category.PROCEDURAL_LEARNING: "v2"}]
    )
