"""Formula versions: their names, weights and descriptions, per category and per task.

Each version is registered where it is defined (``@formula`` in ``transforms/<category>.py``,
see ``transforms.formulas``); the tables below are generated from those registrations and
restate nothing. Rescoring history selects versions by name.

A *formula set* maps keys to versions: a key is a category (``procedural_learning``) or a
task of one (``procedural_learning/boolean_circuit_proc_learning``); a task's own entry wins
over its category's. ``--formula`` takes ``KEY=VERSION``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from schemas.contract import Category

# A category's name, or "category/task".
FormulaSet = dict[str, str]
TASK_SEPARATOR: Final = "/"
ALL_TASKS: Final = "*"  # CATEGORY/*=VERSION: the category and every task of it


@dataclass(frozen=True)
class FormulaVersion:
    """One registered version: its weights (named constants of its module) and a one-line
    description written with them (``str.format`` over the weights)."""

    category: Category
    version: str
    text: str
    weights: Mapping[str, float] = field(default_factory=dict)
    default: bool = False  # the category's default version
    tasks: tuple[str, ...] = ()  # tasks whose default this version is (their own formula)

    @property
    def description(self) -> str:
        return self.text.format(**self.weights)


# Filled in place by ``register`` (the registrations run when ``transforms.registry`` is
# imported, at the bottom of this module), in category order.
REGISTRY: Final[dict[tuple[Category, str], FormulaVersion]] = {}
VERSIONS: Final[dict[Category, tuple[str, ...]]] = {}
DEFAULTS: Final[dict[Category, str]] = {}
# Tasks with a default of their own: "category/task" -> version.
TASK_DEFAULTS: Final[dict[str, str]] = {}
DESCRIPTIONS: Final[dict[tuple[Category, str], str]] = {}
WEIGHTS: Final[dict[tuple[Category, str], Mapping[str, float]]] = {}


def register(spec: FormulaVersion) -> None:
    """Add one version to the tables (each (category, version) once; one default each)."""
    key = (spec.category, spec.version)
    if key in REGISTRY:
        raise ValueError(f"{spec.category}={spec.version} is registered twice")
    if spec.default and spec.category in DEFAULTS:
        raise ValueError(f"{spec.category} has two default formulas")
    entries = {**REGISTRY, key: spec}
    order = {c: i for i, c in enumerate(Category)}
    REGISTRY.clear()
    REGISTRY.update(sorted(entries.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])))
    VERSIONS.clear()
    for category, version in REGISTRY:
        VERSIONS[category] = (*VERSIONS.get(category, ()), version)
    if spec.default:
        DEFAULTS[spec.category] = spec.version
    for task in spec.tasks:
        TASK_DEFAULTS[task_key(spec.category, task)] = spec.version
    DESCRIPTIONS[key] = spec.description
    WEIGHTS[key] = dict(spec.weights)


def listing() -> list[tuple[str, bool, str]]:
    """(``KEY=VERSION``, is a default, description) of every version, then of every task
    with a default of its own: what ``cogscore formulas`` prints and the README's table."""
    rows = [(f"{c}={v}", spec.default, spec.description) for (c, v), spec in REGISTRY.items()]
    for key, version in ordered(TASK_DEFAULTS).items():
        category, _ = split_key(key)
        rows.append(
            (f"{key}={version}", True, f"this task's own: {DESCRIPTIONS[category, version]}")
        )
    return rows


def task_key(category: str, task: str) -> str:
    """The formula-set key of one task.

    >>> task_key("procedural_learning", "nim")
    'procedural_learning/nim'
    """
    return f"{category}{TASK_SEPARATOR}{task}"


def resolve(selected: Iterable[str] | Mapping[str, str] = ()) -> FormulaSet:
    """The formula set: defaults (categories' and tasks' own), then the versions named in
    ``selected`` (``KEY=VERSION`` strings or a mapping).

    >>> resolve(["procedural_learning=v1"])["procedural_learning"]
    'v1'
    """
    return overlay({**_str_keys(DEFAULTS), **TASK_DEFAULTS}, selected)


def overlay(base: Mapping[str, str], selected: Iterable[str] | Mapping[str, str]) -> FormulaSet:
    """``base`` with the versions named in ``selected``; ``CATEGORY/*=VERSION`` gives every
    task of the category that version (their own entries are dropped).

    >>> overlay({"procedural_learning": "v3", "procedural_learning/nim": "v4"},
    ...         ["procedural_learning/*=v2"])
    {'procedural_learning': 'v2'}
    """
    out = dict(base)
    for key, version in chosen(selected).items():
        category, task = split_key(key)
        if task == ALL_TASKS:
            tasks_of = f"{category}{TASK_SEPARATOR}"
            out = {k: v for k, v in out.items() if not k.startswith(tasks_of)}
            out[str(category)] = version
        else:
            out[key] = version
    return ordered(out)


def chosen(selected: Iterable[str] | Mapping[str, str] = ()) -> FormulaSet:
    """Only the versions named in ``selected`` (checked), by key.

    >>> chosen(["procedural_learning=v1", "procedural_learning/nim=v2"])
    {'procedural_learning': 'v1', 'procedural_learning/nim': 'v2'}
    """
    pairs = (
        selected.items() if isinstance(selected, Mapping) else (_split(text) for text in selected)
    )
    picked: FormulaSet = {}
    for name, version in pairs:
        category, task = split_key(name)
        if version not in VERSIONS[category]:
            raise ValueError(
                f"{category} has no formula {version!r}; one of {', '.join(VERSIONS[category])}"
            )
        picked[name if task is None else task_key(category, task)] = version
    return picked


def split_key(name: str) -> tuple[Category, str | None]:
    """(category, task or None) of a formula-set key; an unknown category is refused.

    >>> split_key("procedural_learning/nim")
    (<Category.PROCEDURAL_LEARNING: 'procedural_learning'>, 'nim')
    """
    head, sep, task = str(name).strip().partition(TASK_SEPARATOR)
    try:
        category = Category(head.strip())
    except ValueError:
        raise ValueError(
            f"unknown category {head!r} in --formula; one of {', '.join(Category)}"
        ) from None
    if sep and not task.strip():
        raise ValueError(f"--formula {name!r} names no task after {TASK_SEPARATOR!r}")
    return category, (task.strip() if sep else None)


def version_of(formulas: Mapping[str, str], category: str, task: str | None = None) -> str:
    """The version ``formulas`` gives a task (its own entry, else its category's).

    >>> version_of({"procedural_learning": "v3", "procedural_learning/nim": "v4"},
    ...            "procedural_learning", "nim")
    'v4'
    """
    if task is not None:
        own = formulas.get(task_key(category, task))
        if own is not None:
            return own
    return formulas[category]


def task_versions(formulas: Mapping[str, str], category: str) -> dict[str, str]:
    """The tasks of ``category`` that ``formulas`` gives a version of their own.

    >>> task_versions({"runtime_rl": "v1", "procedural_learning/nim": "v4"},
    ...               "procedural_learning")
    {'nim': 'v4'}
    """
    prefix = f"{category}{TASK_SEPARATOR}"
    return {k[len(prefix) :]: v for k, v in formulas.items() if str(k).startswith(prefix)}


def describe(versions: Mapping[Category, str] | Mapping[str, str]) -> str:
    """``KEY=VERSION`` pairs in category order (each category's tasks after it, by name),
    as the tables write them.

    >>> describe({"procedural_learning/nim": "v4", Category.RUNTIME_RL: "v1",
    ...           Category.PROCEDURAL_LEARNING: "v3"})
    'runtime_rl=v1,procedural_learning=v3,procedural_learning/nim=v4'
    """
    return ",".join(f"{k}={v}" for k, v in ordered(versions).items())


def ordered(versions: Mapping[Category, str] | Mapping[str, str]) -> FormulaSet:
    """``versions`` with string keys in category order, each category's tasks after it."""
    named = {str(k): v for k, v in versions.items()}
    out: FormulaSet = {}
    for category in Category:
        if category in named:
            out[str(category)] = named[category]
        prefix = f"{category}{TASK_SEPARATOR}"
        out.update(sorted((k, v) for k, v in named.items() if k.startswith(prefix)))
    return out


def _str_keys(versions: Mapping[Category, str]) -> FormulaSet:
    return {str(c): v for c, v in versions.items()}


def _split(text: str) -> tuple[str, str]:
    name, sep, version = text.partition("=")
    if not sep:
        raise ValueError(f"--formula takes CATEGORY=VERSION or CATEGORY/TASK=VERSION, got {text!r}")
    return name.strip(), version.strip()


# The registrations: each category module registers its versions where it defines them.
import transforms.registry  # noqa: E402, F401  (after every name above: the modules use them)
