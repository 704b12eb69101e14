"""Objects of tidegate's own (the run's request and proposal blobs, T0's two commits, the
trees and commit of ``refs/tidegate/keep``) written into the object store without a git process, or by git when that is not safe.

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

from tidegate.git.settings import IDENTITY
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


def write_object(objects: Path, kind: str, data: bytes) -> str | None:
    """Write one object (``blob``, ``commit``) into ``objects``; its id. None, and git is
    left to write it, when its directory is not a plain directory or its name is taken by
    anything but a file: every step below goes through the directory's descriptor, opened
    without following a link, so nothing planted there sends a write elsewhere."""
    body = f"{kind} {len(data)}\0".encode() + data
    oid = hashlib.sha1(body, usedforsecurity=False).hexdigest()
    name = oid[2:]
    with contextlib.suppress(FileExistsError):
        os.mkdir(objects / oid[:2], 0o777)  # as git: the umask decides
    try:
        dir_fd = os.open(
            objects / oid[:2], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        )
    except OSError:
        return None
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISREG(st.st_mode):
                return None
            # there already: freshened, as git does, so that no prune takes it
            os.utime(name, dir_fd=dir_fd, follow_symlinks=False)
            return oid
        _write_new(dir_fd, name, zlib.compress(body, 1))  # core.looseCompression's default
    finally:
        os.close(dir_fd)
    return oid


def _write_new(dir_fd: int, name: str, compressed: bytes) -> None:
    """A temporary file in the directory, linked into place (renamed where the file
    system has no hard links, as git does)."""
    temp = f"tmp_obj_{os.getpid()}_{os.urandom(6).hex()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(temp, flags, 0o444, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(compressed)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        try:
            os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except FileExistsError:
            pass  # written meanwhile: the same bytes
        except OSError:
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)


def write_blob(repo: Repository, data: bytes) -> str:
    """``git hash-object -w --stdin`` (no filters: the bytes as given)."""
    objects = objects_dir(repo)
    oid = write_object(objects, "blob", data) if objects is not None else None
    if oid is None:
        oid = repo.git.run("hash-object", "-w", "--stdin", input=data).text.strip()
    return oid


def write_commit(repo: Repository, tree: str, parent: str | None, message: str) -> str:
    """``git commit-tree TREE [-p PARENT] -m MESSAGE`` with tidegate's identity."""
    objects = objects_dir(repo)
    oid = None
    parents = [parent] if parent is not None else []
    if objects is not None and all(_HEX.fullmatch(o) for o in (tree, *parents)):
        now = int(time.time())
        offset = time.localtime(now).tm_gmtoff
        sign = "-" if offset < 0 else "+"
        offset = abs(offset) // 60
        stamp = f"{now} {sign}{offset // 60:02d}{offset % 60:02d}"
        author = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}> {stamp}"
        committer = f"{IDENTITY['GIT_COMMITTER_NAME']} <{IDENTITY['GIT_COMMITTER_EMAIL']}> {stamp}"
        text = (
            f"tree {tree}\n{''.join(f'parent {p}{chr(10)}' for p in parents)}"
            f"author {author}\ncommitter {committer}\n\n{message.rstrip(chr(10))}\n"
        )
        oid = write_object(objects, "commit", text.encode())
    if oid is None:
        flags = [a for p in parents for a in ("-p", p)]
        oid = repo.git.out("commit-tree", tree, *flags, "-m", message, env=IDENTITY)
    return oid


def write_tree(repo: Repository, entries: dict[str, tuple[str, str]]) -> str:
    """A tree of ``name -> (mode, oid)`` (``40000`` a tree, ``100644`` a blob), in git's
    order (a tree's name compared as if it ended in ``/``); ``git mktree`` where tidegate
    may not write the object itself."""
    names = sorted(entries, key=lambda n: n + "/" if entries[n][0] == "40000" else n)
    objects = objects_dir(repo)
    if objects is not None and all(_HEX.fullmatch(entries[n][1]) for n in names):
        body = b"".join(
            f"{entries[n][0]} {n}\0".encode() + bytes.fromhex(entries[n][1]) for n in names
        )
        oid = write_object(objects, "tree", body)
        if oid is not None:
            return oid
    kinds = {"40000": "tree", "100644": "blob"}
    text = "".join(f"{entries[n][0]} {kinds[entries[n][0]]} {entries[n][1]}\t{n}\0" for n in names)
    return repo.git.run("mktree", "-z", input=text.encode()).text.strip()
