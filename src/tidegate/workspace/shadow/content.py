"""Whether a shadow's files are the candidate's: the changed paths hashed as git would."""

from __future__ import annotations

import os
from pathlib import Path

from tidegate.git.command import Git
from tidegate.text.paths import git_quoted
from tidegate.workspace.changes import PathChange


def mismatched_paths(git: Git, root: Path, changes: list[PathChange]) -> list[str]:
    """Changed paths whose content or mode in the shadow at ``root`` (its ``git``) is not
    the candidate's.

    Hashes only those paths (as ``git hash-object`` would, filters included) and never
    writes the shadow's index, so the cost does not grow with the repository."""
    regular = [c for c in changes if c.after is not None and c.after.is_regular]
    hashes = _hash_files(git, root, [c.path for c in regular])
    wrong: list[str] = []
    for change in changes:
        full = root / change.path
        after = change.after
        if after is None:
            if os.path.lexists(full):
                wrong.append(change.path)
        elif after.mode == "120000":
            target = os.fsencode(os.readlink(full)) if os.path.islink(full) else None
            if target is None or _blob_id(git, target) != after.blob:
                wrong.append(change.path)
        elif after.is_regular:
            executable = os.path.isfile(full) and os.access(full, os.X_OK)
            if hashes.get(change.path) != after.blob or executable != after.executable:
                wrong.append(change.path)
    return wrong


def _blob_id(git: Git, data: bytes) -> str:
    return git.run("hash-object", "--stdin", "--no-filters", input=data).text.strip()


def _hash_files(git: Git, root: Path, paths: list[str]) -> dict[str, str]:
    """The blob ids of those of ``paths`` that are files, filters included, in one
    ``hash-object --stdin-paths`` (which reads a line starting with ``"`` as C-quoted:
    each path is quoted, so no name is misread)."""
    present = [p for p in paths if os.path.isfile(root / p)]
    if not present:
        return {}
    listing = b"".join(git_quoted(p) + b"\n" for p in present)
    ids = git.run("hash-object", "--stdin-paths", input=listing).text.split()
    return dict(zip(present, ids, strict=True))
