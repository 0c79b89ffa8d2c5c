"""Usage (contract 1.3) through a whole run: a dump without it (contract 1.2) scores as it
did, its usage null; with it, every table carries it, and the standings inherit it from
their task rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from flows import runs
from schemas.columns import (
    CALLS,
    REPLIES_WITHOUT_USAGE,
    USAGE_EPISODES,
    USAGE_INCOMPLETE,
    USAGE_REFUSED,
    WALL_MS,
)
from schemas.contract import (
    COST_USD,
    INPUT_TOKENS,
    LATENCY_MS,
    OUTPUT_TOKENS,
    USAGE_DTYPES,
    Role,
)
from schemas.tables import TABLES
from simulator import simulate
from tests.dumps import answer, episode, item, message, write_dump
from tests.leaderboards import three_models
from tests.tables import assert_finite_everywhere, last_run, read_table

MEASURES = tuple(USAGE_DTYPES)
USAGE_COLUMNS = {
    *MEASURES,
    REPLIES_WITHOUT_USAGE,
    USAGE_REFUSED,
    USAGE_EPISODES,
    USAGE_INCOMPLETE,
    "mean_tokens",
    CALLS,
    WALL_MS,
}
AGGREGATES = ("task_scores", "category_scores", "model_scores")
STANDINGS = ("task_standings", "category_standings", "standings")


def _without_usage(dump: Path, nights: dict[str, int]) -> None:
    """A contract 1.2 dump (no usage columns): simulated nights of ``episodes`` each."""
    for night, seed in nights.items():
        simulate(dump, episodes=240, seed=seed, date=night, usage=False)


def _with_usage(source: Path, target: Path, drop_every: int = 0) -> None:
    """``source``'s files with usage on every assistant row, made from the row itself
    (tokens from its turn and text, a cost and latency from them); ``drop_every``: every
    so many assistant rows carry none (usage recorded for some calls only)."""
    for path in sorted(source.rglob("*.parquet")):
        frame = pl.read_parquet(path)
        assistant = pl.col("role") == "assistant"
        recorded = assistant
        if drop_every:
            recorded = assistant & (pl.col("turn") % drop_every != 0)
        tokens = (pl.col("content").str.len_chars().fill_null(0) // 4 + 1).cast(pl.Int64)
        frame = frame.with_columns(
            pl.when(recorded).then(pl.col("turn").cast(pl.Int64) * 100 + 7).alias(INPUT_TOKENS),
            pl.when(recorded).then(tokens).alias(OUTPUT_TOKENS),
            pl.when(recorded).then(tokens.cast(pl.Float64) * 1.5e-6 + 1e-7).alias(COST_USD),
            pl.when(recorded).then(pl.col("turn").cast(pl.Float64) * 10.25).alias(LATENCY_MS),
        )
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(out)
    for marker in source.rglob("_SUCCESS"):
        (target / marker.relative_to(source)).touch()


def _tables(out: Path) -> dict[str, pl.DataFrame]:
    return {name: read_table(out, name) for name in TABLES if name != "imports"}


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same two nights scored as a 1.2 dump and with usage on every assistant row."""
    tmp = tmp_path_factory.mktemp("usage")
    old, new = tmp / "old-dump", tmp / "new-dump"
    _without_usage(old, {"2026-12-01": 1, "2026-12-02": 2})
    _with_usage(old, new)
    runs.score(old, tmp / "old-out")
    runs.score(new, tmp / "new-out")
    return {"old": _tables(tmp / "old-out"), "new": _tables(tmp / "new-out"), "out": tmp}


def test_a_dump_without_usage_scores_as_the_same_dump_with_it(
    scored: dict[str, Any],
) -> None:
    """Every table of the 1.2 dump is the usage dump's but for the usage columns (and the
    input fingerprints: other files; and the token signal, which needs tokens): usage never
    changes a score, an interval, a rank, a comparison or a reject."""
    for name, old in scored["old"].items():
        new = scored["new"][name]
        if name == "signals":  # the token signal is there only where tokens are recorded
            new = new.filter(pl.col("signal") != "tokens_spent_vs_score")
            assert old.filter(pl.col("signal") == "tokens_spent_vs_score").is_empty()
        assert old.columns == new.columns, name
        ignored = [c for c in old.columns if c in USAGE_COLUMNS or c == "input_fingerprint"]
        assert_frame_equal(old.drop(ignored), new.drop(ignored), check_exact=True)


def test_a_dump_without_usage_has_null_usage_never_zero(
    scored: dict[str, Any],
) -> None:
    episodes = scored["old"]["episode_scores"]
    assert episodes.height > 0
    for column in (*MEASURES, REPLIES_WITHOUT_USAGE, CALLS, WALL_MS):
        assert episodes[column].null_count() == episodes.height, column
    for name in (*AGGREGATES, *STANDINGS):
        table = scored["old"][name]
        assert table.height > 0
        for column in (
            *MEASURES,
            CALLS,
            WALL_MS,
            *(["mean_tokens"] if "mean_tokens" in table.columns else []),
        ):
            assert table[column].null_count() == table.height, (name, column)
        assert set(table[USAGE_EPISODES].to_list()) == {0}, name  # none record usage
        assert set(table[USAGE_INCOMPLETE].to_list()) == {0}, name


def test_every_episode_and_aggregate_carries_its_usage(
    scored: dict[str, Any],
) -> None:
    """With usage on every assistant row: each episode's is the sum of its rows', and
    every aggregate's the sum of its episodes' (polars group_by, independently)."""
    tables = scored["new"]
    episodes = tables["episode_scores"]
    assert episodes[INPUT_TOKENS].null_count() == 0
    assert set(episodes[REPLIES_WITHOUT_USAGE].to_list()) == {0}
    for name, key in (
        ("task_scores", ["dump_date", "model", "category", "task"]),
        ("category_scores", ["dump_date", "model", "category"]),
        ("model_scores", ["dump_date", "model"]),
    ):
        want = episodes.group_by(key).agg(
            pl.len().alias(USAGE_EPISODES),
            *(pl.col(m).sum() for m in (*MEASURES, CALLS, WALL_MS)),
        )
        got = tables[name].select(*key, USAGE_EPISODES, *MEASURES, CALLS, WALL_MS)
        joined = got.join(want, on=key, suffix="_want")
        assert joined.height == got.height == want.height
        for column in (USAGE_EPISODES, INPUT_TOKENS, OUTPUT_TOKENS, CALLS):
            assert (joined[column] == joined[f"{column}_want"]).all(), (name, column)
        for column in (COST_USD, LATENCY_MS, WALL_MS):
            gap = (joined[column] - joined[f"{column}_want"]).abs().max()
            assert isinstance(gap, float) and gap <= 1e-9, (name, column)


def test_the_standings_carry_the_usage_of_their_task_rows(
    scored: dict[str, Any],
) -> None:
    """The standing's task rows are their nights' task rows, usage and all; its category
    and model rows total them (the latest night's results: here every model ran every task
    on both nights, so the standing as of the second night is that night)."""
    tables = scored["new"]
    tasks = tables["task_standings"].drop("as_of", "input_fingerprint")
    cells = tables["task_scores"].drop("input_fingerprint")
    assert_frame_equal(
        tasks.join(cells, on=["dump_date", "model", "task"], how="anti"),
        tasks.clear(),
    )
    joined = tasks.join(cells, on=["dump_date", "model", "task"], suffix="_night")
    for column in (USAGE_EPISODES, *MEASURES):
        assert (joined[column] == joined[f"{column}_night"]).all(), column
    standings = tables["standings"].rename({"as_of": "dump_date"})
    models = tables["model_scores"]
    keep = ["dump_date", "model", USAGE_EPISODES, USAGE_INCOMPLETE, *MEASURES, CALLS, WALL_MS]
    assert_frame_equal(
        standings.select(keep).sort("dump_date", "model"),
        models.select(keep).sort("dump_date", "model"),
        check_exact=True,
    )


def test_usage_recorded_for_some_calls_is_summed_and_counted(tmp_path: Path) -> None:
    """Every third assistant row without usage: the episodes' sums are of the rows that
    have it, their replies without usage counted, and the aggregates count the episodes."""
    old, new = tmp_path / "old", tmp_path / "new"
    _without_usage(old, {"2026-12-01": 5})
    _with_usage(old, new, drop_every=3)
    runs.score(new, tmp_path / "out")
    episodes = read_table(tmp_path / "out", "episode_scores")
    rows = pl.concat([pl.read_parquet(p) for p in sorted(new.rglob("*.parquet"))])
    replies = rows.filter(
        (pl.col("role") == "assistant")
        & pl.col("kind").is_in(["message", "action"])
        & pl.col("content").is_not_null()
    )
    missing = replies.group_by("episode_id").agg(
        pl.col(INPUT_TOKENS).is_null().sum().cast(pl.Int64).alias("want")
    )
    joined = episodes.join(missing, on="episode_id", how="left").with_columns(
        pl.col("want").fill_null(0)
    )
    recorded = joined.filter(pl.col(INPUT_TOKENS).is_not_null())
    assert (recorded[REPLIES_WITHOUT_USAGE] == recorded["want"]).all()
    assert recorded[REPLIES_WITHOUT_USAGE].sum() > 0
    tasks = read_table(tmp_path / "out", "task_scores")
    incomplete = (episodes[REPLIES_WITHOUT_USAGE] > 0).sum()
    assert tasks[USAGE_INCOMPLETE].sum() == incomplete
    # The calls: the assistant rows that carry usage and the replies that carry none.
    calls = rows.group_by("episode_id").agg(
        (
            ((pl.col("role") == "assistant") & pl.col(INPUT_TOKENS).is_not_null()).sum()
            + (
                (pl.col("role") == "assistant")
                & pl.col("kind").is_in(["message", "action"])
                & pl.col("content").is_not_null()
                & pl.col(INPUT_TOKENS).is_null()
            ).sum()
        )
        .cast(pl.Int64)
        .alias("want")
    )
    counted = recorded.drop("want").join(calls, on="episode_id")
    assert counted.height == recorded.height and (counted[CALLS] == counted["want"]).all()
    by_task = counted.group_by("dump_date", "model", "task").agg(pl.col(CALLS).sum())
    got = tasks.join(by_task, on=["dump_date", "model", "task"], suffix="_episodes")
    assert got.height == tasks.height and (got[CALLS] == got[f"{CALLS}_episodes"]).all()
    # The wall time: from the episode_start row's ts to the episode_end row's, in ms.
    ts = rows.select("episode_id", "kind", pl.col("ts").cast(pl.Datetime("us", "UTC")))
    spans = (
        ts.filter(pl.col("kind") == "episode_start")
        .join(ts.filter(pl.col("kind") == "episode_end"), on="episode_id", suffix="_end")
        .select("episode_id", (pl.col("ts_end") - pl.col("ts")).alias("span"))
    )
    walls = recorded.join(spans, on="episode_id")
    assert walls.height == recorded.height and walls["span"].null_count() == 0
    want = walls["span"].dt.total_microseconds() // 1000  # whole milliseconds
    assert (walls[WALL_MS] == want).all() and (want > 0).all()


def test_a_standing_of_mixed_nights_totals_the_usage_of_its_results(tmp_path: Path) -> None:
    """One model re-runs everything on the second night, the others do not: the standing
    as of that night holds each model's latest results, and its usage is theirs (the
    re-run model's that night's, the others' the first night's), totalled from its task
    rows whatever night each comes from."""
    from simulator.models import DEFAULT_MODELS

    old, new = tmp_path / "old", tmp_path / "new"
    simulate(old, episodes=160, seed=1, date="2026-12-01", usage=False)
    simulate(old, episodes=40, seed=2, date="2026-12-02", usage=False, models=DEFAULT_MODELS[1:2])
    _with_usage(old, new)
    runs.score(new, tmp_path / "out")
    tables = {name: read_table(tmp_path / "out", name) for name in (*AGGREGATES, *STANDINGS)}
    last = pl.col("as_of") == "2026-12-02"
    tasks = tables["task_standings"].filter(last)
    assert tasks["dump_date"].n_unique() == 2  # results of both nights
    nights = tables["model_scores"].group_by("model").agg(pl.col("dump_date").max())
    latest = tables["model_scores"].join(nights, on=["model", "dump_date"])
    keep = ["model", USAGE_EPISODES, USAGE_INCOMPLETE, *MEASURES]
    standing = tables["standings"].filter(last)
    totals = tasks.group_by("model").agg(
        pl.col(USAGE_EPISODES).sum(), *(pl.col(m).sum() for m in MEASURES)
    )
    joined = standing.join(totals, on="model", suffix="_tasks")
    assert joined.height == standing.height == len(DEFAULT_MODELS)
    for column in (USAGE_EPISODES, INPUT_TOKENS, OUTPUT_TOKENS):
        assert (joined[column] == joined[f"{column}_tasks"]).all(), column
    for column in (COST_USD, LATENCY_MS):
        gap = (joined[column] - joined[f"{column}_tasks"]).abs().max()
        assert isinstance(gap, float) and gap <= 1e-9, column
    # each model's latest night alone (every one of its tasks ran then) has the same usage
    assert_frame_equal(
        standing.select(keep).sort("model"), latest.select(keep).sort("model"), check_exact=True
    )


# --- the leaderboard on the terminal ----------------------------------------------------------


def _leaderboard(cost: list[float | None], usage: list[int], incomplete: list[int]) -> list[str]:
    from flows.present.leaderboard import leaderboard_table
    from schemas.comparisons import DEFAULT_LEVEL

    models, categories = three_models(
        {
            "n_episodes": [135, 135, 135],
            COST_USD: cost,
            USAGE_EPISODES: usage,
            USAGE_INCOMPLETE: incomplete,
        },
        overrides={COST_USD: pl.Float64},
    )
    return leaderboard_table(models, categories, DEFAULT_LEVEL, width=100)


def _column(lines: list[str], header: str) -> list[str]:
    """The cells under ``header`` (right-aligned: they end where it ends), one per model
    (on its first line, the one that starts with its rank)."""
    end = lines[0].index(header) + len(header)
    firsts = [line for line in lines[2:] if line.split() and line.split()[0].isdigit()]
    return [line[:end].split()[-1] for line in firsts]


def test_the_leaderboard_shows_cost_per_episode_where_some_model_has_usage() -> None:
    """A cost column ($ per episode that records usage) within 100 columns, every name in
    full; ``-`` for a model without cost; marked where some calls or episodes record none,
    and the mark explained."""
    lines = _leaderboard([13.5, None, 0.027], [135, 0, 27], [0, 0, 1])
    assert max(len(line) for line in lines) <= 100
    assert _column(lines, "$/ep.") == [f"{13.5 / 135:.3g}", "-", f"{0.027 / 27:.3g}*"]
    assert lines[-1].startswith("* some of its calls or episodes record no usage")
    start, end = lines[0].index("model"), lines[0].index("score") - 1
    names = "".join(line[start:end].strip() for line in lines[2:-1])  # the model column
    assert (
        names.replace("ranks 2-3", "")
        == "".join(f"meta-llama/Llama-3.1-{size}-Instruct" for size in ("8B", "70B", "405B"))
        + "-FP8"
    )


def test_under_the_leaderboard_each_models_calls_seconds_tokens_and_cost_per_episode(
    scored: dict[str, Any],
) -> None:
    """After a run (and as ``leaderboard_lines`` prints it), per model whose episodes record
    usage: its episodes, then per episode its calls, their seconds, its wall time, tokens and
    cost, from the standing (issue 47: the terminal showed the cost alone); nothing without
    usage."""
    from flows.present.leaderboard import leaderboard_lines
    from flows.store.output import Output, night_levels

    def lines(out: Path) -> list[str]:
        output = Output.at(out)
        return leaderboard_lines(output, night_levels(output.state()))

    shown = lines(scored["out"] / "new-out")
    start = next(i for i, line in enumerate(shown) if line.startswith("usage per episode"))
    header = shown[start + 1].split()
    assert header[:3] == ["model", "episodes", "calls"]
    standing = scored["new"]["standings"].filter(pl.col("as_of") == pl.col("as_of").max())
    block = shown[start + 3 :]
    # each category's leaderboard follows, under its title line
    rows = block[: next((i for i, line in enumerate(block) if line.endswith("):")), len(block))]
    assert len(rows) == standing.height
    for r in standing.iter_rows(named=True):
        (line,) = [line for line in rows if line.startswith(f"{r['model']} ")]
        episodes = r[USAGE_EPISODES]
        cells = line[len(r["model"]) :].split()
        assert cells == [
            f"{episodes}",
            "of",
            f"{r['n_episodes']}",
            f"{r[CALLS] / episodes:,.1f}",
            f"{r[LATENCY_MS] / episodes / 1000:,.1f}",
            f"{r[WALL_MS] / episodes / 1000:,.1f}",
            f"{r[INPUT_TOKENS] / episodes:,.0f}",
            f"{r[OUTPUT_TOKENS] / episodes:,.0f}",
            f"{r[COST_USD] / episodes:.3g}",
        ]
    assert not any(line.startswith("usage per") for line in lines(scored["out"] / "old-out"))


def test_the_leaderboard_has_no_cost_column_without_usage() -> None:
    lines = _leaderboard([None, None, None], [0, 0, 0], [0, 0, 0])
    assert "$/ep." not in lines[0] and not lines[-1].startswith("*")


@pytest.mark.parametrize("view", ["leaderboard", "night_leaderboard"])
def test_the_leaderboard_views_carry_cost_per_episode(scored: dict[str, Any], view: str) -> None:
    from flows.present.sql import connect
    from flows.store.output import Output

    con = connect(Output.at(scored["out"] / "new-out"))
    got = con.execute(
        "SELECT model, cost_usd, usage_episodes, cost_per_episode, calls_per_episode, "
        f"wall_s_per_episode FROM {view} ORDER BY model"
    ).fetchall()
    table, night = (
        ("standings", "as_of") if view == "leaderboard" else ("model_scores", "dump_date")
    )
    rows = scored["new"][table].filter(pl.col(night) == pl.col(night).max()).sort("model")
    assert got == [
        (
            r["model"],
            r[COST_USD],
            r[USAGE_EPISODES],
            r[COST_USD] / r[USAGE_EPISODES],
            r[CALLS] / r[USAGE_EPISODES],
            r[WALL_MS] / r[USAGE_EPISODES] / 1000,
        )
        for r in rows.to_dicts()
    ]


def test_the_token_signal_is_the_standings_tokens_per_episode_against_score(
    scored: dict[str, Any],
) -> None:
    """LearningBench's H2 (tokens spent against score, runtime RL) on the usage recorded:
    each task row's mean_tokens is its tokens in and out per episode that records usage,
    and the signal is Spearman's rho of them against the scores (scipy, on the rows);
    without usage the signal has no result."""
    from scipy import stats

    tables = scored["new"]
    tasks = tables["task_standings"]
    want = (tasks[INPUT_TOKENS] + tasks[OUTPUT_TOKENS]) / tasks[USAGE_EPISODES]
    assert (tasks["mean_tokens"] == want).all()
    last = tasks["as_of"].max()
    rl = tasks.filter((pl.col("as_of") == last) & (pl.col("category") == "runtime_rl"))
    signal = (
        tables["signals"]
        .filter((pl.col("as_of") == last) & (pl.col("signal") == "tokens_spent_vs_score"))
        .row(0, named=True)
    )
    expected = stats.spearmanr(rl["mean_tokens"].to_numpy(), rl["score"].to_numpy())
    assert signal["n_results"] == rl.height >= 3
    assert signal["spearman"] == pytest.approx(expected.statistic)
    old = scored["old"]["signals"].filter(pl.col("signal") == "tokens_spent_vs_score")
    assert set(old["n_results"].to_list()) <= {0} and old["spearman"].null_count() == old.height


# --- usage no call can have (contract 1.4, issue 46) -------------------------------------------


def _priced(episode_id: str, model: str, **usage: Any) -> list[dict[str, Any]]:
    """An associative episode of two replies, each carrying ``usage``, answered right."""
    replies = [message(Role.ASSISTANT, text, **usage) for text in ("Thinking.", "Done.")]
    return episode(
        "associative_learning",
        episode_id=episode_id,
        model=model,
        file=f"dump_date={NIGHT}/part-0.parquet",
        turns=[*replies, item("q", "yes"), answer("q", "yes")],
    )


NIGHT = "2026-12-01"
FAIR: Final = {INPUT_TOKENS: 900, OUTPUT_TOKENS: 40, COST_USD: 0.002, LATENCY_MS: 850.0}
# What each model's replies record: two models of nonsense, one of fair usage.
HOSTILE_USAGE: Final = {
    "m-inf": [{COST_USD: 1e308}, {COST_USD: 1e308}],  # each episode's cost sums to inf
    "m-wrap": [{INPUT_TOKENS: 5 * 10**18}],  # legal int64; two of them wrap an int64 sum
    "m-dear": [{**FAIR, COST_USD: 1e9}, {**FAIR, LATENCY_MS: 1e15}],  # a $1e9 call; 31,000 years
    "m-fair": [FAIR, FAIR],
}


def _hostile_dump(root: Path) -> None:
    rows = [
        row
        for model, episodes in HOSTILE_USAGE.items()
        for i, usage in enumerate(episodes)
        for row in _priced(f"{model}-{i}", model, **usage)
    ]
    write_dump(rows, root)
    (root / f"dump_date={NIGHT}" / "_SUCCESS").touch()


def test_usage_no_call_can_have_is_refused_the_scores_kept_and_every_command_works(
    tmp_path: Path,
) -> None:
    """Issue 46: replies costing 1e308 each put Infinity into episode_scores' Delta log (the
    commit failed with exit 4, then every nightly, report and vacuum too); 5e18 tokens a
    reply wrapped the episode's int64 sum (exit 1); $1e9 a call and 1e15 ms went through.
    Now each such episode is scored, its usage refused with its value, no table or log
    holds a non-finite value, the run says so, and the next commands work."""
    from flows.cli import app

    dump, out = tmp_path / "dump", tmp_path / "out"
    _hostile_dump(dump)
    runner = CliRunner()
    first = runner.invoke(app, ["nightly", str(dump), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "5 episode(s) scored with their usage refused (usage_invalid" in first.output
    episodes = read_table(out, "episode_scores").sort("episode_id")
    assert episodes["score"].to_list() == [1.0] * 7  # every score kept
    refused = dict(episodes.select("episode_id", USAGE_REFUSED).iter_rows())
    assert refused == {
        "m-dear-0": "usage_invalid: turn 1: cost_usd = 1000000000.0, outside [0, 1000] "
        "(and 1 more assistant row(s))",
        "m-dear-1": "usage_invalid: turn 1: latency_ms = 1000000000000000.0, outside "
        "[0, 604800000] (and 1 more assistant row(s))",
        "m-fair-0": None,
        "m-fair-1": None,
        "m-inf-0": "usage_invalid: turn 1: cost_usd = 1e+308, outside [0, 1000] (and 1 more "
        "assistant row(s))",
        "m-inf-1": "usage_invalid: turn 1: cost_usd = 1e+308, outside [0, 1000] (and 1 more "
        "assistant row(s))",
        "m-wrap-0": "usage_invalid: turn 1: input_tokens = 5000000000000000000, outside "
        "[0, 1000000000] (and 1 more assistant row(s))",
    }
    kept = episodes.filter(pl.col(USAGE_REFUSED).is_null())
    assert kept[COST_USD].to_list() == [2 * FAIR[COST_USD]] * 2
    refused_rows = episodes.filter(pl.col(USAGE_REFUSED).is_not_null())
    for column in (*MEASURES, REPLIES_WITHOUT_USAGE):
        assert refused_rows[column].null_count() == refused_rows.height, column
    assert_finite_everywhere(out)
    # the aggregates leave the refused episodes out of their usage, and say how many record it
    standings = read_table(out, "standings").sort("model")
    assert standings.select("model", "n_episodes", USAGE_EPISODES, COST_USD).rows() == [
        ("m-dear", 2, 0, None),
        ("m-fair", 2, 2, sum([2 * FAIR[COST_USD]] * 2)),
        ("m-inf", 2, 0, None),
        ("m-wrap", 1, 0, None),
    ]
    assert last_run(out)["counts"]["episodes_usage_refused"] == 5
    # the output stays readable: a second nightly, status, report and vacuum all work
    for args in (
        ["nightly", str(dump), "--out", str(out)],
        ["status", str(out)],
        ["report", str(out), "--html", str(tmp_path / "report.html")],
        ["vacuum", str(out)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
        if args[0] == "status":
            assert f"night {NIGHT}: 5 episode(s) scored with their usage refused" in result.output
