"""cogscore's version, from its package metadata (pyproject.toml), wherever it runs.

A module of its own: ``cogscore --version`` and the run records read it without importing
the scoring code (pandera alone takes about 2 s to import).
"""

from __future__ import annotations

from importlib import metadata
from typing import Final


def _installed_version() -> str:
    try:
        return metadata.version("cogscore")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


COGSCORE_VERSION: Final = _installed_version()
