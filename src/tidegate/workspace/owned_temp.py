"""Temporary directories that belong to a process rather than to a run (a sub-agent's
private copy of the workspace), and their removal once that process is dead.

Each is made in the OS temp dir with a tidegate prefix and the owner's pid and kernel
start time recorded inside it (``claims.mark_owner``), the liveness test of run claims.
A process killed while its copy exists leaves it behind; ``tidegate recover`` removes
the copies whose owner is dead and keeps those of a live process. Only real directories
with the prefix, owned by this user, are considered: a symlink planted at such a name is
never followed, and a directory without a readable owner record is left alone (its owner
may be between making it and marking it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from tidegate.exec.trees import remove_tree
from tidegate.workspace.claims import directory_owner, mark_owner

SUBAGENT_PREFIX = "tidegate-subagent-"
AGENT_PREFIX = "tidegate-agent-"
"""An agent CLI's private copy and home (``planners.agent.run_isolated``)."""
OWNED_PREFIXES = (SUBAGENT_PREFIX, AGENT_PREFIX)


def make_owned_temp(prefix: str) -> Path:
    """A fresh directory in the OS temp dir, marked as this process's."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        mark_owner(path)
    except BaseException:
        remove_tree(path)
        raise
    return path


def remove_dead_owned(parent: Path | None = None) -> list[str]:
    """Remove the owned temporary directories (``OWNED_PREFIXES``) in ``parent`` (the OS
    temp dir) whose owner process is dead; the removed paths, sorted."""
    where = parent if parent is not None else Path(tempfile.gettempdir())
    removed = []
    with contextlib.suppress(FileNotFoundError), os.scandir(where) as entries:
        candidates = [e for e in entries if e.name.startswith(OWNED_PREFIXES)]
    for entry in candidates:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue  # a symlink or a file planted at the name, or another user's
        path = Path(entry.path)
        owner = directory_owner(path)
        if owner is None or owner.alive:
            continue
        remove_tree(path)
        removed.append(str(path))
    return sorted(removed)
