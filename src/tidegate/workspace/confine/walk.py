"""Walking a directory tree from a descriptor, depth first in sorted order, following
nothing."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import NamedTuple

from tidegate.workspace.confine.entries import DIR_FLAGS, is_race


class WalkItem(NamedTuple):
    """One entry met by ``RootHandle.walk``; ``dir_fd`` is its parent, valid during the
    iteration step that yields it. (A named tuple: walks create one per entry.)"""

    rel: str
    parts: tuple[str, ...]
    name: str
    dir_fd: int
    st: os.stat_result
    depth: int
    descended: bool

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)


def walk_fd(
    top: int,
    base: tuple[str, ...],
    max_depth: int,
    skip: Callable[[str, bool], bool] | None,
    after: tuple[str, ...] | None,
) -> Iterator[WalkItem]:
    stack: list[tuple[int, tuple[str, ...], Iterator[str]]] = []
    try:
        stack.append((top, base, iter(_sorted_names(top))))
        while stack:
            dir_fd, parts, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(dir_fd)
                stack.pop()
                continue
            child = (*parts, name)
            if after is not None and child <= after and after[: len(child)] != child:
                continue  # this subtree lies entirely before the cursor
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # vanished while we walked
            rel = "/".join(child)
            is_dir = stat.S_ISDIR(st.st_mode)
            if skip is not None and skip(rel, is_dir):
                continue
            depth = len(child) - len(base)
            descend = is_dir and depth < max_depth
            if after is None or child > after:
                yield WalkItem(rel, child, name, dir_fd, st, depth, descend)
            if descend:
                try:
                    sub = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
                except OSError as exc:
                    if is_race(exc) or exc.errno == errno.EACCES:
                        continue  # replaced by a symlink or unreadable: not descended
                    raise
                stack.append((sub, child, iter(_sorted_names(sub))))
    finally:
        for fd, _, _ in stack:
            with suppress(OSError):
                os.close(fd)


def _sorted_names(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as it:
        return sorted(entry.name for entry in it)
