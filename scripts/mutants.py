"""Mutation testing of the formula and statistics code (``make mutants``; not part of CI).

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

Each job is a worker process (``--serve``) that imports the heavy libraries once and forks
a child per mutant to run pytest in it (a fresh ``python -m pytest`` spends ~5 s importing
them). ``--json`` is rewritten after every mutant, so an interrupted run keeps its results.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
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
# Each module's doctests first where it has any (they run in well under a second).
_PIPELINE = "tests/transforms/test_pipeline.py"
_SCORE = (
    "tests/flows/test_score.py::test_rule_dump_gives_the_expected_rejects_and_the_reference_scores"
)
_GOLDEN = "tests/transforms/test_golden_scores.py"
_PINS = "tests/reference/test_pins.py"
_FORMULAS = "tests/schemas/test_formulas.py"
_STATS = "tests/transforms/test_stats.py"
_COMPARE = "tests/transforms/test_compare.py"
_AGGREGATES = "tests/flows/test_warehouse.py::test_aggregates_match_plain_python"
_LARGE_NIGHT = f"{_COMPARE}::test_a_large_night_digested_a_task_at_a_time_equals_one_pass"
_DEFAULTS = "tests/transforms/test_defaults.py"  # each statistics default the run's (fast)
# The calibration tests (tests/transforms/test_calibration.py: coverage and error rates by
# simulation, minutes each) are left out: test_compare covers every module they do.
TARGETS: dict[str, list[str]] = {
    # The statistics
    "transforms/stats.py": [
        "transforms/stats.py",
        _DEFAULTS,
        # test_stats' fast tests, test_compare (12 s), then Holm's property tests; the
        # Wilcoxon against scipy's at every n but n = 11-13 with ties (65 s: scipy's sign
        # flips loop in Python; the same code runs at n = 2-8).
        *(
            f"{_STATS}::test_{name}"
            for name in (
                "p_values_equal_scipy_to_1e_12",
                "quantiles_equal_scipy_to_1e_12",
                "mde_is_the_difference_detected_with_the_power_asked",
                "holm_and_bh_edge_cases_equal_multipletests_exactly",
                "nan_p_values_are_not_tests",
                "corrected_se_is_the_paired_and_the_welch_standard_error",
                "cluster_robust_variance_is_miller_clustered_variance_of_a_mean",
                "wilcoxon_signed_rank_reproduces_the_benchmarks_own_test",
                *(
                    f"wilcoxon_signed_rank_equals_scipy_row_by_row[{n}-{kind}]"
                    for n in (2, 3, 5, 8, 14, 18, 30, 50, 51, 80, 135)
                    for kind in ("continuous", "rounded", "fractions")
                ),
                *(
                    f"wilcoxon_signed_rank_equals_scipy_row_by_row[{n}-continuous]"
                    for n in (11, 12, 13)
                ),
                "clustered_se_equals_statsmodels_cluster_ols",
            )
        ),
        _COMPARE,
        f"{_STATS}::test_holm_and_bh_equal_multipletests_exactly",
        f"{_STATS}::test_polars_adjustment_equals_multipletests_per_group",
    ],
    "transforms/compare/__init__.py": [_DEFAULTS, _COMPARE],
    "transforms/compare/preparation.py": [_COMPARE],
    "transforms/compare/variance.py": [_DEFAULTS, _COMPARE],
    "transforms/compare/variance_within.py": [_DEFAULTS, _COMPARE],
    "transforms/compare/variance_tasks.py": [_DEFAULTS, _COMPARE],
    "transforms/compare/inference.py": [_DEFAULTS, _COMPARE],
    "transforms/compare/pairs.py": [_DEFAULTS, _COMPARE],
    # The modules of one or two functions: the tests of test_compare that call them (a
    # string names a parametrized case), then the flows' tests of their tables.
    "transforms/compare/scores.py": [
        _DEFAULTS,
        f"{_COMPARE}::calling=score_intervals,score_intervals_of,comparisons_and_rank_intervals",
        _AGGREGATES,
    ],
    "transforms/compare/ranks.py": [
        _DEFAULTS,
        f"{_COMPARE}::calling=rank_intervals,rank_intervals_of,significance_tiers,"
        "comparisons_and_rank_intervals",
        f"{_LARGE_NIGHT}[comparisons_and_rank_intervals]",
    ],
    "transforms/compare/regressions.py": [
        "transforms/compare/regressions.py",
        _DEFAULTS,
        f"{_COMPARE}::calling=regressions",
        f"{_LARGE_NIGHT}[regressions]",
    ],
    "transforms/compare/rescore.py": [
        _DEFAULTS,
        f"{_COMPARE}::calling=rescore_significance,rescore_rank_changes",
        f"{_LARGE_NIGHT}[rescore_significance]",
        f"{_LARGE_NIGHT}[rescore_rank_changes]",
    ],
    "transforms/aggregate.py": [
        "transforms/aggregate.py",
        _DEFAULTS,  # Bootstrap's defaults are every statistics function's
        "tests/transforms/test_aggregate.py",
        _AGGREGATES,
        _COMPARE,
    ],
    "transforms/diff.py": [
        "tests/transforms/test_diff.py",
        "tests/flows/test_runs.py::test_rescore_replaces_the_range_and_writes_what_moved",
        "tests/flows/test_comparisons.py::test_the_rescore_diff_says_how_sure_each_change_is",
    ],
    # The regression options' defaults (margin, baseline nights, harness error tolerance)
    "flows/options.py": ["tests/flows/test_options.py"],
    # The formulas
    "transforms/associative.py": [_GOLDEN, _SCORE, _PIPELINE],
    "transforms/concept.py": [_GOLDEN, "tests/transforms/test_concept.py", _SCORE, _PIPELINE],
    "transforms/observational.py": [_GOLDEN, _SCORE, _PIPELINE],
    "transforms/runtime_rl.py": [
        _GOLDEN,
        "tests/transforms/test_runtime_rl.py",
        _FORMULAS,
        _SCORE,
        _PIPELINE,
    ],
    "transforms/procedural.py": [
        _GOLDEN,
        "tests/transforms/test_procedural.py",
        _FORMULAS,
        _SCORE,
        _PIPELINE,
    ],
    "transforms/formulas.py": [_FORMULAS, _GOLDEN, _PIPELINE],
    "transforms/items.py": [
        _GOLDEN,
        "tests/transforms/test_matching_kinds.py",
        _SCORE,
        _PIPELINE,
    ],
    "transforms/matching.py": [
        "tests/transforms/test_matching_golden.py",
        "tests/transforms/test_matching.py",
        "tests/transforms/test_matching_kinds.py",
        _PIPELINE,
    ],
    "transforms/text.py": [
        "transforms/text.py",
        "tests/transforms/test_text.py",
        "tests/transforms/test_matching_golden.py",
        "tests/transforms/test_matching_kinds.py",
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
# A mutant runs the last tests that killed its module's mutants first (then all of them),
# but never the property tests of the whole pipeline: they fail only after tens of seconds
# (a minute under load), where a golden case or a module's own test fails in one.
KILLERS_FIRST = 3
NEVER_FIRST = (_PIPELINE,)
# What a scratch copy needs to import and test the code (docs: the contract the pins read).
COPIED = ("schemas", "transforms", "flows", "simulator", "examples", "tests", "sql", "docs")
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
    tests = [t for t in TARGETS[module] if (work / t.split("::")[0]).exists()]
    return [node for t in tests for node in _expand(work, t)]


def _expand(work: Path, test: str) -> list[str]:
    """``FILE::calling=a,b``: the test functions of FILE whose code names ``a`` or ``b``
    (in the order of the file); anything else as it is."""
    path, _, rest = test.partition("::")
    if not rest.startswith("calling="):
        return [test]
    names = set(rest.removeprefix("calling=").split(","))
    tree = ast.parse((work / path).read_text())
    return [
        f"{path}::{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and any(
            (isinstance(n, ast.Name) and n.id in names)
            or (isinstance(n, ast.Constant) and n.value in names)
            for n in ast.walk(node)
        )
    ]


PYTEST_ARGS = (
    "-x",
    "-q",
    "--keep-duplicates",  # the tests in the order given (pytest 9 regroups them otherwise)
    "-p",
    "no:cacheprovider",
    "--hypothesis-seed=20261202",
    "-o",
    "addopts=--strict-markers --doctest-modules",
)
# Imported once by each worker (``--serve``) before it forks a child per mutant: about 5 s
# of every pytest start on this machine (statsmodels alone 2 s). Never the project's own
# modules, which each child imports afresh from the worker's copy (the mutant in it).
PRELOADED = (
    "numpy",
    "pandas",
    "pyarrow",
    "polars",
    "scipy.special",
    "scipy.stats",
    "statsmodels.api",
    "statsmodels.stats.multitest",
    "deltalake",
    "duckdb",
    "hypothesis",
    "pytest",
)


def _outcome(returncode: int, stdout: str, seconds: float) -> tuple[str, str, float]:
    failed = next(
        (
            line.split(" ", 1)[1].split(" - ")[0]
            for line in stdout.splitlines()
            if line.startswith(("FAILED ", "ERROR "))
        ),
        "",
    )
    if returncode == 0:
        return "passed", "", seconds
    # 2 with an ERROR line: a test module the mutant keeps from importing (the unmutated
    # code passes them all): killed, by the collection error.
    if returncode == 1 or (returncode == 2 and failed):
        return "failed", failed, seconds
    return "error", failed or stdout[-300:], seconds


def _pytest(work: Path, tests: list[str], timeout: float) -> tuple[str, str, float]:
    """("passed" | "failed" | "timeout" | "error", first failing test, seconds): pytest
    in a fresh process."""
    shutil.rmtree(work / ".hypothesis", ignore_errors=True)  # no replay of older mutants
    command = [sys.executable, "-m", "pytest", *PYTEST_ARGS, *tests]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - start
    return _outcome(done.returncode, done.stdout, time.monotonic() - start)


def _no_shrinking() -> None:
    """Hypothesis without its shrink phase (nor the example database) in every child: a
    mutant is killed by the first failing example; shrinking it, which a property test of
    the whole pipeline spent minutes on, tells nothing more. Loaded before the children
    import the tests, so their own ``@settings`` inherit it."""
    from hypothesis import Phase, settings

    phases = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)
    settings.register_profile("mutants", phases=phases, database=None)
    settings.load_profile("mutants")


def serve() -> int:
    """``--serve``: a worker in its copy (the current directory). It imports ``PRELOADED``
    once, then for each request (a JSON line: tests, timeout, output file) forks a child
    that runs pytest on the copy as it is now, and answers with the child's exit code
    (-1: killed at the timeout). Nothing of the project is imported before the fork, so
    each child imports the mutated module afresh; nothing runs polars before it either
    (no thread pool to inherit)."""
    import importlib
    import signal

    sys.dont_write_bytecode = True
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    _no_shrinking()
    work = os.getcwd()
    sys.path[:] = [work, *(p for p in sys.path if p not in ("", work, str(ROOT / "scripts")))]
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: its own process group (a timeout kills all of it)
            code = 3
            try:
                os.setsid()
                fd = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                import pytest

                code = int(pytest.main([*PYTEST_ARGS, *request["tests"]]))
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        deadline = time.monotonic() + request["timeout"]
        code = -1
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.05)
        print(json.dumps({"code": code}), flush=True)
    return 0


class Worker:
    """One ``--serve`` process in its copy of the checkout."""

    def __init__(self, work: Path) -> None:
        self.work = work
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            cwd=work,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def pytest(self, tests: list[str], timeout: float) -> tuple[str, str, float]:
        assert self.process.stdin is not None and self.process.stdout is not None
        shutil.rmtree(self.work / ".hypothesis", ignore_errors=True)
        out = self.work / ".pytest-output"
        request = {"tests": tests, "timeout": timeout, "out": str(out)}
        start = time.monotonic()
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        code = json.loads(self.process.stdout.readline())["code"]
        seconds = time.monotonic() - start
        if code == -1:
            return "timeout", "", seconds
        return _outcome(code, out.read_text(errors="replace"), seconds)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


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
    parser.add_argument(
        "--resume", type=Path, help="keep the outcomes of this --json, test only the rest"
    )
    parser.add_argument(
        "--tests", action="append", help="run these tests for every mutant (not TARGETS')"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve()
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
    if args.tests:
        for module in modules:
            TARGETS[module] = args.tests
    decided: list[Mutant] = []
    if args.resume and args.resume.exists():
        earlier = {
            (m["module"], m["index"], m["change"]): m
            for m in json.loads(args.resume.read_text())
            if m["status"] != "pending"
        }
        for m in mutants:
            if (m.module, m.index, m.change) in earlier:
                known = earlier[(m.module, m.index, m.change)]
                m.status, m.seconds, m.killed_by = (
                    known["status"],
                    known["seconds"],
                    known["killed_by"],
                )
                decided.append(m)
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
        status, failed, seconds = _pytest(workers[0], union, timeout=7200)
        if status != "passed":
            print(f"the tests fail on the unmutated code: {failed}")
            return 2
        timeout = max(120.0, 2 * seconds)
        print(
            f"{len(mutants)} mutants; the unmutated code passes {len(union)} test file(s) in "
            f"{seconds:.0f} s; a mutant's tests time out after {timeout:.0f} s",
            flush=True,
        )

        free = [Worker(work) for work in workers]
        servers = list(free)
        started = time.monotonic()
        # Per module, the tests that killed its latest mutants: run first (a module's
        # mutants are often killed by the same test, and -x stops there).
        killers: dict[str, list[str]] = {}

        def run(mutant: Mutant) -> Mutant:
            worker = free.pop()
            target = worker.work / mutant.module
            original = target.read_text()
            try:
                target.write_text(mutated_source(source_root, mutant))
                recent = killers.get(mutant.module, [])
                first = [t for t in recent if not t.startswith(NEVER_FIRST)][:KILLERS_FIRST]
                tests = _tests_for(worker.work, mutant.module)
                status, failed, seconds = worker.pytest([*first, *tests], timeout)
                if status == "error" and first:  # not a verdict: without the killers
                    status, failed, seconds = worker.pytest(tests, timeout)
            finally:
                target.write_text(original)
                free.append(worker)
            if status == "failed" and "::" in failed:
                recent = killers.setdefault(mutant.module, [])
                recent[:] = [failed, *(t for t in recent if t != failed)]
            mutant.status = {"passed": "survived", "failed": "killed"}.get(status, status)
            mutant.killed_by, mutant.seconds = failed, seconds
            if mutant.status == "survived":
                print(f"  SURVIVED {mutant.module}:{mutant.line} {mutant.change}", flush=True)
            return mutant

        for m in decided:  # resumed: their killers first, as if just run
            if m.status == "killed" and "::" in m.killed_by:
                killers.setdefault(m.module, []).insert(0, m.killed_by)
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run, m) for m in mutants if m.status == "pending"]
            for done, _ in enumerate(as_completed(futures), 1):
                if done % 20 == 0:
                    print(f"{done}/{len(futures)} ({time.monotonic() - started:.0f} s)", flush=True)
                if args.json:  # saved as it goes: an interrupted run keeps what it measured
                    _save(args.json, mutants)
        for server in servers:
            server.close()
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
        _save(args.json, mutants)
    return 0


def _save(path: Path, mutants: list[Mutant]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(m) for m in mutants], indent=1) + "\n")
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
