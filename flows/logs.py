"""cogscore's logs: ``--log-level`` and ``--log-format text|json`` (one JSON object per line,
each with the run id, for log shippers), on stderr."""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Final

LOGGER: Final = "cogscore"
run_id: ContextVar[str | None] = ContextVar("cogscore_run_id", default=None)


class _WithRunId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.run_id = run_id.get()
        return True


class JsonLines(logging.Formatter):
    """One JSON object per record: time (UTC), level, logger, run id, message."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "run_id": getattr(record, "run_id", None),
            "message": record.getMessage(),
        }
        if record.exc_info and record.levelno <= logging.DEBUG:
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(level: str = "info", fmt: str = "text") -> None:
    """Send cogscore's records at ``level`` and above to stderr, as text or JSON lines."""
    logger = logging.getLogger(LOGGER)
    logger.handlers.clear()
    handler = logging.StreamHandler()
    handler.addFilter(_WithRunId())
    handler.setFormatter(
        JsonLines()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s [%(run_id)s] %(message)s")
    )
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False


def log() -> logging.Logger:
    return logging.getLogger(LOGGER)
