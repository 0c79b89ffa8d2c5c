"""The Prefect side: the deployment in prefect.yaml and the task cache key."""

from __future__ import annotations

import inspect
import shutil
from importlib import import_module
from pathlib import Path

import pytest
import yaml
from prefect import Flow
from prefect.utilities.callables import parameter_schema
from prefect.utilities.schema_tools import validate

from flows import prefect_flows
from flows.prefect_flows import batch_cache_key
from flows.score import SCORER_CODE, code_digest
from flows.store.dumps import DumpFile
from transforms.registry import resolve

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    ("name", "hour"), [("nightly", 2), ("harness-nightly", 3)], ids=["nightly", "harness"]
)
def test_the_nightly_deployments_run_nightly_flow(name: str, hour: int) -> None:
    """The nightly (at 02:00 UTC) and the harness benchmark's nightly, which imports the
    runs that arrived first (at 03:00 UTC): both the nightly flow, every parameter one of
    its own."""
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    (deployment,) = [d for d in config["deployments"] if d["name"] == name]
    path, entry = deployment["entrypoint"].split(":")
    flow = getattr(import_module(path.removesuffix(".py").replace("/", ".")), entry)
    assert isinstance(flow, Flow) and flow.name == "cogscore-nightly"
    assert set(deployment["parameters"]) <= set(inspect.signature(flow.fn).parameters)
    # What the server checks on `prefect deploy` (enforce_parameter_schema): the templated
    # paths are strings there, and a null option is the worker's environment variable.
    schema = parameter_schema(flow.fn).model_dump_for_openapi()
    assert validate(deployment["parameters"], schema, raise_on_error=True) == []
    assert deployment["schedules"] == [{"cron": f"0 {hour} * * *", "timezone": "UTC"}]
    if name == "harness-nightly":
        assert {"runs_to_import", "tasks", "report"} <= set(deployment["parameters"])


def key_of(batch: list[DumpFile], digests: dict[str, str], formulas: object = None) -> str:
    parameters = {"batch": batch, "digests": digests, "formulas": formulas or resolve([])}
    return batch_cache_key(None, parameters)  # type: ignore[arg-type]


def test_the_cache_key_follows_path_content_and_formulas() -> None:
    dump_file = DumpFile(Path("/x/part-0.parquet"), "part-0.parquet")
    other = DumpFile(Path("/x/part-1.parquet"), "part-1.parquet")
    key = key_of([dump_file], {"part-0.parquet": "a"})
    assert key == key_of([dump_file], {"part-0.parquet": "a"})
    assert key_of([dump_file], {"part-0.parquet": "b"}) != key
    assert key_of([dump_file], {"part-0.parquet": "a"}, resolve(["procedural_learning=v1"])) != key
    assert key_of([other], {"part-1.parquet": "a"}) != key


def test_a_batch_s_cache_key_follows_each_of_its_files() -> None:
    """Small files scored together (``flows.score.batches``) share a result: any file's
    content or place changes the key, and every file needs a digest."""
    files = [DumpFile(Path(f"/x/part-{i}.parquet"), f"part-{i}.parquet") for i in range(3)]
    digests = {f.relative: f"d{i}" for i, f in enumerate(files)}
    key = key_of(files, digests)
    assert key_of(files, {**digests, "part-2.parquet": "changed"}) != key
    assert key_of(files[:2], digests) != key
    moved = DumpFile(Path("/x/b/part-2.parquet"), "b/part-2.parquet")
    assert key_of([*files[:2], moved], {**digests, "b/part-2.parquet": "d2"}) != key
    with pytest.raises(ValueError, match=r"no content digest for part-1\.parquet"):
        key_of(files, {**digests, "part-1.parquet": ""})


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
    batch = [DumpFile(Path("/x/p.parquet"), "p.parquet")]
    before = key_of(batch, {"p.parquet": "a"})
    monkeypatch.setattr(prefect_flows, "SCORER_CODE", changed)
    assert key_of(batch, {"p.parquet": "a"}) != before
