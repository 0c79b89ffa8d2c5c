"""A harness run's usage (its requests' ``metrics``) as contract 1.3 rows: read from the JSON
as proto3 writes it, on each request's reply row only, and judged by the scorer's rules
(contract 1.4: flagged by the importer where beyond the bounds, refused by the scorer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from flows.importers.kaggle_files import Request, RunFileError, parse_run, usage_of
from schemas.contract import Category, Status
from tests.learningbench import RUNS, TASKS
from tests.run import run_pipeline
from tests.tables import read_table
from transforms.kaggle_rows import Usage, episode_rows

RUN = (
    RUNS
    / "google_gemini-2.5-flash"
    / "chebyshev_point_rf_learning-run_id_Run_1_google_gemini-2.5-flash.run.json"
)


def test_metrics_as_proto3_writes_them() -> None:
    assert usage_of({}, "m") is None  # nothing recorded: null, not 0
    # int32 counts as numbers, dropped when 0; int64 costs and latency as decimal text
    full = {
        "inputTokens": 708,
        "inputTokensCostNanodollars": "212400",
        "outputTokensCostNanodollars": "149440000",
        "totalBackendLatencyMs": "274068",
    }
    assert usage_of(full, "m") == Usage(708, 0, 212400 + 149440000, 274068)
    assert usage_of({"outputTokens": 3}, "m") == Usage(0, 3, None, None)
    assert Usage(1, 2, 212400, 7).columns() == {
        "input_tokens": 1,
        "output_tokens": 2,
        "cost_usd": 212400 / 1e9,
        "latency_ms": 7.0,
    }


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("inputTokens", True, "true or false"),
        ("outputTokens", 1.5, "a number"),
        ("totalBackendLatencyMs", "12 ms", "text"),
        ("inputTokensCostNanodollars", str(2**63), repr(str(2**63))),
    ],
)
def test_a_metric_that_is_no_integer_names_its_field(field: str, value: Any, said: str) -> None:
    raw = json.loads(RUN.read_bytes())
    raw["conversations"][0]["requests"][2]["metrics"][field] = value
    with pytest.raises(RunFileError) as error:
        parse_run(json.dumps(raw).encode())
    assert str(error.value) == (
        f"field conversations[0].requests[2].metrics.{field} is {said}, not a 64-bit integer"
    )


def _rows(requests: list[Request]) -> pl.DataFrame:
    return episode_rows(
        run_id="r",
        episode_id="e",
        model="m",
        task="t",
        category=Category.ASSOCIATIVE_LEARNING,
        start_time="2026-04-12T01:25:49.772005Z",
        end_time=None,
        requests=requests,
        inputs={"items": [{"item_id": "q", "expected": "a", "answer": "a", "verdict": True}]},
        status=Status.COMPLETED,
        reported_score=1.0,
    )


def test_a_requests_usage_goes_on_its_reply_row_only() -> None:
    """A request holding a failed call (two prompts, one reply): its usage on the reply's
    row, none on the failed call's; a request without metrics leaves its row null."""
    sent = (("user", "first"), ("user", "again"))
    rows = _rows(
        [
            Request("c", sent, "a", Usage(10, 2, 3_000, 40)),
            Request("c", (("user", "more"),), "b", None),
        ]
    )
    assistant = rows.filter(pl.col("role") == "assistant", pl.col("kind") == "message")
    assert assistant.select("content", "input_tokens", "cost_usd", "latency_ms").rows() == [
        (None, None, None, None),
        ("a", 10, 3e-6, 40.0),
        ("b", None, None, None),
    ]
    scores, rejects = run_pipeline([{**r, "file": "f"} for r in rows.to_dicts()])
    assert rejects.is_empty()
    episode = scores.row(0, named=True)
    assert (episode["input_tokens"], episode["replies_without_usage"]) == (10, 1)
    assert episode["calls"] == 2  # the requests (a failed call's empty reply is not one)


def test_a_runs_calls_are_its_requests() -> None:
    """Every real run's episode makes as many calls as its run file holds requests (issue
    47: the API calls per model); where every request recorded its metrics, that is the
    ``n_api_requests`` of the runs' manifest."""
    manifest = json.loads((RUNS / "manifest.json").read_text())
    recorded = {
        m["metrics"]["task_name"]: m["metrics"]["n_api_requests"] for m in manifest.values()
    }
    runs = sorted(RUNS.glob("*/*.run.json"))
    assert len(runs) == 13
    for path in runs:
        record = parse_run(path.read_bytes())
        scores, _ = run_pipeline(
            [{**r, "file": "f"} for r in _rows(list(record.requests)).to_dicts()]
        )
        calls = scores["calls"].item()
        assert calls == len(record.requests), path.name
        if all(request.usage is not None for request in record.requests):
            assert calls == recorded[record.task], path.name


def test_a_negative_cost_in_a_run_is_written_and_its_usage_refused_by_the_scorer() -> None:
    """Contract 1.4: the episode is scored, its usage refused (1.3 rejected the episode)."""
    rows = _rows([Request("c", (("user", "x"),), "a", Usage(10, 2, -5, 40))])
    assert rows["cost_usd"].drop_nulls().to_list() == [-5e-9]
    scores, rejects = run_pipeline([{**r, "file": "f"} for r in rows.to_dicts()])
    assert rejects.is_empty()
    assert scores.select("score", "cost_usd", "input_tokens").rows() == [(1.0, None, None)]
    assert scores["usage_refused"].to_list() == [
        "usage_invalid: turn 2: cost_usd = -5e-9, outside [0, 1000]"
    ]


def test_a_run_whose_usage_is_beyond_the_bounds_is_imported_flagged_and_its_score_kept(
    tmp_path: Path,
) -> None:
    """Contract 1.4 through the commands: a request that records a $1e9 call is imported as
    it is, flagged ``usage_invalid`` (the reply and the value named), and the night scores
    the episode with its usage refused."""
    from typer.testing import CliRunner

    from flows.cli import app

    raw = json.loads(RUN.read_bytes())
    raw["conversations"][0]["requests"][2]["metrics"]["inputTokensCostNanodollars"] = str(10**18)
    runs = tmp_path / "runs" / RUN.parent.name
    runs.mkdir(parents=True)
    (runs / RUN.name).write_text(json.dumps(raw))
    dump, out = tmp_path / "dump", tmp_path / "out"
    cli = CliRunner()
    command = ["import-kaggle", str(tmp_path / "runs"), "--tasks", str(TASKS), "--out", str(dump)]
    imported = cli.invoke(app, [*command, "--json"])
    assert imported.exit_code == 0, imported.output
    report = json.loads(imported.output)
    (run,) = report["details"]
    assert (run["outcome"], run["reasons"]) == ("imported", ["usage_invalid"])
    assert "usage beyond the contract's bounds, turn " in run["detail"]
    assert ": cost_usd = 1000000000.0" in run["detail"]
    scored = cli.invoke(app, ["score", str(dump), "--out", str(out)])
    assert scored.exit_code == 0, scored.output
    assert "1 episode(s) scored with their usage refused" in scored.output
    episode = read_table(out, "episode_scores").row(0, named=True)
    assert episode["score"] == run["reported_score"] and episode["cost_usd"] is None
    assert episode["usage_refused"].startswith("usage_invalid: turn ")
