"""``regressions``: each night of a model against its baseline night(s), as one contrast of
the nights' scores under the sampling design (instances and tasks shared across nights are
paired), with Benjamini-Hochberg over the night and an alert level."""

from __future__ import annotations

import math
from typing import Final, Literal

import polars as pl

from schemas.columns import FORMULA_VERSION, SCORE
from schemas.comparisons import (
    ALERT_LEVEL,
    BASELINE,
    BASELINE_DATES,
    BASELINE_SCORE,
    CATEGORIES_COVERED,
    CHANGE,
    CI_HIGH,
    CI_LOW,
    DESIGN,
    DF,
    FORMULA_VERSIONS,
    HARNESS_ERROR_SHARE,
    HARNESS_ERRORS,
    LEVEL_ALERT,
    LEVEL_NONE,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    MARGIN,
    MDE,
    N_BASELINE_NIGHTS,
    N_PAIRS,
    OVERALL,
    OVERALL_BY_CATEGORY,
    P_VALUE,
    PAIRED,
    Q_BH,
    REASON,
    SCOPE,
    SE,
    Work,
)
from schemas.contract import DUMP_DATE, Col
from transforms.compare.inference import inference
from transforms.compare.preparation import Prepared, prepare
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice, variances
from transforms.exact import exactly
from transforms.stats import adjust_over


def _formula_strings(
    scores: pl.DataFrame | pl.LazyFrame, prep: Prepared
) -> dict[tuple[int, str], str]:
    """Per unit and scope, the formula version(s) behind the score (from the scores'
    ``formula_version`` column; empty where there is none)."""
    frame = scores.lazy().collect() if isinstance(scores, pl.LazyFrame) else scores
    if FORMULA_VERSION not in frame.columns:
        return {}
    # Per model and category first (keys may be Categorical: few rows, then text), in one
    # query.
    keys = [DUMP_DATE, Col.MODEL, Col.CATEGORY, FORMULA_VERSION]
    text = [pl.col(c).cast(pl.String) for c in keys if frame.schema[c] == pl.Categorical]
    (versions,) = exactly(
        frame.lazy()
        .group_by(keys)
        .len()
        .with_columns(text)
        .join(prep.units.lazy(), on=[DUMP_DATE, Col.MODEL], nulls_equal=True)
        .group_by(Work.UNIT, Col.CATEGORY)
        .agg(pl.col(FORMULA_VERSION).unique().sort().str.join("|"))
        .sort(Work.UNIT, Col.CATEGORY)
    )
    out: dict[tuple[int, str], str] = {}
    joined: dict[int, list[str]] = {}
    for unit, category, version in versions.iter_rows():
        out[(unit, category)] = version
        joined.setdefault(unit, []).append(f"{category}={version}")
    for unit, parts in joined.items():
        out[(unit, OVERALL)] = ",".join(parts)
    return out


def _metadata_version(versions: str | None, scope: str) -> str | None:
    if versions is None or scope == OVERALL:
        return versions
    for part in versions.split(","):
        name, _, version = part.partition("=")
        if name.strip() == scope:
            return version.strip()
    return versions


def regressions(
    scores_by_night: pl.DataFrame | pl.LazyFrame,
    *,
    baseline: Literal["previous", "mean"] = "previous",
    k: int = 7,
    margin: float | None = None,
    metadata: pl.DataFrame | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    harness_error_tolerance: int = 0,
    harness_error_share_tolerance: float = 0.02,
    design: DesignChoice = DEFAULT_DESIGN,
    level: float | None = None,
) -> pl.DataFrame:
    """Per night, model and scope (each category and ``overall``, each task weighing the
    same): the change of the score from a baseline (``previous``: the model's last earlier
    night with that scope; ``mean``: the mean of its last ``k`` earlier nights with that
    scope), its standard error under ``design`` (tasks and instances shared across nights
    are paired), degrees of freedom, a ``level`` interval (default ``1 - alpha``), p-value,
    Benjamini–Hochberg q-value across the night's comparable tests, and a level:

    - ``not_comparable``: the tasks covered, the formula versions, or (from ``metadata``)
      the harness errors changed from the baseline, said in ``reason``: never reported as
      a regression;
    - ``alert``: ``q_bh < alpha`` and a drop larger than ``margin`` (default: the row's
      ``mde``);
    - ``watch``: a drop with raw ``p_value < alpha``;
    - ``none`` otherwise (including every rise).

    ``metadata`` (optional): per ``dump_date`` and ``model``, any of ``formula_versions``
    (``category=version,…``), ``categories_covered``, ``harness_errors`` (count) and
    ``harness_error_share`` (harness errors / episodes the harness ran); harness errors
    differing by more than ``harness_error_tolerance``, or a share by more than
    ``harness_error_share_tolerance``, make a night not comparable with its baseline.
    """
    if baseline not in ("previous", "mean"):
        raise ValueError(f"baseline must be 'previous' or 'mean', not {baseline!r}")
    if k < 1:
        raise ValueError("k must be at least 1")
    span = 1 if baseline == "previous" else k
    prep = prepare(scores_by_night, [DUMP_DATE, Col.MODEL])
    # Regressions follow the leaderboard's score: the category-weighted one is not checked
    # twice (it moves with the categories, which are).
    scopes = prep.scope_table().filter(
        pl.col(DUMP_DATE).is_not_null() & (pl.col(SCOPE) != OVERALL_BY_CATEGORY)
    )
    formulas = _formula_strings(scores_by_night, prep)
    meta: dict[tuple[str, str], dict[str, object]] = {}
    if metadata is not None:
        for row in metadata.iter_rows(named=True):
            meta[(row[DUMP_DATE], row[Col.MODEL])] = row

    records: list[dict[str, object]] = []
    contrasts: list[tuple[int, int, float, str]] = []
    for (model, scope), history in scopes.sort(DUMP_DATE).group_by(
        Col.MODEL, SCOPE, maintain_order=True
    ):
        dates = history[DUMP_DATE].to_list()
        units = history[Work.UNIT].to_list()
        values = history[SCORE].to_list()
        coverage = history[Work.COVERAGE].to_list()
        for i in range(1, len(dates)):
            base = list(range(max(0, i - span), i))
            cid = len(records)
            reasons = _reasons(
                scope,
                i,
                base,
                dates,
                units,
                coverage,
                formulas=formulas,
                meta=meta,
                model=str(model),
                tolerance=harness_error_tolerance,
                share_tolerance=harness_error_share_tolerance,
            )
            base_score = math.fsum(values[j] for j in base) / len(base)
            records.append(
                {
                    Work.CID: cid,
                    DUMP_DATE: dates[i],
                    Col.MODEL: model,
                    SCOPE: scope,
                    BASELINE: baseline,
                    BASELINE_DATES: ",".join(dates[j] for j in base),
                    N_BASELINE_NIGHTS: len(base),
                    SCORE: values[i],
                    BASELINE_SCORE: base_score,
                    CHANGE: values[i] - base_score,
                    REASON: "; ".join(reasons) if reasons else None,
                }
            )
            contrasts.append((cid, units[i], 1.0, str(scope)))
            contrasts.extend((cid, units[j], -1.0 / len(base), str(scope)) for j in base)
    columns = REGRESSION_COLUMNS
    if not records:
        return pl.DataFrame(schema=_REGRESSION_SCHEMA).select(columns)
    table = pl.DataFrame(records, schema_overrides={Work.CID: pl.UInt32, REASON: pl.String})
    contrast_frame = pl.DataFrame(
        contrasts,
        schema={Work.CID: pl.UInt32, Work.UNIT: pl.UInt32, Work.COEF: pl.Float64, SCOPE: pl.String},
        orient="row",
    )
    table = table.join(variances(prep, contrast_frame, design), on=Work.CID, how="left")
    table = inference(table, CHANGE, alpha, power, level)
    comparable = pl.col(REASON).is_null()
    table = table.with_columns(
        pl.when(comparable).then(pl.col(P_VALUE)).alias(Work.P_FAMILY),
        (pl.col(MDE) if margin is None else pl.lit(float(margin))).alias(MARGIN),
    )
    table = adjust_over(table, Work.P_FAMILY, [DUMP_DATE], "bh", Q_BH)
    (tested,) = exactly(
        table.lazy()
        .with_columns(
            alert_level(comparable, alpha).alias(ALERT_LEVEL), pl.col(N_PAIRS).fill_null(0)
        )
        .sort(DUMP_DATE, Col.MODEL, SCOPE)
        .select(columns)
    )
    return tested


def alert_level(comparable: pl.Expr, alpha: float) -> pl.Expr:
    """A change's level (README "Comparisons and statistics"): ``not_comparable`` where it
    cannot be tested; a drop significant after Benjamini-Hochberg (``q_bh`` < ``alpha``) and
    larger than its margin an ``alert``; a drop with ``p_value`` < ``alpha`` a ``watch``;
    else ``none``. Of a night's regressions and of the standings' changes alike.

    >>> frame = pl.DataFrame({CHANGE: [-0.3, -0.3, -0.01, 0.2], Q_BH: [0.01, 0.2, 0.5, 0.01],
    ...     P_VALUE: [0.001, 0.01, 0.4, 0.001], MARGIN: [0.1, 0.1, 0.1, 0.1]})
    >>> frame.select(alert_level(pl.lit(True), 0.05)).to_series().to_list()
    ['alert', 'watch', 'none', 'none']
    """
    drop = pl.col(CHANGE) < 0
    return (
        pl.when(~comparable)
        .then(pl.lit(LEVEL_NOT_COMPARABLE))
        .when(drop & (pl.col(Q_BH) < alpha) & (-pl.col(CHANGE) > pl.col(MARGIN)))
        .then(pl.lit(LEVEL_ALERT))
        .when(drop & (pl.col(P_VALUE) < alpha))
        .then(pl.lit(LEVEL_WATCH))
        .otherwise(pl.lit(LEVEL_NONE))
    )


REGRESSION_COLUMNS: Final = [
    DUMP_DATE,
    Col.MODEL,
    SCOPE,
    BASELINE,
    BASELINE_DATES,
    N_BASELINE_NIGHTS,
    SCORE,
    BASELINE_SCORE,
    CHANGE,
    SE,
    DF,
    DESIGN,
    CI_LOW,
    CI_HIGH,
    P_VALUE,
    Q_BH,
    MDE,
    MARGIN,
    N_PAIRS,
    PAIRED,
    ALERT_LEVEL,
    REASON,
]
_REGRESSION_SCHEMA: Final = {
    DUMP_DATE: pl.String,
    Col.MODEL: pl.String,
    SCOPE: pl.String,
    BASELINE: pl.String,
    BASELINE_DATES: pl.String,
    N_BASELINE_NIGHTS: pl.Int64,
    SCORE: pl.Float64,
    BASELINE_SCORE: pl.Float64,
    CHANGE: pl.Float64,
    SE: pl.Float64,
    DF: pl.Float64,
    DESIGN: pl.String,
    CI_LOW: pl.Float64,
    CI_HIGH: pl.Float64,
    P_VALUE: pl.Float64,
    Q_BH: pl.Float64,
    MDE: pl.Float64,
    MARGIN: pl.Float64,
    N_PAIRS: pl.Int64,
    PAIRED: pl.String,
    ALERT_LEVEL: pl.String,
    REASON: pl.String,
}


def _reasons(
    scope: str,
    i: int,
    base: list[int],
    dates: list[str],
    units: list[int],
    coverage: list[str],
    *,
    formulas: dict[tuple[int, str], str],
    meta: dict[tuple[str, str], dict[str, object]],
    model: str,
    tolerance: int,
    share_tolerance: float = 0.02,
) -> list[str]:
    """Why night ``i`` is not comparable with its baseline nights ``base`` (empty: it is)."""
    reasons: list[str] = []
    changed = [j for j in base if coverage[j] != coverage[i]]
    if changed:
        reasons.append(
            f"tasks covered changed: {_coverage_change(coverage[changed[-1]], coverage[i])}"
            f" since {dates[changed[-1]]}"
        )
    now_formula = formulas.get((units[i], scope))
    changed = [j for j in base if formulas.get((units[j], scope)) != now_formula]
    if changed:
        reasons.append(
            f"formula versions changed: {formulas.get((units[changed[-1]], scope))}"
            f" on {dates[changed[-1]]}, {now_formula} now"
        )
    now = meta.get((dates[i], model), {})
    for j in base:
        then = meta.get((dates[j], model), {})
        if FORMULA_VERSIONS in now or FORMULA_VERSIONS in then:
            a = _metadata_version(_opt_str(then.get(FORMULA_VERSIONS)), scope)
            b = _metadata_version(_opt_str(now.get(FORMULA_VERSIONS)), scope)
            if a != b:
                reasons.append(f"formula versions changed: {a} on {dates[j]}, {b} now")
        if scope == OVERALL and then.get(CATEGORIES_COVERED) != now.get(CATEGORIES_COVERED):
            reasons.append(
                f"categories covered changed: {then.get(CATEGORIES_COVERED)} on {dates[j]},"
                f" {now.get(CATEGORIES_COVERED)} now"
            )
        errors_then, errors_now = then.get(HARNESS_ERRORS), now.get(HARNESS_ERRORS)
        if (errors_then is None) != (errors_now is None) or (
            isinstance(errors_then, int)
            and isinstance(errors_now, int)
            and abs(errors_now - errors_then) > tolerance
        ):
            reasons.append(f"harness errors changed: {errors_then} on {dates[j]}, {errors_now} now")
        share_then, share_now = then.get(HARNESS_ERROR_SHARE), now.get(HARNESS_ERROR_SHARE)
        if (
            isinstance(share_then, float)
            and isinstance(share_now, float)
            and abs(share_now - share_then) > share_tolerance
        ):
            reasons.append(
                f"harness errors changed: {share_then:.1%} of the episodes on {dates[j]},"
                f" {share_now:.1%} now"
            )
    return list(dict.fromkeys(reasons))


def _coverage_change(then: str, now: str, shown: int = 5) -> str:
    """What changed between two coverages (names comma-joined), briefly.

    >>> _coverage_change("a,b,c", "b,c,d")
    '3 then, 3 now (gone: a; new: d)'
    >>> _coverage_change("a,b,c,d,e,f", "f")  # five names at most
    '6 then, 1 now (gone: a, b, c, d, e)'
    >>> _coverage_change("a,b,c,d,e,f,g,h", "h")
    '8 then, 1 now (gone: a, b, c, d, e and 2 more)'
    """
    before, after = set(then.split(",")), set(now.split(","))

    def names(values: set[str]) -> str:
        listed = sorted(values)
        more = f" and {len(listed) - shown} more" if len(listed) > shown else ""
        return ", ".join(listed[:shown]) + more

    parts = [f"gone: {names(before - after)}"] if before - after else []
    parts += [f"new: {names(after - before)}"] if after - before else []
    return f"{len(before)} then, {len(after)} now ({'; '.join(parts)})"


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)
