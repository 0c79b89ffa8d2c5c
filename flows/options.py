"""How a run runs, decided once and passed down whole.

The command line reads its options (and their environment variables, through typer); a
Prefect flow takes them as parameters, left null for the worker's environment variables;
either way ``run_options`` makes one ``RunOptions``, and everything below reads that. Each
option is declared here, once (``RUN_OPTIONS``: name, type, default, help, environment
variable): the command line's options, the Prefect flows' parameters and these dataclasses'
defaults come from it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from schemas.comparisons import DEFAULT_LEVEL
from schemas.hypotheses import HypothesesError, Hypothesis, parse_hypotheses

if TYPE_CHECKING:
    from transforms.aggregate import Bootstrap

Baseline = Literal["previous", "mean"]


@dataclass(frozen=True)
class Option:
    """One run option, declared once: its name (the keyword of ``run_options``, a Prefect
    flow's parameter, and, dashed, the command line's flag), its type and default, what it
    does, the commands that take it, and the bounds the command line checks. Its
    environment variable is ``COGSCORE_`` and its name in capitals."""

    name: str
    kind: type
    default: Any
    help: str
    commands: tuple[str, ...] = ("score", "nightly", "rescore")
    low: float | None = None
    high: float | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return "COGSCORE_" + self.name.upper()

    def parse(self, text: str) -> Any:
        """The option's value from its environment variable's text (``ValueError``)."""
        if self.kind is bool:
            return text.strip().lower() in ("1", "true", "yes", "on")
        return self.kind(text)


# Every run option, in the order the command line lists them (README "Options and
# environment variables" documents each; tests/flows/test_options.py holds the command
# line, the Prefect flows and the README to this).
RUN_OPTIONS: Final = (
    Option(
        "strict",
        bool,
        False,
        "Exit 3 when any file or episode was not scored (Prefect: the flow run ends Failed); "
        "the tables are written all the same.",
    ),
    Option(
        "require_marker",
        bool,
        False,
        "Score a night only once its dump_date folder holds _SUCCESS (the harness's "
        "'complete' marker); nights without it are reported as waiting.",
    ),
    Option(
        "input_root_changed",
        bool,
        False,
        "The dump moved: score from this DUMP_ROOT into an output scored from another "
        "(refused otherwise, so that a second dump never replaces the first's nights).",
    ),
    Option(
        "baseline",
        str,
        "previous",
        "Regressions: compare each night with the previous night ('previous') or with the "
        "mean of the last --baseline-nights nights ('mean').",
    ),
    Option("baseline_nights", int, 7, "Regressions: nights in the 'mean' baseline.", low=1),
    Option(
        "regression_margin",
        float,
        None,
        "Regressions: the drop an alert needs beyond significance (default: the row's "
        "minimum detectable effect).",
        low=0.0,
    ),
    Option(
        "harness_error_tolerance",
        float,
        0.02,
        "Regressions: a model whose share of harness errors moved by more than this from its "
        "baseline is reported 'not_comparable', never as a regression.",
        low=0.0,
        high=1.0,
    ),
    Option(
        "level",
        float,
        DEFAULT_LEVEL,
        "The confidence level of every interval the run writes and prints (scores, ranks, "
        "comparisons, regressions, rescore changes); recorded with the run.",
    ),
    Option(
        "fail_on_regression",
        bool,
        False,
        "Exit 6 (Prefect: the flow run ends Failed) when a regression alert fires on a night "
        "this run scored; the tables are written all the same.",
        commands=("score", "nightly"),
    ),
    Option(
        "hypotheses",
        str,
        None,
        "A TOML file of planned hypotheses ([[hypothesis]]: id, claim, test wilcoxon or "
        "mann-whitney, scope, a, b; docs/comparisons.md): each tested on every standing the "
        "run makes, Benjamini-Hochberg over the file (table hypotheses).",
    ),
)
OPTIONS: Final = {option.name: option for option in RUN_OPTIONS}


def _refuse(name: str, why: str) -> None:
    """A value of option ``name`` that cannot be: ``ValueError`` naming its flag."""
    raise ValueError(f"{OPTIONS[name].flag}: {why}")


# Each option's default, as the dataclasses below take them (declared in RUN_OPTIONS).
DEFAULTS: Final = {option.name: option.default for option in RUN_OPTIONS}


@dataclass(frozen=True)
class RegressionOptions:
    """How a night is checked against its baseline (README "Comparisons and statistics")."""

    baseline: Baseline = DEFAULTS["baseline"]  # the previous night, or the mean of …
    baseline_nights: int = DEFAULTS["baseline_nights"]  # nights in the "mean" baseline
    regression_margin: float | None = DEFAULTS["regression_margin"]  # None: the row's mde
    harness_error_tolerance: float = DEFAULTS["harness_error_tolerance"]  # beyond: not comparable

    def __post_init__(self) -> None:
        if self.baseline not in ("previous", "mean"):
            _refuse("baseline", f"the baseline is 'previous' or 'mean', not {self.baseline!r}")
        if self.baseline_nights < 1:
            _refuse("baseline_nights", "the baseline needs at least one night")
        if self.regression_margin is not None and self.regression_margin < 0:
            _refuse("regression_margin", "the regression margin cannot be negative")
        if not 0.0 <= self.harness_error_tolerance <= 1.0:
            _refuse("harness_error_tolerance", "the harness error tolerance is a share, 0 to 1")

    @property
    def span(self) -> int:
        """How many nights before a night its baseline reaches."""
        return 1 if self.baseline == "previous" else self.baseline_nights


@dataclass(frozen=True)
class RunOptions:
    """What a run does beyond scoring (``RUN_OPTIONS``): what ends it failed, which nights
    it may take, the level of its intervals, how regressions are checked."""

    strict: bool = DEFAULTS["strict"]
    require_marker: bool = DEFAULTS["require_marker"]
    fail_on_regression: bool = DEFAULTS["fail_on_regression"]
    input_root_changed: bool = DEFAULTS["input_root_changed"]
    level: float = DEFAULTS["level"]
    regression: RegressionOptions = field(default_factory=RegressionOptions)
    hypotheses: str | None = DEFAULTS["hypotheses"]  # the file (absolute once read)
    # What the file declares, read once, here: a bad file is refused before any work.
    planned: tuple[Hypothesis, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            _refuse("level", f"the level is a share between 0 and 1, not {self.level}")
        if self.hypotheses is not None:
            path = Path(self.hypotheses).expanduser().absolute()
            object.__setattr__(self, "hypotheses", str(path))
            object.__setattr__(self, "planned", read_hypotheses(path))

    @property
    def bootstrap(self) -> Bootstrap:
        """How the run states its uncertainty (the statistics' own defaults but the level)."""
        from transforms.aggregate import Bootstrap

        return Bootstrap(level=self.level)

    def parameters(self, command: str) -> dict[str, Any]:
        """Each option ``command`` takes, by its name (``RUN_OPTIONS``): its Prefect
        flow's parameters."""
        values = {**asdict(self), **asdict(self.regression)}
        return {o.name: values[o.name] for o in RUN_OPTIONS if command in o.commands}


def read_hypotheses(path: Path) -> tuple[Hypothesis, ...]:
    """The hypotheses file ``path`` declares (``schemas.hypotheses``); ``HypothesesError``
    (a usage error) names the flag, the file and what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
        return parse_hypotheses(text, str(path))
    except OSError as error:
        why = f"{path}: cannot be read ({error.strerror or error})"
    except UnicodeDecodeError:
        why = f"{path}: not UTF-8 text"
    except HypothesesError as error:
        why = str(error)
    raise HypothesesError(f"{OPTIONS['hypotheses'].flag}: {why}")


def run_options(**given: Any) -> RunOptions:
    """The options from what is given (values not None), else their environment variables
    (``Option.env``), else the defaults; ``ValueError`` names a bad one.

    >>> run_options(strict=True, baseline_nights=3).regression.baseline_nights
    3
    """
    unknown = set(given) - set(OPTIONS)
    if unknown:
        raise TypeError(f"no run option {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for option in RUN_OPTIONS:
        value = given.get(option.name)
        text = os.environ.get(option.env, "").strip()
        if value is None and text:
            try:
                value = option.parse(text)
            except ValueError:
                raise ValueError(f"{option.env}={text!r} is not valid") from None
        if value is not None:
            values[option.name] = value
    regression = {f.name: values.pop(f.name) for f in fields(RegressionOptions) if f.name in values}
    return RunOptions(**values, regression=RegressionOptions(**regression))
