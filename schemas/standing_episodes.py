"""``standing_episodes``: the latest standing's episodes that come from nights before it.

A standing is made from the one before it and the night's results (``flows.standings``); its
statistics read the episodes behind every result it holds, which lie in as many nights as
the results come from. What comparisons read of each (``COMPARED_COLUMNS``, the night it
comes from its ``dump_date``) is kept here for the latest standing, those of its own night
aside (they are its night's ``episode_scores``): the next nightly makes its standing from
them and the standing's own night, reading no other night. Each run that makes standings
replaces them with its last standing's.
"""

from __future__ import annotations

from typing import Final

from schemas.columns import (
    AS_OF,
    COMPARED_COLUMNS,
    COMPONENT_DTYPES,
    EPISODE_RULES,
    EPISODE_SCORES_DTYPES,
    PROVENANCE_RULES,
    Column,
    Table,
    text_column,
)
from schemas.contract import DUMP_DATE, Col

STANDING_EPISODES_TABLE: Final = Table(
    "standing_episodes",
    {
        AS_OF: text_column(nullable=True),
        # (as ``episode_scores`` declares them)
        **{
            name: EPISODE_RULES.get(
                name, Column(EPISODE_SCORES_DTYPES[name], nullable=name in COMPONENT_DTYPES)
            )
            for name in COMPARED_COLUMNS
        },
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    sort=(DUMP_DATE, Col.MODEL, Col.CATEGORY, Col.TASK, Col.EPISODE_ID),
    strict=True,
    ordered=True,
    unique=(AS_OF, DUMP_DATE, Col.EPISODE_ID),
)
