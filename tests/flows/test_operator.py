"""What the operator sees on the command line: version, formulas, help that renders."""

from __future__ import annotations

from importlib import metadata

from typer.testing import CliRunner

from flows.cli import app
from schemas.contract import Category
from schemas.formulas import DEFAULTS, VERSIONS


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_version_is_the_installed_package_version() -> None:
    assert run("--version").strip() == f"cogscore {metadata.version('cogscore')}"


def test_formulas_lists_every_version_with_a_description_and_the_newest() -> None:
    lines = run("formulas").splitlines()
    expected = [(c, v) for c in Category for v in VERSIONS[c]]
    assert len(lines) == len(expected)
    for line, (category, version) in zip(lines, expected, strict=True):
        head, _, description = line.partition(": ")
        newest = " (newest)" if DEFAULTS[category] == version else ""
        assert head == f"{category}={version}{newest}" and len(description) > 10


def words(text: str) -> str:
    """Help text without its box drawing and line breaks."""
    return " ".join(text.replace("│", " ").split())


def test_help_shows_defaults_in_words_not_swallowed_as_markup() -> None:
    assert "YYYY-MM-DD (default: the latest night)." in words(run("report", "--help"))
    assert "YYYY-MM-DD (default: today, UTC)." in words(run("simulate", "--help"))
