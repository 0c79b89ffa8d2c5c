"""cogscore's benchmarks. Importing them sets what the command line sets before polars and
numpy load (``flows``: the allocator's settings, one BLAS thread), so that each measures the
scorer as users run it."""

import os

import flows  # noqa: F401


def settled() -> None:
    """What the benchmark wrote before a timed run (an output copied, a tree removed) put on
    disk first (``sync``). Otherwise the run's first ``fsync`` (its first data file) waits for
    the copy's dirty pages too, since ext4 commits its journal in order: a copy of a 150-night
    output cost the nightly after it ~0.1 s more than a 30-night one's, and a copy with the
    standings' tables more than one without (docs/performance.md, "A copy's writeback")."""
    os.sync()
