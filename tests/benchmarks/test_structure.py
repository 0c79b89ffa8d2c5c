"""benchmarks/structure.py over the product code: no import cycle among cogscore's modules
(imports inside functions counted), schemas the lowest layer."""

from __future__ import annotations

from benchmarks import structure


def test_no_module_imports_itself_round_a_cycle() -> None:
    found = structure.measure()
    assert found.cycles() == []


def test_schemas_import_nothing_of_the_layers_above_them() -> None:
    found = structure.measure()
    above = ("flows", "transforms", "simulator")
    for module, targets in found.edges.items():
        if module.startswith("schemas"):
            assert not [t for t in targets if t.startswith(above)], module


def test_a_cycle_is_found() -> None:
    """The measurement can fail: two modules importing each other are a cycle."""
    found = structure.Structure(
        modules={"a": 1, "b": 1, "c": 1}, edges={"a": {"b"}, "b": {"a"}, "c": {"a"}}
    )
    assert found.cycles() == [["a", "b"]]


def test_no_function_takes_more_than_six_arguments_by_position() -> None:
    """Past six, the rest are keyword-only: a swapped argument is an error, not a wrong
    table."""
    assert structure.measure().summary()["over_positional"] == []


def test_seven_positional_parameters_are_found() -> None:
    """The measurement can fail: a seventh positional parameter is over the bound."""
    found = structure.Structure(positional=[("m", "six", 6), ("m", "seven", 7)])
    assert found.summary()["over_positional"] == ["m.seven (7)"]


def test_imports_inside_functions_are_the_few_that_keep_start_up_fast() -> None:
    """The command line imports the engine, the store and the report when a command runs
    (``cogscore --help`` loads no Arrow, Delta or Prefect); other modules import at the top."""
    assert structure.measure().summary()["inner_imports"] <= structure.MOST_INNER_IMPORTS


def test_no_module_imports_a_layer_above_its_own() -> None:
    """The store and the importers know nothing of scoring, the engine prints nothing, the
    entry points sit on top (``structure.LAYERS``)."""
    assert structure.measure().upward() == []


def test_an_import_up_the_layers_is_found() -> None:
    """The measurement can fail: the store importing the engine, or the engine a face, goes
    up; the face importing the engine goes down."""
    found = structure.Structure(
        edges={
            "flows.store.output": {"flows.score"},
            "flows.runs": {"flows.present.summary", "flows.store.output"},
            "flows.present.summary": {"flows.runs"},
        }
    )
    assert found.upward() == [
        "flows.runs -> flows.present.summary (engine -> present)",
        "flows.store.output -> flows.score (store -> engine)",
    ]
