"""The commands against a real S3 API (moto's server): the output as Delta tables in a
bucket, read back by readers cogscore did not write (deltalake, DuckDB)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from flows.cli import app
from flows.store.catalog import CORE_TABLES
from flows.store.location import Location
from flows.store.output import Output
from tests.s3server import S3Server

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def cli(*args: str | Path, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The server's endpoint and keys as a user sets them: the standard AWS_* variables."""
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("COGSCORE_STORAGE_OPTIONS", raising=False)
    return s3_server


def test_score_nightly_rescore_report_and_sql_on_s3(s3_env: S3Server, tmp_path: Path) -> None:
    url = f"s3://{s3_env.create_bucket()}/cogscore"
    cli("score", EXAMPLE_DUMP, "--out", tmp_path / "local", "--engine", "local")
    output = cli("nightly", EXAMPLE_DUMP, "--out", url, "--engine", "local")
    assert "nightly: 2 night(s) scored" in output and url in output
    remote, local = Output.at(url), Output.at(tmp_path / "local")
    for table in CORE_TABLES:
        assert_frame_equal(remote.read(table), local.read(table), check_row_order=False)
    # A reader cogscore did not write: deltalake straight from the bucket.
    versions = remote.versions()
    where = Location.parse(url).child("episode_scores")
    from flows.store.location import storage_options

    arrow = DeltaTable(
        where.uri, version=versions["episode_scores"], storage_options=storage_options(where)
    ).to_pyarrow_table()
    assert arrow.num_rows == local.read("episode_scores").height

    assert "nothing new" in cli("nightly", EXAMPLE_DUMP, "--out", url, "--engine", "local")
    moved = cli(
        "rescore", EXAMPLE_DUMP, "--out", url, "--engine", "local",
        "--formula", "procedural_learning=v1", "--since", "2026-12-01",
    )  # fmt: skip
    assert "what the rescore moved" in moved
    first_run = remote.runs()["run_id"][0]
    page = tmp_path / "report.html"
    cli("report", url, "--html", page, "--as-of", first_run)
    assert "procedural_learning=v1" not in page.read_text()  # as the first run left it
    cli("report", url, "--html", page)
    assert "procedural_learning=v1" in page.read_text()
    board = cli("sql", url, "SELECT count(*) AS n FROM leaderboard")
    assert str(local.read("model_scores").filter(dump_date="2026-12-01").height) in board


def test_storage_options_on_the_command_line_and_never_printed(
    s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(s3_server.env):
        monkeypatch.delenv(name, raising=False)
    url = f"s3://{s3_server.create_bucket()}/out"
    options = [f"--storage-option={k}={v}" for k, v in s3_server.options.items()]
    output = cli("score", EXAMPLE_DUMP, "--out", url, "--engine", "local", *options)
    assert "standing as of" in output  # the leaderboard: the standing
    secret = s3_server.options["aws_secret_access_key"]
    assert secret not in output
    runs = Output.at(url, s3_server.options).runs()
    assert all(secret not in str(value) for value in runs.row(0))
    assert "***" in runs["details"][0]  # the command, with the option's value hidden


def test_wrong_credentials_and_a_missing_bucket_are_one_line_errors(
    s3_env: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = cli("score", EXAMPLE_DUMP, "--out", "s3://no-such-bucket-here/out", code=4)
    assert "s3://no-such-bucket-here/out" in output and output.count("\n") == 1
    url = f"s3://{s3_env.create_bucket()}/out"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "nobody-knows-this-key")
    with s3_env.authentication():  # moto checks keys from here on
        output = cli("score", EXAMPLE_DUMP, "--out", url, code=4)
    assert url in output and "credentials" in output and output.count("\n") == 1


def test_a_dump_in_a_missing_bucket_or_behind_refused_credentials_exits_4(
    s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README "Exit codes": a store that refuses the credentials or has no such bucket is
    4, for the dump as for the output; an empty prefix stays a refused input (2)."""
    missing = "s3://no-such-bucket-here/dump"
    for command in ("score", "nightly"):
        output = cli(command, missing, "--out", tmp_path / "out", "--engine", "local", code=4)
        assert missing in output and "bucket does not exist" in output
        assert output.count("\n") == 1
    root = upload(s3_env, EXAMPLE_DUMP)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "nobody-knows-this-key")
    with s3_env.authentication():  # moto checks keys from here on
        output = cli("nightly", root, "--out", tmp_path / "out", "--engine", "local", code=4)
    assert root in output and "credentials" in output and output.count("\n") == 1
    assert not (tmp_path / "out").exists()  # refused before any work


def test_vacuum_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cli("score", EXAMPLE_DUMP, "--out", out, "--engine", "local")
    cli("score", EXAMPLE_DUMP, "--out", out, "--engine", "local")  # the first run's files go
    assert "would delete 0 data file(s)" in cli("vacuum", out, "--dry-run")
    kept = Output.at(out).read("episode_scores")
    removed = cli("vacuum", out, "--retain", "0h")
    assert "deleted" in removed and "deleted 0 " not in removed
    assert_frame_equal(Output.at(out).read("episode_scores"), kept)
    assert "give days or hours" in cli("vacuum", out, "--retain", "soon", code=2)


def upload(server: S3Server, dump: Path, bucket: str | None = None) -> str:
    """The dump's files (and markers) into a fresh bucket (or into ``bucket``, beside what
    it holds): its s3:// root."""
    import boto3

    bucket = bucket or server.create_bucket()
    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=server.options["aws_access_key_id"],
        aws_secret_access_key=server.options["aws_secret_access_key"],
        region_name=server.options.get("aws_region", "us-east-1"),
    )
    for path in sorted(dump.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), bucket, f"dump/{path.relative_to(dump).as_posix()}")
    return f"s3://{bucket}/dump"


@pytest.mark.parametrize("prefix", ["a b", "x#y", "caf\u00e9", "p%20q", "a=b"])
def test_an_output_prefix_the_stores_encode_two_ways_is_refused_before_any_write(
    s3_env: S3Server, prefix: str
) -> None:
    """Each of these wrote keys that did not read back (exit 1 or 4 after the whole run):
    refused up front (exit 2, one line naming the character), nothing written."""
    bucket = s3_env.create_bucket()
    output = cli("score", EXAMPLE_DUMP, "--out", f"s3://{bucket}/{prefix}", code=2)
    unsafe = "%20" if "%" in prefix else next(c for c in prefix if not c.isascii() or c in " #=")
    assert "prefix cannot hold" in output and repr(unsafe) in output
    assert output.count("\n") == 1
    assert "Contents" not in s3_env.client().list_objects_v2(Bucket=bucket)


def test_a_dump_on_s3_scores_as_the_same_dump_on_disk(s3_env: S3Server, tmp_path: Path) -> None:
    root = upload(s3_env, EXAMPLE_DUMP)
    cli("score", EXAMPLE_DUMP, "--out", tmp_path / "local", "--engine", "local")
    cli("nightly", root, "--out", tmp_path / "remote", "--engine", "local")
    local, remote = Output.at(tmp_path / "local"), Output.at(tmp_path / "remote")
    for table in CORE_TABLES:
        assert_frame_equal(
            remote.read(table).drop("input_fingerprint"),
            local.read(table).drop("input_fingerprint"),
            check_row_order=False,
        )
    state = remote.state()
    assert state.input == root
    files = [f for night in state.nights.values() for f in night.files]
    assert files and all((f.digest or "").startswith("etag:") for f in files)  # no download
    assert "nothing new" in cli("nightly", root, "--out", tmp_path / "remote", "--engine", "local")
    page = tmp_path / "page.html"
    cli("report", tmp_path / "remote", "--html", page)
    assert "round_end rows of" in page.read_text() and root in page.read_text()


def test_an_s3_dump_on_a_dask_cluster_of_worker_processes(s3_env: S3Server, tmp_path: Path) -> None:
    from distributed import LocalCluster

    root = upload(s3_env, EXAMPLE_DUMP)
    cli("score", root, "--out", tmp_path / "local", "--engine", "local")
    # Worker processes read the objects themselves, with the credentials of their own
    # environment (inherited here; on other machines, set there): nothing shared on disk.
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        cli("score", root, "--out", tmp_path / "dask", "--engine", "local",
            "--dask-address", c.scheduler_address)  # fmt: skip
    for table in CORE_TABLES:
        assert_frame_equal(
            Output.at(tmp_path / "dask").read(table),
            Output.at(tmp_path / "local").read(table),
            check_row_order=False,
        )


def test_an_s3_dump_waits_for_its_success_marker(s3_env: S3Server, tmp_path: Path) -> None:
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, dump)
    (dump / "dump_date=2026-11-30" / "_SUCCESS").touch()
    root = upload(s3_env, dump)
    output = cli("nightly", root, "--out", tmp_path / "out", "--require-marker")
    assert "waiting for the _SUCCESS marker (not scored): 2026-12-01" in output
    assert set(Output.at(tmp_path / "out").read("model_scores")["dump_date"]) == {"2026-11-30"}


def test_a_concurrent_commit_on_the_same_nights_is_retried_once_then_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake.exceptions import CommitFailedError

    from flows.store import delta

    real, calls = delta.commit_nights, {"n": 0, "fail": 1}

    def conflicted(*args: object, **kwargs: object) -> int:
        calls["n"] += 1
        if calls["fail"]:
            calls["fail"] -= 1
            raise CommitFailedError("a concurrent transaction added new data")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(delta, "commit_nights", conflicted)
    cli("score", EXAMPLE_DUMP, "--out", tmp_path / "once", "--engine", "local")
    assert calls["n"] > 1 and not Output.at(tmp_path / "once").read("episode_scores").is_empty()
    calls["fail"] = 2
    output = cli("score", EXAMPLE_DUMP, "--out", tmp_path / "twice", "--engine", "local", code=4)
    assert "another writer changed" in output and output.count("\n") == 1


def test_an_object_deleted_between_listing_and_reading_fails_its_night_only(
    s3_env: S3Server, tmp_path: Path
) -> None:
    import boto3

    from flows import runs
    from flows.mappers import local_mapper
    from flows.store.dumps import DumpFile

    root = upload(s3_env, EXAMPLE_DUMP)
    bucket = root.removeprefix("s3://").split("/")[0]

    def deleting(files, formulas, digests, target=None):  # type: ignore[no-untyped-def]
        """Deletes one object of the second night after the dump was listed."""
        victims = [f for f in files if f.relative == "dump_date=2026-12-01/part-0.parquet"]
        for victim in victims:
            client = boto3.client(
                "s3", endpoint_url=s3_env.endpoint, region_name="us-east-1",
                aws_access_key_id="testing", aws_secret_access_key="testing",
            )  # fmt: skip
            client.delete_object(Bucket=bucket, Key=f"dump/{victim.relative}")
        assert all(isinstance(f, DumpFile) for f in files)
        return local_mapper(files, formulas, digests, target)

    outcome = runs.nightly(root, tmp_path / "out", mapper=deleting)
    assert outcome.nights_scored == ["2026-11-30"]
    assert list(outcome.nights_failed) == ["2026-12-01"]
    assert (
        "part-0.parquet: deleted after the dump was listed" in outcome.nights_failed["2026-12-01"]
    )
    out = Output.at(tmp_path / "out")
    assert set(out.read("model_scores")["dump_date"]) == {"2026-11-30"}
    assert any("2026-12-01" in r for r in out.runs()["details"])  # recorded as failed
    # Nothing recorded the night: the next run plans it as new, with what is listed now.
    output = cli("nightly", root, "--out", tmp_path / "out", "--engine", "local")
    assert "nightly: 1 night(s) scored (2026-12-01)" in output


def test_an_empty_prefix_is_a_one_line_error(s3_env: S3Server, tmp_path: Path) -> None:
    empty = f"s3://{s3_env.create_bucket()}/nothing-here"
    output = cli("score", empty, "--out", tmp_path / "out", code=2)
    assert empty in output and "no objects there" in output and output.count("\n") == 1


def test_the_old_snapshot_layout_gets_a_message_saying_what_to_do(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "_versions" / "x").mkdir(parents=True)
    (out / "current").symlink_to("_versions/x")
    output = cli("score", EXAMPLE_DUMP, "--out", out, "--engine", "local", code=2)
    assert "snapshot layout" in output and "new folder" in output


def test_a_store_that_ignores_conditional_writes_is_refused_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.store import objects

    monkeypatch.setattr(objects, "put_if_absent", lambda *_: "an-etag")  # always "created"
    output = cli("score", EXAMPLE_DUMP, "--out", tmp_path / "out", "--engine", "local", code=2)
    assert "ignores conditional writes" in output


def _score_a_file_on_counting_s3(
    dump: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[dict[str, Any]]]:
    """``score_file`` on the one file of ``dump``, uploaded to a moto server in its own
    process that counts requests: the file's part and the GETs of it, in order."""
    from benchmarks.scale import s3_requests, start_counting_s3, upload
    from flows.score import score_file
    from flows.store.dumps import discover
    from transforms.registry import resolve

    server = start_counting_s3()
    try:
        for name, value in server.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("COGSCORE_STORAGE_OPTIONS", raising=False)
        url = upload(server, server.create_bucket("counted"), dump, "d")
        (dump_file,) = discover(url)
        s3_requests(server.endpoint, reset=True)
        part = score_file(dump_file, resolve(()))
        requests = s3_requests(server.endpoint)
    finally:
        server.stop()
    assert part.reports[0].status == "scored" and part.scores.height > 0
    gets = [r for r in requests if r["method"] == "GET" and r["path"].endswith(dump_file.relative)]
    return part, gets


def test_a_dump_object_s_footer_is_fetched_once_and_never_the_whole_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring a file on S3 (issue 17: no step downloads a whole file): one GET of its footer
    (the scan's, kept by polars for the count and the schema), then ranged GETs; never the
    whole object. Counted by moto in its own process."""
    from simulator import simulate

    simulate(tmp_path / "dump", date="2026-12-01", episodes=200, seed=5)
    _, requests = _score_a_file_on_counting_s3(tmp_path / "dump", monkeypatch)
    gets = [r["range"] for r in requests]
    assert [g for g in gets if g is not None and g.startswith("bytes=-")] == [gets[0]]
    assert None not in gets  # no GET of the whole object
    assert all(g.startswith("bytes=") for g in gets if g is not None) and len(gets) >= 2


def test_a_large_column_the_scorer_does_not_read_is_not_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the columns a scorer reads are fetched: an extra column (the contract allows
    them) is never read. polars joins ranges less than 1 MiB apart into one GET (a request's
    latency costs more than those bytes), so in a small file such a column comes with its
    neighbours; here it holds 2.4 MB of numbers that do not compress, between columns the
    scorer reads (``ts``, read for the wall time, after it), and not one of its bytes may
    be fetched."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from benchmarks.scale import byte_range, column_ranges, merged, overlap
    from flows.store.dumps import discover
    from schemas.contract import INSTANCE_ID, Col
    from simulator import simulate

    extra = "harness_trace"
    simulate(tmp_path / "sim", date="2026-12-01", episodes=12_000, episodes_per_file=12_000)
    (simulated,) = discover(tmp_path / "sim")
    table = pq.read_table(simulated.path)
    noise = np.random.default_rng(0).integers(0, 2**62, table.num_rows)
    ts_at = table.schema.get_field_index(Col.TS)
    table = table.add_column(ts_at, extra, pa.array(noise, pa.int64()))
    assert table.column_names[-1] != extra  # else nothing lies beyond it to skip
    path = tmp_path / "dump" / "dump_date=2026-12-01" / "part-0.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(table, path, row_group_size=table.num_rows)
    columns, _ = column_ranges(path)
    assert sum(b - a for a, b in columns[extra]) > 2 * 2**20

    _, gets = _score_a_file_on_counting_s3(tmp_path / "dump", monkeypatch)
    # The footer is read with a guess of its size (the file's last 256 KiB), which may take
    # the tail of the column before it: only the other GETs fetch columns on purpose.
    footer, *reads = gets
    assert footer["range"] == "bytes=-262144"
    covered = merged([byte_range(r["range"], path.stat().st_size) for r in reads])
    assert sum(overlap(covered, chunk) for chunk in columns[extra]) == 0
    for name in (Col.EPISODE_ID, Col.CONTENT, Col.TS, INSTANCE_ID):  # read: before and after
        chunks = columns[name]
        assert sum(overlap(covered, c) for c in chunks) == sum(b - a for a, b in chunks)


def test_the_prefect_engine_scores_nightly_from_and_into_the_object_store(
    s3_env: S3Server, prefect_home: Path, tmp_path: Path
) -> None:
    """The production path: the Prefect engine, nightly, the dump and OUT in a bucket, a
    night delivered after another into an output that holds the first."""
    import shutil

    nights = sorted(p.name for p in EXAMPLE_DUMP.iterdir() if p.name.startswith("dump_date="))
    first = tmp_path / "first" / nights[0]
    shutil.copytree(EXAMPLE_DUMP / nights[0], first)
    root = upload(s3_env, first.parent)
    out = f"s3://{s3_env.create_bucket()}/cogscore"
    nightly = ["nightly", root, "--out", out, "--engine", "prefect"]
    # Not ``cli``: Prefect's console log handler keeps the stream of an earlier in-process
    # command, closed by then, and prints a logging error (a command is its own process).
    assert CliRunner().invoke(app, nightly).exit_code == 0
    later = tmp_path / "later" / nights[1]
    shutil.copytree(EXAMPLE_DUMP / nights[1], later)
    upload(s3_env, later.parent, bucket=root.removeprefix("s3://").split("/")[0])
    second = CliRunner().invoke(app, nightly)
    assert second.exit_code == 0, second.output
    new = nights[1].removeprefix("dump_date=")
    assert f"nightly: 1 night(s) scored ({new}), 1 unchanged" in second.output

    cli("score", EXAMPLE_DUMP, "--out", tmp_path / "local", "--engine", "local")
    remote, local = Output.at(out), Output.at(tmp_path / "local")
    for table in CORE_TABLES:
        assert_frame_equal(
            remote.read(table).drop("input_fingerprint"),
            local.read(table).drop("input_fingerprint"),
            check_row_order=False,
        )
    assert sorted(remote.state().nights) == [n.removeprefix("dump_date=") for n in nights]
    cached = list((prefect_home / "storage").glob("cogscore-file-*"))
    # Each night's small files scored once, as one batch (``flows.score.batches``).
    assert len(cached) == len(nights)


def test_an_object_s_name_is_read_as_it_is_never_as_a_pattern(
    s3_env: S3Server, tmp_path: Path
) -> None:
    """``a*.parquet`` beside ``a.parquet`` and ``ab.parquet`` in a bucket (and names with
    ``[``, ``?``, ``{``): each object is read once, by its own key, as the same files
    under plain names are on disk."""
    from flows import runs
    from flows.score import score_dump
    from tests.dumps import PATTERN_NAMES, copies_named

    source = EXAMPLE_DUMP / "dump_date=2026-12-01" / "part-0.parquet"
    night = "dump_date=2026-12-01"
    copies_named(source, tmp_path / "patterns" / night, PATTERN_NAMES)
    copies_named(source, tmp_path / "plain" / night, [f"p{i}" for i in range(len(PATTERN_NAMES))])
    want = score_dump(tmp_path / "plain").counts
    root = upload(s3_env, tmp_path / "patterns")
    assert score_dump(root).counts == want  # file by file
    outcome = runs.score(root, tmp_path / "out")  # small files in batches
    assert outcome.result is not None and outcome.result.counts == want


def test_explain_reads_a_transcript_from_an_s3_dump(s3_env: S3Server, tmp_path: Path) -> None:
    """An episode scored from an object-store dump is explained from the object (its ETag,
    what the run recorded, checked without downloading it), and refused once it changed."""
    import polars as pl

    from flows.present.explain import ExplainError, Which, explain

    bucket = s3_env.create_bucket()
    dump = upload(s3_env, EXAMPLE_DUMP, bucket)
    out = f"s3://{bucket}/out"
    cli("score", dump, "--out", out, "--engine", "local")
    output = Output.at(out)
    row = output.read("episode_scores").filter(pl.col("n_items") > 0).row(0, named=True)
    found = explain(output, Which(row["episode_id"]))
    assert found["recomputed_equal"] and len(found["items"]) == row["n_items"]
    client = s3_env.client()
    key = dump.removeprefix(f"s3://{bucket}/") + "/" + row["file"]
    body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    client.put_object(Bucket=bucket, Key=key, Body=body + b"\0")
    with pytest.raises(ExplainError, match="changed since it was scored"):
        explain(output, Which(row["episode_id"]))
