"""``transforms.standings``: a standing is each model's latest result on every task; what
changed between two standings, cell by cell and per model and scope."""

from __future__ import annotations

import math

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.comparisons import ChangeKind
from transforms.standings import cell_changes, standing_changes, task_standing

MODELS = ("m1", "m2", "m3")
TASKS = (("c1", "t1"), ("c1", "t2"), ("c2", "t3"), ("c2", "t4"))
NIGHTS = ("2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04")


def _rows(cells: dict[tuple[str, str, str], tuple[str, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "dump_date": night,
                "model": model,
                "category": category,
                "task": task,
                "score": score,
                "formula_version": "v1",
            }
            for (model, category, task), (night, score) in sorted(cells.items())
        ],
        schema={
            "dump_date": pl.String,
            "model": pl.String,
            "category": pl.String,
            "task": pl.String,
            "score": pl.Float64,
            "formula_version": pl.String,
        },
    )


cell_keys = st.sampled_from([(m, c, t) for m in MODELS for c, t in TASKS])
night_cells = st.dictionaries(cell_keys, st.floats(0, 1, allow_nan=False), max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(night_cells, min_size=1, max_size=len(NIGHTS)))
def test_a_standing_holds_each_models_latest_result_on_every_task(
    nights: list[dict[tuple[str, str, str], float]],
) -> None:
    """Built night after night, each from the one before, a standing equals the latest
    night's result of every model and task, found by looking through every night."""
    previous: pl.DataFrame | None = None
    for i, cells in enumerate(nights):
        tonight = _rows({key: (NIGHTS[i], score) for key, score in cells.items()})
        standing = task_standing(
            None if previous is None else previous.lazy(), tonight.lazy(), NIGHTS[i]
        ).collect()
        latest: dict[tuple[str, str, str], tuple[str, float]] = {}
        for j in range(i + 1):
            latest |= {key: (NIGHTS[j], score) for key, score in nights[j].items()}
        expected = _rows(latest).with_columns(pl.lit(NIGHTS[i]).alias("as_of"))
        got = standing.select(expected.columns).sort("model", "category", "task")
        assert got.rows() == expected.sort("model", "category", "task").rows()
        assert standing.columns[0] == "as_of"
        previous = standing


def test_cell_changes_name_each_kind_of_change() -> None:
    before = _rows(
        {
            ("m1", "c1", "t1"): (NIGHTS[0], 0.5),  # re-run
            ("m1", "c1", "t2"): (NIGHTS[0], 0.5),  # unchanged
            ("m1", "c2", "t3"): (NIGHTS[0], 0.5),  # rescored: same night, another score
            ("m1", "c2", "t4"): (NIGHTS[0], 0.5),  # dropped
        }
    )
    after = _rows(
        {
            ("m1", "c1", "t1"): (NIGHTS[1], 0.5),
            ("m1", "c1", "t2"): (NIGHTS[0], 0.5),
            ("m1", "c2", "t3"): (NIGHTS[0], 0.25),
            ("m2", "c1", "t1"): (NIGHTS[1], 0.75),  # added
        }
    )
    changes = cell_changes(before.lazy(), after.lazy()).collect()
    kinds = {(m, t): k for m, t, k in changes.select("model", "task", "cell_change").rows()}
    assert kinds == {
        ("m1", "t1"): ChangeKind.RERUN,
        ("m1", "t3"): ChangeKind.RESCORED,
        ("m1", "t4"): ChangeKind.COVERAGE,
        ("m2", "t1"): ChangeKind.COVERAGE,
    }


def _scores(cells: dict[tuple[str, str, str], tuple[str, float]]) -> tuple[pl.LazyFrame, ...]:
    """A standing's model and category rows, their scores the means of its task scores."""
    tasks = _rows(cells)
    categories = tasks.group_by("model", "category").agg(
        pl.col("score").mean(), pl.len().cast(pl.Int64).alias("n_tasks")
    )
    models = tasks.group_by("model").agg(
        pl.col("score").mean(), pl.len().cast(pl.Int64).alias("n_tasks")
    )
    return models.lazy(), categories.lazy()


def _tested(model: str, scope: str, change: float, se: float, p: float) -> pl.LazyFrame:
    """A regressions row of the re-run tasks alone (its interval a normal one)."""
    return pl.LazyFrame(
        {
            "model": [model],
            "scope": [scope],
            "change": [change],
            "se": [se],
            "df": [None],
            "design": ["within_tasks"],
            "ci_low": [change - 1.96 * se],
            "ci_high": [change + 1.96 * se],
            "p_value": [p],
            "q_bh": [p],
            "mde": [2.8 * se],
            "n_pairs": [1],
            "paired": ["full"],
            "reason": [None],
        },
        schema_overrides={"df": pl.Float64, "reason": pl.String},
    )


def test_a_rerun_moves_the_standing_by_its_share_of_the_tasks() -> None:
    """A model that re-ran one of its four tasks: its overall change is the task's change
    over four, the interval and MDE of the re-run task's test scaled by that share, the
    p-value the test's; another model, untouched, has no row."""
    cells = {(m, c, t): (NIGHTS[0], 0.5) for m in ("m1", "m2") for c, t in TASKS}
    after = dict(cells) | {("m1", "c1", "t1"): (NIGHTS[1], 0.1)}
    changes = cell_changes(_rows(cells).lazy(), _rows(after).lazy())
    tested = pl.concat(
        [
            _tested("m1", "overall", -0.4, 0.1, 0.0001),
            _tested("m1", "c1", -0.4, 0.1, 0.0001),
        ]
    )
    rows = standing_changes(
        changes, _scores(cells), _scores(after), tested, as_of=NIGHTS[1], previous_as_of=NIGHTS[0]
    ).collect()
    assert set(rows["model"]) == {"m1"}
    overall = rows.filter(scope="overall").row(0, named=True)
    category = rows.filter(scope="c1").row(0, named=True)
    assert overall["kind"] == category["kind"] == ChangeKind.RERUN
    assert overall["tasks_rerun"] == 1 and overall["moved_by"] == "t1 -0.4"
    assert math.isclose(overall["change"], (0.1 - 0.5) / 4)
    assert math.isclose(category["change"], (0.1 - 0.5) / 2)
    assert math.isclose(overall["se"], 0.1 / 4) and math.isclose(category["se"], 0.1 / 2)
    assert math.isclose(overall["ci_high"] - overall["ci_low"], 2 * 1.96 * 0.1 / 4)
    assert math.isclose(overall["mde"], 2.8 * 0.1 / 4)
    assert overall["p_value"] == 0.0001
    assert overall["level"] == "alert"  # q < 0.05, a drop beyond the (scaled) MDE


def test_tasks_added_new_models_and_rescores_are_not_comparable() -> None:
    cells = {("m1", c, t): (NIGHTS[0], 0.5) for c, t in TASKS[:2]}
    after = (
        dict(cells)
        | {("m1", "c2", "t3"): (NIGHTS[1], 0.9)}  # a task added
        | {("m2", c, t): (NIGHTS[1], 0.2) for c, t in TASKS}  # a new model
    )
    changes = cell_changes(_rows(cells).lazy(), _rows(after).lazy())
    empty = _tested("x", "overall", 0.0, 0.0, 1.0).head(0)
    rows = standing_changes(
        changes, _scores(cells), _scores(after), empty, as_of=NIGHTS[1], previous_as_of=NIGHTS[0]
    ).collect()
    kinds = {(m, s): k for m, s, k in rows.select("model", "scope", "kind").rows()}
    assert kinds == {
        ("m1", "overall"): ChangeKind.COVERAGE,
        ("m1", "c2"): ChangeKind.COVERAGE,
        ("m2", "overall"): ChangeKind.NEW_MODEL,
    }
    assert set(rows["level"]) == {"not_comparable"}
    assert rows["reason"].null_count() == 0
    new = rows.filter(model="m2").row(0, named=True)
    assert new["baseline_score"] is None and new["score"] == 0.2


def _ranked(cells: dict[tuple[str, str, str], tuple[str, float]]) -> tuple[pl.LazyFrame, ...]:
    """``_scores`` with each model's rank (best first) and a rank interval around it, in
    every scope."""
    rank = pl.col("score").rank("min", descending=True).cast(pl.Int64)
    models, categories = (
        frame.with_columns(
            rank.over(*group).alias("rank"),
            (rank.over(*group) - 1).clip(1).alias("rank_low"),
            (rank.over(*group) + 1).alias("rank_high"),
        )
        for frame, group in zip(_scores(cells), ([pl.lit(1)], ["category"]), strict=True)
    )
    return models, categories


def test_a_rerun_carries_the_rank_moves_it_caused() -> None:
    """The reviewers' case: a model whose only task re-runs from 0.0 to 0.875 passes the
    model above it. Its row has its rank and rank interval before and after; the model it
    passed, whose results did not change, has a ``reranked`` row (its rank moved, nothing
    tested); a model whose rank did not move has no row."""
    cells = {
        ("m1", "c1", "t1"): (NIGHTS[0], 0.0),
        ("m2", "c1", "t1"): (NIGHTS[0], 0.5),
        ("m3", "c1", "t1"): (NIGHTS[0], 0.95),
    }
    after = cells | {("m1", "c1", "t1"): (NIGHTS[1], 0.875)}
    changes = cell_changes(_rows(cells).lazy(), _rows(after).lazy())
    before_frames, after_frames = _ranked(cells), _ranked(after)
    empty = _tested("x", "overall", 0.0, 0.0, 1.0).head(0)
    rows = standing_changes(
        changes, before_frames, after_frames, empty, as_of=NIGHTS[1], previous_as_of=NIGHTS[0]
    ).collect()
    old = {m: r for m, r in before_frames[0].select("model", "rank").collect().rows()}
    new = {m: r for m, r in after_frames[0].select("model", "rank").collect().rows()}
    moved = {m for m in old if old[m] != new[m]}
    assert moved == {"m1", "m2"}  # the scenario: m1 passes m2, m3 stays first
    overall = rows.filter(scope="overall")
    assert set(overall["model"]) == moved
    for row in overall.iter_rows(named=True):
        model = row["model"]
        assert (row["old_rank"], row["new_rank"]) == (old[model], new[model])
        assert (row["old_rank_low"], row["old_rank_high"]) == (
            max(old[model] - 1, 1),
            old[model] + 1,
        )
        assert (row["new_rank_low"], row["new_rank_high"]) == (
            max(new[model] - 1, 1),
            new[model] + 1,
        )
    m1 = overall.filter(model="m1").row(0, named=True)
    assert m1["kind"] == ChangeKind.RERUN and m1["moved_by"] == "t1 +0.875"
    m2 = overall.filter(model="m2").row(0, named=True)
    assert m2["kind"] == ChangeKind.RERANKED and m2["change"] == 0.0
    assert m2["level"] == "none" and m2["beyond_noise"] is None and m2["moved_by"] is None
    assert (m2["tasks_rerun"], m2["tasks_added"], m2["tasks_rescored"]) == (0, 0, 0)
    # The category's rows carry the category's ranks where its rows have them.
    c1 = rows.filter(scope="c1").sort("model")
    assert c1["model"].to_list() == ["m1", "m2"]
    assert c1["new_rank"].to_list() == [new["m1"], new["m2"]]


def test_a_change_is_beyond_noise_where_its_q_value_is_under_alpha_rise_or_drop() -> None:
    """``beyond_noise``: the re-run's q-value under alpha, whether the score rose or fell
    (an alert needs a drop; noise is either way); null where nothing could be tested."""
    cells = {(m, c, t): (NIGHTS[0], 0.5) for m in ("m1", "m2", "m3") for c, t in TASKS}
    after = dict(cells) | {
        ("m1", "c1", "t1"): (NIGHTS[1], 0.9),
        ("m2", "c1", "t1"): (NIGHTS[1], 0.45),
        ("m3", "c1", "t1"): (NIGHTS[1], 0.1),
    }
    changes = cell_changes(_rows(cells).lazy(), _rows(after).lazy())
    tested = pl.concat(
        [
            _tested("m1", "overall", 0.4, 0.1, 0.001),  # a rise, significant
            _tested("m2", "overall", -0.05, 0.1, 0.6),  # a drop within noise
            _tested("m3", "overall", -0.4, 0.1, 0.001).with_columns(  # nothing estimable
                pl.lit(None, pl.Float64).alias(c) for c in ("se", "p_value", "q_bh")
            ),
        ]
    )
    rows = standing_changes(
        changes, _scores(cells), _scores(after), tested, as_of=NIGHTS[1], previous_as_of=NIGHTS[0]
    ).collect()
    overall = {r["model"]: r for r in rows.filter(scope="overall").iter_rows(named=True)}
    assert overall["m1"]["beyond_noise"] is True and overall["m1"]["level"] == "none"
    assert overall["m2"]["beyond_noise"] is False
    assert overall["m3"]["beyond_noise"] is None
    # A scope with no test of its own (the category rows here) is not called either way.
    assert rows.filter(pl.col("scope") != "overall")["beyond_noise"].null_count() == 3
