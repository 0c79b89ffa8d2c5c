"""A run recorded live (``record_rows`` around the harness) writes the same file, byte for
byte, as ``import-kaggle`` makes from that run's ``.run.json``, usage included (the scripted
models report it as a model proxy does); one task per category, the runs made by scripted
models (random answers of the schema asked for; unreadable replies)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from benchmarks.kaggle_scripted import Policy, _llm
from flows.importers.kaggle import import_runs
from flows.importers.kaggle_files import index_tasks
from flows.importers.kaggle_live import record_rows
from flows.importers.kaggle_replay import _harness, _load_task
from flows.store.location import Location
from schemas.kaggle import Outcome, Reason
from tests.learningbench import TASKS

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


def test_live_rows_carry_the_usage_the_harness_recorded(
    live_and_imported: tuple[list, Path, Path],
) -> None:
    """Each live-recorded run's reply rows hold the usage its run file's requests record,
    request by request, in order."""
    reports, runs, root = live_and_imported
    files = {p.name.removesuffix(".run.json"): p for p in runs.rglob("*.run.json")}
    for report in reports:
        assert report.file is not None
        rows = pl.read_parquet(root / "live" / report.file)
        recorded = rows.filter(pl.col("input_tokens").is_not_null())
        raw = json.loads(files[report.run.removesuffix(".run.json")].read_text())
        metrics = [r.get("metrics") for c in raw["conversations"] for r in c.get("requests", [])]
        metrics = [m for m in metrics if m]
        assert metrics, report.task  # the scripted models report usage
        assert recorded["input_tokens"].to_list() == [int(m["inputTokens"]) for m in metrics]
        assert recorded["cost_usd"].to_list() == [
            (int(m["inputTokensCostNanodollars"]) + int(m["outputTokensCostNanodollars"])) / 1e9
            for m in metrics
        ]
        assert set(recorded["role"].to_list()) == {"assistant"}
