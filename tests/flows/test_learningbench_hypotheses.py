"""LearningBench's own planned tests (``hypothesis_tests.md``: H3 and H4) declared in
``examples/learningbench-hypotheses.toml`` and tested by cogscore on the published
leaderboard (``import-scores``, then a run).

Expected values are scipy's calls on the published files read here (the score matrix, the
flat table) and the published numbers of ``hypothesis_tests.json``, never typed in."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from flows import runs
from flows.importers.scores import import_scores
from flows.options import run_options
from flows.records import RunContext
from schemas.hypotheses import Hypothesis, Procedure
from tests.learningbench import LEADERBOARD, LEARNINGBENCH, TASKS
from tests.multitest import adjusted
from tests.tables import read_table
from transforms.hypotheses import hypotheses
from transforms.stats import benjamini_hochberg

NIGHT = "2026-04-16"  # the last day of the published runs
EXAMPLE = Path(__file__).parents[2] / "examples" / "learningbench-hypotheses.toml"
ANALYSIS = json.loads((LEARNINGBENCH / "hypothesis_tests.json").read_text())
PUBLISHED = {h["id"]: h for h in ANALYSIS["hypotheses"]}
THINKING, INSTRUCT = "Qwen 3 Next 80B Thinking", "Qwen 3 Next 80B Instruct"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("learningbench")
    done = import_scores(LEADERBOARD / "leaderboard_flat.csv", root / "dump", NIGHT, TASKS)
    assert done.rows_imported == 1890 and not done.rejected
    context = RunContext(options=run_options(hypotheses=str(EXAMPLE)))
    runs.score(root / "dump", root / "out", context=context)
    return root / "out"


def _row(out: Path, hid: str) -> dict[str, object]:
    return read_table(out, "hypotheses").filter(id=hid, as_of=NIGHT).row(0, named=True)


def test_h4_is_the_authors_wilcoxon_test(out: Path) -> None:
    """H4 (``30_hypothesis_tests.py``: ``wilcoxon(thinking, instruct, zero_method="wilcox",
    alternative="two-sided")`` over the score matrix's concept-learning rows): W = 6.0,
    p = 0.002157762679075225, 18 pairs, 14 won, 1 lost, 3 ties."""
    h4 = PUBLISHED["H4"]["statistic"]
    row = _row(out, "H4")
    matrix = pl.read_csv(LEADERBOARD / "leaderboard_score_matrix.csv")
    concept = matrix.filter(category="concept-learning")
    thinking, instruct = concept[THINKING].to_numpy(), concept[INSTRUCT].to_numpy()
    again = stats.wilcoxon(thinking, instruct, zero_method="wilcox", alternative="two-sided")
    assert (row["statistic"], row["p_value"]) == (again.statistic, again.pvalue)
    assert row["statistic"] == h4["W_stat"]
    # scipy 1.17 gives 0.0021577626790752246: one unit in the last place from the published
    assert row["p_value"] == pytest.approx(h4["p"], rel=1e-15)
    assert (row["n"], row["n_a_better"], row["n_b_better"]) == (
        h4["n_pairs"],
        h4["wins_thinking"],
        h4["wins_instruct"],
    )
    assert row["mean_a"] == pytest.approx(h4["thinking_mean"], abs=1e-15)
    assert row["mean_b"] == pytest.approx(h4["instruct_mean"], abs=1e-15)
    assert row["verdict"] == "supported" and row["scope"] == "concept_formation"


def test_the_planned_test_stands_beside_the_all_pairs_family_not_inside_it(out: Path) -> None:
    """The same pair in the all-pairs family (Holm over the 91 pairs of concept formation)
    is unresolved; planned, and adjusted over the file's two hypotheses, it is supported."""
    pair = (
        read_table(out, "standing_comparisons")
        .filter(as_of=NIGHT, scope="concept_formation", model_a=THINKING, model_b=INSTRUCT)
        .row(0, named=True)
    )
    assert pair["verdict"] == "unresolved" and pair["p_holm"] > 0.05
    planned = read_table(out, "hypotheses").filter(as_of=NIGHT).sort("id")
    assert planned["id"].to_list() == ["H3", "H4"]
    p = planned["p_value"].to_numpy()
    assert planned["p_adjusted"].to_list() == adjusted(p, "fdr_bh").tolist()
    assert _row(out, "H4")["p_adjusted"] < 0.05


def test_h3_is_the_authors_mann_whitney_call_on_the_leaderboards_means(out: Path) -> None:
    """H3: ``mannwhitneyu(a, b, alternative="two-sided")`` on each model's mean over concept
    formation and observational learning, the authors' groups of 8 and 6 models. The
    authors' means come from their notebook logs (not published: 0.591 against 0.420, U =
    41, p = 0.0293); on the published leaderboard the same call finds U = 38, p = 0.081:
    not supported."""
    h3 = PUBLISHED["H3"]["statistic"]
    row = _row(out, "H3")
    assert row["a"] == h3["models_google_or_oss"] and row["b"] == h3["models_anthropic_or_openai"]
    flat = pl.read_csv(LEADERBOARD / "leaderboard_flat.csv").filter(
        pl.col("category").is_in(["concept-learning", "obs-learning"])
    )
    means = dict(flat.group_by("model_name").agg(pl.col("score").mean()).iter_rows())
    a = [means[m] for m in h3["models_google_or_oss"]]
    b = [means[m] for m in h3["models_anthropic_or_openai"]]
    again = stats.mannwhitneyu(a, b, alternative="two-sided")
    assert (row["statistic"], row["p_value"]) == (again.statistic, again.pvalue)
    assert row["n"] == h3["mw"]["n_a"] + h3["mw"]["n_b"]
    assert row["mean_a"] == pytest.approx(np.mean(a), abs=1e-15)
    assert row["verdict"] == "not supported" and row["reason"] is None


def test_the_mann_whitney_call_gives_the_authors_p_for_their_u() -> None:
    """The authors' published U = 41 of 8 against 6 models gives their p = 88/3003 through
    cogscore's call (scipy's exact distribution, chosen by method "auto" without ties; the
    normal approximation would give 0.033)."""
    mw = PUBLISHED["H3"]["statistic"]["mw"]
    n_a, n_b = mw["n_a"], mw["n_b"]
    u = int(mw["U"])
    # ranks 1..14 split so that the a side's rank sum is U + n_a (n_a + 1) / 2
    rank_sum = u + n_a * (n_a + 1) // 2
    ranks_a = _ranks_summing_to(rank_sum, n_a, n_a + n_b)
    models = [f"m{r:02d}" for r in range(1, n_a + n_b + 1)]
    rows = [
        {"as_of": NIGHT, "model": m, "category": "concept_formation", "task": "t", "score": r}
        for r, m in enumerate(models, 1)
    ]
    a = tuple(models[r - 1] for r in ranks_a)
    b = tuple(m for m in models if m not in a)
    planned = [Hypothesis("H3", "a beats b", Procedure.MANN_WHITNEY, (), a, b)]
    row = hypotheses(pl.DataFrame(rows).lazy(), planned).collect().row(0, named=True)
    assert (row["statistic"], row["p_value"]) == (mw["U"], mw["p"])


def _ranks_summing_to(total: int, k: int, n: int) -> list[int]:
    """``k`` distinct ranks of 1..n summing to ``total`` (greedy from the top)."""
    chosen: list[int] = []
    for rank in range(n, 0, -1):
        left = k - len(chosen)
        if left and total - rank >= left * (left - 1) // 2:  # the rest fits in 1..left-1
            chosen.append(rank)
            total -= rank
    assert len(chosen) == k and total == 0
    return chosen


def test_benjamini_hochberg_is_the_authors_over_their_family() -> None:
    """The authors adjust over their hypotheses with a p-value (H1, H2, H3, H4, H8): the
    same Benjamini-Hochberg gives each published adjusted p; over the example's two
    hypotheses the family is smaller, and H4's adjusted p is p x 2 / 1."""
    tested = [h for h in ANALYSIS["hypotheses"] if h["raw_p"] is not None]
    raw = np.array([h["raw_p"] for h in tested])
    published = [h["statistic"]["bh_adjusted_p"] for h in tested]
    assert benjamini_hochberg(raw).tolist() == pytest.approx(published, rel=1e-15)
