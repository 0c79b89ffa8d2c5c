"""A dump with realistic text: distinct prompts and reasoning per episode, as harnesses write
them, for measuring the scorer against the read floor where reading costs what it does on
real dumps.

The simulator's large dumps tile a pool of episodes, so their text repeats and Parquet
stores it dictionary-encoded: about 10 bytes a row on disk, cheap to read. Here every
``message``, ``example`` and ``item`` row of a simulated dump gets text of its own:
seeded pseudo-random words (a Zipf-distributed vocabulary of made-up words, so that zstd
compresses it about as much as prose), a few kB per episode. ``answer`` rows and every
other column are kept as they are, so the scores and rejects stay the simulated dump's.
Files are written as a harness would with pyarrow's defaults (zstd, its own choice of
dictionary encoding: none forced).

python -m benchmarks.realistic [--episodes 100000]   # generates (once) and prints sizes
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.run import DATA, dump

SEED = 0
VOCABULARY = 30_000
# Words per replaced row: log-normal, median about 40 words (~270 bytes), a long tail of
# reasoning; about 15 replaced rows per episode (the issue's ~120 bytes a row on disk).
LOG_MEDIAN, LOG_SIGMA = np.log(40.0), 1.0
REPLACED_KINDS = ("message", "example", "item")


def _vocabulary(rng: np.random.Generator) -> tuple[pa.Array, np.ndarray]:
    """Made-up lowercase words of 2-11 letters and their cumulative Zipf probabilities."""
    lengths = rng.integers(2, 12, VOCABULARY)
    letters = rng.integers(ord("a"), ord("z") + 1, int(lengths.sum()), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    words = pa.StringArray.from_buffers(
        VOCABULARY, pa.py_buffer(offsets.tobytes()), pa.py_buffer(letters.tobytes())
    )
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    return words, np.cumsum(weights / weights.sum())


def _texts(rng: np.random.Generator, n: int, words: pa.Array, cdf: np.ndarray) -> pl.Series:
    """``n`` distinct texts of space-separated words."""
    counts = np.maximum(1, rng.lognormal(LOG_MEDIAN, LOG_SIGMA, n).astype(np.int64))
    drawn = np.minimum(np.searchsorted(cdf, rng.random(int(counts.sum()))), VOCABULARY - 1)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), words.take(pa.array(drawn)))
    return pl.Series("content", lists).list.join(" ")


def realistic(episodes: int, files: int | None = None) -> Path:
    """The realistic-text version of ``benchmarks.run.dump(episodes)`` (of
    ``benchmarks.run.dump(episodes, files)`` where ``files`` is given), generated once."""
    name = f"e{episodes}" if files is None else f"e{episodes}-f{files}"
    root = DATA / f"realistic-{name}"
    if (root / ".complete").exists():
        return root
    source = dump(episodes, files)
    print(f"generating {root} ...", file=sys.stderr, flush=True)
    rng = np.random.default_rng(SEED)
    words, cdf = _vocabulary(rng)
    for path in sorted(source.rglob("*")):
        if path.is_dir() or path.name == ".complete":
            continue
        target = root / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix != ".parquet":
            shutil.copyfile(path, target)  # the simulation's record (scorer skips `_` files)
            continue
        frame = pl.read_parquet(path)
        replaced = pl.col("kind").is_in(REPLACED_KINDS)
        where = frame.select(replaced.arg_true()).to_series()
        content = frame["content"].scatter(where, _texts(rng, len(where), words, cdf))
        table = frame.with_columns(content).to_arrow()
        pq.write_table(table, target, compression="zstd")
    (root / ".complete").touch()
    return root


def sizes(root: Path) -> dict[str, float]:
    files = [p for p in root.rglob("*.parquet")]
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in files)
    disk = sum(p.stat().st_size for p in files)
    text = sum(
        pl.scan_parquet(p).select(pl.col("content").str.len_bytes().sum()).collect().item()
        for p in files
    )
    return {"rows": rows, "disk_bytes_per_row": disk / rows, "text_bytes_per_row": text / rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=100_000)
    args = parser.parse_args()
    root = realistic(args.episodes)
    print(json.dumps({"dump": str(root), **sizes(root)}))


if __name__ == "__main__":
    main()
