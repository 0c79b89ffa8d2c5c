"""A CI-sized share of ``benchmarks.kaggle_scripted`` (the full 135-task check is
``make kaggle-check``): tasks of every category and every grader style run under the real
harness with the three scripted models, are imported, and every imported score equals the
score the task returned."""

from __future__ import annotations

import pytest

from benchmarks.kaggle_scripted import POLICIES, check, make_runs
from flows.importers.kaggle_replay import _harness
from tests.learningbench import TASKS

# Each grader style the importer captures (docs/importing.md, "How each task is read").
SUBSET = frozenset(
    {
        "inhibitory_summation_assoc_learning",  # _str_match, keyed by the loop's `key`
        "blocking_effect_assoc_learning",  # _str_match items and one inline integer item
        "latent_inhibition__assoc_learning",  # inline exact equality: the assertions
        "xor_attribute_binding_assoc_learning",  # _label_match (negation aware)
        "gated_dual_signal_binding_assoc_learning",  # _letter_match
        "inference_dyad_operators_assoc_learning",  # inline integers and yes/no
        "feistel_cipher_round_obs_learning",  # _log_trace(test_results), integer pairs
        "contextual_flip_assoc__learning",  # an observational task written like associative
        "pipeline_hazard_stall_counting_obs_learning",  # no _log_trace: the returned locals
        "disjunctive_noise_concept_learning",  # _concept_score, contains
        "dual_recurrence_concept_learning",  # two-part items
        "drelkovak_harmony_lang_learning",  # _surface_equal
        "adaptive_sort_rule_proc_learning",  # procedural_composite_score (rounded)
        "boolean_circuit_proc_learning",  # the previous procedural formula
        "base7_decode_rf_learning",  # free-text replies
        "mastermind_aggregate_rf_learning",  # structured replies
    }
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("scripted")
    _harness()  # imported once, before the forks
    categories = make_runs(TASKS.resolve(), out / "runs", None, 20261205, names=SUBSET)
    return check(out, TASKS.resolve(), categories)


def test_the_subset_names_existing_tasks_of_every_category(summary: dict) -> None:
    assert summary["tasks"] == len(SUBSET)
    categories = {key.split("/")[0] for key in summary["counts"]}
    assert len(categories) == 6


def test_every_run_imports_and_scores_what_the_task_returned(summary: dict) -> None:
    assert summary["exceptions"] == []
    assert summary["runs"] == summary["imported"] == len(SUBSET) * len(POLICIES)
    equal = sum(c.get("equal", 0) for c in summary["counts"].values())
    unscored = sum(
        n for c in summary["counts"].values() for k, n in c.items() if k.startswith("no score")
    )
    assert equal + unscored == summary["runs"]
