"""Containment's private directories: each command's own TMPDIR and HOME.

One directory per command, made in one directory per process (which also holds the
records of its commands' process groups, ``exec.groups``) under the OS temp dir (its
name carries the process's pid and start time, ``disk.owners.owned_prefix``): `recover`
removes a dead process's directory with whatever a kill left in it, never a live one's.
A command's directory is removed after it in the background (``trees.remove_later``:
5 ms for three empty directories on ext4, measured); whatever is left at exit goes with
the process's directory.
"""

from __future__ import annotations

import atexit
import os
import tempfile
import threading
from pathlib import Path

from tidegate.disk.owners import SANDBOX_PREFIX, owned_prefix
from tidegate.exec.trees import remove_tree

_PARENTS: dict[tuple[int, str], Path] = {}
_PARENTS_LOCK = threading.Lock()


def private_dir() -> Path:
    """A new private directory for one command (its TMPDIR and HOME), in this process's
    own directory (``process_dir``)."""
    for _ in range(2):
        try:
            return Path(tempfile.mkdtemp(prefix="c-", dir=process_dir()))
        except FileNotFoundError:  # removed under us (a temp dir cleaner): again
            continue
    raise FileNotFoundError("could not make a sandbox directory")


def process_dir() -> Path:
    """This process's own directory under the OS temp dir, made on first use: the parent
    of its commands' private directories and of its process-group records
    (``exec.groups``). Creating and removing entries in the shared temp dir contends for
    its lock with everything else there (measured: 10 ms a command on a busy machine).
    The name carries this process's pid and start time: `recover` removes it, with
    whatever a kill left in it, once the owner is dead, never while it lives."""
    key = (os.getpid(), tempfile.gettempdir())
    with _PARENTS_LOCK:
        parent = _PARENTS.get(key)
        if parent is None or not parent.is_dir():
            parent = Path(tempfile.mkdtemp(prefix=owned_prefix(SANDBOX_PREFIX)))
            if key not in _PARENTS:
                atexit.register(_remove_parent, key)
            _PARENTS[key] = parent
        return parent


def _remove_parent(key: tuple[int, str]) -> None:
    if key[0] == os.getpid() and (parent := _PARENTS.pop(key, None)) is not None:
        remove_tree(parent)
