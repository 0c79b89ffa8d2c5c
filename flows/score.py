"""Scoring a dump: judge and score each file's episodes (read by ``flows.reading``), stage
them, make the tables of a night.

The work is in plain functions (``score_file``, ``assemble``, ``score_dump``,
``night_tables``): the runs of ``flows.runs`` (and through them the Prefect flows of
``flows.prefect_flows``) and the tests call them directly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import polars as pl

from flows.mismatches import Mismatches
from flows.provenance import with_provenance
from flows.reading import FileReport, decodes, read_batch, read_file, reject_file, retrying
from flows.result import ScoreResult, Staged
from flows.store import delta
from flows.store.delta.staged import StagedFiles, StageTarget
from flows.store.dumps import (
    DumpFile,
    content_digest,
    discover,
    modified_ns,
)
from flows.store.spill import Spilled
from schemas.columns import (
    EPISODE_SCORES_DTYPES,
    HELD_DTYPES,
    PROVENANCE,
    REJECTS_DTYPES,
)
from schemas.contract import DUMP_DATE, FILE, Col, canonical_schema
from schemas.rules import Rule
from schemas.tables import EPISODE_SCORES_TABLE, REPLACED_EPISODES_TABLE
from schemas.validation import validate
from schemas.version import COGSCORE_VERSION
from transforms.aggregate import component_sums
from transforms.compact import compact, owned
from transforms.duplicates import KEY as DUPLICATE_KEY
from transforms.duplicates import duplicate_episodes, episode_ids, reject_duplicates
from transforms.pipeline import rejects_of, scorable_episodes, scores_of
from transforms.registry import resolve
from transforms.replaced import replaced_runs, single_runs


def code_digest(top: Path = Path(__file__).parents[1]) -> str:
    """The sha256 of the scoring code under ``top`` (schemas, transforms, this module): what
    a cached per-file result depends on besides its input, so that a changed scorer never
    reuses results of the one before, version number or not."""
    code = [*(top / "schemas").glob("*.py"), *(top / "transforms").glob("*.py")]
    digest = hashlib.sha256()
    for path in sorted([*code, top / "flows" / "score.py"]):
        digest.update(path.relative_to(top).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


SCORER_CODE: Final = code_digest()


@dataclass
class FilePart:
    """What scoring one file, or a batch of small files (``batches``), gives: one report per
    file. Reject rows of its episodes are made later from their rows, for every file at once
    (they are few): see ``assemble``.

    Staged (``stage``): the episode scores are written as uncommitted data files of
    ``episode_scores`` where the files were scored; ``scores`` keeps the columns a night's
    reduction reads (``HELD``), ``sums`` the files' component sums."""

    scores: pl.DataFrame
    unscored: pl.DataFrame  # canonical rows (but content) of the episodes not scored
    rejects: pl.DataFrame  # each file that cannot be read: its one reject row
    reports: list[FileReport]
    staged: Staged | None = None
    sums: pl.DataFrame | None = None
    mismatches: Mismatches | None = None  # a staged file's, counted on its whole rows
    # ``scores`` set aside on disk (``scores`` empty): the rows of a file waiting to be staged,
    # or a staged chunk's held columns (as text) waiting for the night's assembly.
    spilled: Spilled | None = None
    # Staged: its single runs (contract 1.4, ``transforms.replaced.single_runs``; few).
    runs: pl.DataFrame | None = None
    # Staged by a worker (``stage``): its scored episodes are in its staged files only,
    # ``scores`` holds the held columns of the ids repeated within its batch (not staged).
    in_files: bool = False

    def unspilled(self) -> FilePart:
        """This part, its scores read back if they were set aside."""
        if self.spilled is not None:
            self.scores, self.spilled = self.spilled.take(), None
        return self


# What a night's reduction reads of a staged file's episodes (a few dozen bytes each):
# comparisons and the bootstrap, the row accounting, the ids checked across files.
HELD: Final = list(HELD_DTYPES)


def stage(part: FilePart, target: StageTarget, in_files: bool = False) -> FilePart:
    """Write a scored file's episode scores as data files of ``episode_scores`` (validated,
    with provenance; invisible until the night's commit, ``vacuum`` removes them if that
    never comes) and keep what the reduction needs: the held columns, the component sums;
    ``in_files`` (a worker's, ``score_and_stage``): no row of a scored episode (the driver
    reads the files back a category at a time, ``flows.coded``), but those of ids repeated
    within the batch, which are not staged (a harness bug: rare)."""
    held, write = staging(part, target, in_files=in_files)
    held.staged = write()
    return held


def staging(
    part: FilePart,
    target: StageTarget,
    ordered: bool = False,
    spill: bool = False,
    in_files: bool = False,
) -> tuple[FilePart, Callable[[], StagedFiles | None]]:
    """``stage`` in two: what the night's reduction needs, made now (its ``staged`` not yet
    set), and the write of the rows (None: no row), for the caller to run when it will
    (``ordered``: the part's rows are in (file, id) order already; ``spill``: the held
    columns set aside on disk until the night's parts are assembled; ``in_files``: none
    held but those not staged, as ``stage``)."""
    # Sorted once: the staged files and the held columns (parts join in (file, id) order).
    scores = part.scores if ordered else part.scores.sort(FILE, Col.EPISODE_ID)
    # An id in several files of a batch: every copy is rejected when the night's parts are
    # assembled (``assemble``), so none is staged (the held columns keep them, to find them).
    # Filtered only where there are some: a filter copies every row it keeps.
    many = len(part.reports) > 1
    copies = pl.struct(DUMP_DATE, Col.EPISODE_ID).is_duplicated()
    repeated = many and scores.select(copies.any()).item()
    rows = scores.filter(~copies) if repeated else scores

    def write() -> StagedFiles | None:
        if not rows.height:
            return None
        table = with_provenance(rows, COGSCORE_VERSION, {target.night: target.fingerprint})
        validate(EPISODE_SCORES_TABLE, table)  # one query; pandera's report if it fails
        return delta.write_data_files(
            target.location,
            EPISODE_SCORES_TABLE.name,
            table,
            target.night,
            partition_by=EPISODE_SCORES_TABLE.partition_by,
        )

    sums = compact(component_sums(scores.lazy()).collect())
    # The reject rows of the file's unscored episodes are made here too (a plan of ~15 ms a
    # file): their rows (~120 bytes an episode of the night) are not carried to the driver.
    # Held to the night's end: in buffers of their own, not views pinning the file's text.
    rejects = owned(pl.concat([part.rejects, _reject_rows(part.unscored)]))
    mismatches = Mismatches.of(scores)
    held = FilePart(_no_held(), _no_rows(), rejects, part.reports, None, sums, mismatches)
    held.runs = single_runs(scores.lazy()).collect()
    if in_files:  # the copies not staged alone (none, but for a harness bug)
        held.in_files = True
        if repeated:
            held.scores = owned(compact(scores.filter(copies).select(HELD)))
    elif spill:  # as text: a Categorical's categories stay while any Categorical column does
        held.spilled = Spilled(scores.select(HELD))
    else:
        held.scores = owned(compact(scores.select(HELD)))
    return held, write


def _no_held() -> pl.DataFrame:
    return compact(pl.DataFrame(schema=EPISODE_SCORES_DTYPES).select(HELD))


def settled(staged: Iterable[Staged | None]) -> list[StagedFiles]:
    """The staged files, once written: a chunk the local engine writes while the night's
    tables are made is waited for here (its error, if its write failed, raised here)."""
    done = (s.result() if isinstance(s, Future) else s for s in staged)
    return [s for s in done if s is not None]


def score_and_stage(
    batch: Sequence[DumpFile],
    formulas: Mapping[str, str],
    digests: Mapping[str, str] | None = None,
    target: StageTarget | None = None,
) -> FilePart:
    """``score_batch``, then ``stage`` where there is a target: a worker's whole job."""
    part = score_batch(batch, formulas, digests or {})
    return part if target is None else stage(part, target, in_files=True)


# A file's fixed cost is about 38 ms of CPU whatever its rows (its plan built and run: 26
# ms; its rows validated and staged as data files of their own: 12 ms): a night of 10,000
# one-episode files took 282 s against 3.4 s in one file, and left 9,865 data files in
# episode_scores. Small files are scored together instead: consecutive files of a night
# (in listing order) make one batch until it would hold more than BATCH_BYTES on disk or
# BATCH_FILES files; a file of BATCH_BYTES or more is a batch of its own, as every file
# was before. Read when called (tests set it to 0: a batch per file).
BATCH_BYTES = 8 << 20
BATCH_FILES = 1_000


def batches(files: Sequence[DumpFile]) -> list[list[DumpFile]]:
    """``files`` in listing order, cut into the batches that are scored together."""
    out: list[list[DumpFile]] = []
    batch: list[DumpFile] = []
    held = 0
    for dump_file in sorted(files, key=lambda f: f.relative):
        size = _size(dump_file)
        if batch and (held + size > BATCH_BYTES or len(batch) >= BATCH_FILES):
            out.append(batch)
            batch, held = [], 0
        batch.append(dump_file)
        held += size
    return [*out, batch] if batch else out


def _size(dump_file: DumpFile) -> int:
    try:
        return dump_file.size
    except OSError:  # gone since the listing: scoring it says so
        return 0


def score_batch(
    batch: Sequence[DumpFile], formulas: Mapping[str, str], digests: Mapping[str, str]
) -> FilePart:
    """Scores, unscored rows and a report per file of a batch (``digests``: the content
    digests of those known): the files' rows read together and scored in one plan. Episodes
    are keyed by (file, episode_id) and never span files, so each file's episodes are judged
    and scored as they are alone (``tests/flows/test_batches.py``); a file that cannot be read
    is rejected by name, as alone (``read_file``). Where the readable files' rows cannot be
    read together (a file's data does not decode) or a file is gone since the listing, each
    file is scored alone, which says which."""
    if len(batch) == 1:
        return score_file(batch[0], formulas, digests.get(batch[0].relative))
    read = read_batch(batch)
    if read is None:
        return merged([score_file(f, formulas, digests.get(f.relative)) for f in batch])
    rows, reports, rejects = read
    for dump_file, report in zip(batch, reports, strict=True):
        report.digest = digests.get(dump_file.relative) or content_digest(dump_file)
        report.mtime_ns = modified_ns(dump_file)
    scores, unscored = pl.DataFrame(schema=EPISODE_SCORES_DTYPES), _no_rows()
    if rows is not None:
        scores, unscored = scored_rows(rows.lazy(), formulas)
    return FilePart(
        scores, unscored, pl.concat([pl.DataFrame(schema=REJECTS_DTYPES), *rejects]), reports
    )


def merged(parts: Sequence[FilePart], in_order: bool = False) -> FilePart:
    """One part of unstaged parts; ``in_order``: of parts each in (file, id) order, so."""
    scores = _in_file_order(p.scores for p in parts) if in_order else [p.scores for p in parts]
    return FilePart(
        pl.concat([pl.DataFrame(schema=EPISODE_SCORES_DTYPES), *scores]),
        pl.concat([_no_rows(), *(p.unscored for p in parts)]),
        pl.concat([pl.DataFrame(schema=REJECTS_DTYPES), *(p.rejects for p in parts)]),
        [report for p in parts for report in p.reports],
    )


_UNSCORED: Final = {c: t for c, t in canonical_schema().items() if c != Col.CONTENT}


def score_file(
    dump_file: DumpFile, formulas: Mapping[str, str], digest: str | None = None
) -> FilePart:
    """Scores, unscored rows and report of one file; ``digest``: its content digest, if known.

    The result depends on this file alone: ids repeated across the files of a night are
    rejected when the parts are assembled."""
    rows, report, reject = read_file(dump_file)
    if report.status == "gone":
        no_reject = pl.DataFrame(schema=REJECTS_DTYPES)
        return FilePart(pl.DataFrame(schema=EPISODE_SCORES_DTYPES), _no_rows(), no_reject, [report])
    report.digest = digest or content_digest(dump_file)
    report.mtime_ns = modified_ns(dump_file)
    if rows is not None:
        try:
            scores, unscored = retrying(lambda: scored_rows(rows, formulas))
            return FilePart(scores, unscored, pl.DataFrame(schema=REJECTS_DTYPES), [report])
        except (pl.exceptions.ComputeError, OSError) as error:
            if decodes(dump_file):  # the data reads: the error is the scorer's own
                raise
            problems = [(Rule.FILE_UNREADABLE, f"the file's data cannot be read: {error}")]
            reject = reject_file(report, dump_file, problems)
    assert reject is not None
    return FilePart(pl.DataFrame(schema=EPISODE_SCORES_DTYPES), _no_rows(), reject, [report])


def scored_rows(
    rows: pl.LazyFrame, formulas: Mapping[str, str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(episode scores, unscored rows) of one file's or one batch's canonical rows: the
    scoring plan (``transforms.pipeline.score_rows``) run as a file's is, in two collects:
    the scorable episodes and the unscored rows, then the scores of the frame collected.
    As one plan, the seven category branches that read the scorable episodes each carried
    the whole plan below them through polars' optimiser: 24 ms of a file's 45 ms on 50
    rows, 6 ms in two (one file of 264,000 rows: 190 ms to 165 on one thread)."""
    scorable, unscored = pl.collect_all(
        list(scorable_episodes(rows)), engine="in-memory", optimizations=_PLAN
    )
    scores = scores_of(scorable.lazy(), formulas).collect(engine="in-memory", optimizations=_PLAN)
    return scores, unscored


def _no_rows() -> pl.DataFrame:
    return pl.DataFrame(schema=_UNSCORED)


# A file's plan is small and its rows fit in memory (files are the streaming unit): the
# in-memory engine ran it in 0.3 s against the streaming engine's 0.5 s (264k rows).
# score_rows marks the subplans it shares with explicit caches; polars' own search for common
# subplans on top of them doubled the time per file (1.4 s against 0.6 s, 264k rows), and
# finds nothing more to share.
_PLAN = pl.QueryOptFlags(comm_subplan_elim=False)


def assemble(
    parts: Sequence[FilePart],
    formulas: dict[str, str],
    target: StageTarget | None = None,
) -> ScoreResult:
    """One result from the per-file parts: the reject rows of every unscored episode, ids
    repeated across the files of a night rejected, runs replaced by a later one set apart
    (``_replaced``), in a stable order. Staged parts (all of a night's, with ``target``)
    whose files hold such copies or runs are staged again without them."""
    parts = [p.unspilled() for p in parts]
    staged = target is not None and all(p.sums is not None for p in parts)
    for part in parts if staged else ():  # held columns set aside as text, compact again
        part.scores = compact(part.scores)
    empty = pl.DataFrame(schema=EPISODE_SCORES_DTYPES)
    if staged:  # each part in (file, id) order: its files' slices put in order, no copy
        scores = pl.concat([_no_held(), *_in_file_order(p.scores for p in parts)])
    else:
        scores = _sorted(pl.concat([empty, *(p.scores for p in parts)]), [FILE, Col.EPISODE_ID])
    unscored = pl.concat([_no_rows(), *(p.unscored for p in parts)])
    rejects = pl.concat([_reject_rows(unscored), *(p.rejects for p in parts)])
    duplicates = duplicate_episodes(episode_ids(scores.lazy(), rejects.lazy())).collect()
    if not duplicates.is_empty():
        marked = reject_duplicates(scores.lazy(), rejects.lazy(), duplicates.lazy())
        scores, rejects = pl.collect_all(list(marked))
        scores = _sorted(scores, [FILE, Col.EPISODE_ID])  # a join may move rows
        if staged:
            assert target is not None
            parts = [_restaged(p, duplicates, target)[0] for p in parts]
    scores, parts, replaced = _replaced(scores, parts, target if staged else None)
    sums = (
        pl.concat([p.sums for p in parts if p.sums is not None])
        if staged
        else component_sums(scores.lazy()).collect()
    )
    mismatches = (
        Mismatches.total(p.mismatches for p in parts if p.mismatches is not None)
        if staged
        else Mismatches.of(scores)
    )
    return ScoreResult(
        scores=scores,
        rejects=_sorted(rejects, [FILE, Col.EPISODE_ID]),
        files=[report for p in parts for report in p.reports],
        formulas=formulas,
        sums=sums,
        staged=[p.staged for p in parts if p.staged is not None] if staged else None,
        mismatches=mismatches,
        replaced=replaced,
    )


def _replaced(
    scores: pl.DataFrame, parts: list[FilePart], target: StageTarget | None
) -> tuple[pl.DataFrame, list[FilePart], pl.DataFrame]:
    """The night's single runs that a later run of their model and task replaced (contract
    1.4, ``transforms.replaced``) taken out of ``scores`` and of the parts' staged files
    (``target``: the parts are staged): (scores, parts, their whole rows with
    ``replaced_by``). Only scored episodes take part: the copies of an id rejected are out
    of ``scores`` and of the parts staged again without them. A night without two single
    runs costs nothing here (a simulated night has none)."""
    held = [p.runs for p in parts if p.runs is not None]
    none = single_runs(pl.LazyFrame(schema=EPISODE_SCORES_DTYPES)).collect()
    runs = single_runs(scores.lazy()).collect() if target is None else pl.concat([none, *held])
    replaced = replaced_runs(runs.lazy()).collect() if runs.height > 1 else pl.DataFrame()
    if replaced.is_empty():
        return scores, parts, REPLACED_EPISODES_TABLE.empty()
    gone = replaced.select(pl.col(c).cast(scores.schema[c]) for c in DUPLICATE_KEY)
    if target is not None:
        restaged = [_restaged(p, replaced, target) for p in parts]
        parts, taken = [p for p, _ in restaged], [t for _, t in restaged]
        rows = pl.concat([pl.DataFrame(schema=EPISODE_SCORES_DTYPES), *taken])
    else:
        rows = scores.join(gone, on=DUPLICATE_KEY, how="semi")
    scores = scores.join(gone, on=DUPLICATE_KEY, how="anti", maintain_order="left")
    return scores, parts, replaced_rows(rows, replaced)


def replaced_rows(rows: pl.DataFrame, replaced: pl.DataFrame) -> pl.DataFrame:
    """The ``replaced_episodes`` rows (no provenance) of the whole episode ``rows`` taken
    out of a night, each with its ``replaced_by`` from ``replaced`` (``replaced_runs``)."""
    moved = rows.with_columns(pl.col(c).cast(pl.String) for c in DUPLICATE_KEY)
    columns = [c for c in REPLACED_EPISODES_TABLE.columns if c not in PROVENANCE]
    joined = moved.join(replaced, on=DUPLICATE_KEY).select(columns)
    return _sorted(joined, [FILE, Col.EPISODE_ID])


def _in_file_order(held: Iterable[pl.DataFrame]) -> list[pl.DataFrame]:
    """Parts' rows (each sorted by (file, id); a file in one part) cut and ordered by file:
    sorted, as views of the parts' buffers (a sort copies them while the parts hold theirs)."""
    slices: list[tuple[str, pl.DataFrame]] = []
    for frame in (f for f in held if not f.is_empty()):
        lengths = frame[FILE].to_physical().rle().struct.field("len")  # a run per file
        starts = lengths.cum_sum() - lengths
        names = frame[FILE].gather(starts).cast(pl.String)
        slices += [
            (name, frame.slice(start, length))
            for name, start, length in zip(names, starts, lengths, strict=True)
        ]
    return [piece for _, piece in sorted(slices, key=lambda named: named[0])]


def _reject_rows(unscored: pl.DataFrame) -> pl.DataFrame:
    """The reject rows of the episodes of ``unscored`` rows, with every reason (none: no
    plan run)."""
    if unscored.is_empty():
        return pl.DataFrame(schema=REJECTS_DTYPES)
    return rejects_of(unscored.lazy()).collect(engine="in-memory")


def _restaged(
    part: FilePart, episodes: pl.DataFrame, target: StageTarget
) -> tuple[FilePart, pl.DataFrame]:
    """A staged part without ``episodes`` (their key: copies of ids repeated across files, a
    harness bug, or runs replaced; rare), by ``restaged``; a part whose held columns hold
    none of them as it is (its files are not read back), and no rows."""
    written = settled([part.staged])
    copies = compact(episodes.select(DUPLICATE_KEY))
    if not written or part.scores.join(copies, on=DUPLICATE_KEY, how="semi").is_empty():
        return part, pl.DataFrame(schema=EPISODE_SCORES_DTYPES)
    return restaged(part, written[0], episodes, target)


def restaged(
    part: FilePart,
    written: StagedFiles,
    episodes: pl.DataFrame,
    target: StageTarget,
    in_files: bool = False,
) -> tuple[FilePart, pl.DataFrame]:
    """``part`` without ``episodes`` (their key), its staged files (``written``) read back,
    written again without them (staged as ``stage`` does, ``in_files`` alike) and the old
    ones deleted; and the rows taken out, whole."""
    copies = episodes.select(DUPLICATE_KEY)
    rows = delta.read_staged(target.location, EPISODE_SCORES_TABLE.name, written)
    rows = rows.select(list(EPISODE_SCORES_DTYPES))
    kept = rows.join(copies, on=DUPLICATE_KEY, how="anti", nulls_equal=True)
    taken = rows.join(copies, on=DUPLICATE_KEY, how="semi", nulls_equal=True)
    delta.discard(target.location, EPISODE_SCORES_TABLE.name, [written])
    unstaged = FilePart(kept, part.unscored, part.rejects, part.reports)
    return stage(unstaged, target, in_files=in_files), taken


def score_dump(
    input_root: Path | str, formulas: Mapping[str, str] | Sequence[str] = ()
) -> ScoreResult:
    """Judge and score every episode of a dump, file after file (no output written)."""
    chosen = resolve(formulas)
    return assemble([score_file(f, chosen) for f in discover(input_root)], chosen)


def _sorted(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    # polars does not keep row order through group_by/joins: sort for identical output.
    return frame.sort(by, nulls_last=True)
