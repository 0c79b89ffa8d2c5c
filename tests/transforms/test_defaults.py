"""One default per concept: every statistics function called without options uses the
run's (``transforms.aggregate.Bootstrap``: the intervals' level, the resamples, the seed,
the sampling design), and every test the same alpha and power as ``model_comparisons``
(whose values the scipy tests of ``test_compare`` pin). A library call and a run never
disagree on what "the default" is."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from flows.comparisons import NightWatch
from transforms import stats
from transforms.aggregate import Bootstrap
from transforms.compare import (
    comparisons_and_rank_intervals,
    model_comparisons,
    rank_intervals,
    regressions,
    rescore_rank_changes,
    rescore_significance,
    score_intervals,
)
from transforms.compare.inference import inference
from transforms.compare.pairs import comparisons_of
from transforms.compare.ranks import rank_intervals_of
from transforms.compare.scores import score_intervals_of

FUNCTIONS: list[Callable[..., Any]] = [
    comparisons_and_rank_intervals,
    model_comparisons,
    comparisons_of,
    score_intervals,
    score_intervals_of,
    rank_intervals,
    rank_intervals_of,
    regressions,
    rescore_significance,
    rescore_rank_changes,
    inference,
    stats.mde_factor,
    stats.minimum_detectable_effect,
]


def _defaults(function: Callable[..., Any]) -> dict[str, Any]:
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
def test_a_statistics_default_is_the_runs(function: Callable[..., Any]) -> None:
    run = Bootstrap()
    reference = _defaults(model_comparisons)
    defaults = _defaults(function)
    expected = {
        "level": run.level,
        "resamples": run.resamples,
        "seed": run.seed,
        "design": run.design,
        "alpha": reference["alpha"],
        "power": reference["power"],
    }
    checked = {k: v for k, v in defaults.items() if k in expected}
    assert checked, function  # each function here has at least one of them
    for name, value in checked.items():
        if name == "level" and value is None:  # None: the level is 1 - alpha
            continue
        assert value == expected[name], (function.__name__, name)


def test_the_nightly_regressions_default_level_is_the_runs() -> None:
    assert NightWatch(output=None).level == Bootstrap().level
