"""One model, one task, whatever the source (pure: no I/O).

A harness names a model by its slug (``openai/gpt-5.4-2026-03-05``,
``anthropic/claude-haiku-4-5@20251001``), a published table by its own slug
(``gpt-5.4-2026-03-05``, ``claude-haiku-4-5-20251001``) and a display name (``GPT-5.4``).
``Names`` resolves every name a source gives a model to the one name cogscore shows, from

- the names file (``--names``: ``alias,model`` rows, any alias to the model it is),
- the dump's names (every alias an import resolved before, kept in the dump: the same alias
  always resolves the same way, night after night), and
- the rule: a vendor-prefixed slug is the same model as the name after its last ``/`` with
  ``@`` as ``-`` (``model_by_rule``), unless another vendor's model has that name too.

A name that matches nothing is a new model: named by the names file, else by the display
name its source gives, else by the rule. A names file never renames a model the dump holds
(the dump's rows and every table scored from them name it): that alias is refused, saying
so. Tasks need no file: a task's name is its task file's (the published table's slug, with
``-`` as ``_``: ``task_by_rule``; the harness's registered name where one file registers
several).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, overload

import polars as pl

from schemas.exits import ExitCode
from schemas.names import NAMES_HEADER

# The separator of words in a published task slug, and in the name cogscore shows.
_SLUG, _TASK = "-", "_"


@overload
def model_by_rule(name: str) -> str: ...
@overload
def model_by_rule(name: pl.Expr) -> pl.Expr: ...
def model_by_rule(name: str | pl.Expr) -> str | pl.Expr:
    """A model's name with its vendor prefix off and ``@`` as ``-`` (how LearningBench's
    table writes the harness's slugs); of a name, or of an expression's names.

    >>> model_by_rule("anthropic/claude-haiku-4-5@20251001"), model_by_rule("GPT-5.4")
    ('claude-haiku-4-5-20251001', 'GPT-5.4')
    """
    if isinstance(name, pl.Expr):
        return name.str.replace(r"^.*/", "").str.replace_all("@", "-", literal=True)
    return name.rsplit("/", 1)[-1].replace("@", "-")


def vendor(name: str) -> str | None:
    """A slug's vendor prefix (None: it has none).

    >>> vendor("openai/gpt-6"), vendor("gpt-6")
    ('openai', None)
    """
    return name.rsplit("/", 1)[0] if "/" in name else None


@overload
def task_by_rule(name: str) -> str: ...
@overload
def task_by_rule(name: pl.Expr) -> pl.Expr: ...
def task_by_rule(name: str | pl.Expr) -> str | pl.Expr:
    """A task's name as cogscore shows it: the published slug (a Kaggle task's, its task
    file's name) with ``-`` as ``_``, which is also the name a LearningBench task file
    registers with the harness where the two agree (122 of its 135 files); of a name, or of
    an expression's names.

    >>> task_by_rule("codon-table-translation-obs-learning"), task_by_rule("10000")
    ('codon_table_translation_obs_learning', '10000')
    """
    if isinstance(name, pl.Expr):
        return name.str.replace_all(_SLUG, _TASK, literal=True)
    return name.replace(_SLUG, _TASK)


@overload
def task_slug(task: str) -> str: ...
@overload
def task_slug(task: pl.Expr) -> pl.Expr: ...
def task_slug(task: str | pl.Expr) -> str | pl.Expr:
    """The published form of a task's name that no source spelt (``task_by_rule``'s
    inverse, exact where the slug has no ``_``, as every LearningBench slug).

    >>> task_slug("codon_table_translation_obs_learning")
    'codon-table-translation-obs-learning'
    """
    if isinstance(task, pl.Expr):
        return task.str.replace_all(_TASK, _SLUG, literal=True)
    return task.replace(_TASK, _SLUG)


class NameError_(ValueError):
    """A name that cannot be resolved, or a names file that cannot be used as it is (a
    usage error: exit 2, before any work, where the file is at fault)."""

    code: ClassVar[ExitCode] = ExitCode.USAGE


@dataclass
class Names:
    """The resolution of models' names for one import: ``dump`` (alias -> model, as the
    dump's names file keeps them) and ``given`` (the names file's rows); what the import
    added to the dump's names (``added``) and the models it found new (``new``: model ->
    the names it was made from, in order)."""

    dump: dict[str, str] = field(default_factory=dict)
    given: dict[str, str] = field(default_factory=dict)
    added: dict[str, str] = field(default_factory=dict)
    new: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clash = {a: (self.given[a], self.dump[a]) for a in self.given if a in self.dump}
        for alias, (wanted, held) in sorted(clash.items()):
            if self.dump.get(wanted, wanted) != held:
                raise NameError_(
                    f"the names file maps {alias!r} to {wanted!r}, but the dump's names call "
                    f"that model {held!r}: a names file does not rename a model the dump holds "
                    "(its rows and every table scored from them name it so); drop that row, "
                    "or import its sources with this names file into a new dump and score "
                    "that into a new output"
                )

    def resolve(
        self, aliases: Sequence[str], display: str | None = None, *, keep: bool = True
    ) -> str:
        """The model ``aliases`` (the names one source gives it: a slug, a display name)
        name; a new one where none is known (recorded in ``new``). Every alias is then the
        model's in the dump's names (``added``; ``keep=False``: nothing is recorded, for a
        source that may not be imported). ``NameError_`` where they name two models, or the
        rule's name is another vendor's model."""
        names = [a for a in dict.fromkeys([*aliases, *([display] if display else [])]) if a]
        if not names:
            raise NameError_("no name")
        found = {alias: model for alias in names if (model := self._known(alias)) is not None}
        models = set(found.values())
        if len(models) > 1:
            said = ", ".join(f"{a!r} is {m!r}" for a, m in found.items())
            raise NameError_(f"its names are two models: {said} (a names file says which)")
        model = next(iter(models)) if models else display or model_by_rule(names[0])
        if not keep:
            return model
        if not models:
            self.new[model] = names
        for alias in (*names, model):
            if self.dump.get(alias) != model:
                self.dump[alias] = self.added[alias] = model
        return model

    def _known(self, alias: str) -> str | None:
        """The model ``alias`` names: the names file's (through the dump's names, where it
        names a model by one of its aliases), the dump's, else by the rule."""
        if alias in self.given:
            wanted = self.given[alias]
            return self.dump.get(wanted, wanted)
        if alias in self.dump:
            return self.dump[alias]
        return self._by_rule(alias, self.given) or self._by_rule(alias, self.dump)

    def _by_rule(self, alias: str, names: Mapping[str, str]) -> str | None:
        """The model of ``names`` whose alias has ``alias``'s name by the rule (None: none);
        ``NameError_`` where that model is another vendor's (``openai/x`` is not
        ``google/x``) or the rule's name is several models'."""
        ruled, own = model_by_rule(alias), vendor(alias)
        hits = {k: m for k, m in names.items() if model_by_rule(k) == ruled}
        models = {self.dump.get(m, m) for m in hits.values()}
        if not models:
            return None
        other = sorted(k for k in hits if own and vendor(k) not in (None, own))
        if len(models) > 1 or other:
            said = ", ".join(sorted(set(other) or set(hits)))
            raise NameError_(
                f"{alias!r} is by the rule {ruled!r}, which names another model ({said}): a "
                "names file says which model it is"
            )
        return models.pop()


def read_names(text: str, where: str) -> dict[str, str]:
    """A names file's rows (CSV, header ``alias,model``): alias -> model. ``NameError_``
    for another header, an empty value, or an alias given two models.

    >>> read_names("alias,model\\ngoogle/gemma-4-26b-a4b,Gemma 4 26B A4B\\n", "f")
    {'google/gemma-4-26b-a4b': 'Gemma 4 26B A4B'}
    """
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    if not rows or [c.strip() for c in rows[0]] != list(NAMES_HEADER):
        head = ",".join(rows[0]) if rows else "nothing"
        raise NameError_(f"{where}: the header must be {','.join(NAMES_HEADER)} (it is {head})")
    out: dict[str, str] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != 2 or not row[0].strip() or not row[1].strip():
            raise NameError_(f"{where}, line {number}: an alias and a model, both given ({row})")
        alias, model = row[0].strip(), row[1].strip()
        if out.get(alias, model) != model:
            raise NameError_(
                f"{where}, line {number}: {alias!r} is {out[alias]!r} above, {model!r} here"
            )
        out[alias] = model
    return out


def names_text(names: Mapping[str, str]) -> str:
    """Names as a names file's text (by alias: the same names, the same bytes).

    >>> names_text({"b": "B", "a,1": "A"})
    'alias,model\\n"a,1",A\\nb,B\\n'
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(NAMES_HEADER)
    writer.writerows(sorted(names.items()))
    return buffer.getvalue()
