"""cogscore's flows: reading dumps, scoring nights, writing tables, the command line."""

import os

# polars' allocator (jemalloc) keeps freed pages for 10 s by default, so what the file
# workers freed stayed resident into the night's reduction. Returned within 1 s, by a
# background thread: a night of 1.48 M episodes peaked at 1,019 MiB instead of 1,121 MiB, at
# the same speed (docs/performance.md, "Round two"). jemalloc reads this once, when polars
# is loaded: set here, before the flows import polars; a value already set (by the user) wins.
# One arena (jemalloc makes four a core): the pages one file worker frees are the next
# file's, whichever thread scores it, instead of each thread's arena faulting in its own (a
# night of 2 M episodes: 2.5-2.6 M pages faulted in instead of 3.4-4.8 M, the kernel's CPU
# 7.3-7.6 s instead of 10.2-12.6, its peak no higher; docs/performance.md, "Scoring at 3x,
# round six"; measured on 2 cores: on many, docs/performance.md "The allocator" says what
# to watch).
ALLOCATOR: str = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:1"
os.environ.setdefault("_RJEM_MALLOC_CONF", ALLOCATOR)

# numpy and scipy each load an OpenBLAS whose thread pool spins, waiting for work, once
# loaded: 0.25-0.3 s of CPU a command on 2 cores (importing numpy and scipy.special: 0.58 s
# of CPU against 0.28 s), taken from the files being scored. cogscore's matrix products (the
# rank intervals' bootstrap) are small: one thread does them. Read by OpenBLAS when loaded:
# set here, before the flows import numpy; a value already set (by the user) wins.
BLAS_THREADS: str = "1"
os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)
