"""The names an import resolves models by (``transforms.names``): the names file given
(``--names FILE`` or ``COGSCORE_NAMES``) and the dump's own names (``DUMP_ROOT/
_cogscore_names.csv``), read before the import and kept after it, so that an alias resolves
the same way on every night after."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from flows.store.location import Location
from flows.store.objects import get_object, put_if_absent, put_if_match
from schemas.names import DUMP_NAMES
from transforms.names import NameError_, Names, names_text, read_names

# The environment variable of ``--names`` (a names file: ``schemas.names.NAMES_HEADER``).
NAMES_ENV: Final = "COGSCORE_NAMES"


def names_for(out: Location, names_file: Path | str | None = None) -> Names:
    """The names an import into the dump ``out`` resolves by: the dump's, and those of
    ``names_file`` (``NameError_`` where it cannot be read, or would rename a model the dump
    holds)."""
    given: dict[str, str] = {}
    if names_file is not None:
        path = Path(names_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise NameError_(f"--names {path}: cannot be read ({error})") from None
        given = read_names(text, f"--names {path}")
    return Names(dump=dump_names(out), given=given)


def dump_names(out: Location) -> dict[str, str]:
    """The dump's own names (alias -> model), empty where it has none yet."""
    stored = get_object(out, DUMP_NAMES)
    if stored is None:
        return {}
    return read_names(stored.data.decode("utf-8"), out.child(DUMP_NAMES).display)


def keep_names(out: Location, names: Names) -> None:
    """Add what ``names`` resolved anew to the dump's names (a conditional write: names
    another import added meanwhile are kept, and one it gave another model is refused);
    then nothing is left to add."""
    if not names.added:
        return
    for _ in range(10):
        stored = get_object(out, DUMP_NAMES)
        held = {} if stored is None else read_names(stored.data.decode("utf-8"), DUMP_NAMES)
        clash = sorted(a for a, m in names.added.items() if held.get(a, m) != m)
        if clash:
            raise NameError_(
                f"another import gave {clash[0]!r} another model meanwhile "
                f"({held[clash[0]]!r}): import again"
            )
        data = names_text({**held, **names.added}).encode()
        if stored is None:
            written = put_if_absent(out, DUMP_NAMES, data)
        else:
            written = put_if_match(out, DUMP_NAMES, data, stored.etag)
        if written is not None:
            names.added.clear()
            return
    raise NameError_(f"{out.child(DUMP_NAMES).display}: kept changing while it was written")
