"""The tool host's byte store: the bytes every tool call replaced or deleted, kept so
``tidegate undo --call ID`` / ``--session ID`` can put them back.

Content-addressed under the repository's directory in the state root (never in the work
tree, never in ``.git``): ``<repo dir>/blobs/sha256/<aa>/<rest>``, each blob written
link-safe (``disk.linksafe``: no link followed, a temporary file fsynced and renamed),
mode 0600. What each call changed is indexed per session in ``<repo dir>/undo/<session>.json``
(one JSON document, replaced atomically after each call): the call ID, the tool, and for
each path its before/after kind, hash and mode, and whether the bytes were kept (or why
not: a secret-shaped file is withheld, an inventory capture sees hashes only).

A blob is checked against its name when read: a tampered blob is refused. Retention:
``[retention] undo_max_bytes`` (default 256 MiB) and ``undo_max_days`` (default 14) of the
user's configuration, each overridden by ``TIDEGATE_UNDO_MAX_BYTES`` / ``_DAYS`` when set;
``prune`` drops whole sessions, oldest first, and then the blobs no session names.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from tidegate.disk.linksafe import WriteRefused, open_dir, opened_dir, replace_file
from tidegate.errors import UsageError

BLOBS = "blobs"
UNDO = "undo"
MAX_BYTES_ENV = "TIDEGATE_UNDO_MAX_BYTES"
MAX_DAYS_ENV = "TIDEGATE_UNDO_MAX_DAYS"
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_DAYS = 14.0
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,159}")
_HEX = re.compile(r"[0-9a-f]{64}")


class BlobTampered(UsageError):
    """A kept blob's bytes no longer match its name."""


def check_id(value: str, what: str) -> str:
    """``value`` if it is a plain identifier (never a path: no ``/``, no ``..``)."""
    if not _ID.fullmatch(value) or ".." in value:
        raise UsageError(
            f"{what} ID refused: an identifier has letters, digits and . _ : @ + - only, "
            f"and no '..' ({value!r})"
        )
    return value


def _hex(digest: str) -> str:
    raw = digest.removeprefix("sha256:")
    if not _HEX.fullmatch(raw):
        raise UsageError(f"{digest!r}: not a sha256 digest")
    return raw


class Retention(msgspec.Struct, frozen=True):
    max_bytes: int = DEFAULT_MAX_BYTES
    max_age_s: float = DEFAULT_MAX_DAYS * 86400

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_days: float = DEFAULT_MAX_DAYS,
    ) -> Retention:
        """The limits given (``[retention] undo_max_bytes/undo_max_days``), each
        overridden by its environment variable when set."""
        env = os.environ if env is None else env
        try:
            max_bytes = int(env.get(MAX_BYTES_ENV, max_bytes))
            days = float(env.get(MAX_DAYS_ENV, max_days))
        except ValueError as exc:
            raise UsageError(f"{MAX_BYTES_ENV}/{MAX_DAYS_ENV}: {exc}") from None
        return cls(max(0, max_bytes), max(0.0, days) * 86400)


class ByteStore:
    """The byte store of one repository directory in the state root."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    # -- blobs ---------------------------------------------------------------------------

    def put(self, data: bytes) -> str:
        """Keep ``data``; its digest (``sha256:<hex>``)."""
        raw = hashlib.sha256(data).hexdigest()
        with opened_dir(self.directory, BLOBS, "sha256", raw[:2], create=True) as fd:
            try:
                current = os.stat(raw[2:], dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is None or not stat.S_ISREG(current.st_mode):
                replace_file(fd, raw[2:], data, mode=0o600, shown=f"blob {raw}")
        return "sha256:" + raw

    def get(self, digest: str) -> bytes:
        """The kept bytes of ``digest``; BlobTampered when they do not match it,
        FileNotFoundError when they are not kept."""
        raw = _hex(digest)
        with opened_dir(self.directory, BLOBS, "sha256", raw[:2]) as fd:
            try:
                blob = os.open(raw[2:], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise BlobTampered(f"blob {raw}: a symlink in the byte store") from exc
                raise
            with os.fdopen(blob, "rb") as f:
                data = f.read()
        if hashlib.sha256(data).hexdigest() != raw:
            raise BlobTampered(f"blob {raw}: its bytes do not match its hash; refused")
        return data

    # -- the per-session index -------------------------------------------------------------

    def session(self, session_id: str) -> dict[str, Any]:
        """A session's index (an empty one if none)."""
        check_id(session_id, "session")
        try:
            with opened_dir(self.directory, UNDO) as fd:
                f = os.open(
                    f"{session_id}.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                )
                with os.fdopen(f, "rb") as fh:
                    data: dict[str, Any] = json.loads(fh.read())
                    return data
        except FileNotFoundError:
            return {"session": session_id, "created": time.time(), "calls": []}

    def save_session(self, index: Mapping[str, Any]) -> None:
        session_id = check_id(str(index["session"]), "session")
        text = json.dumps(index, sort_keys=True, indent=1).encode()
        with opened_dir(self.directory, UNDO, create=True) as fd:
            replace_file(fd, f"{session_id}.json", text, mode=0o600)

    def sessions(self) -> list[str]:
        try:
            with opened_dir(self.directory, UNDO) as fd:
                names = os.listdir(fd)
        except FileNotFoundError:
            return []
        return sorted(n.removesuffix(".json") for n in names if n.endswith(".json"))

    def latest_session(self) -> str:
        """The session begun last; UsageError when there is none."""
        indexes = [self.session(s) for s in self.sessions()]
        if not indexes:
            raise UsageError("no tool session has kept bytes here (none recorded, or pruned)")
        return str(max(indexes, key=lambda i: float(i.get("created", 0)))["session"])

    def find_call(self, call_id: str) -> tuple[str, dict[str, Any]]:
        """The session and index entry of ``call_id`` (or ``SESSION:CALL``); UsageError when
        none or several."""
        check_id(call_id, "call")
        session, sep, rest = call_id.partition(":")
        if sep and rest and session in self.sessions():
            for call in self.session(session)["calls"]:
                if call["call_id"] == rest:
                    return session, call
        found = [
            (s, call)
            for s in self.sessions()
            for call in self.session(s)["calls"]
            if call["call_id"] == call_id
        ]
        if not found:
            raise UsageError(f"call {call_id}: no kept bytes for it (not recorded, or pruned)")
        if len(found) > 1:
            raise UsageError(
                f"call {call_id}: in {len(found)} sessions; give --session too, or "
                f"SESSION:{call_id} (newest: {found[-1][0]}:{call_id})"
            )
        return found[0]

    # -- retention -------------------------------------------------------------------------

    def prune(self, retention: Retention, *, keep: str | None = None) -> int:
        """Drop sessions older than the age limit, then the oldest until the blobs fit the
        size limit (``keep``: a session never dropped); then unnamed blobs. Bytes freed."""
        now = time.time()
        indexes = sorted(
            (self.session(s) for s in self.sessions()), key=lambda i: float(i.get("created", 0))
        )
        live = [
            i
            for i in indexes
            if i["session"] == keep or now - float(i.get("created", 0)) <= retention.max_age_s
        ]
        sizes = self._blob_sizes()

        def used(kept: list[dict[str, Any]]) -> int:
            return sum(sizes.get(d, 0) for d in {d for i in kept for d in _digests(i)})

        while live and used(live) > retention.max_bytes:
            victim = next((i for i in live if i["session"] != keep), None)
            if victim is None:
                break
            live.remove(victim)
        dropped = {i["session"] for i in indexes} - {i["session"] for i in live}
        if dropped:
            with opened_dir(self.directory, UNDO) as fd:
                for name in dropped:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{name}.json", dir_fd=fd)
        named = {d for i in live for d in _digests(i)}
        freed = 0
        for raw, size in sizes.items():
            if raw not in named:
                with (
                    contextlib.suppress(FileNotFoundError, WriteRefused),
                    opened_dir(self.directory, BLOBS, "sha256", raw[:2]) as fd,
                ):
                    os.unlink(raw[2:], dir_fd=fd)
                    freed += size
        return freed

    def _blob_sizes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        try:
            top = open_dir(self.directory, BLOBS, "sha256")
        except (FileNotFoundError, WriteRefused):
            return sizes
        try:
            for prefix in os.listdir(top):
                with (
                    contextlib.suppress(OSError, WriteRefused),
                    opened_dir(self.directory, BLOBS, "sha256", prefix) as fd,
                ):
                    for rest in os.listdir(fd):
                        st = os.stat(rest, dir_fd=fd, follow_symlinks=False)
                        if stat.S_ISREG(st.st_mode) and _HEX.fullmatch(prefix + rest):
                            sizes[prefix + rest] = st.st_size
        finally:
            os.close(top)
        return sizes


def _digests(index: Mapping[str, Any]) -> set[str]:
    out = set()
    for call in index.get("calls", []):
        for path in call.get("paths", []):
            for side in ("before", "after"):
                digest = path.get(side, {}).get("kept")
                if digest:
                    out.add(str(digest).removeprefix("sha256:"))
    return out
