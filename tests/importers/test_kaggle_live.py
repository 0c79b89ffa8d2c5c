"""A run recorded live (``record_rows`` around the harness) writes the same file, byte for
byte, as ``import-kaggle`` makes from that run's ``.run.json``; one task per category, the
runs made by scripted models (random answers of the schema asked for; unreadable replies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.kaggle_scripted import Policy, _llm
from flows.importers.kaggle import import_runs
from flows.importers.kaggle_files import index_tasks
from flows.importers.kaggle_live import record_rows
from flows.importers.kaggle_replay import _harness, _load_task
from flows.storage.location import Location
from schemas.kaggle import Outcome, Reason

TASKS = Path(__file__).parents[2] / ".." / "shared" / "learningbench" / "tasks"
# One task per category, and one of the associative tasks that call the model unguarded.
CHOSEN = (
    ("inhibitory_summation_assoc_learning", "random"),
    ("inhibitory_summation_assoc_learning", "unreadable"),
    ("disjunctive_noise_concept_learning", "random"),
    ("drelkovak_harmony_lang_learning", "random"),
    ("feistel_cipher_round_obs_learning", "random"),
    ("base7_decode_rf_learning", "random"),
    ("adaptive_sort_rule_proc_learning", "random"),
)


@pytest.fixture(scope="module")
def live_and_imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path, Path]:
    kbench = _harness()  # first: it sets the harness up as a batch job (failed runs returned)
    from kaggle_benchmarks.actors.llms import LLMChat, LLMResponse

    root = tmp_path_factory.mktemp("live")
    kbench.client.directory = root / "runs"
    index = index_tasks(TASKS)
    reports = []
    for seed, (name, policy) in enumerate(CHOSEN):
        task, _ = _load_task(kbench, index[name].path, name)
        llm = _llm(LLMChat, LLMResponse, kbench, Policy(policy, seed), f"scripted/{policy}")
        with record_rows(Location.parse(str(root / "live"))) as recorded:
            task.run(llm=llm)
        reports.extend(recorded)
    return reports, root / "runs", root


def test_every_chosen_task_was_recorded_live(live_and_imported: tuple[list, Path, Path]) -> None:
    reports, _, _ = live_and_imported
    assert [r.task for r in reports] == [name for name, _ in CHOSEN]
    assert all(r.outcome is Outcome.IMPORTED for r in reports), [r.detail for r in reports]
    unreadable = reports[1]
    assert unreadable.reasons == [Reason.UNREADABLE_REPLY]


def test_live_rows_equal_the_rows_imported_from_the_run_files(
    live_and_imported: tuple[list, Path, Path],
) -> None:
    reports, runs, root = live_and_imported
    imported = import_runs(Location.parse(str(runs)), TASKS, Location.parse(str(root / "imported")))
    files = {r.file for r in imported.runs if r.outcome is Outcome.IMPORTED}
    assert files == {r.file for r in reports}
    for report in reports:
        assert report.file is not None
        live = (root / "live" / report.file).read_bytes()
        assert live == (root / "imported" / report.file).read_bytes(), report.task
