"""The formula registry: every module that registers formula versions (``@formula``,
``transforms.formulas``) imported, and what is made of their registrations: the versions of
each category and the defaults, the listing ``cogscore formulas`` prints, and the formula
sets (``resolve``). Import these from here: importing this runs the registrations. A new
category module is added here."""

from __future__ import annotations

from transforms import associative, concept, observational, procedural, runtime_rl
from transforms.formulas import (
    DEFAULTS,
    REGISTRY,
    SCORERS,
    TASK_DEFAULTS,
    VERSIONS,
    chosen,
    listing,
    overlay,
    resolve,
)

__all__ = [
    "DEFAULTS",
    "REGISTRY",
    "SCORERS",
    "TASK_DEFAULTS",
    "VERSIONS",
    "associative",
    "chosen",
    "concept",
    "listing",
    "observational",
    "overlay",
    "procedural",
    "resolve",
    "runtime_rl",
]
