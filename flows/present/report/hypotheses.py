"""The report's section of the planned hypotheses (table ``hypotheses``, ``--hypotheses``):
each declared claim, its test and verdict as the benchmark stands, beside (not inside) the
family of every pair, whose Holm verdict of the same pair is shown for comparison."""

from __future__ import annotations

import html

import polars as pl

from flows.present.report.figures import Section, fmt
from schemas.comparisons import MODEL_A, MODEL_B, P_HOLM, P_VALUE, REASON, SCOPE, VERDICT
from schemas.hypotheses import (
    ALPHA,
    CLAIM,
    ESTIMATE,
    ID,
    MEAN_A,
    MEAN_B,
    N_A_BETTER,
    N_B_BETTER,
    P_ADJUSTED,
    STATISTIC,
    TEST,
    A,
    B,
    N,
    Procedure,
)

KEY = "hypotheses"


def hypotheses_section(planned: pl.DataFrame, pairs: pl.DataFrame, night: str) -> Section:
    """The standing's ``hypotheses`` rows (``planned``) as a table; ``pairs`` its
    ``standing_comparisons`` rows: where a planned test compares two models in one scope, the
    all-pairs family's Holm verdict of that pair beside it."""
    holm = {
        (r[SCOPE], r[MODEL_A], r[MODEL_B]): r
        for r in pairs.select(SCOPE, MODEL_A, MODEL_B, P_VALUE, P_HOLM, VERDICT).iter_rows(
            named=True
        )
    }
    rows = []
    for r in planned.sort(ID).iter_rows(named=True):
        both = _sides(r)
        family = holm.get((r[SCOPE], r[A][0], r[B][0])) if r[TEST] == Procedure.WILCOXON else None
        beside = (
            "-"
            if family is None
            else f"{html.escape(family[VERDICT])} (Holm p {fmt(family[P_HOLM], '.3g')})"
        )
        rows.append(
            f"<tr><td>{html.escape(r[ID])}</td><td>{html.escape(r[CLAIM])}</td>"
            f"<td>{html.escape(r[TEST])}, {html.escape(r[SCOPE])}<br>{both}</td>"
            f"<td>{r[N]}</td><td>{_wins(r)}</td>"
            f"<td>{fmt(r[MEAN_A])} − {fmt(r[MEAN_B])} = {fmt(r[ESTIMATE], '+.3f')}</td>"
            f"<td>{fmt(r[STATISTIC], 'g')}</td><td>{fmt(r[P_VALUE], '.3g')}</td>"
            f"<td>{fmt(r[P_ADJUSTED], '.3g')}</td>"
            f"<td><b>{html.escape(r[VERDICT])}</b>"
            f"{'<br>' + html.escape(r[REASON]) if r[REASON] else ''}</td>"
            f"<td>{beside}</td></tr>"
        )
    alpha = float(planned[ALPHA][0])  # one run's level: the same on every row
    table = (
        "<table><thead><tr><th>id</th><th>claim</th><th>test, scope, a vs b</th><th>n</th>"
        "<th>a won / b won</th><th>mean a − mean b</th><th>statistic</th><th>p</th>"
        "<th>p (BH over the file)</th><th>verdict</th><th>the same pair among all pairs</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return Section(
        KEY,
        "Planned hypotheses",
        f"The hypotheses declared in advance (<code>--hypotheses</code>, table "
        f"<code>hypotheses</code>), each tested as declared on the benchmark as it stands as of "
        f"{html.escape(night)}, with scipy's test called as the benchmark's authors call it, "
        "and Benjamini-Hochberg over the file's hypotheses (the authors' family): "
        f"<b>supported</b> where the adjusted p is below α = {fmt(alpha, 'g')} and a scored "
        "higher. A planned comparison answers one question asked before the data: it is "
        "not corrected for the pairs nobody planned, unlike the comparisons above (Holm over "
        "every pair of a scope), whose verdict on the same pair is in the last column.",
        after=table,
    )


def _sides(row: dict[str, object]) -> str:
    a, b = row[A], row[B]
    assert isinstance(a, list) and isinstance(b, list)
    return f"{html.escape(', '.join(a))} <i>vs</i> {html.escape(', '.join(b))}"


def _wins(row: dict[str, object]) -> str:
    if row[N_A_BETTER] is None:
        return "-"
    return f"{row[N_A_BETTER]} / {row[N_B_BETTER]}"
