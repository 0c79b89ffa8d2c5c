"""The README against the code it documents: every command, option and environment variable
of the command line, the exit codes, the run record's keys, every table and column of the
registry (with its type), and the documents it sends readers to. A command, option, column or
code added, renamed or removed on either side fails here."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
import typer.main

from flows.cli import app
from flows.records import RECORD_KEYS
from flows.store.runs_table import RUNS, RUNS_SCHEMA
from schemas.exits import ExitCode
from schemas.tables import TABLES

CHECKOUT = Path(__file__).resolve().parents[1]
README = (CHECKOUT / "README.md").read_text()
SHARED = "scoring options"  # the usage line the scoring commands share


def section(heading: str) -> str:
    """The text under a heading (any level) up to the next heading of that level or above."""
    match = re.search(rf"^(#+) {re.escape(heading)}\n", README, re.MULTILINE)
    assert match, f"README has no heading {heading!r}"
    level = len(match.group(1))
    end = re.search(rf"^#{{1,{level}}} ", README[match.end() :], re.MULTILINE)
    return README[match.end() : match.end() + end.start() if end else len(README)]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first markdown table in ``text``, cells stripped (``\\|`` is a
    pipe inside a cell)."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return [
        [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip("|"))]
        for line in lines[2:]
    ]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# --- commands, options, environment variables -------------------------------------------------


def usage_entries() -> dict[str, str]:
    """The usage block of "Commands", by command ('' for the options before any command, and
    ``SHARED`` for the options the scoring commands share)."""
    block = section("Commands").split("```sh\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        if line.startswith("cogscore "):
            word = line.split()[1]
            name = "" if word.startswith("[") else word
            entries[name] = line
        elif line.strip().startswith(f"{SHARED}:"):
            name = SHARED
            entries[name] = line
        else:
            assert name is not None and line.startswith(" "), line
            entries[name] += "\n" + line
    return entries


def documented_options(text: str, entries: dict[str, str]) -> set[str]:
    """The options a usage entry names (with the shared ones where it says so, less those
    it excepts: "... but --x")."""
    if f"[{SHARED}" in text:
        text += "\n" + entries[SHARED]
    excepted = set(re.findall(r"but (--[a-z][a-z-]*)", text))
    return set(re.findall(r"--[a-z][a-z-]*", text)) - excepted


def options_of(command: typer.main.TyperCommand | typer.main.TyperGroup) -> set[str]:
    names: set[str] = set()
    for param in command.params:
        if param.param_type_name == "option":
            names |= {*param.opts, *getattr(param, "secondary_opts", [])}
    return names - {"--help"}


CLI = typer.main.get_command(app)
COMMANDS = CLI.commands  # type: ignore[attr-defined]


def test_the_usage_block_names_every_command_and_no_other() -> None:
    assert set(usage_entries()) - {"", SHARED} == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_commands_usage_names_its_options_exactly(name: str) -> None:
    entries = usage_entries()
    assert documented_options(entries[name], entries) == options_of(COMMANDS[name])


def test_the_options_before_the_command_are_the_apps() -> None:
    entries = usage_entries()
    assert documented_options(entries[""], entries) == options_of(CLI)


def test_every_environment_variable_of_an_option_is_in_the_options_table() -> None:
    table = section("Options and environment variables")
    wanted = {
        variable
        for command in [CLI, *COMMANDS.values()]
        for param in command.params
        for variable in ([param.envvar] if isinstance(param.envvar, str) else param.envvar or [])
    }
    assert wanted, "no environment variable found: the command line changed its shape"
    missing = {v for v in wanted if not re.search(rf"`{v}[`= ]", table)}
    assert not missing


def test_every_cogscore_variable_the_readme_names_is_read_by_the_code() -> None:
    from flows.options import RUN_OPTIONS

    source = "\n".join(p.read_text() for p in (CHECKOUT / "flows").rglob("*.py"))
    named = set(re.findall(r"COGSCORE_[A-Z_]+[A-Z]", README))
    assert named
    declared = {option.env for option in RUN_OPTIONS}  # COGSCORE_ and the name, made there
    unread = {v for v in named if f'"{v}"' not in source and f"'{v}'" not in source}
    assert unread - declared == set()


# --- exit codes and the run record --------------------------------------------------------------


def test_the_exit_codes_table_is_the_enum() -> None:
    codes = [int(row[0]) for row in table_rows(section("Exit codes"))]
    assert codes == sorted(code.value for code in ExitCode)


def test_the_run_record_table_names_every_key_once() -> None:
    keys = [key for row in table_rows(section("Run records")) for key in ticked(row[0])]
    assert sorted(keys) == sorted(RECORD_KEYS)


# --- the tables -----------------------------------------------------------------------------------

TYPE_NAMES = {
    pl.String(): "string",
    pl.Float64(): "float64",
    pl.Int64(): "int64",
    pl.Boolean(): "bool",
    pl.List(pl.String()): "list[string]",
    pl.Datetime("us", "UTC"): "timestamp",
}


def documented_tables() -> dict[str, list[tuple[str, str]]]:
    """Per table of "Output: the tables", its (column, type) pairs in the order written; a
    pattern column (``mean_<component>``) as a regular expression (``mean_.+``)."""
    text = section("Output: the tables")
    parts = re.split(r"^#### `([a-z_]+)`.*\n", text, flags=re.MULTILINE)
    tables: dict[str, list[tuple[str, str]]] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        columns: list[tuple[str, str]] = []
        for row in table_rows(body):
            names = [re.sub(r"<[a-z_]+>", ".+", n) for n in ticked(row[0])]
            types = [t.strip() for t in row[1].split(", ")]
            if len(types) == 1:
                types *= len(names)
            assert len(types) == len(names), (name, row)
            columns += list(zip(names, types, strict=True))
        tables[name] = columns
    return tables


def registry() -> dict[str, dict[str, pl.DataType]]:
    """Every table's columns and dtypes, as the code declares them (patterns included)."""
    tables = {
        name: {**table.dtypes, **{p: c.dtype for p, c in table.patterns.items()}}
        for name, table in TABLES.items()
    }
    return {**tables, RUNS: dict(RUNS_SCHEMA)}


def test_the_readme_documents_every_table_and_no_other() -> None:
    assert set(documented_tables()) == set(registry())


@pytest.mark.parametrize("table", sorted(registry()))
def test_a_tables_columns_and_types_are_the_registrys(table: str) -> None:
    written = documented_tables()[table]
    names = [name for name, _ in written]
    assert len(names) == len(set(names)), f"a column listed twice: {names}"
    expected = {name: TYPE_NAMES[dtype] for name, dtype in registry()[table].items()}
    assert dict(written) == expected


# --- the documents --------------------------------------------------------------------------------


def test_every_document_the_readme_names_exists_and_every_document_is_named() -> None:
    named = set(re.findall(r"`(?:docs/)?([a-z-]+\.md)`", README))
    docs = {p.name for p in (CHECKOUT / "docs").glob("*.md")}
    assert named - {"README.md"} == docs
