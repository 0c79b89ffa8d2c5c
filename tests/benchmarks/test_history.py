"""benchmarks.history's summary: each table's rows have as many cells as its header."""

from benchmarks.history import summary


def _run(seconds: float) -> dict:
    return {"seconds": seconds, "opens": 44, "rchar": 23_400_000}


def test_every_row_of_the_summary_has_its_headers_cells() -> None:
    results = {
        "this | 30 nights | standings on": [_run(1.5), _run(1.6)],
        "this | 150 nights | standings on": [_run(1.7)],
        "this | 30 nights | traced": {"log_files": 184, "data_files": 24, "history_data_files": 0},
        "this | 30 nights | open ms": {"runs": 1.5, "episode_scores": 8.3},
        "this | 150 nights | open ms": {"runs": 1.6, "episode_scores": 20.0},
    }
    tables = "\n".join(summary(results)).split("\n\n")
    assert len(tables) == 3
    for table in tables:
        rows = table.splitlines()
        widths = {row.count("|") for row in rows}
        assert widths == {rows[0].count("|")}, table
