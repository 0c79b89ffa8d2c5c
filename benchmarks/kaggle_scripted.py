"""Every LearningBench task under the real harness with scripted models, imported and scored.

For each task file of TASKS and each policy, the task runs under kaggle-benchmarks (in a
forked process of its own, as a benchmark author's harness job would run it) with a scripted
model, and the harness writes its ``.run.json``:

- ``unreadable``: every reply is text that fits no schema;
- ``random``: every reply fits the schema the task asked for, with random values (text
  fields and free-text replies take random words of the prompt, so formats are sometimes
  hit);
- ``partly-right``: as ``random``, but where a probe run of the task showed the expected
  answers (its ``_log_trace`` items), every other item is answered right.

Then ``cogscore import-kaggle``'s code imports the runs (one worker process), and each
imported run's rows are scored (``tests.importers.kaggle_reference``, the tasks' formulas in
plain Python, and, where cogscore's scorer knows ``recorded``, ``flows.runs.score``) and
compared with the score the task returned (``==``). Prints the count per category and
policy, every exception with its reason, and the importer's speed (runs a second).

    python -m benchmarks.kaggle_scripted [--tasks DIR] [--out DIR] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
import typing
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

POLICIES = ("unreadable", "random", "partly-right")
TASKS = Path(__file__).parents[1] / ".." / "shared" / "learningbench" / "tasks"
_WORD = re.compile(r"[A-Za-z0-9_λρ⬡⬢⬣]+")


def random_value(annotation: Any, rng: random.Random, words: list[str]) -> Any:
    """A random value of a field's type (text from ``words``)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        options = [a for a in args if a is not type(None)]
        return random_value(options[0], rng, words) if options else None
    if origin in (list, tuple, set) or annotation in (list, tuple):
        inner = args[0] if args else str
        return [random_value(inner, rng, words) for _ in range(rng.randint(1, 6))]
    if origin is dict or annotation is dict:
        return {}
    if annotation is bool:
        return rng.random() < 0.5
    if annotation is int:
        return rng.randint(-2, 30)
    if annotation is float:
        return round(rng.uniform(-1, 30), 2)
    return rng.choice(words) if words else "x"


def _fields(schema: Any) -> dict[str, Any]:
    fields = getattr(schema, "model_fields", None)
    if fields is not None:
        return {name: f.annotation for name, f in fields.items()}
    return {}


class Policy:
    """What a scripted model answers: by policy, seeded per task."""

    def __init__(
        self,
        name: str,
        seed: int,
        expected: dict[str, str] | None = None,
        rounds: list[Any] | None = None,
    ) -> None:
        self.name, self.rng = name, random.Random(seed)
        self.expected = expected or {}
        # procedural: the answers of the phases in order, one call each (a round answered
        # right at its first attempt takes one call); None: a random answer
        self.rounds, self.calls = list(rounds or []), 0

    def reply(self, prompt: str, schema: Any) -> str:
        if self.name == "unreadable":
            return "I would rather not say."
        words = _WORD.findall(prompt) or ["x"]
        if schema is None:
            picked = self.rng.sample(words, min(len(words), self.rng.randint(1, 6)))
            return " ".join(picked)
        value = {n: random_value(t, self.rng, words) for n, t in _fields(schema).items()}
        self.calls += 1
        if self.name == "partly-right" and self.calls <= len(self.rounds):
            _fill(value, _fields(schema), self.rounds[self.calls - 1])
        if self.name == "partly-right":
            for position, (field, answer) in enumerate(sorted(self.expected.items())):
                if field in value and position % 2 == 0:
                    value[field] = _typed(answer, _fields(schema)[field])
        return json.dumps(value)


def _fill(value: dict[str, Any], fields: dict[str, Any], answer: Any) -> None:
    """Put a round's right answer in the field that can hold it (a list in the list field,
    a text in the one text field that is not an action or reasoning); say "submit"."""
    if answer is None:
        return
    texts = [n for n, t in fields.items() if t is str and n not in ("action", "reasoning")]
    lists = [n for n, t in fields.items() if t is list or typing.get_origin(t) is list]
    if isinstance(answer, list) and len(lists) == 1:
        value[lists[0]] = answer
    elif isinstance(answer, str) and len(texts) == 1:
        value[texts[0]] = answer
    else:
        return
    if "action" in fields:
        value["action"] = "submit"


def _typed(text: str, annotation: Any) -> Any:
    if annotation is str:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _expected_fields(items: list[dict[str, Any]]) -> dict[str, str]:
    """Schema field -> the right answer, where the items name the fields (associative) or
    follow them in order (``answer_1`` ...)."""
    out: dict[str, str] = {}
    for position, item in enumerate(items, start=1):
        if item.get("expected") is None:
            continue
        out[item["item_id"]] = item["expected"]
        out[f"answer_{position}"] = item["expected"]
    return out


def run_task(task_file: Path, category: str, policy: str, out: Path, seed: int) -> str | None:
    """Run one task under the harness in this (forked) process; the run file written."""
    from flows.importers import kaggle_replay
    from flows.importers.kaggle_capture import Capture, CaptureError, score_inputs
    from schemas.contract import Category

    kbench = kaggle_replay._harness()
    from kaggle_benchmarks.actors.llms import LLMChat, LLMResponse

    expected: dict[str, str] = {}
    rounds: list[Any] = []
    if policy == "partly-right":  # a probe: the task's items, from a random run
        kbench.client.directory = out.parent.parent / "probes"  # not among the runs
        task, module = kaggle_replay._load_task(kbench, task_file, _name(task_file))
        capture = Capture(module).install()
        probe = Policy("random", seed)
        run = task.run(llm=_llm(LLMChat, LLMResponse, kbench, probe, "scripted/probe"))
        capture.restore()
        log = capture.last("_log_trace")
        if log is not None and "phases" in log.args:
            # procedural: every practice round right at its first attempt (one call each),
            # then every other transfer test (the zero guard holds when rounds end wrong)
            phases = log.args["phases"]
            rounds = [
                p.get("correct") if str(p["label"]).startswith("Practice") or n % 2 else None
                for n, p in enumerate(phases)
            ]
        try:
            inputs = score_inputs(Category(category), capture, run.result, [])
            expected = _expected_fields(inputs.get("items") or [])
        except (CaptureError, KeyError, TypeError, ValueError):
            expected = {}
    kbench.client.directory = out
    task, _ = kaggle_replay._load_task(kbench, task_file, _name(task_file))
    scripted = Policy(policy, seed, expected, rounds)
    task.run(llm=_llm(LLMChat, LLMResponse, kbench, scripted, f"scripted/{policy}"))
    written = sorted(out.glob(f"{task.name}-*.run.json"))
    return str(written[-1]) if written else None


def _name(task_file: Path) -> str:
    from flows.importers.kaggle_files import registered_names

    return registered_names(task_file.read_text())[0]


def usage_meta(prompt: str, reply: str) -> dict[str, int]:
    """A call's usage as a model proxy reports it to the harness (its ``_meta``, which the
    harness writes as the request's ``metrics``): a token every four characters, priced at
    $1 and $4 per million tokens, a millisecond per character of the reply."""
    sent, received = len(prompt) // 4 + 1, len(reply) // 4 + 1
    return {
        "input_tokens": sent,
        "output_tokens": received,
        "input_tokens_cost_nanodollars": sent * 1_000,
        "output_tokens_cost_nanodollars": received * 4_000,
        "total_backend_latency_ms": 200 + len(reply),
    }


def _llm(base: Any, response: Any, kbench: Any, policy: Policy, slug: str) -> Any:
    class Scripted(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(name=slug, support_structured_outputs=True)
            self.model = slug

        def invoke(self, messages: Any, system: Any = None, **kwargs: Any) -> Any:
            prompt = str(messages[-1].content) if messages else ""
            reply = policy.reply(prompt, kwargs.get("response_format"))
            return response(content=reply, meta=usage_meta(prompt, reply))

    return Scripted()


def make_runs(
    tasks: Path, out: Path, only: str | None, seed: int, names: frozenset[str] | None = None
) -> dict[str, str]:
    """Every task (whose name holds ``only``, or is one of ``names``) x policy, each in a
    forked child; task name -> category."""
    from flows.importers.kaggle_files import index_tasks

    index = index_tasks(tasks)
    categories: dict[str, str] = {}
    for name, task_file in sorted(index.items()):
        if (only and only not in name) or task_file.category is None:
            continue
        if names is not None and name not in names:
            continue
        categories[name] = str(task_file.category)
        for number, policy in enumerate(POLICIES):
            folder = out / policy
            folder.mkdir(parents=True, exist_ok=True)
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 1)
                    os.dup2(null, 2)
                    run_task(task_file.path, str(task_file.category), policy, folder, seed + number)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            os.waitpid(pid, 0)
    return categories


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=TASKS)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", default=None, help="tasks whose name holds this")
    parser.add_argument("--seed", type=int, default=20261205)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="kaggle-scripted-"))
    from flows.importers import kaggle_replay

    kaggle_replay._harness()  # imported once, before the forks
    started = time.monotonic()
    categories = make_runs(args.tasks.resolve(), out / "runs", args.only, args.seed)
    made = time.monotonic() - started
    result = check(out, args.tasks.resolve(), categories)
    result["seconds_making_runs"] = round(made, 1)
    print(json.dumps(result, indent=1))
    return 0 if not result["exceptions"] else 1


def check(out: Path, tasks: Path, categories: dict[str, str]) -> dict[str, Any]:
    """Import the runs below ``out/runs`` and compare every score; the summary."""
    import polars as pl

    from flows.importers.kaggle import import_runs
    from flows.importers.kaggle_files import parse_run
    from flows.store.location import Location
    from schemas.kaggle import Outcome
    from tests.importers.kaggle_reference import reference_score

    runs = sorted((out / "runs").rglob("*.run.json"))
    started = time.monotonic()
    report = import_runs(
        Location.parse(str(out / "runs")), tasks, Location.parse(str(out / "dump"))
    )
    seconds = time.monotonic() - started
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    exceptions: list[dict[str, Any]] = []
    scorer = cogscore_scores(out)  # None until the scorer knows `recorded`
    if scorer is not None:
        for episode, (cogscore, theirs) in sorted(scorer.items()):
            if theirs is not None and cogscore != theirs:
                exceptions.append({"episode": episode, "cogscore": cogscore, "task": theirs})
    made = {parse_run(r.read_bytes()).task for r in runs}
    for name in sorted(set(categories) - made):
        exceptions.append({"task": name, "why": "the harness wrote no run file"})
    for run in report.runs:
        policy = run.run.split("/", 1)[0]
        category = categories.get(run.task or "", "?")
        key = f"{category}/{policy}"
        if run.outcome is not Outcome.IMPORTED:
            exceptions.append({"run": run.run, "why": run.reasons, "detail": run.detail})
            counts[key]["rejected"] += 1
            continue
        assert run.file is not None
        rows = pl.read_parquet(out / "dump" / run.file)
        errored = rows.filter(pl.col("status") == "error").height > 0
        ours = None if errored else reference_score(rows)
        if scorer is not None and not errored and rows["episode_id"][0] not in scorer:
            exceptions.append({"run": run.run, "why": "cogscore did not score it"})
        if run.reported_score is None:
            counts[key]["no score recorded (" + ",".join(run.reasons) + ")"] += 1
            if ours not in (None, 0.0):  # an unreadable reply: the model's failure, 0
                exceptions.append({"run": run.run, "why": "unscored run scores", "ours": ours})
        elif ours == run.reported_score:
            counts[key]["equal"] += 1
        else:
            counts[key]["differ"] += 1
            exceptions.append({"run": run.run, "ours": ours, "task": run.reported_score})
    scores: dict[str, list[float]] = defaultdict(list)
    for run in report.runs:
        if run.reported_score is not None:
            scores[f"{categories.get(run.task or '', '?')}/{run.run.split('/', 1)[0]}"].append(
                run.reported_score
            )
    return {
        "mean_task_score": {k: round(sum(v) / len(v), 3) for k, v in sorted(scores.items())},
        "nonzero_task_scores": {k: sum(1 for x in v if x) for k, v in sorted(scores.items())},
        "runs": len(runs),
        "cogscore_scored": None if scorer is None else len(scorer),
        "tasks": len(categories),
        "imported": report.imported,
        "import_seconds": round(seconds, 1),
        "runs_per_second": round(len(runs) / seconds, 2) if seconds else None,
        "counts": {k: dict(v) for k, v in sorted(counts.items())},
        "exceptions": exceptions,
        "out": str(out),
    }


def cogscore_scores(out: Path) -> dict[str, tuple[float, float | None]] | None:
    """cogscore's own score and the reported one of every episode of ``out/dump`` (scored
    with ``cogscore score``), or None while the scorer does not know the match kind
    ``recorded`` (contract 1.2, issue 28's scorer side)."""
    import subprocess

    import polars as pl

    from schemas import contract

    if not hasattr(contract, "Match") or "RECORDED" not in contract.Match.__members__:
        return None
    scored = out / "scored"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "score",
            str(out / "dump"),
            "--out",
            str(scored),
            "--engine",
            "local",
            "--quiet",
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 3):  # 3: rejected input, reported (the tables are written)
        raise SystemExit(f"score of {out / 'dump'} exited {done.returncode}:\n{done.stderr}")
    frame = pl.read_delta(str(scored / "episode_scores"))
    reported = "reported_score" if "reported_score" in frame.columns else None
    return {
        row["episode_id"]: (row["score"], row[reported] if reported else None)
        for row in frame.iter_rows(named=True)
    }


if __name__ == "__main__":
    sys.exit(main())
