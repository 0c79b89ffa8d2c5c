"""How a run runs, decided once and passed down whole.

The command line reads its options (and their environment variables, through typer); a
Prefect flow takes them as parameters, left null for the worker's environment variables;
either way ``run_options`` makes one ``RunOptions``, and everything below reads that. Each
default is declared here, once: the command line's defaults, the flows' and the README's
come from these dataclasses.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final, Literal

from schemas.comparisons import DEFAULT_LEVEL

if TYPE_CHECKING:
    from transforms.aggregate import Bootstrap

Baseline = Literal["previous", "mean"]


@dataclass(frozen=True)
class RegressionOptions:
    """How a night is checked against its baseline (README "Comparisons and statistics")."""

    baseline: Baseline = "previous"  # the previous night, or the mean of baseline_nights
    baseline_nights: int = 7  # nights in the "mean" baseline
    margin: float | None = None  # the drop an alert needs; None: the row's own mde
    harness_error_tolerance: float = 0.02  # share of episodes; beyond: not comparable

    def __post_init__(self) -> None:
        if self.baseline not in ("previous", "mean"):
            raise ValueError(f"the baseline is 'previous' or 'mean', not {self.baseline!r}")
        if self.baseline_nights < 1:
            raise ValueError("the baseline needs at least one night")
        if self.margin is not None and self.margin < 0:
            raise ValueError("the regression margin cannot be negative")
        if not 0.0 <= self.harness_error_tolerance <= 1.0:
            raise ValueError("the harness error tolerance is a share, from 0 to 1")

    @property
    def span(self) -> int:
        """How many nights before a night its baseline reaches."""
        return 1 if self.baseline == "previous" else self.baseline_nights


@dataclass(frozen=True)
class RunOptions:
    """What a run does beyond scoring: what ends it failed, which nights it may take, the
    level of its intervals."""

    strict: bool = False  # any input not scored fails the run (exit 3)
    require_marker: bool = False  # score a night only once its _SUCCESS marker is there
    fail_on_regression: bool = False  # a regression alert fails the run (exit 6)
    input_changed: bool = False  # the dump moved: another root for the output is expected
    # The confidence level of every interval the run writes and prints (scores, ranks,
    # comparisons, regressions, rescore changes); recorded with the run.
    level: float = DEFAULT_LEVEL
    regression: RegressionOptions = field(default_factory=RegressionOptions)

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"the level is a share between 0 and 1, not {self.level}")

    @property
    def bootstrap(self) -> Bootstrap:
        """How the run states its uncertainty (the statistics' own defaults but the level)."""
        from transforms.aggregate import Bootstrap

        return Bootstrap(level=self.level)


# Each option's environment variable (the command line's options read the same ones).
ENVIRONMENT: Final[dict[str, str]] = {
    "strict": "COGSCORE_STRICT",
    "require_marker": "COGSCORE_REQUIRE_MARKER",
    "fail_on_regression": "COGSCORE_FAIL_ON_REGRESSION",
    "input_changed": "COGSCORE_INPUT_ROOT_CHANGED",
    "level": "COGSCORE_LEVEL",
    "baseline": "COGSCORE_BASELINE",
    "baseline_nights": "COGSCORE_BASELINE_NIGHTS",
    "margin": "COGSCORE_REGRESSION_MARGIN",
    "harness_error_tolerance": "COGSCORE_HARNESS_ERROR_TOLERANCE",
}


def _flag(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


_PARSE: Final[dict[str, Callable[[str], Any]]] = {
    "strict": _flag,
    "require_marker": _flag,
    "fail_on_regression": _flag,
    "input_changed": _flag,
    "level": float,
    "baseline": str,
    "baseline_nights": int,
    "margin": float,
    "harness_error_tolerance": float,
}


def run_options(**given: Any) -> RunOptions:
    """The options from what is given (values not None), else their environment variables
    (``ENVIRONMENT``), else the defaults; ``ValueError`` names a bad one.

    >>> run_options(strict=True, baseline_nights=3).regression.baseline_nights
    3
    """
    unknown = set(given) - set(_PARSE)
    if unknown:
        raise TypeError(f"no run option {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for name, parse in _PARSE.items():
        value = given.get(name)
        text = os.environ.get(ENVIRONMENT[name], "").strip()
        if value is None and text:
            try:
                value = parse(text)
            except ValueError:
                raise ValueError(f"{ENVIRONMENT[name]}={text!r} is not valid") from None
        if value is not None:
            values[name] = value
    regression = {f.name: values.pop(f.name) for f in fields(RegressionOptions) if f.name in values}
    return RunOptions(**values, regression=RegressionOptions(**regression))
