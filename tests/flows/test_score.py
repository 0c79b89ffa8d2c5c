"""Scoring a dump on disk: every rule, file-level problems, accounting and the tables."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import runs
from flows.score import score_dump
from flows.store.dumps import InputError
from flows.store.output import TABLES
from schemas.contract import DUMP_DATE, FILE
from schemas.rules import Rule
from tests.dumps import built_counts, rule_dump, write_dump
from tests.reference import reference_score
from tests.run import rules_by_key
from tests.tables import last_run, read_table
from transforms.ingest import partition_values
from transforms.registry import DEFAULTS as _DEFAULTS

# A new output pins the registry's default (the task files' rounding, v3, since issue 28).
DEFAULT_PROCEDURAL = _DEFAULTS["procedural_learning"]  # type: ignore[index]  # a str key


@pytest.fixture(scope="module")
def rule_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows, _ = rule_dump()
    root = tmp_path_factory.mktemp("rule_dump")
    write_dump(rows, root)
    return root


def test_rule_dump_gives_the_expected_rejects_and_the_reference_scores(rule_dir: Path) -> None:
    rows, expected = rule_dump()
    result = score_dump(rule_dir)
    assert rules_by_key(result.rejects) == expected
    reference = reference_score(
        [{DUMP_DATE: partition_values(r[FILE]).get(DUMP_DATE)} | r for r in rows]
    )
    scored = {(r["episode_id"], r["file"]): r for r in result.scores.to_dicts()}
    assert set(scored) == set(reference.scored)
    for key, want in reference.scored.items():
        got = scored[key]
        assert {k: got[k] for k in want} == want, key


def test_every_row_is_accounted_for(rule_dir: Path) -> None:
    counts = score_dump(rule_dir).counts
    built = built_counts(*rule_dump())  # what the builder wrote and spoiled
    assert built["episodes_harness_error"] == 3 and built["episodes_scored"] > 0
    assert {k: counts[k] for k in built} == built
    assert counts["rows_read"] == counts["rows_scored"] + counts["rows_rejected"]


NIGHT = "dump_date=2026-12-03"


@pytest.fixture(scope="module")
def dated_rule_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rule dump with its undated files moved into a night of their own."""
    rows, _ = rule_dump()
    root = tmp_path_factory.mktemp("dated_rule_dump")
    moved = [
        r
        if DUMP_DATE in partition_values(r[FILE])
        else r | {FILE: f"dump_date=2026-12-03/{r[FILE]}"}
        for r in rows
    ]
    write_dump(moved, root)
    return root


def test_a_dump_mixing_dated_and_undated_files_is_refused(rule_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"mixes files .* \(part-0.parquet, part-1.parquet\)"):
        runs.score(rule_dir, tmp_path)
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_outputs_are_hive_tables_with_a_manifest(dated_rule_dir: Path, tmp_path: Path) -> None:
    result = score_dump(dated_rule_dir)
    outcome = runs.score(dated_rule_dir, tmp_path)
    scores = read_table(tmp_path, "episode_scores")
    rejects = read_table(tmp_path, "rejects")
    assert scores.height == result.scores.height and rejects.height == result.rejects.height
    manifest = last_run(tmp_path)
    assert manifest["counts"] == result.counts
    assert outcome.result is not None and dict(outcome.result.counts) == result.counts
    # The tables and the run record, nothing else (no lease, no probe left behind).
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*TABLES, "runs"])


def test_procedural_formula_version_is_selectable(rule_dir: Path) -> None:
    def procedural(formulas: list[str]) -> pl.DataFrame:
        scores = score_dump(rule_dir, formulas).scores
        return scores.filter(category="procedural_learning").sort("episode_id")

    v1, v2 = procedural(["procedural_learning=v1"]), procedural([])
    assert set(v1["formula_version"]) == {"v1"} and set(v2["formula_version"]) == {
        DEFAULT_PROCEDURAL
    }
    assert v1["score"].to_list() == [
        0.5 * c + 0.5 * t for c, t in zip(v1["consistency"], v1["transfer"], strict=True)
    ]
    with pytest.raises(ValueError, match="no formula 'v9'"):
        score_dump(rule_dir, ["procedural_learning=v9"])


def _good_table() -> pa.Table:
    return pa.table(
        {
            "run_id": ["r"],
            "episode_id": ["e"],
            "model": ["m"],
            "task": ["t"],
            "category": ["associative_learning"],
            "turn": pa.array([0], pa.int64()),
            "role": ["environment"],
            "kind": ["episode_start"],
            "params": ["{}"],
        }
    )


@pytest.mark.parametrize(
    ("name", "breaker", "rule"),
    [
        ("not-parquet", lambda p: p.write_text("hello"), Rule.FILE_UNREADABLE),
        ("truncated", lambda p: p.write_bytes(p.read_bytes()[:-30]), Rule.FILE_UNREADABLE),
        (
            "missing-column",
            lambda p: pq.write_table(_good_table().drop_columns(["model"]), p),
            Rule.MISSING_COLUMN,
        ),
        (
            "value-as-string",
            lambda p: pq.write_table(_good_table().append_column("value", pa.array(["0.5"])), p),
            Rule.WRONG_COLUMN_TYPE,
        ),
    ],
)
def test_a_bad_file_is_rejected_and_the_rest_scored(
    tmp_path: Path,
    name: str,
    breaker,
    rule: Rule,  # type: ignore[no-untyped-def]
) -> None:
    rows, _ = rule_dump()
    write_dump(rows, tmp_path)
    bad = tmp_path / f"{name}.parquet"
    pq.write_table(_good_table(), bad)
    breaker(bad)
    result = score_dump(tmp_path)
    bad_rows = result.rejects.filter(pl.col("file") == bad.name)
    assert bad_rows["rules"].to_list() == [[rule.value]]
    assert bad_rows["reasons"][0][0]
    assert result.scores.height == score_dump(tmp_path, []).scores.height > 0
    counts = result.counts
    assert counts["files_rejected"] == 1
    assert counts["rows_read"] == counts["rows_scored"] + counts["rows_rejected"]


def test_missing_and_empty_inputs_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        score_dump(tmp_path / "nope")
    with pytest.raises(InputError, match=r"no \.parquet files"):
        score_dump(tmp_path)


def test_rows_staged_where_scored_equal_the_tables_of_the_whole_night(
    dated_rule_dir: Path, tmp_path: Path
) -> None:
    """A run's workers write the episode rows they score (ids repeated across files are
    taken out of their files again); a night reduced from the whole rows in memory (as a dry
    run does) gives the same tables, bit for bit."""
    from polars.testing import assert_frame_equal

    from flows.night import night_tables
    from transforms.aggregate import Bootstrap

    runs.score(dated_rule_dir, tmp_path)
    expected = night_tables(score_dump(dated_rule_dir), Bootstrap())
    assert "duplicate_episode_across_files" in set(expected["rejects"]["rules"].explode())
    for name, frame in expected.items():
        got = read_table(tmp_path, name).drop("scorer_version", "input_fingerprint")
        key = [c for c in got.columns if got[c].dtype != pl.List(pl.String)]
        assert_frame_equal(
            got.sort(key, nulls_last=True),
            frame.select(got.columns).sort(key, nulls_last=True),
            check_exact=True,
        )


def test_a_staged_file_leaves_the_driver_under_100_bytes_an_episode(tmp_path: Path) -> None:
    """What a file whose rows are staged leaves held (issue 17: a night's memory grows by
    at most 100 bytes an episode; a Prefect task's result, a part the local engine holds
    till the night is assembled; a Dask worker's holds none, ``tests/flows/test_runs.py``):
    the slim columns, compact, and the reject rows of its unscored episodes (not their
    rows); counted in Arrow buffer bytes, which count every row's 16-byte view of a text
    column."""
    from flows.score import score_file, stage
    from flows.store.delta.staged import StageTarget
    from flows.store.dumps import discover
    from flows.store.location import Location
    from schemas.columns import HELD_DTYPES
    from simulator import simulate
    from transforms.registry import resolve

    simulate(tmp_path / "dump", date="2026-12-01", episodes=3000, seed=3)
    (dump_file,) = discover(tmp_path / "dump")
    target = StageTarget(Location.parse(str(tmp_path / "out")), "2026-12-01", "sha256:x")
    part = stage(score_file(dump_file, resolve(())), target)
    assert part.staged is not None and part.unscored.is_empty()
    assert part.scores.schema == pl.Schema(HELD_DTYPES)
    episodes = part.scores.height + part.rejects.height
    assert part.rejects.height > 0 and episodes == 3000
    held = sum(f.to_arrow().nbytes for f in (part.scores, part.rejects, part.sums) if f is not None)
    # ... and no more than that: text taken out of the file's columns stays views into
    # their buffers (which plain Arrow strings, a copy, do not show) unless copied out.
    views = pl.CompatLevel.newest()
    for frame in (part.scores, part.rejects):
        for column in frame.select(pl.col(pl.String)).get_columns():
            kept = column.to_arrow(compat_level=views).get_total_buffer_size()
            values = 16 * column.len() + int(column.str.len_bytes().sum())
            assert kept <= values + 1024, f"{column.name}: {kept} bytes for {values}"
    assert held / episodes < 100


def test_a_staged_file_is_held_and_written_in_episode_id_order(tmp_path: Path) -> None:
    """A night's parts join in (file, episode id) order without sorting the night
    (``assemble``), so each staged part holds its episodes so, and its data files are
    written so; the scoring plan hands them in category order."""
    from flows.score import score_file, stage
    from flows.store.catalog import EPISODE_SCORES
    from flows.store.delta.staged import StageTarget, read_staged
    from flows.store.dumps import discover
    from flows.store.location import Location
    from schemas.contract import Col
    from simulator import simulate
    from transforms.registry import resolve

    simulate(tmp_path / "dump", date="2026-12-01", episodes=600, seed=5)
    (dump_file,) = discover(tmp_path / "dump")
    target = StageTarget(Location.parse(str(tmp_path / "out")), "2026-12-01", "sha256:x")
    scored = score_file(dump_file, resolve(()))
    ids = scored.scores[Col.EPISODE_ID]
    assert not ids.is_sorted()  # else this test could not fail
    part = stage(scored, target)
    assert part.scores[Col.EPISODE_ID].cast(pl.String).to_list() == sorted(ids.to_list())
    assert part.staged is not None and len(part.staged.adds) > 1
    for add in part.staged.adds:
        one = read_staged(target.location, EPISODE_SCORES, replace(part.staged, adds=[add]))
        assert one[Col.EPISODE_ID].is_sorted()


def test_staged_chunks_of_interleaved_files_assemble_in_file_and_id_order(
    tmp_path: Path,
) -> None:
    """A staged night is put in (file, episode id) order from its parts' files (issue 39:
    sorting the night copied its held columns at its peak), whatever files each chunk
    holds and in whatever order the chunks come: as the night's episodes sorted, and as
    assembling its unstaged files gives them."""
    from polars.testing import assert_frame_equal

    from flows.score import HELD, assemble, merged, score_file, stage
    from flows.store.delta.staged import StageTarget
    from flows.store.dumps import discover
    from flows.store.location import Location
    from schemas.contract import Col
    from simulator import simulate
    from transforms.compact import compact
    from transforms.registry import resolve

    simulate(tmp_path / "dump", date="2026-12-01", episodes=400, seed=6, episodes_per_file=100)
    formulas = resolve(())
    scored = [score_file(f, formulas) for f in discover(tmp_path / "dump")]
    assert len(scored) == 4
    target = StageTarget(Location.parse(str(tmp_path / "out")), "2026-12-01", "sha256:x")
    chunks = [merged([scored[1], scored[3]]), merged([scored[2], scored[0]])]
    staged = assemble([stage(chunk, target) for chunk in chunks], formulas, target)
    whole = assemble(scored, formulas)
    assert staged.scores.height == whole.scores.height > 300
    assert_frame_equal(staged.scores, compact(whole.scores.select(HELD)), check_exact=True)
    assert staged.scores.equals(staged.scores.sort(FILE, Col.EPISODE_ID))


def test_a_nights_row_counts_are_summed_past_what_the_held_counts_hold() -> None:
    """The held counts of an episode are Int32 (``HELD_DTYPES``: 4 bytes an episode
    instead of 8); a night's sums of them are not bound to Int32."""
    from flows.score import ScoreResult
    from schemas.columns import FEEDBACK_OUT_OF_RANGE, HELD_DTYPES, N_ROWS, REJECTS_DTYPES

    most = 2**31 - 1
    held = pl.DataFrame(schema=HELD_DTYPES).extend(
        pl.DataFrame(
            {c: [None, None] for c in HELD_DTYPES} | {N_ROWS: [most, most]},
            schema=HELD_DTYPES,
        ).with_columns(pl.col(FEEDBACK_OUT_OF_RANGE).fill_null(most))
    )
    result = ScoreResult(held, pl.DataFrame(schema=REJECTS_DTYPES), [], {})
    assert result.counts["rows_scored"] == 2 * most
    assert result.counts["warnings_feedback_out_of_range"] == 2 * most


def test_a_score_run_validates_its_rows_and_tables_without_importing_pandera(
    tmp_path: Path,
) -> None:
    """pandera (pandas with it) costs about 1.2 s of CPU to import: a run whose rows and
    tables pass never imports it (``schemas.validation``, ``flows.reading._validated``).
    Nor scipy.stats (0.55 s of CPU; its t distribution is ``scipy.special``'s ``stdtr`` and
    ``stdtrit``, which the comparisons call directly)."""
    import subprocess
    import sys

    from simulator import simulate

    dump = tmp_path / "dump"
    simulate(dump, date="2026-12-01", episodes=60, seed=1)
    code = (
        "import sys\n"
        "from flows.runs import score\n"
        f"outcome = score({str(dump)!r}, {str(tmp_path / 'out')!r})\n"
        "print(outcome.result.counts['episodes_scored'] > 0, 'pandera' in sys.modules,\n"
        "      'scipy.stats' in sys.modules, 'scipy.special' in sys.modules)\n"
    )
    root = Path(__file__).parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "False", "True"]


def test_the_canonical_rows_are_the_rows_pandera_s_model_declares() -> None:
    """``flows.reading._validated`` passes the canonical schema without asking pandera: it must
    be the schema ``DumpRows`` accepts, and any other dtype goes to pandera, which refuses."""
    import pandera.errors

    from flows.reading import _validated
    from schemas.contract import canonical_schema
    from schemas.rows import DumpRows

    canonical = pl.LazyFrame(schema=canonical_schema())
    assert DumpRows.validate(canonical) is not None
    assert _validated(canonical) is canonical
    other = canonical.with_columns(pl.col("turn").cast(pl.Float64))
    with pytest.raises(pandera.errors.SchemaError):
        _validated(other)


def test_a_file_name_is_read_as_it_is_never_as_a_pattern(tmp_path: Path) -> None:
    """``a*.parquet`` beside ``a.parquet`` and ``ab.parquet`` (and names with ``[``, ``?``,
    ``{``): each file is read once, by its own name, file by file and in batches; the same
    files under plain names are the yardstick."""
    from tests.dumps import PATTERN_NAMES, copies_named

    source = Path(__file__).parents[2] / "examples/dump/dump_date=2026-12-01/part-0.parquet"
    night = "dump_date=2026-12-01"
    copies_named(source, tmp_path / "patterns" / night, PATTERN_NAMES)
    plain = [f"plain{i}" for i in range(len(PATTERN_NAMES))]
    copies_named(source, tmp_path / "plain" / night, plain)
    want = score_dump(tmp_path / "plain").counts
    assert want["rows_read"] == len(PATTERN_NAMES) * pq.ParquetFile(source).metadata.num_rows
    assert score_dump(tmp_path / "patterns").counts == want  # file by file
    outcome = runs.score(tmp_path / "patterns", tmp_path / "out")  # small files in batches
    assert outcome.result is not None and outcome.result.counts == want
    rules = read_table(tmp_path / "out", "rejects")["rules"].explode().sort().to_list()
    assert rules == score_dump(tmp_path / "plain").rejects["rules"].explode().sort().to_list()


def test_a_reported_score_outside_0_1_is_rejected_never_a_score(tmp_path: Path) -> None:
    """Contract (1.2, "The reported score"): a reported score alone is the episode's score,
    so 25.3 (a table on another scale) would rank its model first; it is rejected with
    its rule, as one below 0 is. A score of 1 or 0 is a score."""
    from flows.importers.scores import contract_rows, parquet_bytes

    reported = {"high": 25.3, "low": -0.2, "one": 1.0, "zero": 0.0}
    night = tmp_path / "dump" / "dump_date=2026-12-01"
    night.mkdir(parents=True)
    scores = pl.DataFrame(
        {
            "dump_date": "2026-12-01",
            "model": list(reported),
            "task": "t1",
            "category": "associative_learning",
            "instance_id": "t1",
            "reported_score": list(reported.values()),
            "ts": None,
            "run_id": "hand-written",
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC")},
    )
    (night / "scores.parquet").write_bytes(parquet_bytes(contract_rows(scores).drop("dump_date")))
    result = score_dump(tmp_path / "dump")
    assert dict(result.scores.select("model", "score").rows()) == {"one": 1.0, "zero": 0.0}
    assert dict(result.rejects.select("model", "rules").rows()) == {
        "high": ["reported_score_out_of_range"],
        "low": ["reported_score_out_of_range"],
    }
