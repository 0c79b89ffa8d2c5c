"""The three ways users run cogscore, as plain functions: ``score`` (a whole dump),
``nightly`` (only the nights that are new or changed) and ``rescore`` (a range of history
with chosen formula versions, and what that moved).

Each takes a ``Mapper`` that runs the per-file work: in this process, on a Dask cluster, or
(``flows.prefect_flows``) as Prefect tasks. Files are the unit of distribution (episodes
never span files); nights are the unit of reduction: here, one night after another, each
night's parts are assembled, aggregated and written before the next night is scored
(``flows.job.score_nights``). Each holds the output's lease while it works (``held_run``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from flows.importers.kaggle_nightly import IMPORTS, Harvest, import_rows, recorded_imports
from flows.job import Job, score_nights
from flows.logs import log
from flows.mappers import Mapper
from flows.outcome import Outcome
from flows.plan import (
    NightlyPlan,
    check_places,
    formulas_for,
    nights_off_set,
    plan_nightly,
    ready,
    rescored_versions,
)
from flows.records import RunContext
from flows.rescore import in_range, rescore_nights
from flows.store.catalog import fault_point
from flows.store.dumps import InputError, discover, one_layout
from flows.store.dumps import dump_root as root_of
from flows.store.errors import StorageError
from flows.store.output import Output, night_levels
from flows.store.runs_table import RunRow
from flows.store.state import OutputState
from flows.store.writer import DryRun, TableWriter
from schemas.columns import RunStatus
from schemas.contract import DUMP_DATE
from schemas.version import COGSCORE_VERSION


def _nothing_to_do(
    kind: str,
    dump_root: Path | str,
    output: Output,
    writer: TableWriter,
    state: OutputState,
    *,
    context: RunContext,
    details: Mapping[str, Any] | None = None,
) -> Outcome:
    """A run with nothing to score: recorded all the same (status ``nothing_to_do``)."""
    now = datetime.now(UTC)
    row = RunRow(
        run_id=context.run_id,
        kind=kind,
        status=RunStatus.NOTHING_TO_DO,
        started=now,
        finished=now,
        night=None,
        table_versions={},
        scorer_version=COGSCORE_VERSION,
        input=str(dump_root),
        partitioned=state.partitioned_by_dump_date,
        formula_set=state.formula_set,
        details={
            **(details or {}),
            "engine": context.engine,
            "command": context.command,
            "status": "nothing_to_do",
            "exit_code": 0,
        },
    )
    writer.commit([row])
    outcome = Outcome(kind, output)
    outcome.run_id = context.run_id
    outcome.level = context.options.level
    outcome.levels = night_levels(state)
    outcome.formula_set = dict(state.formula_set)
    outcome.nights_off_set = nights_off_set(state)
    return outcome


def score(
    input_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper | None = None,
    context: RunContext | None = None,
) -> Outcome:
    """Score every file of the dump; replace the nights it holds (or, undated, everything)
    with the output's formula set (``formulas``: for a new output, else they must agree)."""
    t0 = time.perf_counter()
    context = context or RunContext()
    input_root, output = root_of(input_root), Output.at(out)
    listed = one_layout(input_root, discover(input_root))
    files, waiting = ready(input_root, listed, context.options.require_marker)

    def prepare(state: OutputState) -> Work:
        check_places(input_root, output, state, context.options.input_root_changed)
        versions = formulas_for(output, formulas, state)
        if not files:
            details = {"waiting": waiting}
            return lambda w: _nothing_to_do(
                "score", input_root, output, w, state, context=context, details=details
            )
        job = Job("score", input_root, output, files, versions)
        return lambda writer: score_nights(job, writer, state, mapper, context)

    outcome = held_run(output, context, prepare)
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    return outcome


def nightly(
    dump_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper | None = None,
    *,
    verify: bool = False,
    context: RunContext | None = None,
    harvest: Harvest | None = None,
) -> Outcome:
    """Score the nights that are new or changed since the last run into ``out`` with the
    output's formula set; leave the others untouched (not rewritten). With nothing to do,
    the run is recorded and nothing else is written. ``harvest``: first import the harness
    runs that arrived into the dump (``import-kaggle``), what became of each run appended to
    OUT's ``imports`` table with the run's commit."""
    t0 = time.perf_counter()
    context = context or RunContext()
    dump_root, output = root_of(dump_root), Output.at(out)
    imported = None
    if harvest is not None:
        context.progress.step(f"importing the harness runs of {harvest.source}")
        imported = harvest.into(dump_root)
        log().info("%d run(s) imported, %d not", imported.imported, imported.rejected)
        fault_point("imported")  # the dump's files written, the ledger's rows not yet
    listed = discover(dump_root) if imported is None or imported.imported else []
    plans: list[NightlyPlan] = []

    def prepare(state: OutputState) -> Work:
        check_places(dump_root, output, state, context.options.input_root_changed)
        versions = formulas_for(output, formulas, state)
        marker = context.options.require_marker
        plan = plan_nightly(dump_root, output, verify, marker, state, listed)
        plans.append(plan)
        details = {
            "nightly": {
                "new": plan.new,
                "changed": plan.changed,
                "unchanged": plan.unchanged,
                "waiting": plan.waiting,
            }
        }
        if imported is None:
            return scoring(plan, versions, details, state)
        assert harvest is not None
        # The import's counts with the run; each run's outcome in the imports table.
        details["imports"] = imported.as_json() | {"details": None}
        # Every run the dump holds is in the ledger: those found imported already that it
        # does not record too (written by a run killed before its commit).
        recorded = recorded_imports(output)
        now = datetime.now(UTC)
        rows = import_rows(imported, harvest.source, context.run_id, now, recorded)
        score_them = scoring(plan, versions, details, state)

        def work(writer: TableWriter) -> Outcome:
            writer.append(IMPORTS, rows)
            return score_them(writer)

        return work

    def scoring(
        plan: NightlyPlan, versions: dict[str, str], details: dict[str, Any], state: OutputState
    ) -> Work:
        if not plan.to_score:
            return lambda w: _nothing_to_do(
                "nightly", dump_root, output, w, state, context=context, details=details
            )
        job = Job(
            "nightly",
            dump_root,
            output,
            [f for night in plan.to_score for f in plan.nights[night]],
            versions,
            plan.digests,
            details=details,
            kept=rescored_versions(state, plan.changed, versions),
        )
        return lambda writer: score_nights(job, writer, state, mapper, context)

    outcome = held_run(output, context, prepare)
    outcome.imports = imported
    plan = plans[-1]
    outcome.nights_unchanged = plan.unchanged
    outcome.nights_waiting = plan.waiting
    outcome.nights_input_gone = plan.gone
    outcome.seconds = time.perf_counter() - t0
    return outcome


def rescore(
    dump_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str],
    *,
    since: date | None = None,
    until: date | None = None,
    mapper: Mapper | None = None,
    dry_run: bool = False,
    diff_out: Path | str | None = None,
    context: RunContext | None = None,
) -> Outcome:
    """Rescore the nights in [since, until] with ``formulas`` (the output's set for the
    categories not named), replacing them, and write ``rescore_diff``: old and new scores
    and ranks of each model and category. Over every night the output holds, the versions
    become its formula set; over part of history the set stays, and those nights are
    reported as scored with other versions. ``dry_run``: compute and show the diff (and
    write it to ``diff_out``), change nothing in ``out``."""
    t0 = time.perf_counter()
    context = context or RunContext()
    dump_root, output = root_of(dump_root), Output.at(out)
    listed = [
        f
        for f in discover(dump_root)
        if DUMP_DATE in f.partitions and in_range(f.partitions[DUMP_DATE], since, until)
    ]
    files, waiting = ready(dump_root, listed, context.options.require_marker)
    nights = sorted({f.partitions[DUMP_DATE] for f in files})
    if not nights:
        raise InputError(f"no dump_date partition of {dump_root} lies in the range given")

    def prepare(state: OutputState) -> Work:
        check_places(dump_root, output, state, context.options.input_root_changed)
        return lambda writer: rescore_nights(
            dump_root, output, writer, state, formulas=formulas, files=files, nights=nights,
            mapper=mapper, diff_out=diff_out, context=context, since=since, until=until,
        )  # fmt: skip

    outcome = held_run(output, context, prepare, dry_run)
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    return outcome


# What a run does once it holds the output: (writer) -> outcome.
Work = Callable[[TableWriter], "Outcome"]


_PLAN_ATTEMPTS = 3


def held_run(
    output: Output,
    context: RunContext,
    prepare: Callable[[OutputState], Work],
    dry_run: bool = False,
) -> Outcome:
    """Read the output's state once, ``prepare`` the run from it (what can refuse the run
    does so here, before the output is touched: a refused first run creates nothing), then
    take the lease and do the work. Should another run have committed between the read and
    the lease (the runs table moved), plan again from the new state. A dry run takes no
    lease and writes nothing."""
    for _ in range(_PLAN_ATTEMPTS):
        seen, state = output.read_state()
        work = prepare(state)
        if dry_run:
            return work(DryRun())
        with output.writing(context.run_id, context.command) as writer:
            if writer.healed:
                log().warning(
                    "rewrote the statistics that were not JSON (Infinity, written by cogscore "
                    "before contract 1.4) of %s",
                    ", ".join(f"{t}/{c}" for t, commits in writer.healed.items() for c in commits),
                )
            if output.runs_version() == seen:
                outcome = work(writer)
                for table, why in writer.unchecked.items():
                    log().warning(
                        "no checkpoint written for %s (a later run writes it): %s", table, why
                    )
                return outcome
        log().info("another run committed to %s meanwhile: planning again", output)
    raise StorageError(f"{output} changed under this run {_PLAN_ATTEMPTS} times: run again")
