"""Removing a scratch tree that a command (or an agent) may have made hard to remove."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path


def remove_tree(path: Path) -> None:
    """Remove ``path`` even where read-only directories were left in it: every directory
    (not following symlinks) is made writable first; what still resists is left behind
    rather than raised, since a scratch tree's removal must not mask the real outcome."""
    for dirpath, dirnames, _files in os.walk(path):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if not os.path.islink(child):
                with contextlib.suppress(OSError):
                    os.chmod(child, 0o700)
    shutil.rmtree(path, ignore_errors=True)
