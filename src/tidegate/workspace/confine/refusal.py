"""The lexical layer: paths refused before anything touches the disk, and why."""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import Literal

from tidegate.errors import UsageError

RefusalReason = Literal[
    "empty",
    "nul",
    "too_long",
    "absolute",
    "home",
    "parent",
    "backslash",
    "outside_root",
    "symlink_escape",
    "symlink_loop",
    "unstable",
    "git_dir",
    "tidegate_config",
]

_REASONS: dict[str, str] = {
    "empty": "an empty path",
    "nul": "contains a NUL byte",
    "too_long": "longer than the file system allows",
    "absolute": "an absolute path outside the workspace root",
    "home": "'~' paths are not expanded; give a path relative to the workspace root",
    "parent": "'..' components are not accepted",
    "backslash": "backslashes are not path separators here; use '/'",
    "outside_root": "resolves outside the workspace root",
    "symlink_escape": "a symlink on this path points outside the workspace root",
    "symlink_loop": "too many symlinks on this path",
    "unstable": "the path kept changing while it was being resolved",
    "git_dir": "paths inside .git are repository internals, not workspace files",
    "tidegate_config": "tidegate's own configuration belongs to the user; tools never change it",
}

NAME_MAX = 255
"""Bytes in one path component (Linux and macOS); longer names fail with ENAMETOOLONG."""
PATH_MAX = 4095


class PathRefused(UsageError):
    """A path that would leave the workspace root, or that is not a usable path at all."""

    def __init__(self, path: str, reason: RefusalReason, detail: str = "") -> None:
        self.path = path
        self.reason: RefusalReason = reason
        super().__init__(f"{path!r}: {detail or _REASONS[reason]}")


def check_relative(path: str) -> PurePosixPath:
    """Lexical validation of a root-relative POSIX path; no file system access.

    ``""`` is refused; ``"."`` (and ``"./"``) mean the root itself and come back as
    ``PurePosixPath(".")``. Repeated and trailing slashes and ``.`` components are dropped.
    """
    if not path:
        raise PathRefused(path, "empty")
    if "\0" in path:
        raise PathRefused(path, "nul")
    if path.startswith("/"):
        raise PathRefused(path, "absolute")
    if path.startswith("~"):
        raise PathRefused(path, "home")
    if "\\" in path:
        raise PathRefused(path, "backslash")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathRefused(path, "parent")
    _check_lengths(path, parts)
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _check_lengths(path: str, parts: list[str]) -> None:
    """Refuse, before any system call, a name the kernel would refuse with ENAMETOOLONG
    (which would otherwise surface mid-operation as an error of unknown outcome)."""
    for part in parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            raise PathRefused(
                path, "too_long", f"a component of {size} bytes (at most {NAME_MAX} allowed)"
            )
    if len(os.fsencode(path)) > PATH_MAX:
        raise PathRefused(path, "too_long", f"a path of more than {PATH_MAX} bytes")


def strip_root(path: str, roots: tuple[PurePosixPath, ...]) -> str | None:
    """The part of an absolute ``path`` below one of ``roots``, compared by components
    (so ``/w/proj_evil`` is not below ``/w/proj``); None when it is below none of them."""
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    for root in roots:
        n = len(root.parts) - 1  # parts[0] of an absolute PurePosixPath is "/"
        if parts[:n] == root.parts[1:]:
            return "/".join(parts[n:]) or "."
    return None
