"""The port's first step for every path: check it lexically, then resolve it under the root.

``.git`` is refused: it is runtime state (it can hold credentials in remote URLs), not
workspace content.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.refusal import PathRefused
from tidegate.workspace.confine.resolution import Resolved
from tidegate.workspace.ignores import ALWAYS_EXCLUDED
from tidegate.workspace.port.errors import NotAFile, PathNotFound

MAX_ATTEMPTS = 16
"""How often an operation retries a path that keeps being swapped under it."""


def relative(handle: RootHandle, path: str) -> PurePosixPath:
    """The lexically checked root-relative path; ``.git`` is refused too."""
    rel = handle.relative(path)
    if ALWAYS_EXCLUDED in rel.parts:
        raise PathRefused(path, "git_dir")
    return rel


def mutable(handle: RootHandle, path: str) -> PurePosixPath:
    """``relative``, refusing the root itself (it is no file to write)."""
    rel = relative(handle, path)
    if not rel.parts or rel.parts == (".",):
        raise NotAFile(path, "dir", "the workspace root itself cannot be written")
    return rel


def resolve_existing(
    handle: RootHandle, rel: PurePosixPath, path: str, *, follow_final: bool
) -> Resolved:
    """``rel`` resolved beneath the root; a missing component is ``PathNotFound``."""
    try:
        return handle.resolve(rel, follow_final=follow_final)
    except (FileNotFoundError, NotADirectoryError):
        raise PathNotFound(path) from None
