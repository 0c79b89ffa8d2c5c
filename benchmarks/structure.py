"""The structure of cogscore's product code, measured with Python's ``ast``: import cycles
among its modules (imports inside functions counted), the modules over a size, the functions
with many positional parameters, the imports of project modules made inside functions, and
the imports that go up the layers (``LAYERS``).

    python -m benchmarks.structure [--json]

Packages measured: flows, transforms, schemas, simulator (doctests and tests aside).
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "transforms", "schemas", "simulator")
MOST_LINES = 500
MOST_POSITIONAL = 6
MOST_INNER_IMPORTS = (
    42  # 40, and cogscore leaderboard's and export's (as every read command's, lazy)
)

# The layers, lowest first: a module imports its own layer and those below it. The store
# and the importers know nothing of scoring; the engine (flows' own modules: plan, run and
# score nights) hands its results to the faces and never prints them; the entry points (the
# command line, the Prefect flows) sit on top. The simulator writes dumps from the schemas.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("schemas", ("schemas",)),
    ("transforms", ("transforms",)),
    ("simulator", ("simulator",)),
    ("store", ("flows.store",)),
    ("importers", ("flows.importers",)),
    ("engine", ("flows",)),
    ("present", ("flows.present",)),
    ("entry", ("flows.cli", "flows.prefect_flows")),
)


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of the layer ``module`` belongs to (its longest prefix)."""
    best, length = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = index, len(prefix)
    return best


@dataclass
class Structure:
    """What ``measure`` found."""

    modules: dict[str, int] = field(default_factory=dict)  # module -> lines
    edges: dict[str, set[str]] = field(default_factory=dict)  # module -> modules it imports
    inner_imports: list[tuple[str, int, str]] = field(default_factory=list)  # (module, line, of)
    positional: list[tuple[str, str, int]] = field(default_factory=list)  # (module, def, n)

    def cycles(self) -> list[list[str]]:
        """The strongly connected components of the import graph with more than one module
        (each a cycle or several), sorted."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        found: list[list[str]] = []

        def visit(node: str) -> None:  # Tarjan's algorithm
            index[node] = low[node] = len(index)
            stack.append(node)
            on.add(node)
            for nxt in sorted(self.edges.get(node, ())):
                if nxt not in index:
                    visit(nxt)
                    low[node] = min(low[node], low[nxt])
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

        for node in sorted(self.modules):
            if node not in index:
                visit(node)
        return sorted(found)

    def upward(self) -> list[str]:
        """The imports that go up the layers: ``module -> target (layer -> layer)``."""
        found = []
        for module, targets in sorted(self.edges.items()):
            for target in sorted(targets):
                low, high = layer_of(module), layer_of(target)
                if high > low:
                    found.append(f"{module} -> {target} ({LAYERS[low][0]} -> {LAYERS[high][0]})")
        return found

    def summary(self) -> dict[str, object]:
        return {
            "modules": len(self.modules),
            "lines": sum(self.modules.values()),
            "cycles": self.cycles(),
            "over_lines": {m: n for m, n in sorted(self.modules.items()) if n > MOST_LINES},
            "over_positional": [
                f"{m}.{f} ({n})" for m, f, n in sorted(self.positional) if n > MOST_POSITIONAL
            ],
            # import statements (of project modules) inside functions
            "inner_imports": len({(m, line) for m, line, _ in self.inner_imports}),
            "upward_imports": self.upward(),
        }


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _files() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _resolve(name: str, modules: set[str]) -> str | None:
    """The project module an import names (a name inside a module counts as the module)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def measure() -> Structure:
    found = Structure()
    trees = {}
    for path in _files():
        text = path.read_text()
        name = _module_name(path)
        found.modules[name] = len(text.splitlines())
        trees[name] = ast.parse(text)
    known = set(found.modules)
    for name, tree in trees.items():
        targets: set[str] = set()
        inside: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                count = len(args.posonlyargs) + len(args.args)
                if args.args and args.args[0].arg in ("self", "cls"):
                    count -= 1
                found.positional.append((name, node.name, count))
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        inside.add(id(inner))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            if _in_type_checking(tree, node):
                continue
            for imported in names:
                target = _resolve(imported, known)
                if target is None or target == name:
                    continue
                targets.add(target)
                if id(node) in inside:
                    found.inner_imports.append((name, node.lineno, target))
        found.edges[name] = targets
    # A package's __init__ importing its own submodules is how packages are made, not a
    # cycle of design: a module importing its package (for a name it re-exports) is.
    return found


def _in_type_checking(tree: ast.Module, node: ast.stmt) -> bool:
    """Whether ``node`` sits under ``if TYPE_CHECKING:`` (never run: no cycle)."""
    for block in ast.walk(tree):
        if (
            isinstance(block, ast.If)
            and isinstance(block.test, ast.Name)
            and block.test.id == "TYPE_CHECKING"
            and any(node is inner for stmt in block.body for inner in ast.walk(stmt))
        ):
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    summary = measure().summary()
    if args.json:
        print(json.dumps(summary))
        return
    print(f"{summary['modules']} modules, {summary['lines']} lines")
    print(f"import cycles: {len(summary['cycles'])}")  # type: ignore[arg-type]
    for cycle in summary["cycles"]:  # type: ignore[attr-defined]
        print("  " + " <-> ".join(cycle))
    print(f"modules over {MOST_LINES} lines: {summary['over_lines']}")
    print(f"functions over {MOST_POSITIONAL} positional parameters: {summary['over_positional']}")
    print(f"imports of project modules inside functions: {summary['inner_imports']}")
    print(f"imports up the layers: {len(summary['upward_imports'])}")  # type: ignore[arg-type]
    for line in summary["upward_imports"]:  # type: ignore[attr-defined]
        print("  " + line)


if __name__ == "__main__":
    main()
