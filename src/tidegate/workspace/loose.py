"""Objects of tidegate's own (the run's request and proposal blobs, T0's two commits)
written into the object store without a git process, or by git when that is not safe.

A loose object is a file of its own: ``objects/<2 hex>/<38 hex>``, the zlib stream of
``"<kind> <size>\\0" + content``, named by the SHA-1 of that. The format has not changed
since git's first release. A run writes four such objects, one git process each (~2 ms
apiece on a 2-core machine); writing them here takes microseconds.

Written here only where the result is what git would write, and git otherwise:

- the repository hashes with SHA-1 (its HEAD is a 40-digit id; a SHA-256 repository's
  objects are git's to write);
- ``objects/`` is a directory without the set-group-id bit and not writable by group or
  others (a shared repository, whose objects need modes git sets);
- the repository's own ``config`` names no shared repository, object format, fsync
  setting or include (anything that could change how git writes an object).

As git does, an object already present is only freshened (its mtime), a new one is
written to a temporary file in its directory and linked into place, and loose objects
are not fsynced (git's default).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import time
import zlib
from pathlib import Path

from tidegate.git import IDENTITY, Git
from tidegate.workspace.repo import Repository

_HEX = re.compile(r"[0-9a-f]{40}")
_SETTINGS = (b"sharedrepository", b"objectformat", b"fsync", b"[include", b"[includeif")


def objects_dir(repo: Repository) -> Path | None:
    """Where this repository's loose objects go, when tidegate may write them itself."""
    if len(repo.head) != 40:
        return None
    objects = repo.common_dir / "objects"
    try:
        st = os.lstat(objects)
        config = (repo.common_dir / "config").read_bytes().lower()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & (stat.S_ISGID | 0o022):
        return None
    if any(name in config for name in _SETTINGS):
        return None
    return objects


def write_object(objects: Path, kind: str, data: bytes) -> str:
    """Write one object (``blob``, ``commit``) into ``objects``; its id."""
    body = f"{kind} {len(data)}\0".encode() + data
    oid = hashlib.sha1(body, usedforsecurity=False).hexdigest()
    directory = objects / oid[:2]
    final = directory / oid[2:]
    try:
        os.utime(final)  # there already: freshened, as git does, so no prune takes it
        return oid
    except FileNotFoundError:
        pass
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o777)  # as git: the umask decides
    temp = directory / f"tmp_obj_{os.getpid()}_{os.urandom(6).hex()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o444)
    try:
        try:
            view = memoryview(zlib.compress(body, 1))  # core.looseCompression's default
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        try:
            os.link(temp, final)
        except FileExistsError:
            pass  # written meanwhile: the same bytes
        except OSError:
            os.replace(temp, final)  # no hard links here: git renames too
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return oid


def write_blob(repo: Repository, data: bytes) -> str:
    """``git hash-object -w --stdin`` (no filters: the bytes as given)."""
    objects = objects_dir(repo)
    if objects is None:
        return repo.git.run("hash-object", "-w", "--stdin", input=data).text.strip()
    return write_object(objects, "blob", data)


def write_commit(repo: Repository, git: Git, tree: str, parent: str, message: str) -> str:
    """``git commit-tree TREE -p PARENT -m MESSAGE`` with tidegate's identity."""
    objects = objects_dir(repo)
    if objects is None or not all(_HEX.fullmatch(oid) for oid in (tree, parent)):
        return git.out("commit-tree", tree, "-p", parent, "-m", message, env=IDENTITY)
    now = int(time.time())
    offset = time.localtime(now).tm_gmtoff
    sign = "-" if offset < 0 else "+"
    offset = abs(offset) // 60
    stamp = f"{now} {sign}{offset // 60:02d}{offset % 60:02d}"
    author = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}> {stamp}"
    committer = f"{IDENTITY['GIT_COMMITTER_NAME']} <{IDENTITY['GIT_COMMITTER_EMAIL']}> {stamp}"
    text = (
        f"tree {tree}\nparent {parent}\nauthor {author}\ncommitter {committer}\n\n"
        f"{message.rstrip(chr(10))}\n"
    )
    return write_object(objects, "commit", text.encode())
