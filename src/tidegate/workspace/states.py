"""Typed entry states: what is at a workspace path, as mutation evidence can compare it.

A state is a kind plus a hash. Files carry the SHA-256 of their bytes; symlinks the hash
of ``b"symlink\\0" + target``; special entries (fifos, sockets, devices) the hash of a
fixed description of what they are; directories and missing paths carry no hash, so a
directory appearing is ``missing -> dir`` with two null hashes. Two states are equal
exactly when nothing a byte-level observer could see has changed at that path (the
permission bits are not part of a state).
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Literal, get_args

import msgspec

Kind = Literal["missing", "file", "dir", "symlink", "special"]
KINDS: tuple[str, ...] = get_args(Kind)

_PREFIX = "sha256:"
_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    """``"sha256:<hex>"`` of ``data``."""
    return _PREFIX + hashlib.sha256(data).hexdigest()


def is_sha256(value: str) -> bool:
    """True for a well-formed ``"sha256:<64 lowercase hex>"`` string."""
    digest = value.removeprefix(_PREFIX)
    return (
        value.startswith(_PREFIX)
        and len(digest) == 64
        and all(c in "0123456789abcdef" for c in digest)
    )


class EntryState(msgspec.Struct, frozen=True):
    """The kind of entry at a path and, for files, symlinks and specials, its hash."""

    kind: Kind
    sha256: str | None

    def __post_init__(self) -> None:
        hashed = self.kind in ("file", "symlink", "special")
        if hashed != (self.sha256 is not None):
            raise ValueError(f"a {self.kind} state {'needs' if hashed else 'has no'} hash")
        if self.sha256 is not None and not is_sha256(self.sha256):
            raise ValueError(f"not a sha256 digest: {self.sha256!r}")

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "sha256": self.sha256}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> EntryState:
        kind, digest = data.get("kind"), data.get("sha256")
        if kind not in KINDS or not (digest is None or isinstance(digest, str)):
            raise ValueError(f"not an entry state: {data!r}")
        return cls(kind, digest)  # type: ignore[arg-type]

    @classmethod
    def file(cls, content: bytes) -> EntryState:
        return cls("file", sha256_bytes(content))

    @classmethod
    def symlink(cls, target: bytes) -> EntryState:
        return cls("symlink", sha256_bytes(b"symlink\0" + target))

    @classmethod
    def special(cls, st: os.stat_result) -> EntryState:
        return cls("special", sha256_bytes(b"special\0" + describe_special(st).encode()))


MISSING = EntryState("missing", None)
DIRECTORY = EntryState("dir", None)


def describe_special(st: os.stat_result) -> str:
    """A deterministic description of a non-file, non-dir, non-symlink entry.

    Device entries include their device numbers: a different device is a different entry.
    Timestamps and inode numbers are left out so the description survives a copy.
    """
    mode = st.st_mode
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "char-device" if stat.S_ISCHR(mode) else "block-device"
        return f"{kind}:{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    return f"unknown:{stat.S_IFMT(mode):o}"


def hash_fd(fd: int) -> str:
    """``"sha256:<hex>"`` of everything readable from ``fd`` (read from its current offset)."""
    digest = hashlib.sha256()
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
    return _PREFIX + digest.hexdigest()
