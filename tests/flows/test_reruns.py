"""Every re-run told (issue 47): a re-run that moves a model's standing is named on the
terminal, in the run record, in the tables and in the report, significant or not, with the
rank moves it caused and what the statistics say of it.

The reviewers' case: a model whose only task re-runs from 0.0 to 0.875 passes the others;
beside it, a model whose six tasks re-run far above their old scores (beyond noise) and one
whose six re-run a little off theirs (within noise). Expected values are found here from
the input tables, never read back from what cogscore wrote."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.importers.scores import import_scores
from tests.tables import read_table

N1, N2 = "2026-04-01", "2026-04-02"
CATEGORY = "associative_learning"
TASKS = [f"t{i}" for i in range(1, 7)]
FIRST = {
    ("solo", "t1"): 0.0,
    **{("far", t): s for t, s in zip(TASKS, (0.1, 0.2, 0.15, 0.1, 0.2, 0.15), strict=True)},
    **{("near", t): s for t, s in zip(TASKS, (0.5, 0.55, 0.45, 0.5, 0.6, 0.4), strict=True)},
}
SECOND = {
    ("solo", "t1"): 0.875,
    **{("far", t): s for t, s in zip(TASKS, (0.7, 0.65, 0.75, 0.7, 0.68, 0.72), strict=True)},
    **{("near", t): s for t, s in zip(TASKS, (0.52, 0.5, 0.47, 0.51, 0.58, 0.42), strict=True)},
}


def _import(tmp: Path, dump: Path, night: str, cells: dict[tuple[str, str], float]) -> None:
    table = tmp / f"{night}.csv"
    rows = [
        {"dump_date": night, "model": m, "task": t, "category": CATEGORY, "score": s}
        for (m, t), s in sorted(cells.items())
    ]
    pl.DataFrame(rows).write_csv(table)
    assert not import_scores(table, dump).rejected


def _ranks(cells: dict[tuple[str, str], float]) -> dict[str, int]:
    """Each model's rank by the mean of its task scores (all cover the same category)."""
    models = sorted({m for m, _ in cells})
    means = {m: sum(s for (n, _), s in cells.items() if n == m) for m in models}
    means = {m: total / sum(1 for n, _ in cells if n == m) for m, total in means.items()}
    order = sorted(models, key=lambda m: -means[m])
    return {m: order.index(m) + 1 for m in models}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    """Two nightly runs: the first night, then the second's re-runs (its terminal text and
    run record)."""
    tmp = tmp_path_factory.mktemp("reruns")
    dump, out = tmp / "dump", tmp / "out"
    _import(tmp, dump, N1, FIRST)
    first = CliRunner().invoke(app, ["nightly", str(dump), "--out", str(out), "--engine", "local"])
    assert first.exit_code == 0, first.output
    _import(tmp, dump, N2, SECOND)
    args = ["nightly", str(dump), "--out", str(out), "--engine", "local", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text, record = result.stdout.rsplit("\n{", 1)
    return out, text, json.loads("{" + record)


def test_every_rerun_result_is_a_row_of_task_changes(ran: tuple[Path, str, dict]) -> None:
    out, _, _ = ran
    rows = read_table(out, "task_changes")
    found = {
        (m, t): (on, os, nn, ns)
        for m, t, on, os, nn, ns in rows.select(
            "model", "task", "old_night", "old_score", "new_night", "new_score"
        ).rows()
    }
    assert found == {key: (N1, FIRST[key], N2, SECOND[key]) for key in SECOND}
    assert set(rows["kind"]) == {"rerun"} and set(rows["as_of"]) == {N2}


def test_standing_changes_carry_the_rank_moves_and_the_noise(ran: tuple[Path, str, dict]) -> None:
    """Each model's row has its rank before and after (as the standings rank it); the far
    re-run is beyond noise, the near one within, the single result not estimable."""
    out, _, _ = ran
    old, new = _ranks(FIRST), _ranks(SECOND)
    assert (old["solo"], new["solo"]) == (3, 1)  # the scenario: solo passes the others
    rows = read_table(out, "standing_changes").filter(as_of=N2, scope="overall")
    got = {m: (o, n) for m, o, n in rows.select("model", "old_rank", "new_rank").rows()}
    assert got == {m: (old[m], new[m]) for m in old}
    standings = read_table(out, "standings").filter(as_of=N2)
    assert dict(standings.select("model", "rank").rows()) == new
    noise = dict(rows.select("model", "beyond_noise").rows())
    assert noise == {"far": True, "near": False, "solo": None}
    solo = rows.filter(model="solo").row(0, named=True)
    assert (solo["baseline_score"], solo["score"]) == (
        FIRST[("solo", "t1")],
        SECOND[("solo", "t1")],
    )


def test_the_terminal_names_every_rerun_its_rank_move_and_its_noise(
    ran: tuple[Path, str, dict],
) -> None:
    """No re-run is silent: each result is named (model, task, score and night before and
    now), each model's line says its rank before and now and what the statistics call it."""
    _, text, _ = ran
    lines = text.splitlines()
    for (model, task), score in sorted(SECOND.items()):
        old = FIRST[(model, task)]
        named = f"as of {N2}: {model} {task}: {old:.3f} ({N1}) → {score:.3f} ({N2})"
        assert f"  {named}" in lines, named
    old, new = _ranks(FIRST), _ranks(SECOND)
    said = {"far": "beyond noise", "near": "within noise", "solo": "noise not estimable"}
    for model, label in said.items():
        (line,) = [x for x in lines if x.startswith(f"  none {N2} {model} overall rerun:")]
        move = (
            f"{old[model]} → {new[model]}" if old[model] != new[model] else f"{new[model]}, unmoved"
        )
        assert f"rank {move} ({label};" in line, line


def test_the_run_record_lists_every_rerun(ran: tuple[Path, str, dict]) -> None:
    _, _, record = ran
    reruns = {(r["model"], r["task"]): (r["old_score"], r["new_score"]) for r in record["reruns"]}
    assert reruns == {key: (FIRST[key], SECOND[key]) for key in SECOND}
    old, new = _ranks(FIRST), _ranks(SECOND)
    moves = {
        r["model"]: (r["old_rank"], r["new_rank"], r["beyond_noise"])
        for r in record["standing_changes"]
        if r["scope"] == "overall"
    }
    noise = {"far": True, "near": False, "solo": None}
    assert moves == {m: (old[m], new[m], noise[m]) for m in old}


def test_the_report_lists_every_rerun_and_what_the_statistics_say(
    ran: tuple[Path, str, dict],
) -> None:
    """The report's "Standing changes" no longer says nothing moved: each model's row has
    its noise label and rank move, each re-run result its scores and nights."""
    from flows.present.report import read_warehouse
    from flows.present.report.page import build_sections

    out, _, _ = ran
    _, sections = build_sections(read_warehouse(out), None)
    (changes,) = [s for s in sections if s.key == "changes"]
    assert "Nothing moved" not in changes.text
    cells = changes.after.split("<table class='reruns'>")[1]
    for (model, task), score in SECOND.items():
        old = FIRST[(model, task)]
        row = (
            f"<tr><td>{model}</td><td>{task}</td><td>{CATEGORY}</td>"
            f"<td>{old:.3f} ({N1})</td><td>{score:.3f} ({N2})</td>"
        )
        assert row in cells, row
    old, new = _ranks(FIRST), _ranks(SECOND)
    said = {"far": "beyond noise", "near": "within noise", "solo": "noise not estimable"}
    models = changes.after.split("<table class='reruns'>")[0]
    for model, label in said.items():
        move = (
            f"{old[model]} → {new[model]}" if old[model] != new[model] else f"{new[model]}, unmoved"
        )
        assert f"<td>{model}</td><td>overall</td>" in models
        row = models.split(f"<td>{model}</td><td>overall</td>")[1].split("</tr>")[0]
        assert f"<td>{label}</td><td>rank {move} (" in row, row


N3 = "2026-04-03"
THIRD = {("solo", "t1"): 0.8, ("near", "t1"): 0.6}


def test_compare_two_consecutive_standings_is_the_table(ran: tuple[Path, str, dict]) -> None:
    """``compare --date N2 --against N1`` gives, model by model, the row of
    standing_changes the run wrote: the same function over two standings."""
    out, _, _ = ran
    args = ["compare", str(out), "--date", N2, "--against", N1, "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    said = pl.DataFrame(json.loads(result.stdout)["models"])
    table = read_table(out, "standing_changes").filter(scope="overall")
    columns = [c for c in table.columns if c not in ("scorer_version", "input_fingerprint")]
    key = ["model"]
    assert said.select(columns).sort(key).rows() == table.select(columns).sort(key).rows()
    cells = pl.DataFrame(json.loads(result.stdout)["tasks"])
    written = read_table(out, "task_changes")
    columns = [c for c in written.columns if c not in ("scorer_version", "input_fingerprint")]
    keys = ["model", "task"]
    assert cells.select(columns).sort(keys).rows() == written.select(columns).sort(keys).rows()


def test_compare_any_two_standings(tmp_path: Path) -> None:
    """Three nights: the standing as of the third against the first's. Each result that
    changed is named from its first night to its latest; each model's score and rank in
    both; a model whose results did not change between them still has its row."""
    from flows import runs
    from flows.overview import standings_compared
    from flows.store.output import Output

    dump, out = tmp_path / "dump", tmp_path / "out"
    for night, cells in ((N1, FIRST), (N2, SECOND), (N3, THIRD)):
        _import(tmp_path, dump, night, cells)
        runs.nightly(dump, out)
    two = standings_compared(Output.at(out), N3, N1)
    latest = {**{k: (N2, s) for k, s in SECOND.items()}, **{k: (N3, s) for k, s in THIRD.items()}}
    found = {
        (m, t): (on, os, nn, ns)
        for m, t, on, os, nn, ns in two.tasks.select(
            "model", "task", "old_night", "old_score", "new_night", "new_score"
        ).rows()
    }
    assert found == {k: (N1, FIRST[k], *latest[k]) for k in latest}
    now = {**SECOND, **THIRD}
    old, new = _ranks(FIRST), _ranks(now)
    rows = {r["model"]: r for r in two.models.iter_rows(named=True)}
    assert {m: (r["old_rank"], r["new_rank"]) for m, r in rows.items()} == {
        m: (old[m], new[m]) for m in old
    }
    for model, row in rows.items():
        mine = [s for (m, _), s in now.items() if m == model]
        assert row["score"] == pytest.approx(sum(mine) / len(mine))
    # Against the second night, far's results and rank did not change: its row says so.
    assert _ranks(SECOND)["far"] == new["far"]
    held = standings_compared(Output.at(out), N3, N2).models.filter(model="far").row(0, named=True)
    assert held["kind"] is None and held["change"] == 0.0
    result = CliRunner().invoke(app, ["compare", str(out), "--against", N1])
    assert result.exit_code == 0, result.output
    assert f"the standing as of {N3} against the one as of {N1}, overall:" in result.stdout
    named = (
        f"  rerun solo t1: {FIRST[('solo', 't1')]:.3f} ({N1}) → {THIRD[('solo', 't1')]:.3f} ({N3})"
    )
    assert named in result.stdout.splitlines()


@pytest.mark.parametrize(
    ("args", "option", "why"),
    [
        (["--against", "2026-03-01"], "--against", "has no standing as of 2026-03-01"),
        (["--date", N1, "--against", N2], "--against", f"{N2} is not earlier than {N1}"),
        (["--against", "yesterday"], "--against", "is not a date"),
        (["--against", N1, "--scope", "overall_by_category"], "--scope", "with --against"),
        (["--against", N1, "--view", "night"], "--against", "not with --view night"),
    ],
)
def test_compare_against_refuses_what_it_cannot_compare(
    ran: tuple[Path, str, dict], args: list[str], option: str, why: str
) -> None:
    """One line, exit 2, naming the option and why."""
    out, _, _ = ran
    result = CliRunner().invoke(app, ["compare", str(out), *args])
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and option in text and why in text, result.output
