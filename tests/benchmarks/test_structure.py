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
