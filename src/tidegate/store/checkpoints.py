"""Checkpoints: canonical, hash-chained and signed records of a run's resumable state.

A checkpoint is one canonical JSON document (``tidegate.store.canonical``)::

    {"format": "tidegate.checkpoint/1", "run_id": ..., "seq": 3, "event_seq": 41,
     "reason": "phase", "prev_hash": "sha256:...", "state": {...}}

``hash`` is the SHA-256 of those bytes and ``mac`` their HMAC-SHA256 under the state
root's checkpoint key, so an edited byte, a removed or reordered checkpoint (the chain of
``prev_hash`` breaks) and a checkpoint written without the key are all detected. Removing
the *last* checkpoints leaves a shorter chain that still links, so each run also has a
committed head (``ChainHead``: the count and the last hash, signed with the same key) that
is rewritten in the very transaction that inserts a checkpoint; ``verify_committed``
checks the chain against it, so a truncated chain is refused too. The key
is 32 random bytes in ``<state root>/checkpoint.key``, created atomically with mode 0600
and never inside a workspace, so a model working on the repository cannot forge one.

Readers get copies: ``Checkpoint.state`` parses the stored text afresh on every access, so
no caller can change what another caller (or the store) sees.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from tidegate.disk.faults import maybe_fail
from tidegate.errors import UsageError
from tidegate.store.canonical import canonical_json, sha256_digest
from tidegate.store.evidence import CHECKPOINT_FORMAT, chain_problem, head_document, head_problem

FORMAT = CHECKPOINT_FORMAT
KEY_FILE = "checkpoint.key"
_KEY_BYTES = 32


class CheckpointRefused(UsageError):
    """A run's checkpoints failed verification (tampered, reordered, or signed with another
    key); nothing resumes from them."""


class CheckpointKey:
    """The HMAC key that authenticates checkpoints of one state root."""

    def __init__(self, secret: bytes, path: Path | None = None) -> None:
        if len(secret) != _KEY_BYTES:
            raise ValueError("a checkpoint key is 32 bytes")
        self._secret = secret
        self.path = path

    @classmethod
    def load_or_create(cls, state_root: Path) -> CheckpointKey:
        """The state root's key, created (atomically, mode 0600) on first use."""
        path = state_root / KEY_FILE
        if not path.exists() and not path.is_symlink():
            _create_key(path)
        return cls.load(path)

    @classmethod
    def load(cls, path: Path) -> CheckpointKey:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise UsageError(f"checkpoint key {path}: {exc.strerror}") from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UsageError(f"checkpoint key {path}: not a regular file")
            if info.st_mode & 0o077:
                raise UsageError(
                    f"checkpoint key {path}: readable by other users; it must be mode 0600"
                )
            raw = os.read(fd, 4 * _KEY_BYTES)
        finally:
            os.close(fd)
        try:
            secret = bytes.fromhex(raw.decode("ascii").strip())
        except ValueError:
            secret = b""
        if len(secret) != _KEY_BYTES:
            raise UsageError(f"checkpoint key {path}: malformed (expected 64 hex digits)")
        return cls(secret, path)

    @property
    def secret(self) -> bytes:
        """The key's bytes, for ``store.evidence`` (which verifies without hmac)."""
        return self._secret

    def sign(self, data: bytes) -> str:
        return "hmac-sha256:" + hmac.new(self._secret, data, hashlib.sha256).hexdigest()


def _create_key(path: Path) -> None:
    """Write a fresh key beside ``path`` and link it into place; a concurrent creator wins
    the race cleanly (the loser's temp file is removed and the winner's key is used). On
    any failure (a full disk, say) the temp file is removed: no partial key is ever left,
    under either name."""
    temp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            data = secrets.token_bytes(_KEY_BYTES).hex().encode("ascii") + b"\n"
            maybe_fail("state_root.key_write")
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        temp.unlink(missing_ok=True)


class Checkpoint(msgspec.Struct, frozen=True):
    """One stored checkpoint. ``document`` is the exact canonical text that was signed."""

    run_id: str
    seq: int
    event_seq: int
    reason: str
    prev_hash: str | None
    hash: str
    mac: str
    document: str

    @property
    def state(self) -> dict[str, Any]:
        """The resumable state: a fresh copy on every access."""
        state = json.loads(self.document)["state"]
        assert isinstance(state, dict)
        return state


def seal(
    key: CheckpointKey,
    *,
    run_id: str,
    seq: int,
    event_seq: int,
    reason: str,
    prev_hash: str | None,
    state: Mapping[str, object],
) -> Checkpoint:
    """Canonicalise, hash and sign a checkpoint. ``state`` is copied, never kept."""
    document = canonical_json(
        {
            "format": FORMAT,
            "run_id": run_id,
            "seq": seq,
            "event_seq": event_seq,
            "reason": reason,
            "prev_hash": prev_hash,
            "state": state,
        }
    )
    return Checkpoint(
        run_id=run_id,
        seq=seq,
        event_seq=event_seq,
        reason=reason,
        prev_hash=prev_hash,
        hash=sha256_digest(document),
        mac=key.sign(document),
        document=document.decode("ascii"),
    )


def verify_chain(run_id: str, checkpoints: Sequence[Checkpoint], key: CheckpointKey) -> None:
    """Raise ``CheckpointRefused`` naming the first checkpoint that fails verification."""
    problem = chain_problem(run_id, [_row(c) for c in checkpoints], key.secret)
    if problem:
        raise CheckpointRefused(problem)


def _row(c: Checkpoint) -> tuple[Any, ...]:
    return (c.run_id, c.seq, c.event_seq, c.reason, c.prev_hash, c.hash, c.mac, c.document)


class ChainHead(msgspec.Struct, frozen=True):
    """What the store committed as a run's chain end: how many checkpoints, the last one's
    hash, and an HMAC over both (so the head itself cannot be rewritten without the key)."""

    run_id: str
    count: int
    last_hash: str
    mac: str


def seal_head(key: CheckpointKey, last: Checkpoint) -> ChainHead:
    """The head committing ``last`` as the end of its run's chain."""
    mac = key.sign(head_document(last.run_id, last.seq, last.hash))
    return ChainHead(run_id=last.run_id, count=last.seq, last_hash=last.hash, mac=mac)


def verify_committed(
    run_id: str,
    checkpoints: Sequence[Checkpoint],
    head: ChainHead | None,
    key: CheckpointKey,
) -> None:
    """``verify_chain``, then check the chain ends where its signed head says: raise
    ``CheckpointRefused`` for a truncated chain, a missing head or a forged one."""
    verify_chain(run_id, checkpoints, key)
    stored = None if head is None else (head.run_id, head.count, head.last_hash, head.mac)
    problem = head_problem(run_id, [_row(c) for c in checkpoints], stored, key.secret)
    if problem:
        raise CheckpointRefused(problem)
