"""``flows.options``: a run's options, built once, from what is given, the environment, or
the defaults declared there."""

from __future__ import annotations

import pytest

from flows.options import ENVIRONMENT, RegressionOptions, RunOptions, run_options


def test_options_come_from_what_is_given_then_the_environment_then_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ENVIRONMENT.values():
        monkeypatch.delenv(variable, raising=False)
    assert run_options() == RunOptions()
    monkeypatch.setenv("COGSCORE_BASELINE", "mean")
    monkeypatch.setenv("COGSCORE_BASELINE_NIGHTS", "3")
    monkeypatch.setenv("COGSCORE_REGRESSION_MARGIN", "0.05")
    monkeypatch.setenv("COGSCORE_HARNESS_ERROR_TOLERANCE", "0.1")
    monkeypatch.setenv("COGSCORE_STRICT", "1")
    monkeypatch.setenv("COGSCORE_INPUT_ROOT_CHANGED", "true")
    from_environment = run_options()
    assert from_environment.regression == RegressionOptions("mean", 3, 0.05, 0.1)
    assert from_environment.strict and from_environment.input_changed
    assert not from_environment.require_marker and not from_environment.fail_on_regression
    monkeypatch.setenv("COGSCORE_LEVEL", "0.8")
    assert run_options().level == 0.8 and run_options().bootstrap.level == 0.8
    assert run_options(level=0.9).level == 0.9
    given = run_options(baseline="previous", baseline_nights=5, margin=0.0, strict=False)
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
    with pytest.raises(ValueError, match="the level is a share"):
        run_options(level=1.0)
