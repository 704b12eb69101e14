"""Where the gym writes: ``<state root>/gym`` and below, every directory opened from the
state root without following a link (``tidegate.disk.linksafe``), so that nothing a benchmark
instance, a scenario's commands or anyone else planted there sends a write elsewhere.

``gym_root`` is ``<state root>/gym``; its parent, the validated state root, is the one
directory opened as named.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from tidegate.disk.linksafe import opened_dir, replace_file
from tidegate.errors import UsageError

GYM_DIR = "gym"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")


def make_gym_root(state_root: Path) -> Path:
    """``<state root>/gym``, made (mode 0700) unless it is a directory; a link there is
    refused, never followed."""
    with opened_dir(state_root, GYM_DIR, create=True):
        pass
    return state_root / GYM_DIR


@contextlib.contextmanager
def gym_dir(gym_root: Path, *parts: str, create: bool = False) -> Iterator[int]:
    """A descriptor of ``gym_root/parts...`` (made when ``create``), no component below
    the state root followed."""
    with opened_dir(gym_root.parent, gym_root.name, *parts, create=create) as fd:
        yield fd


def write_artifact(gym_root: Path, directory: Path, name: str, data: bytes) -> Path:
    """Replace ``directory/name`` (``directory`` below ``gym_root``, made if missing)
    atomically; its path."""
    with gym_dir(gym_root, *directory.relative_to(gym_root).parts, create=True) as fd:
        replace_file(fd, name, data, mode=0o600, shown=directory / name)
    return directory / name


def check_plain_name(value: str, what: str) -> str:
    """``value`` if it can name a directory of the gym: letters, digits and ``_ . + -``,
    not starting with ``.`` or ``-``, no ``/`` or ``..``, at most 200 characters."""
    if not _PLAIN_NAME.fullmatch(value) or ".." in value:
        raise UsageError(
            f"{what} {value!r} is not a plain name (letters, digits, '_', '.', '+', '-'; "
            "no '/' or '..'; at most 200 characters)"
        )
    return value
