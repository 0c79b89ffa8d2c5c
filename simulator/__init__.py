"""A simulator of benchmark harness dumps: real tasks, simulated models, any size.

``simulate(out, date=..., episodes=..., seed=...)`` writes a contract-valid dump for tests,
demos and benchmarks (``simulator.dump``); the tasks and their rule functions are in
``simulator.tasks``, the skill profiles of the simulated models in ``simulator.models``,
the harness bugs that make episodes rejectable in ``simulator.faults``.
"""

from simulator.dump import Expected, Simulation, read_expected, simulate, simulate_dump
from simulator.faults import FAULTS, Fault
from simulator.models import DEFAULT_MODELS, PROFILES, Model, Profile, Skill, parse_model
from simulator.tasks import TASKS, Task

__all__ = [
    "DEFAULT_MODELS",
    "FAULTS",
    "PROFILES",
    "TASKS",
    "Expected",
    "Fault",
    "Model",
    "Profile",
    "Simulation",
    "Skill",
    "Task",
    "parse_model",
    "read_expected",
    "simulate",
    "simulate_dump",
]
