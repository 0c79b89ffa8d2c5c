"""Write a simulated, contract-valid transcript dump of any size.

``simulate(out, date=..., episodes=N, seed=S)`` writes ``OUT/dump_date=DATE/part-00000.parquet``,
``part-00001.parquet``, ... (straight under ``OUT`` when `date` is None), `episodes_per_file`
episodes per file, plus ``_simulation.json`` beside them: the parameters and, for every
episode that the scorer must not score, its file, status and rule (the scorer skips files
whose names start with ``_``).

How episodes are made, and why it scales:

1. Episode ``g`` (0..N-1) belongs to the (model, task) pair ``g mod C`` of the ``C`` pairs
   (every model plays every task equally often) and is that pair's instance
   ``k = g div C``.
2. A *pool* of distinct episodes is played in Python, ``P = min(pool_size, ceil(N / C))``
   per pair: each from its own ``random.Random`` keyed by seed, date, model, task and
   ``k``, so the pool does not depend on N. When ``N <= pool_size * C`` every episode is
   distinct.
3. The files are *tiled* from the pool with polars, file by file: episode ``g`` takes the
   rows of pool entry ``k mod P`` (one vectorised gather), with its own ``episode_id``
   (``sim-DATE-sSEED-g``), run and clock (``ts``). Content repeats, identities never do.
4. Contract 1.3's usage on every assistant row (``usage``, the default): the call's input
   tokens are the text before it in the episode, its output tokens its own text (a token
   every four characters), its latency the clock's step to it, its cost the model's prices
   (``simulator.models.PRICES``) of those tokens: made from the rows with polars, no draw.
5. A share of the episodes (``rejects``, default 1%) is replaced by a freshly played
   episode that a harness bug spoiled (``simulator.faults``: each breaks one named
   contract rule), and a share (``harness_errors``, default half of ``rejects``) by one
   that crashed (``episode_end`` status ``error``). Which ``g`` is chosen is a hash of the
   seed, date and ``g``: independent of the file size. ``rejects=0`` gives a clean dump.

Only the pool and one file's rows are ever in memory, so the dump can have any number of
rows. The output is deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from schemas.columns import EpisodeStatus
from schemas.contract import (
    COST_USD,
    INPUT_TOKENS,
    INSTANCE_ID,
    LATENCY_MS,
    OUTPUT_TOKENS,
    USAGE_DTYPES,
    USAGE_ROLE,
    Col,
    Kind,
)
from schemas.rules import Rule
from simulator.faults import FAULTS, crash
from simulator.models import DEFAULT_MODELS, Model
from simulator.tasks import TASKS, Task
from simulator.transcript import DT, Row, Transcript

DEFAULT_EPISODES = 1000
DEFAULT_EPISODES_PER_FILE = 10_000
DEFAULT_POOL_SIZE = 256
DEFAULT_REJECTS = 0.01
MANIFEST = "_simulation.json"
UNDATED_CLOCK = "2026-12-01"  # the day on the clock of an undated dump

# The columns of a dump file, in contract order, as a harness writes them.
SCHEMA: dict[str, pl.DataType] = {
    Col.RUN_ID: pl.String(),
    Col.EPISODE_ID: pl.String(),
    Col.MODEL: pl.String(),
    Col.TASK: pl.String(),
    Col.CATEGORY: pl.String(),
    Col.TURN: pl.Int32(),
    Col.ROLE: pl.String(),
    Col.KIND: pl.String(),
    Col.ITEM_ID: pl.String(),
    Col.CONTENT: pl.String(),
    Col.EXPECTED: pl.String(),
    Col.MATCH: pl.String(),
    Col.VALUE: pl.Float64(),
    Col.SOLVED: pl.Boolean(),
    Col.ROUND: pl.Int32(),
    Col.PARAMS: pl.String(),
    Col.STATUS: pl.String(),
    Col.TS: pl.Datetime("us", "UTC"),
}
assert list(SCHEMA) == list(Col)

# The pool: every column but the ones each tiled episode gets anew, plus the clock.
_POOL_SCHEMA: dict[str, pl.DataType] = {
    **{k: v for k, v in SCHEMA.items() if k not in (Col.EPISODE_ID, Col.TS)},
    DT: pl.Int64(),
}


@dataclass(frozen=True)
class Expected:
    """What the scorer must report for an episode the simulator spoiled on purpose."""

    file: str  # relative to the dump root, as in the scorer's ``file`` column
    status: str  # ``rejected`` or ``harness_error`` (schemas.columns.EpisodeStatus)
    rules: tuple[str, ...]  # the rule codes, exactly
    fault: str  # the fault's name (simulator.faults), or ``crash``


@dataclass
class Simulation:
    """What ``simulate_dump`` wrote."""

    root: Path
    paths: list[Path]
    episodes: int
    rows: int
    bytes: int
    seconds: float
    pool_episodes: int  # distinct episodes played for tiling (spoiled ones not counted)
    expected: dict[str, Expected] = field(default_factory=dict)  # by episode_id


# --------------------------------------------------------------------------- playing


def _key(seed: int, date: str | None, *parts: object) -> str:
    return ":".join(map(str, (seed, date or "-", *parts)))


def play(
    model: Model,
    task: Task,
    key: str,
    *,
    session: str,
    run_id: str,
    bulk: bool = True,
) -> list[Row]:
    """The rows of one episode of `task` played by `model`, from the random stream `key`."""
    tx = Transcript(random.Random(f"{key}:text"), model, task.name, session=session, bulk=bulk)
    task.play(random.Random(key), tx)
    identity = {
        Col.RUN_ID: run_id,
        Col.MODEL: model.name,
        Col.TASK: task.name,
        Col.CATEGORY: task.category.value,
    }
    for row in tx.rows:
        for name, value in identity.items():
            row.setdefault(name, value)
    return tx.rows


def _frame(episodes: Sequence[list[Row]]) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """The rows of `episodes` as one pool frame, with each episode's first row and length."""
    flat = [row for rows in episodes for row in rows]
    frame = pl.DataFrame(
        {name: [row.get(name) for row in flat] for name in _POOL_SCHEMA}, schema=_POOL_SCHEMA
    )
    lengths = np.array([len(rows) for rows in episodes], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    return frame, starts, lengths


def _with_usage(frame: pl.DataFrame, lengths: np.ndarray, models: Sequence[Model]) -> pl.DataFrame:
    """A frame of episodes (``lengths`` rows each, in turn order) with usage on its assistant
    rows (see the module's docstring, step 4)."""
    episode = pl.Series("__episode", np.repeat(np.arange(len(lengths)), lengths))
    text = (pl.col(Col.CONTENT).str.len_chars() // 4 + 1).fill_null(0).cast(pl.Int64)
    before = text.cum_sum().over(episode) - text
    step = (pl.col(DT) - pl.col(DT).shift(1).over(episode)).fill_null(0).clip(lower_bound=0)
    prices = {m.name: m.prices for m in models}
    price_in = pl.col(Col.MODEL).replace_strict({k: v[0] for k, v in prices.items()}, default=None)
    price_out = pl.col(Col.MODEL).replace_strict({k: v[1] for k, v in prices.items()}, default=None)
    call = pl.col(Col.ROLE) == USAGE_ROLE
    usage = frame.with_columns(
        pl.when(call).then(before).alias(INPUT_TOKENS),
        pl.when(call).then(text).alias(OUTPUT_TOKENS),
        pl.when(call).then(step.cast(pl.Float64) / 1000.0).alias(LATENCY_MS),
    )
    cost = (pl.col(INPUT_TOKENS) * price_in + pl.col(OUTPUT_TOKENS) * price_out) / 1e6
    return usage.with_columns(cost.cast(pl.Float64).alias(COST_USD)).cast(
        dict(USAGE_DTYPES.items())
    )


def _uniform(key: int, g: np.ndarray) -> np.ndarray:
    """A uniform [0, 1) number per episode index: splitmix64 of `key` + g (vectorised)."""
    z = g.astype(np.uint64) + np.uint64(key)
    z = z * np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) / float(2**53)


def _check_date(date: str | None) -> None:
    if date is None:
        return
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
            raise ValueError
        datetime.strptime(date, "%Y-%m-%d")  # a real day
    except ValueError:
        raise ValueError(f"{date!r} is not a date YYYY-MM-DD") from None


# --------------------------------------------------------------------------- writing


def simulate_dump(
    out: Path,
    *,
    date: str | None = None,
    episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    models: Sequence[Model] = DEFAULT_MODELS,
    tasks: Sequence[Task] = TASKS,
    episodes_per_file: int = DEFAULT_EPISODES_PER_FILE,
    bulk: bool = True,
    rejects: float = DEFAULT_REJECTS,
    harness_errors: float | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
    on_file: Callable[[Path, int, int], None] | None = None,
    instance_ids: bool = True,
    usage: bool = True,
) -> Simulation:
    """Write a simulated dump under `out` (see the module docstring); return what it wrote.

    date: the ``dump_date`` folder (``YYYY-MM-DD``), or None for files straight under `out`.
    rejects: share of episodes spoiled by a harness bug (each rejected for one rule);
    harness_errors: share that crashed (default ``rejects / 2``); both 0: a clean dump.
    pool_size: distinct episodes per (model, task) pair; beyond that they are tiled.
    on_file: called with (path, episodes, rows) after each file.
    instance_ids: write contract 1.1's ``instance_id`` on ``episode_start`` rows: episode
    ``g`` is instance ``task#k`` (``k = g div C``), so every model faces instance ``k`` of each
    task, on every night (the ids a benchmark with fixed instance seeds would write). False:
    a contract 1.0 dump, without the column.
    usage: write contract 1.3's usage on assistant rows (False: a dump without it).

    Earlier ``part-*.parquet`` files and ``_simulation.json`` in the target folder are
    replaced; nothing else under `out` is touched.
    """
    t0 = time.perf_counter()
    _check_date(date)
    if episodes < 0 or episodes_per_file < 1 or pool_size < 1:
        raise ValueError("episodes must be >= 0, episodes_per_file and pool_size >= 1")
    if not models or not tasks:
        raise ValueError("at least one model and one task")
    if len({m.name for m in models}) != len(models):
        raise ValueError("model names must be distinct")
    errors = rejects / 2 if harness_errors is None else harness_errors
    if rejects < 0 or errors < 0 or rejects + errors > 1:
        raise ValueError("rejects and harness_errors must be shares that sum to at most 1")

    folder = Path(out) / f"dump_date={date}" if date else Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for old in [*folder.glob("part-*.parquet"), folder / MANIFEST]:
        old.unlink(missing_ok=True)

    stamp = date.replace("-", "") if date else None
    session = f"nightly-{date}" if date else "simulation"
    identity: dict[str, dict[str, Any]] = {
        m.name: {
            "session": session,
            "run_id": f"sim-{date + '-' if date else ''}s{seed}-{m.name}",
            "bulk": bulk,
        }
        for m in models
    }
    id_prefix = f"sim-{stamp + '-' if stamp else ''}s{seed}-"
    pairs = [(m, t) for m in models for t in tasks]
    per_pair = math.ceil(episodes / len(pairs))
    size = min(pool_size, per_pair)

    # 2. the pool, one pair at a time (few Python objects alive at once)
    parts = [
        _frame(
            [
                play(m, t, _key(seed, date, m.name, t.name, k), **identity[m.name])
                for k in range(size)
            ]
        )
        for m, t in pairs
    ]
    pool = pl.concat([frame for frame, _, _ in parts])
    pool_lengths = np.concatenate([lengths for _, _, lengths in parts])
    if usage:
        pool = _with_usage(pool, pool_lengths, models)
    pool_starts = np.cumsum(pool_lengths) - pool_lengths
    del parts

    clock0 = datetime.strptime(date or UNDATED_CLOCK, "%Y-%m-%d").replace(hour=1, tzinfo=UTC)
    clock0_us = int(clock0.timestamp()) * 1_000_000
    spacing_us = max(1_000, 20 * 3600 * 1_000_000 // max(episodes, 1))  # starts over ~20 h
    hash_key = int.from_bytes(hashlib.sha256(_key(seed, date).encode()).digest()[:8], "little")

    paths: list[Path] = []
    expected: dict[str, Expected] = {}
    total_rows = 0
    for index, lo in enumerate(range(0, episodes, episodes_per_file)):
        hi = min(episodes, lo + episodes_per_file)
        path = folder / f"part-{index:05d}.parquet"
        rel = path.relative_to(out).as_posix()
        g = np.arange(lo, hi, dtype=np.int64)
        pair = g % len(pairs)
        source = pair * size + (g // len(pairs)) % size

        # 4. spoiled and crashed episodes replace their pool copy
        draw = _uniform(hash_key, g)
        special_rows: list[list[Row]] = []
        for j in np.flatnonzero(draw < rejects + errors):
            gi = int(g[j])
            m, t = pairs[int(pair[j])]
            key = _key(seed, date, m.name, t.name, "special", gi)
            rows = play(m, t, key, **identity[m.name])
            rng = random.Random(f"{key}:fault")
            episode_id = f"{id_prefix}{gi:09d}"
            if draw[j] < rejects:
                fault = rng.choice([f for f in FAULTS if f.applies(t.category, rows)])
                fault.apply(rng, rows)
                expected[episode_id] = Expected(
                    rel, EpisodeStatus.REJECTED.value, (fault.rule.value,), fault.name
                )
            else:
                crash(rng, rows, t.category)
                expected[episode_id] = Expected(
                    rel, EpisodeStatus.HARNESS_ERROR.value, (Rule.HARNESS_ERROR.value,), "crash"
                )
            source[j] = len(pool_lengths) + len(special_rows)
            special_rows.append(rows)

        rows_from, starts, lengths = pool, pool_starts, pool_lengths
        if special_rows:
            extra, extra_starts, extra_lengths = _frame(special_rows)
            if usage:
                extra = _with_usage(extra, extra_lengths, models)
            rows_from = pl.concat([pool, extra], rechunk=False)
            starts = np.concatenate([pool_starts, extra_starts + pool.height])
            lengths = np.concatenate([pool_lengths, extra_lengths])

        # 3. tile: one gather of every row of the file's episodes
        n_rows = lengths[source]
        episode_of_row = np.repeat(np.arange(len(g)), n_rows)
        first_row = np.cumsum(n_rows) - n_rows
        take = (
            starts[source][episode_of_row]
            + np.arange(int(n_rows.sum()))
            - np.repeat(first_row, n_rows)
        )
        frame = rows_from[take]
        g_of_row = pl.Series("g", g[episode_of_row])
        clock = pl.Series("ts", clock0_us + g[episode_of_row] * spacing_us)
        frame = frame.with_columns(
            pl.concat_str(pl.lit(id_prefix), g_of_row.cast(pl.String).str.zfill(9)).alias(
                Col.EPISODE_ID
            ),
            (clock + frame[DT]).cast(pl.Datetime("us", "UTC")).alias(Col.TS),
        ).select(*SCHEMA, *(USAGE_DTYPES if usage else ()))
        if instance_ids:
            instance = pl.concat_str(
                pl.col(Col.TASK), pl.lit("#"), (g_of_row // len(pairs)).cast(pl.String)
            )
            start = pl.col(Col.KIND) == Kind.EPISODE_START
            frame = frame.with_columns(pl.when(start).then(instance).alias(INSTANCE_ID))
        frame.write_parquet(path, compression="zstd", statistics=True)
        paths.append(path)
        total_rows += frame.height
        if on_file:
            on_file(path, hi - lo, frame.height)
        del frame, rows_from

    _write_manifest(
        folder / MANIFEST,
        {
            "seed": seed,
            "date": date,
            "episodes": episodes,
            "rows": total_rows,
            "episodes_per_file": episodes_per_file,
            "pool_size": pool_size,
            "pool_episodes": len(pool_lengths),
            "bulk": bulk,
            "rejects": rejects,
            "harness_errors": errors,
            "instance_ids": instance_ids,
            "usage": usage,
            "models": {m.name: m.skill.value for m in models},
            "tasks": {t.name: t.category.value for t in tasks},
            "files": [p.relative_to(out).as_posix() for p in paths],
            "expected": {k: asdict(v) for k, v in sorted(expected.items())},
        },
    )
    return Simulation(
        root=Path(out),
        paths=paths,
        episodes=episodes,
        rows=total_rows,
        bytes=sum(p.stat().st_size for p in paths),
        seconds=time.perf_counter() - t0,
        pool_episodes=len(pool_lengths),
        expected=expected,
    )


def _write_manifest(path: Path, content: dict[str, Any]) -> None:
    path.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def read_expected(folder: Path) -> dict[str, Expected]:
    """The expectations recorded in ``_simulation.json`` under `folder` (any depth)."""
    out: dict[str, Expected] = {}
    for manifest in sorted(Path(folder).rglob(MANIFEST)):
        for episode_id, e in json.loads(manifest.read_text(encoding="utf-8"))["expected"].items():
            out[episode_id] = Expected(e["file"], e["status"], tuple(e["rules"]), e["fault"])
    return out


def simulate(
    out: Path,
    *,
    date: str | None = None,
    episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    models: Sequence[Model] = DEFAULT_MODELS,
    episodes_per_file: int = DEFAULT_EPISODES_PER_FILE,
    bulk: bool = True,
    rejects: float = DEFAULT_REJECTS,
    harness_errors: float | None = None,
    instance_ids: bool = True,
    usage: bool = True,
) -> list[Path]:
    """Write a simulated dump; return the Parquet files written, in order.

    Every (model, task) pair plays up to 256 distinct episodes in Python; a larger dump
    tiles them with polars, file by file (new episode ids and clocks, same content), so
    any number of rows is written in bounded memory. ``rejects=0``: a clean dump. The
    episodes the scorer must not score are listed in ``_simulation.json`` (and returned
    by ``simulate_dump``, which also takes ``tasks``, ``pool_size`` and ``on_file``).
    """
    return simulate_dump(
        out,
        date=date,
        episodes=episodes,
        seed=seed,
        models=models,
        episodes_per_file=episodes_per_file,
        bulk=bulk,
        rejects=rejects,
        harness_errors=harness_errors,
        instance_ids=instance_ids,
        usage=usage,
    ).paths
