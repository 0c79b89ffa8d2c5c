"""Every module that registers formula versions (``transforms.formulas``): importing this
runs their registrations. A new category module is added here."""

from __future__ import annotations

from transforms import associative, concept, observational, procedural, runtime_rl
from transforms.formulas import SCORERS

__all__ = ["SCORERS", "associative", "concept", "observational", "procedural", "runtime_rl"]
