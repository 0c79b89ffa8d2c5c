"""A fresh Python process, for the tests of what cogscore sets before polars loads."""

from __future__ import annotations

import os
import subprocess
import sys

ALLOCATOR_VARIABLE = "_RJEM_MALLOC_CONF"


def fresh_python(code: str, allocator: str | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` run by this interpreter in a new process, jemalloc's settings unset in its
    environment (or ``allocator``, as a user would set them)."""
    env = {k: v for k, v in os.environ.items() if k != ALLOCATOR_VARIABLE}
    if allocator is not None:
        env[ALLOCATOR_VARIABLE] = allocator
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
