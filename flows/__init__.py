"""cogscore's flows: reading dumps, scoring nights, writing tables, the command line."""

import os

# polars' allocator (jemalloc) keeps freed pages for 10 s by default, so what the file
# workers freed stayed resident into the night's reduction. Returned within 1 s, by a
# background thread: a night of 1.48 M episodes peaked at 1,019 MiB instead of 1,121 MiB, at
# the same speed (docs/performance.md, "Round two"). jemalloc reads this once, when polars
# is loaded: set here, before the flows import polars; a value already set (by the user) wins.
ALLOCATOR: str = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0"
os.environ.setdefault("_RJEM_MALLOC_CONF", ALLOCATOR)
