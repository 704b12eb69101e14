"""Typed entry states: the hash conventions mutation evidence relies on."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tidegate.workspace.states import (
    DIRECTORY,
    MISSING,
    EntryState,
    describe_special,
    hash_fd,
    is_sha256,
    sha256_bytes,
)


def test_sha256_bytes_has_the_prefixed_hex_form() -> None:
    assert sha256_bytes(b"abc") == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert is_sha256(sha256_bytes(b""))
    assert not is_sha256("sha256:XYZ")
    assert not is_sha256(hashlib.sha256(b"").hexdigest())


def test_kinds_carry_a_hash_exactly_when_they_have_content() -> None:
    assert MISSING.sha256 is None and DIRECTORY.sha256 is None
    with pytest.raises(ValueError):
        EntryState("file", None)
    with pytest.raises(ValueError):
        EntryState("dir", sha256_bytes(b"x"))
    with pytest.raises(ValueError):
        EntryState("file", "md5:abc")


def test_a_symlink_never_equals_a_file_with_the_same_bytes() -> None:
    assert EntryState.file(b"target") != EntryState.symlink(b"target")
    assert EntryState.symlink(b"a") == EntryState.symlink(b"a")
    assert EntryState.symlink(b"a").sha256 == sha256_bytes(b"symlink\0a")


def test_json_round_trip_and_refusal_of_garbage() -> None:
    for state in (MISSING, DIRECTORY, EntryState.file(b"x"), EntryState.symlink(b"y")):
        assert EntryState.from_json(state.to_json()) == state
    assert EntryState.file(b"x").to_json() == {"kind": "file", "sha256": sha256_bytes(b"x")}
    with pytest.raises(ValueError):
        EntryState.from_json({"kind": "other", "sha256": None})


def test_special_entries_hash_a_deterministic_description(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    first = EntryState.special(os.lstat(fifo))
    fifo.unlink()
    os.mkfifo(fifo)  # a new inode and new timestamps: the same kind of entry
    assert EntryState.special(os.lstat(fifo)) == first
    assert describe_special(os.lstat(fifo)) == "fifo"
    assert describe_special(os.stat("/dev/null")) == "char-device:1:3"


def test_hash_fd_streams_large_content(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    target = tmp_path / "big"
    target.write_bytes(data)
    fd = os.open(target, os.O_RDONLY)
    try:
        assert hash_fd(fd) == sha256_bytes(data)
    finally:
        os.close(fd)
