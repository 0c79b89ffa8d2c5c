"""Storage errors: one line, naming the URL, never a stack of Rust debug output.

delta-rs and obstore report a failed request as a multi-line Rust error chain (ANSI arrows, a
"Debug source" dump, the server's XML). A person running `cogscore nightly` needs one line that
says which URL failed and what to fix, so every error from the storage layer is translated
here into a `StorageError` whose message is that line. The classification is textual because
the libraries raise the same Python types (`OSError`, `GenericError`) for every cause; the codes
matched (`NoSuchBucket`, `InvalidAccessKeyId`, ...) are S3's, which MinIO, R2 and moto share.
"""

from __future__ import annotations

import re
from typing import ClassVar, Final

from schemas.exits import ExitCode


class StorageError(Exception):
    """A storage operation failed; the message is one line naming the URL."""

    code: ClassVar[ExitCode] = ExitCode.STORAGE


class BadLocation(StorageError):
    """A location or storage option that cannot be right as written: the user's to fix."""

    code = ExitCode.USAGE


class OutputBusy(StorageError):
    """Another run holds the output's lease (the message names it and when it expires)."""

    code = ExitCode.BUSY


class LeaseLost(OutputBusy):
    """Our lease expired and another run took it over: this run must stop writing."""


class UnsafeStore(StorageError):
    """The store ignores conditional writes, so two writers could both believe they won."""

    code = ExitCode.USAGE


class NothingThere(StorageError):
    """A location that holds nothing to list: no such folder, or no object under the prefix
    (the store answered; a wrong path, not a failing service)."""


class NoOutput(StorageError):
    """The output named holds no cogscore tables: a typo, or no run recorded into it yet."""

    code = ExitCode.USAGE


class ServiceUnreachable(StorageError):
    """A service a run needs (the Prefect API of ``PREFECT_API_URL``) does not answer."""


class UnlockRefused(StorageError):
    """``cogscore unlock`` refused: no lease, another run's lease, or a run still alive."""

    code = ExitCode.USAGE


class UnknownRun(StorageError):
    """``--as-of`` names a run the output never recorded, or one whose tables ``vacuum``
    has since deleted."""

    code = ExitCode.USAGE


class BrokenLog(StorageError):
    """A table's Delta log holds statistics that are not JSON (``Infinity``, written by
    cogscore before contract 1.4): no Delta reader opens it; ``cogscore repair OUT`` (or the
    next run into OUT) rewrites them (``flows.store.delta.healing``)."""

    code = ExitCode.USAGE


class LegacyLayout(StorageError):
    """The output folder holds the snapshot layout (`current`, `_versions/`), not Delta tables."""

    code = ExitCode.USAGE


_ANSI: Final = re.compile(r"\x1b\[[0-9;]*m")

# (pattern in the library's message, what it means for the person running the command)
_CAUSES: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (
        re.compile(r"InvalidAccessKeyId|SignatureDoesNotMatch|ExpiredToken|InvalidToken"),
        "the credentials were refused (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)",
    ),
    (re.compile(r"NoSuchBucket"), "the bucket does not exist"),
    (
        re.compile(r"AccessDenied|PermissionDenied|lacked the necessary privileges|Forbidden"),
        "permission denied",
    ),
    (re.compile(r"[Pp]ermission denied"), "permission denied"),
    (
        re.compile(r"URL scheme is not allowed"),
        "plain http endpoint refused (set AWS_ALLOW_HTTP=true for a test server)",
    ),
    (
        re.compile(
            r"error sending request|tcp connect error|Connection refused|dns error"
            r"|timed out|operation timed out|Timeout|No route to host"
        ),
        "the endpoint is unreachable",
    ),
    (
        re.compile(r"No such file or directory|not found|Not Found|NotFound|NoSuchKey"),
        "not found",
    ),
)


def _first_line(text: str) -> str:
    """The library's message up to its debug dump, on one line, at most 200 characters."""
    clean = _ANSI.sub("", text).split("Debug source:")[0].replace("↳", " ")
    return " ".join(clean.split())[:200]


def cause_of(exc: BaseException) -> str:
    """What an exception from obstore, delta-rs or the OS means, in a few words.

    >>> cause_of(OSError("404 Not Found: <Code>NoSuchBucket</Code>"))
    'the bucket does not exist'
    >>> cause_of(ValueError("something new\\nDebug source: ..."))
    'something new'
    """
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError) and "NoSuchBucket" not in str(exc):
        return "not found"
    text = _ANSI.sub("", str(exc))
    for pattern, meaning in _CAUSES:
        if pattern.search(text):
            return meaning
    return _first_line(text) or type(exc).__name__


def translate(exc: BaseException, action: str, where: str) -> StorageError:
    """A `StorageError` saying `action` on `where` (a URL without credentials) failed, and why.

    >>> str(translate(OSError("tcp connect error: Connection refused"), "open", "s3://b/out"))
    'cannot open s3://b/out: the endpoint is unreachable'
    """
    if isinstance(exc, StorageError):
        return exc
    return StorageError(f"cannot {action} {where}: {cause_of(exc)}")
