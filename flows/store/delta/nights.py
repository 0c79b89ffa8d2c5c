"""A night as the output tables name it: the night column (``dump_date``, or a standing's
``as_of``), a real date written YYYY-MM-DD or None (the undated night, the partition
``dump_date=__HIVE_DEFAULT_PARTITION__``), and the overwrite predicate of one.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Final

from schemas.columns import NIGHT_COLUMNS
from schemas.contract import DUMP_DATE

NIGHT_COLUMN: Final = DUMP_DATE
NULL_PARTITION: Final = "__HIVE_DEFAULT_PARTITION__"
_NIGHT: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_night(night: str | None) -> str | None:
    """`night` if it is None or a real date written YYYY-MM-DD, else `ValueError`.

    >>> check_night("2026-12-01"), check_night(None)
    ('2026-12-01', None)
    >>> check_night("2026-12-01' OR '1'='1")
    Traceback (most recent call last):
    ...
    ValueError: a night is a date written YYYY-MM-DD or None, not "2026-12-01' OR '1'='1"
    """
    if night is None:
        return None
    if not isinstance(night, str) or not _NIGHT.match(night):
        raise ValueError(f"a night is a date written YYYY-MM-DD or None, not {night!r}")
    date.fromisoformat(night)  # 2026-02-30 is refused here
    return night


def night_predicate(night: str | None, column: str = NIGHT_COLUMN) -> str:
    """The overwrite predicate of one night (validated, so nothing can be injected) in the
    table's night column (its first partition column: ``dump_date``, or a standing's
    ``as_of``).

    >>> night_predicate("2026-12-01"), night_predicate(None, "as_of")
    ("dump_date = '2026-12-01'", 'as_of IS NULL')
    """
    checked = check_night(night)
    if column not in NIGHT_COLUMNS:
        raise ValueError(f"a night column is one of {', '.join(NIGHT_COLUMNS)}, not {column!r}")
    return f"{column} IS NULL" if checked is None else f"{column} = '{checked}'"
