"""Whether a command changed tidegate's own configuration in the workspace.

Commands write where they like inside the workspace (that is what they are for), and the
inventory that attests their effects skips ignored paths, ``.tidegate/`` among them. So the
executor reads the two configuration files itself before and after every command-like call
and compares them the way the next run would read them: ``.tidegate/config.toml`` byte for
byte, ``pyproject.toml`` by its ``[tool.tidegate]`` table only (dependency edits are fine).
A change ends the session: the configuration is the user's, and what a command did to it
must be looked at by a person before anything else runs.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tidegate.config.local_file import LocalFile, read_local
from tidegate.config.pyproject import policy_table_change
from tidegate.config.records import CONFIG_LOCAL, CONFIG_PYPROJECT
from tidegate.errors import UsageError


class ConfigSnapshot(msgspec.Struct, frozen=True):
    pyproject: bytes | None
    local: LocalFile


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()  # followed like load_policy follows it
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _local(root: Path) -> LocalFile:
    """Read as ``load_policy`` reads it: a link swapped in for it is a change, even to a
    file with the same bytes, since the next run will not follow it."""
    try:
        return read_local(root)
    except UsageError as exc:
        return LocalFile(None, str(exc))


def config_snapshot(root: Path) -> ConfigSnapshot:
    return ConfigSnapshot(_read(root / CONFIG_PYPROJECT), _local(root))


def config_change(before: ConfigSnapshot, after: ConfigSnapshot) -> str | None:
    """What changed in tidegate's configuration between the two snapshots, or None."""
    if before.local != after.local:
        return f"{CONFIG_LOCAL} changed"
    return policy_table_change(before.pyproject, after.pyproject)
