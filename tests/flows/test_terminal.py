"""The progress bars of ``score``/``nightly``/``rescore`` and ``import-kaggle``: one rule for
when a bar is drawn (a person watching stderr) and one bar (``progress_bar``)."""

from __future__ import annotations

import pytest

from flows.present.imports import ImportProgress
from flows.present.terminal import TerminalProgress, progress_for
from flows.records import NoProgress


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """stderr taken for a terminal that can redraw (rich reads TTY_COMPATIBLE and TERM)."""
    _no_overrides(monkeypatch)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    return monkeypatch


def _no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of the variables by which a user tells rich what stderr is."""
    for name in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)


def test_a_bar_is_drawn_for_a_person_at_a_terminal(terminal: pytest.MonkeyPatch) -> None:
    assert isinstance(progress_for(quiet=False), TerminalProgress)
    assert ImportProgress(enabled=True).bar is not None


@pytest.mark.parametrize("term", ["dumb", "unknown"])
def test_no_bar_on_a_terminal_that_cannot_redraw(terminal: pytest.MonkeyPatch, term: str) -> None:
    terminal.setenv("TERM", term)
    assert isinstance(progress_for(quiet=False), NoProgress)
    assert ImportProgress(enabled=True).bar is None


def test_no_bar_when_quiet_is_asked_for(terminal: pytest.MonkeyPatch) -> None:
    assert isinstance(progress_for(quiet=True), NoProgress)
    assert ImportProgress(enabled=False).bar is None


def test_no_bar_into_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under pytest stderr is captured: not a terminal."""
    _no_overrides(monkeypatch)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert isinstance(progress_for(quiet=False), NoProgress)
    assert ImportProgress(enabled=True).bar is None


def test_a_run_and_an_import_draw_the_same_bar(terminal: pytest.MonkeyPatch) -> None:
    run = progress_for(quiet=False)
    assert isinstance(run, TerminalProgress)
    imported = ImportProgress(enabled=True).bar
    assert imported is not None
    assert [type(c) for c in run.bar.columns] == [type(c) for c in imported.columns]
