"""benchmarks/scale.py without running it: its byte accounting on a real Parquet file, its
cost model on runs made from a known model (it must find that model again), and the report
on those runs. Seconds, no cluster, no server."""

from __future__ import annotations

import doctest
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchmarks import scale

MIB = 2**20
TRUTH = {
    "rows_per_s_per_core": 1.2e6,
    "map_s_per_night": 0.1,
    "map_s_per_file": 0.03,
    "driver_s_per_night": 0.3,
    "driver_s_per_episode": 2e-6,
    "driver_mib_per_night": 20.0,
    "driver_bytes_per_episode": 900.0,
    "working_set_mib_per_file": 60.0,
    "write_s_per_night": 0.1,
    "write_s_per_file": 0.01,
}
SIZES = (25_000, 100_000, 1_500_000)


def test_doctests() -> None:
    assert doctest.testmod(scale).failed == 0


def dump_file(tmp_path: Path) -> Path:
    root = tmp_path / "dump"
    path = root / "dump_date=2026-12-01" / "part-0.parquet"
    path.parent.mkdir(parents=True)
    n = 50_000
    pl.DataFrame(
        {"a": range(n), "b": [f"text {i}" for i in range(n)], "c": [i * 0.5 for i in range(n)]}
    ).write_parquet(path, row_group_size=20_000)
    return root


def test_bytes_fetched_name_the_columns_read_and_whole_file_gets(tmp_path: Path) -> None:
    root = dump_file(tmp_path)
    path = next(root.rglob("*.parquet"))
    columns, footer = scale.column_ranges(path)
    assert set(columns) == {"a", "b", "c"} and len(columns["a"]) == 3
    key = "/bucket/dump/dump_date=2026-12-01/part-0.parquet"
    size = path.stat().st_size
    gets = [{"range": f"bytes=-{footer}"}] + [
        {"range": f"bytes={start}-{stop - 1}"}
        for name in ("a", "c")
        for start, stop in columns[name]
    ]
    requests = [{"method": "GET", "path": key, "query": "", "in": 0, "out": 0, **g} for g in gets]
    (row,) = scale.fetched_per_file(requests, "bucket", "dump", root)
    assert row["columns_fetched"] == ["a", "c"] and row["columns_not_fetched"] == ["b"]
    assert row["whole_file_gets"] == 0 and row["ranged_gets"] == len(gets)
    whole = {"method": "GET", "path": key, "query": "", "in": 0, "out": size, "range": None}
    (row,) = scale.fetched_per_file([*requests, whole], "bucket", "dump", root)
    assert row["whole_file_gets"] == 1 and row["distinct_bytes"] == size
    assert row["columns_not_fetched"] == []


def fake_run(config: str, episodes: int, round_: int) -> dict[str, Any]:
    """A run as ``drive`` reports it, its figures made by the model TRUTH (dask-1) or by
    anything plausible (the others)."""
    rows, files = 26 * episodes, math.ceil(episodes / 10_000)
    compute = rows / TRUTH["rows_per_s_per_core"]
    files_s = compute + TRUTH["map_s_per_night"] + TRUTH["map_s_per_file"] * files
    driver = TRUTH["driver_s_per_night"] + TRUTH["driver_s_per_episode"] * episodes
    rise = TRUTH["driver_mib_per_night"] + TRUTH["driver_bytes_per_episode"] * episodes / MIB
    if config != "dask-1":  # other configurations: off the model, a little
        files_s, rise = files_s * 0.7, rise * 1.1
    run: dict[str, Any] = {
        "config": config,
        "night": episodes,
        "round": round_,
        "episodes": episodes,
        "counts": {"rows_read": rows, "files_read": files},
        "net_s": files_s + driver + (0.0, 0.05, -0.05)[round_],
        "warm_s": 0.5,
        "timings": {
            "files_s": files_s,
            "assemble_s": driver / 4,
            "aggregate_s": driver / 4,
            "stage_s": TRUTH["write_s_per_night"] + TRUTH["write_s_per_file"] * files,
        },
        "driver_baseline_mib": 300.0,
        "driver_peak_mib": 300.0 + rise,
        "other_cores": 0.0,
    }
    if config.startswith("dask") or config == "s3-dask-2":
        run |= {
            "cluster_s": 1.0,
            "workers_warm_s": 1.0,
            "tasks": {"compute_sum_s": compute},
            "workers": [{"polars_threads": 1}],
            "file_working_set_mib": TRUTH["working_set_mib_per_file"],
        }
    else:
        run["files_at_once"] = 2
    return run


def test_the_model_finds_the_model_the_runs_were_made_with(tmp_path: Path) -> None:
    runs = [
        fake_run(config, size, r)
        for size in SIZES
        for r in range(3 if size < SIZES[-1] else 1)
        for config in ("local", "dask-1", "dask-2")
    ]
    # the median round is off by nothing: the model sees TRUTH exactly
    model = scale.fit_model(runs, SIZES)
    for name, value in TRUTH.items():
        assert model[name] == pytest.approx(value, rel=1e-6, abs=1e-9), name
    for run in (r for r in runs if r["config"] == "dask-1" and r["round"] == 0):
        predicted = scale.predict(
            model, run["counts"]["rows_read"], 1, False, run["counts"]["files_read"]
        )
        assert predicted["seconds"] == pytest.approx(run["net_s"])
        assert predicted["driver_memory_mib"] == pytest.approx(scale.driver_memory(run))
    billion = scale.predict(model, 1e9, 32)
    assert billion["episodes"] == pytest.approx(1e9 / 26)
    assert billion["files"] == math.ceil(1e9 / (26 * 10_000))
    assert scale.predict(model, 1e9, 1)["seconds"] > billion["seconds"]
    # a Dask worker stages its files' episode rows and hands each result back when done:
    # one file's working set, with 1 worker (3,847 files) as with 32
    for workers in (1, 32):
        held = scale.predict(model, 1e9, workers)["worker_memory_mib"]
        assert held == pytest.approx(TRUTH["working_set_mib_per_file"])
    with pytest.raises(ValueError, match="two nights"):
        scale.fit_model(runs, SIZES[:1])


def test_the_report_shows_every_section(tmp_path: Path) -> None:
    root = dump_file(tmp_path)
    path = next(root.rglob("*.parquet"))
    key = "/bucket/dump/dump_date=2026-12-01/part-0.parquet"
    requests = [
        {"method": "GET", "path": key, "query": "", "in": 0, "out": 10, "range": "bytes=-10"}
    ]
    runs = [fake_run(c, n, 0) for n in SIZES for c in ("local", "dask-1", "dask-2")]
    for config in ("s3-local", "s3-dask-2"):
        run = fake_run(config, SIZES[1], 0)
        run["s3_files"] = scale.fetched_per_file(requests, "bucket", "dump", root)
        run["s3_requests"] = scale.request_summary(requests, "/bucket/dump/")
        runs.append(run)
    runs[-1]["read_probe"] = {"row_count": ["bytes=-10"], "score_file": ["bytes=-10"]}
    runs[0]["staged_commit"] = {"commit_10_files_s": 0.01, "commit_1000_files_s": 0.05}
    results = {
        "machine": "test",
        "command": "python -m benchmarks.scale",
        "episodes": SIZES[1],
        "repeat": 1,
        "runs": runs,
        "model": scale.fit_model(runs, SIZES),
        "holdout": scale.fit_model(runs, SIZES[:2]),
    }
    text = scale.report(results)
    for heading in ("Scale-out", "Object storage", "Cost model", "Extrapolation", "Projection"):
        assert heading in text
    assert "no GET fetched a whole file" in text and path.name in text
    assert "1,000,000,000 rows" in text
