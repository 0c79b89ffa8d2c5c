"""Frames set aside on local disk until they are needed again (``flows.staging.Stager``).

What a night's reduction needs of each staged episode (the held columns, about 120 bytes)
grew the driver's memory with the night while its files were scored: set aside in a
temporary Arrow IPC file as each chunk is staged and read back when the night's parts are
assembled, it costs memory only once the files' working sets are gone (issue 39;
docs/performance.md, "Memory flat with the night").

The files are made with ``tempfile`` (``TMPDIR``, which should be a disk, not a tmpfs that
holds them in memory) and removed when read back, or when the frame is dropped unread (a
night that ends in an error) or the process exits.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from pathlib import Path

import polars as pl

from flows.store.errors import StorageError


class Spilled:
    """``frame`` written to a temporary file, read back once (``take``).

    >>> spilled = Spilled(pl.DataFrame({"a": [1, 2]}))
    >>> spilled.height, spilled.path.exists()
    (2, True)
    >>> spilled.take()["a"].to_list(), spilled.path.exists()
    ([1, 2], False)
    """

    def __init__(self, frame: pl.DataFrame) -> None:
        try:
            handle, name = tempfile.mkstemp(prefix="cogscore-held-", suffix=".arrow")
            os.close(handle)
            self.path = Path(name)
            self._remove = weakref.finalize(self, self.path.unlink, missing_ok=True)
            # Compressed: read back into memory of its own (an uncompressed file may be mapped).
            frame.write_ipc(self.path, compression="lz4")
        except OSError as error:
            folder = tempfile.gettempdir()
            raise StorageError(
                f"cannot set a night's scores aside in {folder} (TMPDIR) while its files are "
                f"scored: {error.strerror or error}; point TMPDIR at a folder with room"
            ) from error
        self.height = frame.height

    def take(self) -> pl.DataFrame:
        """The frame, its file removed."""
        frame = pl.read_ipc(self.path)
        self._remove()
        return frame
