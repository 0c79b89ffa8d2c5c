"""The store: OUT, its Delta tables, the runs table that pins them, a lease; the dumps read.

Modules, one concern each:

- `output`: `Output`, the one boundary the engine and the readers go through (what OUT holds,
  every read at a pinned version, a run's lease); `state`: what it holds, typed;
- `writer`: a run's writes (`Writer`, `DryRun`), one commit per table, the runs table last;
- `catalog`: the tables by name, their layout, an empty or conformed frame of each;
- `location`: a URI plus storage options (`Location`, `storage_options`, `redact`);
- `errors`: `StorageError` and its kinds, one line naming the URL;
- `objects`: the only module that talks to obstore (list, get, conditional put, delete);
- `lease`: one run at a time per output (`Lease`, `check_conditional_writes`);
- `delta/`: one night replaced per table and commit: `nights`, `frames`, `tables` (`write_night`,
  `read_table`, `vacuum`, ...), `layout`, `staged` (files staged by workers, committed once);
- `runs_table`: the `runs` table, written last, whose rows pin every table's version;
- `dumps`, `prehash`: the input side: a dump's files (`DumpFile`, local or listed from an
  object store by `list_objects`), read by their literal names; hashed while a command starts.
"""
