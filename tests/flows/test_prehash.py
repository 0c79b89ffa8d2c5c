"""A dump hashed while the command starts up (``flows.store.prehash``): a run is given a digest
only for the very file that was hashed, once; anything else it hashes itself."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path

import blake3
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.store import prehash
from flows.store.dumps import content_digest, discover
from tests.tables import last_run

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


@pytest.fixture(autouse=True)
def every_file_hashed_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example dump's files are small: hashed early all the same, but where said."""
    monkeypatch.setattr(prehash, "EARLY_BYTES", 0)


def digest_of(path: Path) -> str:
    return "blake3:" + blake3.blake3(path.read_bytes()).hexdigest()


def dump_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE_DUMP, tmp_path / "dump"))


def hashed_early(root: Path) -> None:
    thread = prehash.start(root)
    assert thread is not None
    thread.join(timeout=30)


def test_each_file_hashed_early_is_given_once_with_its_digest(tmp_path: Path) -> None:
    root = dump_copy(tmp_path)
    hashed_early(root)
    files = prehash.parquet_below(root)
    assert len(files) > 1
    assert [prehash.take(f) for f in files] == [digest_of(f) for f in files]
    assert [prehash.take(f) for f in files] == [None] * len(files)  # taken: hashed again


def test_a_file_changed_since_it_was_hashed_is_not_given(tmp_path: Path) -> None:
    """Changed in size, or rewritten to the same size with another modification time: the
    early digest is not the file's, so the run hashes the file as it is now."""
    root = dump_copy(tmp_path)
    hashed_early(root)
    grown, same_size = prehash.parquet_below(root)[:2]
    with open(grown, "ab") as handle:
        handle.write(b"more")
    data = bytearray(same_size.read_bytes())
    data[0] ^= 0xFF
    stat = same_size.stat()
    same_size.write_bytes(bytes(data))
    os.utime(same_size, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert prehash.take(grown) is None
    assert prehash.take(same_size) is None
    hashed_early(root)  # hashed again: its digest is the file's as it is now
    listed = {f.relative: f for f in discover(root)}
    for path in (grown, same_size):
        assert content_digest(listed[path.relative_to(root).as_posix()]) == digest_of(path)


def test_a_file_whose_turn_has_not_come_is_left_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run does not wait for the early thread to reach a file: it takes what is hashed
    or being hashed (waiting for the latter), and hashes the others itself."""
    root = dump_copy(tmp_path)
    first, second, *_ = prehash.parquet_below(root)
    hashing, release = threading.Event(), threading.Event()
    real = prehash.file_digest

    def slow_first(path: Path | str, kind: str = prehash.DIGEST) -> str:
        if Path(path) == first:
            hashing.set()
            release.wait(timeout=30)
        return real(path, kind)

    monkeypatch.setattr(prehash, "file_digest", slow_first)
    thread = prehash.start(root)
    assert thread is not None and hashing.wait(timeout=30)
    assert prehash.take(second) is None  # not begun: the early thread will not hash it
    release.set()
    assert prehash.take(first) == digest_of(first)  # being hashed: waited for
    thread.join(timeout=30)


def test_files_smaller_than_early_bytes_are_left_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small file costs less to hash than to hand over: only the larger are hashed early."""
    root = dump_copy(tmp_path)
    files = prehash.parquet_below(root)
    sizes = sorted(f.stat().st_size for f in files)
    monkeypatch.setattr(prehash, "EARLY_BYTES", sizes[-1])  # the largest file alone
    hashed_early(root)
    given = {f: prehash.take(f) for f in files}
    largest = [f for f in files if f.stat().st_size == sizes[-1]]
    assert {f: d for f, d in given.items() if d is not None} == {f: digest_of(f) for f in largest}
    assert len(largest) < len(files)


def test_an_object_store_dump_is_not_hashed_early() -> None:
    assert prehash.start("s3://bucket/dump") is None


def test_score_records_each_files_digest_with_the_early_hashing(tmp_path: Path) -> None:
    """``cogscore score`` hashes its dump while it starts: the run records the digest of
    each file's bytes."""
    root = dump_copy(tmp_path)
    result = CliRunner().invoke(app, ["score", str(root), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    recorded = {f["file"]: f["digest"] for f in last_run(tmp_path / "out")["files"]}
    assert recorded == {f.relative: digest_of(f.path) for f in discover(root)}


def test_the_early_listing_is_the_runs(tmp_path: Path) -> None:
    """The early thread lists what the run lists: hidden and ``_`` names aside, a night's
    folder reached through a link, a link loop walked once."""
    root = dump_copy(tmp_path)
    elsewhere = tmp_path / "elsewhere" / "dump_date=2026-12-02"
    shutil.copytree(root / "dump_date=2026-12-01", elsewhere)
    (root / "dump_date=2026-12-02").symlink_to(elsewhere, target_is_directory=True)
    (root / "_staging").mkdir()
    shutil.copy(root / "dump_date=2026-12-01" / "part-0.parquet", root / "_staging" / "x.parquet")
    shutil.copy(root / "dump_date=2026-12-01" / "part-0.parquet", root / ".hidden.parquet")
    (root / "dump_date=2026-12-01" / "loop").symlink_to(root, target_is_directory=True)
    nights = ("dump_date=2026-11-30", "dump_date=2026-12-01", "dump_date=2026-12-02")
    expected = sorted(
        f"{night}/{file.name}"
        for night, source in zip(nights, (*nights[:2], "dump_date=2026-12-01"), strict=True)
        for file in (EXAMPLE_DUMP / source).glob("*.parquet")
    )
    listed = [str(path) for path in prehash.parquet_below(root)]
    assert [Path(path).relative_to(root).as_posix() for path in listed] == expected
    early = prehash._large_below(root, 0)
    assert [path for path, _ in early] == listed
    assert [key for _, key in early] == [prehash._key(path) for path in listed]


def test_a_digest_of_another_kind_is_left_to_the_run(tmp_path: Path) -> None:
    """A file recorded with sha256 (by a run before issue 48) is hashed with sha256 again:
    the early BLAKE3 digest is not given for it, and stays for a run that asks for BLAKE3."""
    root = dump_copy(tmp_path)
    hashed_early(root)
    path = prehash.parquet_below(root)[0]
    dump_file = {f.relative: f for f in discover(root)}[path.relative_to(root).as_posix()]
    assert prehash.take(path, prehash.SHA256) is None
    assert (
        content_digest(dump_file, prehash.SHA256) == hashlib.sha256(path.read_bytes()).hexdigest()
    )
    assert prehash.take(path) == digest_of(path)
