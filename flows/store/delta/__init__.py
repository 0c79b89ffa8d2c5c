"""The output tables as Delta Lake tables at OUT/<table>: one night replaced per commit.

A night is replaced with ONE predicate overwrite (`dump_date = '2026-12-01'`, or
`dump_date IS NULL` for an undated dump): delta-rs writes the new files, then commits a log
entry that removes that night's old files and adds the new ones. Other nights' files are not
touched (the same paths stay in the log), readers see the night before or after, never half,
and the table's history records every replacement with our commit metadata (run id, night).
A table that does not exist is created by its first write.

An undated night (`night=None`) is the partition `dump_date=__HIVE_DEFAULT_PARTITION__`:
delta-rs writes it, `dump_date IS NULL` replaces exactly it, and polars, pyarrow and DuckDB
read the column back as null (tested). It is workable.

Columns added by a newer cogscore (contract 1.1's `instance_id`, the rank intervals of
`model_scores`) are merged into an existing table by the first write that has them
(`schema_mode="merge"`): earlier nights read them as null; a frame that lacks one of the
table's columns is still refused.

Dtype hygiene (lake notes): delta-rs crashes on Categorical (cast to String), refuses
Null-typed columns (given String), and refuses time-zone-naive timestamps under the table's
protocol (made UTC; Delta stores microseconds). `dump_date` stays a String partition column:
`DeltaTable.partitions()` returns strings whatever the type, and a Date column written into a
String table would be cast silently.

Staged files, for "workers write their files, the driver commits once per night":
`write_data_files` writes a night's Parquet files into the table folder (not yet part of the
table: readers do not see them) and returns their `AddAction`s; `commit_files` commits any
number of such stagings for one night in one transaction. delta-rs expresses the overwrite
with `create_write_transaction(mode="overwrite", partition_filters=[("dump_date", "=",
night)])`: it derives the remove actions of that partition itself (an explicit `RemoveAction`
is only allowed with `mode="append"`). The undated partition is named by the empty string
(`None` is refused by the binding). Unlike a predicate write, nothing checks that the staged
files exist or hold what their stats say: that is the caller's contract.

Vacuum is never run implicitly. `vacuum(..., full=True)` removes every file that no version
in the retention window references and that is older than the window, which includes the
complete-but-uncommitted files that a killed run leaves behind once they are that old (the
default "lite" vacuum misses them). `uncommitted_files` finds those at any age: files named as
cogscore's writers name them that no commit of the log names. Either must run under the lease:
a running writer's staged files are unreferenced until its commit.

The modules: ``nights`` (a night checked, its predicate), ``frames`` (frames as Delta takes
them), ``tables`` (a table's versions: write, append, read, history, restore, truncate,
vacuum), ``layout`` (what OUT may hold; the files killed runs leave), ``staged`` (files
staged by workers, committed by the driver).
"""

from flows.store.delta.layout import check_layout, check_path, uncommitted_files
from flows.store.delta.staged import (
    commit_nights,
    discard,
    read_staged,
    write_data_files,
    write_nights_files,
)
from flows.store.delta.tables import (
    CHECKPOINT_EVERY,
    Opened,
    add_actions,
    add_columns,
    append_rows,
    checkpoint_if_due,
    missing_files,
    open_table,
    partition_values,
    partitions_within,
    read_table,
    table_version,
    table_versions,
    vacuum,
    write_night,
)

# flows/store/output.py and flows/score.py call these as ``delta.<name>`` and may change only in
# their imports while another change to them is in flight: the package's names for them,
# until those calls name the modules above.
__all__ = [
    "CHECKPOINT_EVERY",
    "Opened",
    "add_actions",
    "add_columns",
    "append_rows",
    "check_layout",
    "check_path",
    "checkpoint_if_due",
    "commit_nights",
    "discard",
    "missing_files",
    "open_table",
    "partition_values",
    "partitions_within",
    "read_staged",
    "read_table",
    "table_version",
    "table_versions",
    "uncommitted_files",
    "vacuum",
    "write_data_files",
    "write_night",
    "write_nights_files",
]
