"""Keeping the bytes a tool call replaces or deletes (``store.blobs``), for undo.

The executor hands the keeper each call's host-observed writes and the "before" bytes the
capture could still see: a target-path tool's file read just before dispatch (one file),
or, for command.run under the overlay, each changed file read from the real tree before
the upper layer is merged back (only what the overlay says changed). An inventory capture
(no overlay) sees hashes only: for those paths the bytes are taken from git's index when
its blob has the observed "before" hash (a tracked file without unstaged changes), and
the others are indexed as ``not kept``. The "after" bytes
are read from the work tree after the call, when they still match the observed hash (the
base of a later three-way undo). Secret-shaped files are never kept: indexed as withheld.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from tidegate.disk.linksafe import WriteRefused, opened_dir
from tidegate.errors import GitError
from tidegate.git.command import Git
from tidegate.store.blobs import ByteStore, Retention, check_id
from tidegate.tools.effects import WriteEffect
from tidegate.workspace.secret_files import SecretFiles

MAX_KEPT_FILE = 64 * 1024 * 1024
"""A larger file's bytes are not kept (indexed as too large)."""


def read_regular(root: Path, rel: str) -> bytes | None:
    """The bytes of the regular file at ``rel`` under ``root``, no link followed on the way;
    None when it is missing, not a regular file or larger than ``MAX_KEPT_FILE``."""
    parts = PurePosixPath(rel).parts
    try:
        with opened_dir(root, *parts[:-1]) as fd:
            f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except (OSError, WriteRefused) as exc:
        if isinstance(exc, OSError) and exc.errno not in (
            errno.ENOENT,
            errno.ELOOP,
            errno.ENOTDIR,
            errno.EACCES,
        ):
            raise
        return None
    with os.fdopen(f, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_KEPT_FILE:
            return None
        return fh.read()


def undo_retention(root: Path) -> Retention:
    """The byte store's limits: ``[retention]`` of the configuration at ``root``, each
    overridden by its environment variable."""
    from tidegate.config import load_config

    kept = load_config(root).retention
    return Retention.from_env(max_bytes=kept.undo_max_bytes, max_days=kept.undo_max_days)


class CallKeeper:
    """Keeps one session's replaced and deleted bytes in a ByteStore."""

    def __init__(self, store: ByteStore, session_id: str, root: Path, secrets: SecretFiles) -> None:
        self.store = store
        self.session_id = check_id(session_id, "session")
        self.root = root
        self.secrets = secrets
        self.index = store.session(session_id)
        self.index.setdefault("root", str(root))

    def prune(self, retention: Retention | None = None) -> int:
        return self.store.prune(retention or Retention.from_env(), keep=self.session_id)

    def wants(self, rel: str) -> bool:
        return not self.secrets.withheld(rel)

    def keep(
        self,
        call_id: str,
        tool: str,
        writes: Sequence[WriteEffect],
        before_bytes: Mapping[str, bytes],
        method: str,
    ) -> None:
        """Index ``call_id``'s writes, keeping the bytes it replaced or deleted."""
        paths: list[dict[str, Any]] = []
        missing = {
            w.path: w.before.sha256
            for w in writes
            if w.before.kind == "file"
            and w.path not in before_bytes
            and not self.secrets.withheld(w.path)
        }
        if missing:
            indexed = from_index(self.root, list(missing))
            before_bytes = {
                **before_bytes,
                **{rel: data for rel, data in indexed.items() if _digest(data) == missing[rel]},
            }
        for write in writes:
            before, after = write.before, write.after
            if before.kind not in ("file", "missing") or after.kind not in ("file", "missing"):
                continue  # directories and links: their files are listed on their own
            entry: dict[str, Any] = {
                "path": write.path,
                "before": {"kind": before.kind, "sha256": before.sha256, "mode": before.mode},
                "after": {"kind": after.kind, "sha256": after.sha256, "mode": after.mode},
            }
            if self.secrets.withheld(write.path):
                entry["withheld"] = "secret-shaped file: its bytes are not kept"
            else:
                if before.kind == "file":
                    data = before_bytes.get(write.path)
                    if data is not None and _digest(data) == before.sha256:
                        entry["before"]["kept"] = self.store.put(data)
                    else:
                        entry["before"]["not_kept"] = (
                            f"the {method} capture saw only its hash, and git's index "
                            "holds other bytes"
                            if data is None
                            else "its bytes changed while they were read"
                        )
                if after.kind == "file":
                    now = read_regular(self.root, write.path)
                    if now is not None and _digest(now) == after.sha256:
                        entry["after"]["kept"] = self.store.put(now)
            paths.append(entry)
        if not paths:
            return
        self.index["calls"].append(
            {"call_id": call_id, "tool": tool, "at": time.time(), "paths": paths}
        )
        self.store.save_session(self.index)


def from_index(root: Path, rels: Sequence[str]) -> dict[str, bytes]:
    """The bytes git's index holds for each of ``rels`` (relative to ``root``, a work tree
    or a directory in one) that is a regular file at stage 0; nothing on any git error.
    The caller checks them against the hash it observed."""
    try:
        git = Git(root)
        listed = git.run(
            "ls-files", "-s", "-z", "--", *(f":(literal){rel}" for rel in rels), check=False
        )
        if listed.returncode != 0:
            return {}
        oids: dict[str, str] = {}
        for record in listed.stdout.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            fields = meta.split()
            if len(fields) == 3 and fields[2] == b"0" and fields[0] in (b"100644", b"100755"):
                oids[name.decode("utf-8", "surrogateescape")] = fields[1].decode()
        blobs = git.read_blobs(list(oids.values()))
        return {rel: blobs[oid] for rel, oid in oids.items() if rel in rels}
    except (GitError, OSError, ValueError):
        return {}


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
