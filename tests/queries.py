"""Counting the polars queries a piece of work runs (issue 48's query-count tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from polars.lazyframe import engine


def polars_queries(monkeypatch: pytest.MonkeyPatch, work: Callable[[], object]) -> int:
    """The polars queries ``work`` runs (each collect or eager step; nested ones once)."""
    count, depth = [0], [0]
    for name in ("collect", "collect_all"):
        original = getattr(engine._LocalEngine, name)

        def counted(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            count[0] += depth[0] == 0
            depth[0] += 1
            try:
                return _original(self, *args, **kwargs)
            finally:
                depth[0] -= 1

        monkeypatch.setattr(engine._LocalEngine, name, counted)
    work()
    return count[0]
