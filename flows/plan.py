"""What a run will do, decided before it does it: the formula versions an output scores
with (pinned per output), and which nights of a dump are new, changed, unchanged or waiting.

Light on purpose: ``cogscore status`` reads it without importing the scoring code.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from flows.store.dumps import (
    DumpFile,
    InputError,
    check_writable,
    content_digest,
    discover,
    marked_complete,
    one_layout,
)
from flows.store.dumps import dump_root as root_of
from flows.store.output import Output
from flows.store.prehash import DIGEST, digest_kind
from flows.store.runs_table import RunRow
from flows.store.state import NightState, OutputState
from schemas.columns import RunStatus
from schemas.contract import DUMP_DATE, Category
from schemas.formulas import describe, ordered, split_key, version_of
from schemas.version import COGSCORE_VERSION
from transforms.registry import VERSIONS, chosen, resolve


def fingerprint(files: Iterable[tuple[str, str]]) -> str:
    """The digest of a night's input: its files' relative paths and content digests."""
    lines = "\n".join(f"{name}\t{digest}" for name, digest in sorted(files))
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


# -- where a run reads and writes -------------------------------------------------------------


def _contains(outer: str, inner: str) -> bool:
    """Whether the place ``inner`` (a path or URL, without credentials) is ``outer`` or
    lies below it.

    >>> _contains("/data/dump", "/data/dump/out"), _contains("/data/dump", "/data/dumps")
    (True, False)
    >>> _contains("s3://b/dumps", "s3://b/dumps/x"), _contains("s3://b/d", "gs://b/d/x")
    (True, False)
    """
    outer, inner = outer.rstrip("/"), inner.rstrip("/")
    return inner == outer or inner.startswith(outer + "/")


def check_places(
    dump_root: Path | str, output: Output, state: OutputState, input_changed: bool
) -> None:
    """Refuse, before any work (``InputError``), an output and a dump that overlap (the
    output's files would become input), and another dump root for an output that holds
    nights scored from a first one, unless ``input_changed`` says the dump moved: a staging
    dump's night would replace production's, and the next production run would flip it
    back."""
    here = Output.at(output).location.display
    there = str(dump_root) if isinstance(dump_root, str) else str(Path(dump_root))
    if isinstance(dump_root, Path) and Output.at(output).location.is_local:
        here, there = os.path.realpath(here), os.path.realpath(there)
    if _contains(there, here) or _contains(here, there):
        inside = "inside the dump" if _contains(there, here) else "around the dump"
        raise InputError(
            f"the output {here} lies {inside} {there}: its tables would be read as input; "
            "give an --out outside the dump root (and the dump outside the output)"
        )
    before = state.input
    if before and before != str(dump_root) and not input_changed:
        raise InputError(
            f"{output} holds nights scored from {before}; this run reads {dump_root}. "
            "Scoring another dump into it would replace those nights with its own. If the "
            "dump moved, say so: --input-root-changed (COGSCORE_INPUT_ROOT_CHANGED=1); "
            "else give another --out"
        )


class FormulaChoiceError(ValueError):
    """A ``--formula`` choice that names no category, task or version this release has."""


def preflight(
    input_root: str,
    out: str,
    asked: Sequence[str],
    input_changed: bool,
    pinned: bool = True,
    imported: bool = False,
) -> None:
    """Fail fast, before any flow starts, on what the user can fix: a formula choice this
    release does not have (``FormulaChoiceError``), a dump or an output that cannot be used
    (``InputError``, ``StorageError``: a bad URL, a dump of two layouts, places that overlap,
    another dump root, an output that is not writable) and, where ``pinned`` (score,
    nightly), formula versions other than the output's own. ``imported``: the dump is made
    by an import that comes first (``nightly --runs``): it may not exist yet."""
    try:
        resolve(asked)
    except ValueError as error:
        raise FormulaChoiceError(str(error)) from None
    root, output = root_of(input_root), Output.at(out)
    if not imported:
        one_layout(root, discover(root))
    state = output.state()  # read once: the places checked and the formula set
    check_places(root, output, state, input_changed)
    if output.location.is_local:
        check_writable(Path(output.location.uri))
    if pinned:
        formulas_for(output, asked, state)


# -- formula versions: pinned per output ---------------------------------------------------
# A formula set maps "category" or "category/task" (a task's own version) to a version
# (``schemas.formulas``).


def _unknown(versions: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``versions`` this cogscore does not have."""
    try:
        return {k: v for k, v in versions.items() if v not in VERSIONS[split_key(k)[0]]}
    except ValueError as error:
        raise InputError(f"a formula set: {error}") from None


def formula_set(state: OutputState) -> dict[str, str] | None:
    """The formula versions an output scores with (None: a new output). A category the
    output never named takes this release's default; a task the output never named takes
    its category's pinned version (a task's own default does not enter a pinned set)."""
    recorded = state.formula_set
    if not recorded:
        return None
    pinned = ordered(recorded)
    if unknown := _unknown(pinned):
        raise InputError(
            f"the output was scored with {describe(unknown)}, which this cogscore "
            f"{COGSCORE_VERSION} does not have: run the version that wrote it, or a newer one"
        )
    defaults = resolve()
    return ordered({**{str(c): defaults[c] for c in Category}, **pinned})


def formulas_for(
    out: Output | Path | str, asked: Sequence[str], state: OutputState | None = None
) -> dict[str, str]:
    """The versions ``score`` and ``nightly`` use: the output's set, whatever this release's
    defaults are (a new output: ``asked``, else the newest). Asking for another version
    there is refused: mixing versions across nights is what ``rescore`` does, on purpose."""
    output = Output.at(out)
    named = chosen(asked)
    pinned = formula_set(output.state() if state is None else state)
    if pinned is None:
        return resolve(named)
    conflicts = {k: v for k, v in named.items() if version_of(pinned, *_category_task(k)) != v}
    if conflicts:
        now = {k: version_of(pinned, *_category_task(k)) for k in conflicts}
        raise InputError(
            f"{output} is scored with {describe(now)}; "
            f"--formula {describe(conflicts)} would mix versions across its nights. To change "
            f"them, rescore: cogscore rescore DUMP_ROOT --out {output} --formula "
            f"{' --formula '.join(f'{c}={v}' for c, v in conflicts.items())} "
            "(over every night it changes the output's set)"
        )
    return pinned


def _version_in(versions: Mapping[str, str], key: str) -> str | None:
    category, task = _category_task(key)
    return version_of(versions, category, task) if category in versions else None


def _category_task(key: str) -> tuple[str, str | None]:
    category, task = split_key(key)
    return str(category), task


def nights_off_set(state: OutputState) -> dict[str, str]:
    """The output's nights scored with versions other than its set: what differs, by night."""
    pinned = formula_set(state)
    if pinned is None:
        return {}
    off = {}
    # Most nights share one set of versions: each set compared once, not once a night.
    described: dict[tuple[tuple[str, str], ...], str] = {}
    for night, entry in state.nights.items():
        versions = entry.formula_versions
        key = tuple(sorted(versions.items()))
        if key not in described:
            # A key either side names (a task's own entry, else its category's version).
            differ = {
                k: _version_in(versions, k) or "none"
                for k in {*versions, *pinned}
                if _version_in(versions, k) != _version_in(pinned, k)
            }
            described[key] = describe(differ) if differ else ""
        if described[key]:
            off[night] = described[key]
    return dict(sorted(off.items()))


def rescored_versions(
    state: OutputState, nights: Sequence[str], versions: Mapping[str, str]
) -> dict[str, dict[str, str]]:
    """The versions each of ``nights`` was last scored with, where they differ from
    ``versions`` (the output's set): a night of a rescored range, delivered again, is scored
    as it was rescored, never put back on the set silently (the run names it among the
    nights scored with other versions)."""
    off = nights_off_set(state)
    kept = {}
    for night in nights:
        if night not in off:
            continue
        recorded = state.nights[night].formula_versions
        own = ordered({**versions, **recorded})
        if unknown := _unknown(own):
            raise InputError(
                f"night {night} was scored with {describe(unknown)}, which this cogscore "
                f"{COGSCORE_VERSION} does not have: rescore it with a version it has"
            )
        kept[night] = own
    return kept


def describe_set(versions: Mapping[str, str]) -> dict[str, str]:
    return ordered(versions)


def ready(
    dump_root: Path | str, files: Sequence[DumpFile], require_marker: bool
) -> tuple[list[DumpFile], list[str]]:
    """The files of nights a run may score, and the nights still waiting for the harness's
    ``_SUCCESS`` marker (only where markers are required)."""
    if not require_marker:
        return list(files), []
    nights = {f.partitions.get(DUMP_DATE) for f in files}
    waiting = {n for n in nights if not marked_complete(dump_root, n)}
    ready = [f for f in files if f.partitions.get(DUMP_DATE) not in waiting]
    return ready, sorted(n or "(undated)" for n in waiting)


@dataclass
class NightlyPlan:
    nights: dict[str, list[DumpFile]]
    digests: dict[str, str]  # relative path -> content digest (``prehash.digest_kind``)
    new: list[str]
    changed: list[str]
    unchanged: list[str]
    waiting: list[str] = field(default_factory=list)  # no _SUCCESS marker yet
    gone: list[str] = field(default_factory=list)  # in the output, their input deleted

    @property
    def to_score(self) -> list[str]:
        return sorted([*self.new, *self.changed])


def plan_nightly(
    dump_root: Path | str,
    out: Output | Path | str,
    verify: bool = False,
    require_marker: bool = False,
    state: OutputState | None = None,
    listed: Sequence[DumpFile] | None = None,
) -> NightlyPlan:
    """Which ``dump_date`` partitions are new, changed (their content fingerprint differs
    from the one scored last), unchanged, or waiting for their ``_SUCCESS`` marker (where
    ``require_marker``). A file whose size and modification time are those recorded last
    keeps its recorded digest unless ``verify``; every other file is read and hashed, with
    the kind of digest recorded for it where there is one (like with like: a night a run
    before issue 48 scored, its files recorded with sha256, is hashed with sha256, so an
    unchanged file keeps its digest and its night its fingerprint), else with ``DIGEST``."""
    dump_root, output = root_of(dump_root), Output.at(out)
    files = list(discover(dump_root) if listed is None else listed)
    undated = [f.relative for f in files if DUMP_DATE not in f.partitions]
    if undated:
        raise InputError(
            f"nightly needs dump_date=YYYY-MM-DD folders; not in one: {', '.join(undated[:3])}"
        )
    present = {f.partitions[DUMP_DATE] for f in files}
    files, waiting = ready(dump_root, files, require_marker)
    earlier = (output.state() if state is None else state).nights
    gone = sorted(set(earlier) - present)
    known = {file.file: file for night in earlier.values() for file in night.files}
    digests = {}
    nights: dict[str, list[DumpFile]] = {}
    for f in files:
        nights.setdefault(f.partitions[DUMP_DATE], []).append(f)
        seen = known.get(f.relative)
        if (
            f.is_local
            and not verify
            and seen
            and seen.bytes == f.size
            and str(seen.mtime_ns) == f.version
            and seen.digest
        ):
            digests[f.relative] = seen.digest
        else:  # hashed (a local file), or the object's ETag as listed
            kind = digest_kind(seen.digest) if seen and seen.digest else DIGEST
            digests[f.relative] = content_digest(f, kind)
    new, changed, unchanged = [], [], []
    for night, night_files in sorted(nights.items()):
        now = fingerprint((f.relative, digests[f.relative]) for f in night_files)
        if night not in earlier:
            new.append(night)
        elif earlier[night].input_fingerprint != now:
            changed.append(night)
        else:
            unchanged.append(night)
    return NightlyPlan(nights, digests, new, changed, unchanged, waiting, gone)


def check_layout(output: Output, state: OutputState, dated: bool) -> None:
    """A run replaces only the nights it scores: an undated dump cannot go into an output of
    nights (it would replace them all), nor nights into an undated output."""
    if state.is_new or state.partitioned_by_dump_date == dated:
        return
    if dated:
        raise InputError(
            f"{output} holds the scores of an undated dump (no dump_date); scoring nights into "
            "it would replace them: give another --out"
        )
    raise InputError(
        f"{output} holds nights ({', '.join(sorted(state.nights)[:3])}, …); an "
        "undated dump would replace them all: put its files in a dump_date=YYYY-MM-DD "
        "folder, or give another --out"
    )


def state_after(state: OutputState, rows: Sequence[RunRow], level: float) -> OutputState:
    """``state`` with the nights of ``rows`` as they would be (a dry run's view; ``level``:
    the run's)."""
    nights = dict(state.nights)
    for row in rows:
        if row.night is not None and row.status is RunStatus.SUCCEEDED:
            nights[row.night] = NightState.of_row(row, level)
    return replace(state, nights=nights)
