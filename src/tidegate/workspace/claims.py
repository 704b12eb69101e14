"""Which live process owns a run's temporary directories.

A run claims its scratch directory and its shadow worktree before it creates them, in
``<common-dir>/tidegate/claims/<run-id>.json``: the paths, and the pid and kernel start
time of the process. The claims sit in the common git dir because every linked work tree
sees every shadow (``git worktree list``): ``tidegate recover`` in one work tree must be
able to tell a dead run's leftovers from the shadow of a run that is alive in another.
A claim whose process is gone (or whose pid now belongs to a younger process) is dead.

A temporary directory that belongs to no run (a sub-agent's private copy) carries the
same record, ``OWNER_FILE`` inside it (``mark_owner``), so that recovery can tell a dead
process's leftover from a live one's (``directory_owner``).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import msgspec

from tidegate.disk.owners import owner_alive, process_start
from tidegate.workspace.repo import Repository

CLAIMS_DIR = "claims"
OWNER_FILE = ".tidegate-owner.json"


class Claim(msgspec.Struct, frozen=True):
    run_id: str
    pid: int
    start: str | None
    paths: dict[str, str]

    @property
    def alive(self) -> bool:
        return owner_alive(self.pid, self.start)


def claims_dir(repo: Repository) -> Path:
    return repo.common_dir / "tidegate" / CLAIMS_DIR


def claim(repo: Repository, run_id: str, **paths: str) -> None:
    """Record (or extend) this process's claim on ``paths`` for ``run_id``, durably enough
    that a crash right after still leaves it readable (temp file + rename)."""
    directory = claims_dir(repo)
    directory.mkdir(parents=True, exist_ok=True)
    record = directory / f"{run_id}.json"
    current = read_claim(record)
    merged = {**(current.paths if current else {}), **paths}
    pid = os.getpid()
    tmp = directory / f".{run_id}.{pid}.tmp"
    tmp.write_text(
        json.dumps({"run_id": run_id, "pid": pid, "start": process_start(pid), "paths": merged})
    )
    os.replace(tmp, record)


def mark_owner(directory: Path) -> None:
    """Record this process as the owner of ``directory`` (a fresh temporary directory),
    inside it (temp file + rename: a reader sees a whole record or none)."""
    pid = os.getpid()
    tmp = directory / f".{OWNER_FILE}.{pid}.tmp"
    tmp.write_text(json.dumps({"pid": pid, "start": process_start(pid)}))
    os.replace(tmp, directory / OWNER_FILE)


def directory_owner(directory: Path) -> Claim | None:
    """The owner ``mark_owner`` recorded in ``directory``; None when there is no readable
    record (a symlinked record is not followed)."""
    try:
        fd = os.open(directory / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read(4096))
        return Claim(directory.name, int(data["pid"]), data.get("start"), {})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def release(repo: Repository, run_id: str) -> None:
    """Drop the claim (a claim that cannot be removed only makes a later recover check a
    dead pid: harmless)."""
    with contextlib.suppress(OSError):
        (claims_dir(repo) / f"{run_id}.json").unlink()


def read_claim(record: Path) -> Claim | None:
    try:
        data = json.loads(record.read_text())
        return Claim(str(data["run_id"]), int(data["pid"]), data.get("start"), dict(data["paths"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def all_claims(repo: Repository) -> dict[str, Claim]:
    directory = claims_dir(repo)
    if not directory.is_dir():
        return {}
    found = {}
    for record in directory.glob("*.json"):
        if (c := read_claim(record)) is not None:
            found[c.run_id] = c
    return found
