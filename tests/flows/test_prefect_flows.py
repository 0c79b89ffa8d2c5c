"""The Prefect side: the deployment in prefect.yaml and the task cache key."""

from __future__ import annotations

import inspect
import shutil
from importlib import import_module
from pathlib import Path

import pytest
import yaml
from prefect import Flow

from flows import prefect_flows
from flows.io import DumpFile
from flows.prefect_flows import file_cache_key
from flows.score import SCORER_CODE, code_digest
from schemas.formulas import resolve

ROOT = Path(__file__).parents[2]


def test_the_nightly_deployment_runs_nightly_flow_at_two_utc() -> None:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    (deployment,) = config["deployments"]
    path, name = deployment["entrypoint"].split(":")
    flow = getattr(import_module(path.removesuffix(".py").replace("/", ".")), name)
    assert isinstance(flow, Flow) and flow.name == "cogscore-nightly"
    assert set(deployment["parameters"]) <= set(inspect.signature(flow.fn).parameters)
    assert deployment["schedules"] == [{"cron": "0 2 * * *", "timezone": "UTC"}]


def test_the_cache_key_follows_path_content_and_formulas() -> None:
    dump_file = DumpFile(Path("/x/part-0.parquet"), "part-0.parquet")
    base = {"dump_file": dump_file, "formulas": resolve([]), "digest": "a"}

    def key(**changes: object) -> str:
        return file_cache_key(None, {**base, **changes})  # type: ignore[arg-type]

    assert key() == key()
    assert key(digest="b") != key()
    assert key(formulas=resolve(["procedural_learning=v1"])) != key()
    assert key(dump_file=DumpFile(Path("/x/part-1.parquet"), "part-1.parquet")) != key()


def test_the_cache_key_follows_the_scoring_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("schemas", "transforms", "flows"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    assert code_digest(tmp_path) == SCORER_CODE  # the code as it is
    rules = tmp_path / "transforms" / "rules.py"
    rules.write_text(rules.read_text() + "\n# a change\n")
    changed = code_digest(tmp_path)
    assert changed != SCORER_CODE
    base = {"dump_file": DumpFile(Path("/x/p.parquet"), "p.parquet"), "digest": "a"}
    base["formulas"] = resolve([])
    before = file_cache_key(None, base)  # type: ignore[arg-type]
    monkeypatch.setattr(prefect_flows, "SCORER_CODE", changed)
    assert file_cache_key(None, base) != before  # type: ignore[arg-type]
