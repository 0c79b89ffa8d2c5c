"""``flows.options``: a run's options, built once, from what is given, the environment, or
the defaults declared there."""

from __future__ import annotations

import math
import re
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from flows.options import RUN_OPTIONS, RegressionOptions, RunOptions, run_options


def test_options_come_from_what_is_given_then_the_environment_then_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for option in RUN_OPTIONS:
        monkeypatch.delenv(option.env, raising=False)
    assert run_options() == RunOptions()
    monkeypatch.setenv("COGSCORE_BASELINE", "mean")
    monkeypatch.setenv("COGSCORE_BASELINE_NIGHTS", "3")
    monkeypatch.setenv("COGSCORE_REGRESSION_MARGIN", "0.05")
    monkeypatch.setenv("COGSCORE_HARNESS_ERROR_TOLERANCE", "0.1")
    monkeypatch.setenv("COGSCORE_STRICT", "1")
    monkeypatch.setenv("COGSCORE_INPUT_ROOT_CHANGED", "true")
    from_environment = run_options()
    assert from_environment.regression == RegressionOptions("mean", 3, 0.05, 0.1)
    assert from_environment.strict and from_environment.input_root_changed
    assert not from_environment.require_marker and not from_environment.fail_on_regression
    monkeypatch.setenv("COGSCORE_LEVEL", "0.8")
    assert run_options().level == 0.8 and run_options().bootstrap.level == 0.8
    assert run_options(level=0.9).level == 0.9
    given = run_options(baseline="previous", baseline_nights=5, regression_margin=0.0, strict=False)
    assert given.regression == RegressionOptions("previous", 5, 0.0, 0.1)
    assert not given.strict


def test_a_bad_option_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGSCORE_BASELINE_NIGHTS", "seven")
    with pytest.raises(ValueError, match="COGSCORE_BASELINE_NIGHTS='seven'"):
        run_options()
    monkeypatch.delenv("COGSCORE_BASELINE_NIGHTS")
    with pytest.raises(ValueError, match="'previous' or 'mean'"):
        run_options(baseline="last")
    with pytest.raises(ValueError, match="a share"):
        run_options(harness_error_tolerance=2.0)
    for level in (0.0, 1.0):  # a share strictly between 0 and 1
        with pytest.raises(ValueError, match="the level is a share"):
            run_options(level=level)
    assert run_options(level=0.995).bootstrap.level == 0.995


def test_every_default_is_the_documented_one() -> None:
    """The README's options table: the flags are opt-in, the baseline is the previous night
    (a span of one night), the mean baseline spans ``--baseline-nights`` (default 7), the
    harness error tolerance is 0.02 and the margin is the row's own mde (None)."""
    options = RunOptions()
    assert not (options.strict or options.require_marker or options.fail_on_regression)
    assert not options.input_root_changed
    regression = options.regression
    documented = _documented_defaults()
    assert regression.baseline == "previous" and regression.span == 1
    assert regression.baseline_nights == int(documented["--baseline-nights"])
    assert regression.harness_error_tolerance == float(documented["--harness-error-tolerance"])
    assert regression.regression_margin is None
    for k in (1, 2, regression.baseline_nights):
        assert RegressionOptions(baseline="mean", baseline_nights=k).span == k
        assert RegressionOptions(baseline="previous", baseline_nights=k).span == 1


def _documented_defaults() -> dict[str, str]:
    """``--option …`` -> its "(default X)" in the README's options table."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    found = {}
    for line in readme.splitlines():
        option = re.match(r"\| `(--[a-z-]+)[ `]", line)
        default = re.search(r"\(default ([0-9.]+)\)", line)
        if option and default:
            found[option.group(1)] = default.group(1)
    return found


def test_the_bounds_of_each_regression_option_are_inclusive() -> None:
    """One night is a baseline, a margin of 0 and tolerances of 0 and 1 are valid; the
    values just beyond them are not."""
    assert RegressionOptions(baseline="mean", baseline_nights=1).span == 1
    with pytest.raises(ValueError, match="at least one night"):
        RegressionOptions(baseline_nights=0)
    assert RegressionOptions(regression_margin=0.0).regression_margin == 0.0
    with pytest.raises(ValueError, match="negative"):
        RegressionOptions(regression_margin=-math.ulp(0.0))
    for share in (0.0, 1.0):
        assert RegressionOptions(harness_error_tolerance=share).harness_error_tolerance == share
    for share in (-math.ulp(0.0), math.nextafter(1.0, 2.0)):
        with pytest.raises(ValueError, match="a share"):
            RegressionOptions(harness_error_tolerance=share)


def test_options_are_built_once_and_never_changed() -> None:
    options = run_options()
    with pytest.raises(FrozenInstanceError):
        options.strict = True  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        options.regression.regression_margin = 0.1  # type: ignore[misc]


def test_each_option_is_declared_once_for_the_command_line_the_flows_and_the_readme() -> None:
    """``RUN_OPTIONS`` is where each run option is: the scoring commands' options, the
    Prefect flows' parameters and the README's options table are made from it, or say it."""
    import inspect

    import typer.main

    from flows import prefect_flows
    from flows.cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for command in ("score", "nightly", "rescore"):
        params = {p.name: p for p in commands[command].params}
        flow = getattr(prefect_flows, f"{command}_flow")
        parameters = inspect.signature(flow.fn).parameters
        for option in RUN_OPTIONS:
            takes = command in option.commands
            assert (option.name in params) == takes, (command, option.name)
            assert (option.name in parameters) == takes, (command, option.name)
            if not takes:
                continue
            param = params[option.name]
            assert param.opts == [option.flag] and param.envvar == option.env
            assert param.default == option.default and param.help == option.help
            assert parameters[option.name].default is None  # the worker's variable, then that
    for option in RUN_OPTIONS:
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{option.flag}`"))
        assert f"`{option.env}`" in row, option.name


def test_a_replays_limits_are_declared_once_for_import_kaggle_and_the_nightly() -> None:
    """The limits of a harness run's replay (``flows.importers.kaggle_limits``) are the same
    options in ``import-kaggle`` and in ``nightly --runs`` (one declaration,
    ``flows.cli.options``): bounds, default, help and environment variable; only the
    timeout's flag differs (the nightly's names the task)."""
    import typer.main

    from flows.cli import app
    from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    importer = {p.name: p for p in commands["import-kaggle"].params}
    nightly = {p.name: p for p in commands["nightly"].params}
    pairs = [
        (importer["timeout"], nightly["task_timeout"], DEFAULT_TIMEOUT),
        (importer["task_memory"], nightly["task_memory"], DEFAULT_TASK_MEMORY),
    ]
    for alone, in_nightly, default in pairs:
        assert alone.default == in_nightly.default == default
        assert (alone.help, alone.envvar) == (in_nightly.help, in_nightly.envvar)
        assert alone.min == in_nightly.min is not None
    assert importer["timeout"].opts == ["--timeout"]
    assert nightly["task_timeout"].opts == ["--task-timeout"]
