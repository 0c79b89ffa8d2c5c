"""Calibration on the published table's shape (issue 46): the intervals and verdicts of
``transforms.compare`` on nights drawn from LearningBench's published leaderboard itself,
not from a smooth model of it.

The generator is the table's own empirical distribution: a night's task is one of the 135
published tasks drawn with replacement, with the 14 models' scores on it as one draw (the
model-by-task pairing, the discreteness and the shares of exact 0s and 1s, 17% and 15%,
kept); a model's true score is its mean over the 135 tasks (its score as published), a
pair's true difference the difference of those. One episode per model and task, as the
table. Figures, each over ``--nights`` nights per row, through the public functions:

- **scores** (``score_intervals``, ``overall``), ``k`` tasks per model: the share of the
  models' 95% intervals that cover their true score (all models pooled, and the worst
  model), null or of zero width;
- **differences** (``model_comparisons``, ``overall``), ``k`` tasks: the share of the pairs'
  95% intervals covering their true difference, pooled, the worst pair, the share of
  pairs under 94%, the rows left null (no spread) and the rows called approximate;
- **families**: nights of all 135 tasks (drawn within their categories) whose scores are
  shuffled among the models task by task (no model differs from another): the share of
  nights with a verdict in ``overall``, and in any of the 8 scopes a reader can look at.

    python -m benchmarks.calibration [--nights 1000] [--seed 46] [--tasks 2 3 5 10 14 20 30]

Prints one JSON object (docs/comparisons.md quotes it). A small seeded version runs in the
tests (``tests/transforms/test_calibration_table.py``).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import polars as pl
from scipy import special

from schemas.comparisons import OVERALL, UNRESOLVED

LEADERBOARD: Final = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "learningbench" / "leaderboard"
)
# The leaderboard's category labels; its three 'unknown' tasks are associative (their task
# files' folder: docs/importing.md).
CATEGORY_OF_LABEL: Final = {
    "assoc-learning": "associative_learning",
    "unknown": "associative_learning",
    "concept-learning": "concept_formation",
    "lang-learning": "language_learning",
    "obs-learning": "observational_learning",
    "rf-learning": "runtime_rl",
    "proc-learning": "procedural_learning",
}


@dataclass(frozen=True)
class Table:
    """The published table: ``scores`` (models x tasks), the models, each task's category."""

    models: list[str]
    categories: np.ndarray  # per task
    scores: np.ndarray  # models x tasks

    @property
    def truth(self) -> np.ndarray:
        """Each model's true score: its mean over the table's tasks."""
        return np.asarray(self.scores.mean(axis=1))


def published(path: Path = LEADERBOARD / "leaderboard_flat.csv") -> Table:
    flat = pl.read_csv(path)
    wide = flat.pivot(on="model_name", index=["task_slug", "category"], values="score")
    wide = wide.sort("task_slug")
    models = sorted(c for c in wide.columns if c not in ("task_slug", "category"))
    categories = np.array([CATEGORY_OF_LABEL[c] for c in wide["category"].to_list()])
    return Table(models, categories, wide.select(models).to_numpy().T.astype(np.float64))


def nights(
    table: Table, tasks: np.ndarray, rng: np.random.Generator, *, shuffle: bool = False
) -> pl.DataFrame:
    """Episode scores of one night per row of ``tasks`` (nights x tasks: indices into the
    table), one episode per model and task; with ``shuffle`` each task's scores go to the
    models in a random order (no model differs from another)."""
    scores = table.scores[:, tasks]  # models x nights x tasks
    if shuffle:
        order = rng.permuted(np.broadcast_to(np.arange(len(table.models))[:, None, None],
                                             scores.shape), axis=0)  # fmt: skip
        scores = np.take_along_axis(scores, order, axis=0)
    model, night, task = (a.ravel() for a in np.indices(scores.shape))
    frame = pl.DataFrame(
        {
            "model": np.array(table.models)[model],
            "night": night,
            "task": task,
            "category": table.categories[tasks[night, task]],
            "score": scores.ravel(),
        }
    )
    return frame.select(
        pl.format("n{}", pl.col("night").cast(pl.String).str.zfill(5)).alias("dump_date"),
        "model",
        "category",
        pl.format("t{}", pl.col("task").cast(pl.String).str.zfill(3)).alias("task"),
        pl.format("{}-{}-{}", "night", "model", "task").alias("episode_id"),
        "score",
    )


def score_coverage(table: Table, intervals: pl.DataFrame) -> dict[str, float]:
    """Of ``score_intervals`` rows (overall): how often the interval covers the model's
    true score, pooled and for the worst model; how often it is null or of zero width."""
    truth = dict(zip(table.models, table.truth.tolist(), strict=True))
    rows = intervals.filter(scope=OVERALL).with_columns(
        pl.col("model").replace_strict(truth).alias("truth")
    )
    covered = (pl.col("ci_low") <= pl.col("truth")) & (pl.col("truth") <= pl.col("ci_high"))
    per_model = rows.group_by("model").agg(covered.fill_null(False).mean().alias("covered"))
    # The t interval of before issue 46, from the same rows: score ± t · se held to [0, 1],
    # none where se is 0.
    half = pl.Series(special.stdtrit(rows["df"].to_numpy(), 0.975)) * rows["se"]
    low, high = (rows["score"] - half).clip(0.0, 1.0), (rows["score"] + half).clip(0.0, 1.0)
    t_covered = (rows["se"] > 0) & (low <= rows["truth"]) & (rows["truth"] <= high)
    return {
        "covered": rows.select(covered.fill_null(False).mean()).item(),
        "worst_model": per_model["covered"].min(),  # type: ignore[dict-item]
        "null": rows.select(pl.col("ci_low").is_null().mean()).item(),
        "zero_width": rows.select((pl.col("ci_high") <= pl.col("ci_low")).mean()).item(),
        "t_covered": t_covered.mean(),  # type: ignore[dict-item]
        "t_worst_model": rows.with_columns(t_covered.alias("t"))
        .group_by("model")
        .agg(pl.col("t").mean())["t"]
        .min(),
        "t_zero_width": (rows["se"] == 0).mean(),
        "width": rows.select((pl.col("ci_high") - pl.col("ci_low")).mean()).item(),
        "t_width": (high - low).filter(rows["se"] > 0).mean(),
    }


def difference_coverage(table: Table, comparisons: pl.DataFrame) -> dict[str, float]:
    """Of ``model_comparisons`` rows (overall, each pair once): how often the interval
    covers the true difference, among the rows with one, pooled, for the worst pair and
    the share of pairs under 94%; the rows null and the rows said to be approximate."""
    truth = dict(zip(table.models, table.truth.tolist(), strict=True))
    rows = comparisons.filter(
        (pl.col("scope") == OVERALL) & (pl.col("model_a") < pl.col("model_b"))
    ).with_columns(
        (pl.col("model_a").replace_strict(truth) - pl.col("model_b").replace_strict(truth)).alias(
            "truth"
        )
    )
    shown = rows.filter(pl.col("ci_low").is_not_null())
    covered = (pl.col("ci_low") <= pl.col("truth")) & (pl.col("truth") <= pl.col("ci_high"))
    per_pair = shown.group_by("model_a", "model_b").agg(covered.mean().alias("covered"))
    approximate = pl.col("reason").str.contains("approximate interval").fill_null(False)
    return {
        "covered": shown.select(covered.mean()).item(),
        "worst_pair": per_pair["covered"].min(),  # type: ignore[dict-item]
        "pairs_under_94": (per_pair["covered"] < 0.94).mean(),  # type: ignore[dict-item]
        "null": rows.select(pl.col("se").is_null().mean()).item(),
        "approximate": rows.select(approximate.mean()).item(),
        "verdicts": rows.select((pl.col("verdict") != UNRESOLVED).mean()).item(),
    }


def within_categories(table: Table, rng: np.random.Generator, n_nights: int) -> np.ndarray:
    """Nights x 135 task indices: each category's tasks drawn with replacement within it."""
    columns = [
        rng.choice(
            np.flatnonzero(table.categories == c), (n_nights, int((table.categories == c).sum()))
        )
        for c in np.unique(table.categories)
    ]
    return np.concatenate(columns, axis=1)


def families(table: Table, seed: int, n_nights: int) -> dict[str, float]:
    """Nights where no model differs (each task's scores shuffled among the models): the
    share with some verdict overall, and in any of the 8 scopes."""
    from transforms.compare import model_comparisons

    rng = np.random.default_rng(seed)
    frame = nights(table, within_categories(table, rng, n_nights), rng, shuffle=True)
    verdicts = model_comparisons(frame).filter(pl.col("verdict") != UNRESOLVED)
    per_night = verdicts.group_by("dump_date").agg(
        (pl.col("scope") == OVERALL).any().alias("overall"), pl.col("scope").n_unique()
    )
    return {
        "nights": n_nights,
        "some_verdict_overall": per_night["overall"].sum() / n_nights,
        "some_verdict_in_any_of_8_scopes": per_night.height / n_nights,
    }


def main(argv: list[str] | None = None) -> None:
    from transforms.compare import model_comparisons, score_intervals

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=46)
    parser.add_argument("--tasks", type=int, nargs="+", default=[2, 3, 5, 10, 14, 20, 30])
    args = parser.parse_args(argv)
    table = published()
    zeros, ones = float((table.scores == 0).mean()), float((table.scores == 1).mean())
    out: dict[str, object] = {"nights": args.nights, "zeros": zeros, "ones": ones}
    for k in args.tasks:
        rng = np.random.default_rng([args.seed, k])
        frame = nights(table, rng.integers(0, table.scores.shape[1], (args.nights, k)), rng)
        out[f"scores_{k}"] = score_coverage(table, score_intervals(frame))
        out[f"differences_{k}"] = difference_coverage(table, model_comparisons(frame))
        print(k, out[f"scores_{k}"], out[f"differences_{k}"], flush=True)
    out["families"] = families(table, args.seed, args.nights // 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
