"""cogscore's benchmarks. Importing them sets what the command line sets before polars and
numpy load (``flows``: the allocator's settings, one BLAS thread), so that each measures the
scorer as users run it."""

import flows  # noqa: F401
