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


def test_the_leaderboard_names_every_model_in_full_within_100_columns() -> None:
    import polars as pl

    from flows.summary import leaderboard_table, render

    names = [
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.1-405B-Instruct-FP8",
    ]
    models = pl.DataFrame(
        {
            "model": names,
            "rank": [1, 2, 3],
            "score": [0.9, 0.8, 0.7],
            "ci_low": [0.85, 0.75, 0.65],
            "ci_high": [0.95, 0.85, 0.75],
            "categories_covered": [6, 6, 6],
        }
    )
    categories = pl.DataFrame(
        {
            "model": [m for m in names for _ in Category],
            "category": [str(c) for _ in names for c in Category],
            "score": [0.5] * (len(names) * len(Category)),
        }
    )
    lines = render(leaderboard_table(models, categories), width=100)
    assert max(len(line) for line in lines) <= 100
    start, end = lines[0].index("model"), lines[0].index("score") - 1
    text = "".join(line[start:end].strip() for line in lines[2:])  # the model column, joined
    assert text == "".join(names)  # each name whole, in rank order
    header = lines[0].split()
    assert header[-6:] == ["assoc.", "concept", "language", "observ.", "RL", "proced."]
