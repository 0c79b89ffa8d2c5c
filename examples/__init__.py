"""Example data for the demo: ``make_example_dump.py`` writes ``examples/dump/``."""
