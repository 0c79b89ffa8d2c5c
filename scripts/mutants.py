"""Mutation testing of the formula code (``make mutants``; not part of CI).

Each mutant is one small change to one target module (a comparison, an arithmetic or
boolean operator, a numeric constant moved by one step, ``min``/``max`` and other
look-alike methods swapped, a negation dropped, a default of ``schemas/params.py``
changed). It is written into a scratch copy of the checkout (never into the checkout
itself), and only the tests that cover that module run against it (``-x``: the first
failure kills it). A mutant that no test kills survives and is listed.

    python scripts/mutants.py [--rev HEAD | --source DIR] [--jobs 2] [--sample N]
                              [--only transforms/concept.py] [--json FILE] [--list]

By default the working tree is mutated (in copies); ``--rev`` takes a commit instead (its
``git archive``), ``--source`` another tree. Test files named below that the tree lacks are
skipped, so the same script measures "before" and "after" a change to the tests.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Fast, deterministic tests first (-x stops at the first failure); the property tests last.
_PIPELINE = "tests/transforms/test_pipeline.py"
_SCORE = (
    "tests/flows/test_score.py::test_rule_dump_gives_the_expected_rejects_and_the_reference_scores"
)
_GOLDEN = "tests/transforms/test_golden_scores.py"
_PINS = "tests/reference/test_pins.py"
TARGETS: dict[str, list[str]] = {
    "transforms/associative.py": [_GOLDEN, _SCORE, _PIPELINE],
    "transforms/concept.py": [_GOLDEN, "tests/transforms/test_concept.py", _SCORE, _PIPELINE],
    "transforms/observational.py": [_GOLDEN, _SCORE, _PIPELINE],
    "transforms/runtime_rl.py": [_GOLDEN, _SCORE, _PIPELINE],
    "transforms/procedural.py": [
        _GOLDEN,
        "tests/transforms/test_procedural.py",
        _SCORE,
        _PIPELINE,
    ],
    "transforms/matching.py": [
        "tests/transforms/test_matching_golden.py",
        "tests/transforms/test_matching.py",
        _PIPELINE,
    ],
    "transforms/rounding.py": [
        "transforms/rounding.py",  # its doctests
        "tests/transforms/test_rounding.py",
        _GOLDEN,
        _PIPELINE,
    ],
    "schemas/params.py": [
        _PINS,
        "tests/reference/test_reference.py",
        _GOLDEN,
        "tests/transforms/test_rules.py",
        "tests/transforms/test_concept.py",
        "tests/transforms/test_procedural.py",
        _SCORE,
        _PIPELINE,
    ],
}
# What a scratch copy needs to import and test the code.
COPIED = ("schemas", "transforms", "flows", "simulator", "examples", "tests", "sql")
COPIED_FILES = ("pyproject.toml", "README.md")

SWAPPED_CALLS = {
    "max": "min",
    "min": "max",
    "max_horizontal": "min_horizontal",
    "min_horizontal": "max_horizontal",
    "max_by": "min_by",
    "min_by": "max_by",
    "first": "last",
    "last": "first",
    "floor": "ceil",
    "is_null": "is_not_null",
    "is_not_null": "is_null",
    "lstrip": "rstrip",
    "rstrip": "lstrip",
    "startswith": "endswith",
    "fullmatch": "match",
    "search": "match",
    "to_lowercase": "to_uppercase",
}
COMPARISONS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
OPERATORS: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div,),
    ast.Div: (ast.Mult,),
    ast.FloorDiv: (ast.Div,),
    ast.Mod: (ast.FloorDiv,),
    ast.Pow: (ast.Mult,),
    ast.BitAnd: (ast.BitOr,),
    ast.BitOr: (ast.BitAnd,),
}
STRINGS = {"max": "last", "last": "max"}  # schemas/params.py: the progress modes


@dataclass
class Mutant:
    module: str
    index: int  # the index-th mutation point of the module (stable for one source)
    line: int
    change: str
    status: str = "pending"  # killed, survived, timeout, error
    seconds: float = 0.0
    killed_by: str = ""


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _annotation_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, ast.AnnAssign | ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            annotations.append(node.returns)
        for a in annotations:
            out |= {id(n) for n in ast.walk(a)}
    return out


def _float_variants(value: float) -> list[float]:
    if value == 0.0:
        return [1.0]
    if abs(value) < 1e-3:  # an epsilon: ten times larger
        return [value * 10]
    if abs(value) >= 100:
        return [value * 2]
    step = 0.01 if abs(value) < 10 else 1.0
    return [round(value + step, 10), round(value - step, 10)]


def mutation_points(tree: ast.Module, module: str) -> Iterator[tuple[ast.AST, str, object]]:
    """(node, description, replacement) for every mutation of the tree, in a fixed order."""
    skip = _docstring_nodes(tree) | _annotation_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                for new in COMPARISONS.get(type(op), ()):
                    yield node, f"{type(op).__name__} -> {new.__name__}", ("cmp", i, new)
        elif isinstance(node, ast.BinOp):
            for new in OPERATORS.get(type(node.op), ()):
                yield node, f"{type(node.op).__name__} -> {new.__name__}", ("binop", new)
        elif isinstance(node, ast.BoolOp):
            new = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield node, f"{type(node.op).__name__} -> {new.__name__}", ("boolop", new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.Invert | ast.USub):
            yield node, f"drop {type(node.op).__name__}", ("unary",)
        elif isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                yield node, f"{value} -> {not value}", ("const", not value)
            elif isinstance(value, int):
                for new_int in (value + 1, value - 1):
                    yield node, f"{value} -> {new_int}", ("const", new_int)
            elif isinstance(value, float):
                for new_float in _float_variants(value):
                    yield node, f"{value!r} -> {new_float!r}", ("const", new_float)
            elif isinstance(value, str) and module == "schemas/params.py" and value in STRINGS:
                yield node, f"{value!r} -> {STRINGS[value]!r}", ("const", STRINGS[value])
        elif isinstance(node, ast.Attribute) and node.attr in SWAPPED_CALLS:
            yield node, f".{node.attr} -> .{SWAPPED_CALLS[node.attr]}", ("attr",)
        elif isinstance(node, ast.Name) and node.id in ("min", "max"):
            yield node, f"{node.id} -> {SWAPPED_CALLS[node.id]}", ("name",)


class _Apply(ast.NodeTransformer):
    def __init__(self, target_index: int, module: str) -> None:
        self.target_index = target_index
        self.module = module
        self.found: tuple[ast.AST, object] | None = None

    def locate(self, tree: ast.Module) -> None:
        for i, (node, _, how) in enumerate(mutation_points(tree, self.module)):
            if i == self.target_index:
                self.found = (node, how)
                return
        raise IndexError(self.target_index)

    def visit(self, node: ast.AST) -> ast.AST:
        assert self.found is not None
        target, how = self.found
        if node is target:
            return self._mutate(node, how)
        return self.generic_visit(node)

    @staticmethod
    def _mutate(node: ast.AST, how: object) -> ast.AST:
        assert isinstance(how, tuple)
        kind = how[0]
        if kind == "cmp":
            assert isinstance(node, ast.Compare)
            node.ops[how[1]] = how[2]()
        elif kind == "binop":
            assert isinstance(node, ast.BinOp)
            node.op = how[1]()
        elif kind == "boolop":
            assert isinstance(node, ast.BoolOp)
            node.op = how[1]()
        elif kind == "unary":
            assert isinstance(node, ast.UnaryOp)
            return node.operand
        elif kind == "const":
            assert isinstance(node, ast.Constant)
            node.value = how[1]
        elif kind == "attr":
            assert isinstance(node, ast.Attribute)
            node.attr = SWAPPED_CALLS[node.attr]
        elif kind == "name":
            assert isinstance(node, ast.Name)
            node.id = SWAPPED_CALLS[node.id]
        return node


def mutants_of(source_root: Path, module: str) -> list[Mutant]:
    tree = ast.parse((source_root / module).read_text())
    return [
        Mutant(module, i, getattr(node, "lineno", 0), change)
        for i, (node, change, _) in enumerate(mutation_points(tree, module))
    ]


def mutated_source(source_root: Path, mutant: Mutant) -> str:
    tree = ast.parse((source_root / mutant.module).read_text())
    apply = _Apply(mutant.index, mutant.module)
    apply.locate(tree)
    mutated = ast.fix_missing_locations(apply.visit(copy.copy(tree)))
    return ast.unparse(mutated)


def _scratch_copy(source_root: Path, where: Path) -> Path:
    for name in COPIED:
        if (source_root / name).exists():
            shutil.copytree(
                source_root / name,
                where / name,
                ignore=shutil.ignore_patterns("__pycache__", ".hypothesis", "data"),
            )
    for name in COPIED_FILES:
        if (source_root / name).exists():
            shutil.copy2(source_root / name, where / name)
    return where


def _tests_for(work: Path, module: str) -> list[str]:
    return [t for t in TARGETS[module] if (work / t.split("::")[0]).exists()]


def _pytest(work: Path, tests: list[str], timeout: float) -> tuple[str, str, float]:
    """("passed" | "failed" | "timeout" | "error", first failing test, seconds)."""
    shutil.rmtree(work / ".hypothesis", ignore_errors=True)  # no replay of older mutants
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "--hypothesis-seed=20261202",
        "-o",
        "addopts=--strict-markers --doctest-modules",
        *tests,
    ]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - start
    seconds = time.monotonic() - start
    failed = next(
        (
            line.split(" ", 1)[1].split(" - ")[0]
            for line in done.stdout.splitlines()
            if line.startswith(("FAILED ", "ERROR "))
        ),
        "",
    )
    if done.returncode == 0:
        return "passed", "", seconds
    if done.returncode == 1:
        return "failed", failed, seconds
    return "error", failed or done.stdout[-300:], seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--source", type=Path, default=ROOT, help="the tree to mutate and test")
    parser.add_argument("--rev", help="mutate and test this commit (git archive) instead")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", action="append", help="target module(s) (default: all)")
    parser.add_argument("--sample", type=int, help="test a random sample of N mutants (seed 0)")
    parser.add_argument("--json", type=Path, help="write every mutant's outcome here")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument(
        "--survivors-of", type=Path, help="test only the mutants that survived in this --json"
    )
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="cogscore-mutants-"))
    source_root: Path = args.source.resolve()
    if args.rev:
        source_root = scratch / "source"
        source_root.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.rev], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(source_root)], input=archive, check=True)
    modules = args.only or list(TARGETS)
    mutants = [m for module in modules for m in mutants_of(source_root, module)]
    if args.survivors_of:
        survived = {
            (m["module"], m["index"], m["change"])
            for m in json.loads(args.survivors_of.read_text())
            if m["status"] == "survived"
        }
        mutants = [m for m in mutants if (m.module, m.index, m.change) in survived]
        modules = sorted({m.module for m in mutants})
    if args.sample and args.sample < len(mutants):
        mutants = sorted(
            random.Random(0).sample(mutants, args.sample), key=lambda m: (m.module, m.index)
        )
    if args.list:
        for m in mutants:
            print(f"{m.module}:{m.line}  {m.change}")
        print(f"{len(mutants)} mutants")
        shutil.rmtree(scratch, ignore_errors=True)
        return 0

    try:
        if (ROOT.parent / "shared").exists():  # the spec beside the checkout, as in CI
            (scratch / "shared").symlink_to(ROOT.parent / "shared")
        workers = [_scratch_copy(source_root, scratch / f"w{i}") for i in range(args.jobs)]
        probe = subprocess.run(
            [sys.executable, "-c", "import transforms; print(transforms.__file__)"],
            cwd=workers[0],
            capture_output=True,
            text=True,
        )
        assert probe.stdout.startswith(str(workers[0])), f"imports escape the copy: {probe}"
        # The unmutated code must pass its tests (one run of them all); that run's time sets
        # the timeout of a mutant's run (a mutant that loops is killed by it).
        union = sorted({t for module in modules for t in _tests_for(workers[0], module)})
        status, failed, seconds = _pytest(workers[0], union, timeout=3600)
        if status != "passed":
            print(f"the tests fail on the unmutated code: {failed}")
            return 2
        timeout = max(120.0, 2 * seconds)
        print(
            f"{len(mutants)} mutants; the unmutated code passes {len(union)} test file(s) in "
            f"{seconds:.0f} s; a mutant's tests time out after {timeout:.0f} s",
            flush=True,
        )

        free = list(workers)
        started = time.monotonic()

        def run(mutant: Mutant) -> Mutant:
            work = free.pop()
            target = work / mutant.module
            original = target.read_text()
            try:
                target.write_text(mutated_source(source_root, mutant))
                tests = _tests_for(work, mutant.module)
                status, failed, seconds = _pytest(work, tests, timeout)
            finally:
                target.write_text(original)
                free.append(work)
            mutant.status = {"passed": "survived", "failed": "killed"}.get(status, status)
            mutant.killed_by, mutant.seconds = failed, seconds
            if mutant.status == "survived":
                print(f"  SURVIVED {mutant.module}:{mutant.line} {mutant.change}", flush=True)
            return mutant

        with ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run, m) for m in mutants]
            for done, _ in enumerate(as_completed(futures), 1):
                if done % 20 == 0:
                    print(f"{done}/{len(mutants)} ({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n{'module':32} mutants killed survived  score")
    for module in modules:
        mine = [m for m in mutants if m.module == module]
        killed = sum(m.status != "survived" for m in mine)
        score = killed / len(mine) if mine else 1.0
        print(f"{module:32} {len(mine):7} {killed:6} {len(mine) - killed:8}  {score:.0%}")
    killed = sum(m.status != "survived" for m in mutants)
    print(f"{'all':32} {len(mutants):7} {killed:6} {len(mutants) - killed:8}  ", end="")
    print(f"{killed / len(mutants):.0%}  ({time.monotonic() - started:.0f} s)")
    survivors = [m for m in mutants if m.status == "survived"]
    if survivors:
        print("\nsurvivors:")
        for m in survivors:
            print(f"  {m.module}:{m.line}  {m.change}")
    if args.json:
        args.json.write_text(json.dumps([asdict(m) for m in mutants], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
