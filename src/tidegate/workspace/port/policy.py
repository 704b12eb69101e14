"""What no change through the port may make: a change to tidegate's own configuration.

Judged at commit time, under the commit lock, on the path as it resolved (``self/.tidegate``
with ``self -> .`` is ``.tidegate``), so neither a spelling nor a symlink swapped in after the
approval decision gets a write past it:

* nothing resolving into ``.tidegate/`` is written or deleted;
* the file the root's ``pyproject.toml`` leads to (itself, or its symlink's target) may
  change only where its ``[tool.tidegate]`` table stays the same (``policy_table_change``).

The approval policy (``tools/policy.py``) refuses the same calls earlier with a clearer
reason; this is the check that holds when that one was raced.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from tidegate.config.pyproject import policy_table_change
from tidegate.config.records import CONFIG_PYPROJECT
from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.entries import FILE_READ_FLAGS
from tidegate.workspace.confine.refusal import PathRefused
from tidegate.workspace.confine.resolution import Resolved

CONFIG_DIR = ".tidegate"


def check_config_change(
    handle: RootHandle, where: Resolved, path: str, old: bytes | None, new: bytes | None
) -> None:
    """Raise PathRefused when replacing ``old`` with ``new`` at ``where`` (None: absent)
    changes tidegate's configuration."""
    rel = where.rel
    if rel.parts and rel.parts[0].lower() == CONFIG_DIR:  # case-insensitive file systems
        raise PathRefused(
            path, "tidegate_config", f"resolves to {rel}, inside tidegate's own .tidegate/"
        )
    if rel == policy_file(handle) and (problem := policy_table_change(old, new)):
        raise PathRefused(path, "tidegate_config", problem)


def policy_file(handle: RootHandle) -> PurePosixPath | None:
    """Where the root's ``pyproject.toml`` leads inside the root (None: nowhere inside)."""
    try:
        found = handle.resolve(PurePosixPath(CONFIG_PYPROJECT), follow_final=True)
    except (OSError, PathRefused):
        return None
    found.close()
    return found.rel


def read_current(where: Resolved) -> bytes | None:
    """The bytes of the regular file at ``where`` (None when it is no readable file)."""
    assert where.name is not None
    try:
        fd = os.open(where.name, FILE_READ_FLAGS, dir_fd=where.dir_fd)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
