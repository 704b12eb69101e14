"""Durable operator documents under the state root: versioned JSON, written atomically,
read fail-closed.

Every document is ``{"schema": "tidegate.operator.<kind>/<version>", ...}``. A reader
accepts its kind's current version, migrates the older versions it knows (version 0 is
the bare JSON list of records that earlier writers left), and refuses anything else by
name. Reads refuse symlinks and non-regular files (opened with ``O_NOFOLLOW``, checked with
``fstat``), files over :data:`MAX_BYTES`, invalid UTF-8, invalid JSON and non-finite
numbers. Writes go through the directory's descriptor without following a link
(``tidegate.disk.linksafe``): a temporary file in the same directory, fsynced, renamed over the
old file, the directory fsynced; a reader sees the old document or the new one.

Concurrent operator commands share a state root: every read-modify-write of a record store
(``append_records``, the goal register's updates) runs under :func:`records_locked`, an
``flock`` on ``<root>/.records.lock``, so none loses another's update. The fault point
``records.between_read_and_write`` (``tidegate.disk.faults``; ``=run`` with a ``sleep`` widens
the window) sits between the read and the write.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tidegate.disk.faults import maybe_crash
from tidegate.disk.linksafe import WriteRefused, held_lock, opened_dir, replace_file
from tidegate.operator.errors import RecordError
from tidegate.text.jsonparse import parse_json
from tidegate.text.numbers import whole_number

MAX_BYTES = 16 * 1024 * 1024
CURRENT = 1

MEMORY_FILE = "memory_records.json"
EVIDENCE_FILE = "evidence_records.json"
GOALS_FILE = "goal_register.json"
REVIEWS_DIR = "review_artifacts"
LOCK_FILE = ".records.lock"
FAULT_READ_MODIFY_WRITE = "records.between_read_and_write"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def schema_name(kind: str, version: int = CURRENT) -> str:
    return f"tidegate.operator.{kind}/{version}"


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def read_json(path: Path) -> Any:
    """The JSON value in ``path``: a regular file, not a symlink, at most MAX_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise RecordError(f"{path}: missing") from exc
    except OSError as exc:
        why = "is a symlink" if path.is_symlink() else exc.strerror
        raise RecordError(f"{path}: cannot be read: {why}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecordError(f"{path}: not a regular file")
        if info.st_size > MAX_BYTES:
            raise RecordError(f"{path}: larger than {MAX_BYTES} bytes")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read: {exc.strerror}") from exc
    finally:
        os.close(fd)
    try:
        return parse_json(data.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: not UTF-8") from exc
    except ValueError as exc:
        raise RecordError(f"{path}: malformed JSON ({exc})") from exc


def write_json(path: Path, value: Any, *, within: Path | None = None) -> None:
    """Replace ``path`` atomically with ``value`` (never through a symlink, nor over one),
    with every secret-shaped string redacted: nothing persisted carries a key. ``within``:
    an ancestor directory below which no component of ``path`` is followed if a link
    (default: its parent)."""
    from tidegate.text.sanitize import redact_value

    value = redact_value(value)
    data = (json.dumps(value, indent=2, sort_keys=True, allow_nan=False) + "\n").encode()
    base = path.parent if within is None else within
    try:
        with opened_dir(base, *path.parent.relative_to(base).parts) as dir_fd:
            replace_file(dir_fd, path.name, data, mode=0o600, shown=path)
    except WriteRefused as exc:
        raise RecordError(f"refusing to write: {exc}") from exc
    except OSError as exc:
        raise RecordError(f"{path}: cannot be written: {exc.strerror}") from exc


def make_record_dir(root: Path, name: str) -> None:
    """``root/name`` made a directory (mode 0700) unless it is one; a link there is
    refused, never followed."""
    try:
        with opened_dir(root, name, create=True):
            pass
    except WriteRefused as exc:
        raise RecordError(f"refusing to write: {exc}") from exc


@contextlib.contextmanager
def records_locked(root: Path) -> Iterator[None]:
    """Hold the state root's record lock (blocking) for one read-modify-write. Not
    reentrant: take it once, around the whole update."""
    with contextlib.ExitStack() as held:
        try:
            dir_fd = held.enter_context(opened_dir(root))
            held.enter_context(held_lock(dir_fd, LOCK_FILE, shown=root / LOCK_FILE))
        except WriteRefused as exc:
            raise RecordError(f"refusing to lock: {exc}") from exc
        yield


Migration = Callable[[Any], dict[str, Any]]


def _records_v0(value: Any) -> dict[str, Any]:
    if not isinstance(value, list):
        raise ValueError("expected a list of records")
    return {"records": value}


MIGRATIONS: dict[str, dict[int, Migration]] = {
    "memory": {0: _records_v0},
    "evidence": {0: _records_v0},
}


def load_document(path: Path, kind: str) -> dict[str, Any]:
    """``path`` as a current-version document of ``kind`` (migrated when older)."""
    value = read_json(path)
    body: Any
    if isinstance(value, list):
        version, body = 0, value
    elif isinstance(value, dict) and isinstance(value.get("schema"), str):
        name, _, raw = value["schema"].rpartition("/")
        number = whole_number(raw)
        if name != f"tidegate.operator.{kind}" or number is None:
            raise RecordError(f"{path}: schema {value['schema']!r} is not a {kind} document")
        version, body = number, value
    else:
        raise RecordError(f"{path}: not a {kind} document (no schema field)")
    if version == CURRENT:
        return dict(body)
    migrate = MIGRATIONS.get(kind, {}).get(version)
    if migrate is None:
        raise RecordError(
            f"{path}: schema {schema_name(kind, version)} is not supported "
            f"(this tidegate reads {schema_name(kind)})"
        )
    try:
        migrated = migrate(body)
    except ValueError as exc:
        raise RecordError(f"{path}: cannot migrate {schema_name(kind, version)}: {exc}") from exc
    migrated["schema"] = schema_name(kind)
    return migrated


def records_of(doc: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    records = doc.get("records")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise RecordError(f"{path}: 'records' must be a list of objects")
    return records


def load_records(root: Path, name: str, kind: str, *, missing_ok: bool) -> list[dict[str, Any]]:
    path = root / name
    if missing_ok and not path.exists() and not path.is_symlink():
        return []
    return records_of(load_document(path, kind), path)


def append_records(root: Path, name: str, kind: str, new: list[dict[str, Any]]) -> None:
    with records_locked(root):
        records = load_records(root, name, kind, missing_ok=True)
        maybe_crash(FAULT_READ_MODIFY_WRITE)
        write_json(root / name, {"schema": schema_name(kind), "records": [*records, *new]})


def memory_record(mode: str, kind: str, key: str, value: Any, source: str) -> dict[str, Any]:
    return {
        "mode": mode,
        "kind": kind,
        "key": key,
        "value": value,
        "source": source,
        "created_at_unix_ms": now_ms(),
    }


def evidence_record(mode: str, kind: str, detail: str, source: str) -> dict[str, Any]:
    return {
        "mode": mode,
        "kind": kind,
        "detail": detail,
        "source": source,
        "created_at_unix_ms": now_ms(),
    }


def read_text_file(path: Path) -> str:
    """An operator-given text file: a regular file (not a symlink), UTF-8. Usage errors
    (exit 2) name the file."""
    from tidegate.operator.errors import OperatorError

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        why = "is a symlink" if path.is_symlink() else exc.strerror
        raise OperatorError(f"{path}: cannot be read: {why}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OperatorError(f"{path}: not a regular file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise OperatorError(f"{path}: larger than {MAX_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OperatorError(f"{path}: not UTF-8 text") from exc
