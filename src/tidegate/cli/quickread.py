"""``tidegate runs`` and ``tidegate read`` on the standard library alone (issue #12).

The same answers as ``tidegate.cli.records`` (which the typer commands use), from the
same store, with the same checks: the repository found by git (one ``rev-parse``), the
state root validated the same way, the store opened read-only (``mode=ro``, and
``immutable`` when no writer is active) without migrating anything, each run's status
derived as the store derives it, the checkpoint chain verified (hash, canonical form,
order and HMAC under the state root's key) and the replay hash recomputed. What it does
not import: pydantic, rich, the store's writing side, ``subprocess``, ``hashlib``.

Everything is gathered before anything is printed. Whatever this module does not handle
the way the full commands would (an older schema that needs migrating in memory, a
report the model would change, a terminal, no repository, any error) raises, and the
caller (``tidegate.cli.fast``) hands the command to the full path, so the errors and the
exit codes stay the full path's own. tests/e2e/test_quickread.py compares the two byte
for byte.
"""

from __future__ import annotations

import json
import os
import sys

from tidegate.cli.output import dump_json
from tidegate.cli.runtext import runs_text, view_text

TYPE_CHECKING = False  # the fast path does not import typing
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

try:  # sqlite3 itself is _sqlite3 plus datetime adapters this read path never uses
    from _sqlite3 import connect  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - an interpreter that only has the package
    from sqlite3 import connect

try:  # the interpreter's own SHA-256 (no OpenSSL to load); hashlib where there is none
    from _sha2 import sha256 as sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256 as sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:
        from hashlib import sha256 as sha256  # type: ignore[assignment, unused-ignore]

SCHEMA_VERSION = 4
"""The store schema this module reads (``tidegate.store.schema.SCHEMA_VERSION``; a unit
test keeps the two equal). Any other version goes to the full path."""
STATE_ROOT_ENV = "TIDEGATE_STATE_ROOT"
STORE_FILE = "runs.sqlite3"
KEY_FILE = "checkpoint.key"
TERMINAL = frozenset({"succeeded", "failed", "conflict"})
KNOWN_STATUSES = TERMINAL | {"paused", "interrupted", "running"}
RUN_COLUMNS = (
    "run_id, seq, repo, task_id, kind, mode, status, error_class, failure_phase, attempts, "
    "replay_hash, duration_s, execution_id, pid, pid_start, host, started_ms, updated_ms, "
    "report_json, acknowledged"
)


class Unsupported(Exception):
    """Not for the fast path: the full command answers (and renders) this one."""


class NotARepository(Unsupported):
    """What ``discover`` refuses: no work tree, a bare repository, no first commit."""


def runs_output(options: dict[str, str | bool], limit: int) -> str:
    """What ``tidegate runs`` (``--repo``, ``--state-root``, ``--json``) prints for a
    repository."""
    repo = options.get("--repo")
    explicit = _text(options.get("--state-root"))
    try:
        root, common = _repository(str(repo) if repo is not None else ".")
    except NotARepository:
        if repo is not None:
            raise
        dbs = _all_stores(explicit)  # outside a repository: every repository's runs
    else:
        one = _store(root, common, explicit)
        dbs = [] if one is None else [one[0]]
    rows = [_row(r) for db in dbs for r in _runs(db, limit)]
    rows.sort(key=lambda r: (r["started_ms"], r["run_id"]), reverse=True)
    rows = rows[:limit]
    return dump_json(rows) + "\n" if options.get("--json") else runs_text(rows)


def read_output(run_id: str, options: dict[str, str | bool]) -> str:
    """What ``tidegate read RUN_ID`` (``--repo``, ``--state-root``, ``--json``,
    ``--detail``) prints."""
    root, common = _repository(str(options.get("--repo", ".")))
    db = _store(root, common, _text(options.get("--state-root")))
    if db is None:
        raise Unsupported("no store: the full command says so")
    from tidegate.cli.quickview import run_view

    view = run_view(db[0], db[1], run_id)
    if options.get("--json"):
        shown = view if options.get("--detail") or view["report"] is None else view["report"]
        return dump_json(shown) + "\n"
    text = view_text(view)
    if view["report"] is not None:
        from tidegate.cli.report_text import report_text, terminal_styles

        text += report_text(view["report"], terminal_styles())
    return text


def _text(value: str | bool | None) -> str | None:
    return None if value is None else str(value)


# -- the repository and the state root (tidegate.workspace.repo, tidegate.store.state_root)


def _repository(path: str) -> tuple[str, str]:
    """The work tree and git common directory of the repository ``path`` is in, as
    ``discover`` finds them; anything it would refuse raises."""
    from tidegate.git.env import DISCOVERY, discovery_lines, probe

    path = os.path.expanduser(path)
    if not os.path.isdir(path):
        raise Unsupported("no such directory")
    code, out = probe(path, DISCOVERY)
    lines = discovery_lines(out.decode("utf-8", "surrogateescape"))
    if code != 0:
        raise NotARepository("not a repository with a first commit")
    if len(lines) != 6:
        raise Unsupported("a path git prints on more than one line")
    bare, inside, _git_dir, common, top, _head = lines
    if bare != "false" or inside != "false":
        raise NotARepository("not a work tree")
    if not top:
        raise Unsupported("no top level")
    if not os.path.isabs(common):
        common = os.path.join(path, common)
    return os.path.realpath(top), os.path.realpath(common)


def _state_root(explicit: str | None, workspace: str | None, git_dir: str | None) -> str:
    raw = explicit or os.environ.get(STATE_ROOT_ENV) or _user_state_dir()
    path = os.path.expanduser(raw)
    if ".." in path.split("/"):
        raise Unsupported("a state root the full command refuses")
    path = os.path.normpath(path)  # as pathlib spells it: no trailing slash, no "."
    if os.path.islink(path):
        raise Unsupported("a state root the full command refuses")
    if os.path.exists(path) and not os.path.isdir(path):
        raise Unsupported("a state root the full command refuses")
    canonical = os.path.realpath(path)
    for owner in (workspace, git_dir):
        if owner is None:
            continue
        inside = os.path.realpath(owner)
        if canonical == inside or canonical.startswith(inside.rstrip("/") + "/"):
            raise Unsupported("a state root the full command refuses")
    return canonical


def _user_state_dir() -> str:
    """``platformdirs.user_state_dir("tidegate")`` (the default state root) in the plain
    Linux case, ``$XDG_STATE_HOME/tidegate`` or ``$HOME/.local/state/tidegate``, without
    importing platformdirs (tests/unit/test_quickreport.py compares the two); anything
    else (another system, a relative or missing HOME, Android) asks platformdirs."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    home = os.environ.get("HOME", "")
    android = os.environ.get("ANDROID_DATA") or os.environ.get("ANDROID_ROOT")
    if sys.platform == "linux" and not android and not hasattr(sys, "getandroidapilevel"):
        if xdg.startswith("/"):
            return os.path.join(xdg, "tidegate")
        if home.startswith("/"):
            return os.path.join(os.path.expanduser("~/.local/state"), "tidegate")
    import platformdirs

    return str(platformdirs.user_state_dir("tidegate"))


def _store(root: str, common: str, explicit: str | None) -> tuple[sqlite3.Connection, Any] | None:
    """The repository's store opened read-only, and the state root's key (None when it has
    none, or one the store would not load); None when nothing was recorded."""
    state = _state_root(explicit, root, common)
    identity = sha256(common.encode()).hexdigest()[:12]
    path = os.path.join(state, f"{os.path.basename(root)}-{identity}", STORE_FILE)
    if not os.path.isfile(path):
        return None
    key_path = os.path.join(state, KEY_FILE)
    key = _load_key(key_path) if os.path.isfile(key_path) else None
    return _open(path), key


def _all_stores(explicit: str | None) -> list[sqlite3.Connection]:
    """Every repository's store under the state root (``read_all_run_stores``)."""
    state = _state_root(explicit, None, None)
    if not os.path.isdir(state):
        return []
    paths = (os.path.join(state, name, STORE_FILE) for name in sorted(os.listdir(state)))
    return [_open(p) for p in paths if os.path.isdir(os.path.dirname(p)) and os.path.isfile(p)]


def _open(path: str) -> sqlite3.Connection:
    """A store opened read-only (``RunStore.open_read_only``) when its schema is ours."""
    query = "mode=ro" if os.path.exists(path + "-wal") else "mode=ro&immutable=1"
    db = connect(f"{_file_uri(os.path.realpath(path))}?{query}", uri=True, timeout=30)
    if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        db.close()
        raise Unsupported("another schema version: the full path migrates or refuses it")
    return db


def _file_uri(path: str) -> str:
    """``pathlib.Path(path).as_uri()`` for an absolute POSIX path."""
    safe = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/"
    raw = os.fsencode(path)
    if raw.startswith(b"//"):
        raise Unsupported("a path pathlib writes differently")
    return "file://" + "".join(chr(b) if b in safe else f"%{b:02X}" for b in raw)


def _load_key(path: str) -> bytes | None:
    """``CheckpointKey.load``, None where it raises."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (info.st_mode & 0o170000) != 0o100000 or info.st_mode & 0o077:
            return None
        raw = os.read(fd, 128)
    finally:
        os.close(fd)
    try:
        secret = bytes.fromhex(raw.decode("ascii").strip())
    except ValueError:
        return None
    return secret if len(secret) == 32 else None


# -- runs (tidegate.store.rows) ------------------------------------------------------------


def _runs(db: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    rows = db.execute(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY seq DESC LIMIT ?", (limit,))
    return [run_record(r) for r in rows.fetchall()]


def run_record(row: tuple[Any, ...]) -> dict[str, Any]:
    """A ``runs`` row with its status derived (``stored_run``); the report JSON unparsed."""
    (
        run_id,
        seq,
        repo,
        task_id,
        kind,
        mode,
        status,
        error_class,
        failure_phase,
        attempts,
        replay,
        duration,
        execution_id,
        pid,
        pid_start,
        host,
        started,
        updated,
        report_json,
        acknowledged,
    ) = row
    if status not in KNOWN_STATUSES:
        raise Unsupported("a corrupt row: the full command names what is wrong")
    if report_json is not None and not isinstance(json.loads(report_json), dict):
        raise Unsupported("a report that is not an object: the full command says so")
    # A pid no process can have is no holder (``tidegate.store.rows._holder``).
    valid = isinstance(pid, int) and 0 < pid < 2**22
    holder = (pid, str(pid_start or ""), str(host or "")) if valid else None
    derived = str(status)
    if derived == "running" and (holder is None or not _alive(*holder)):
        derived = "interrupted"
    unacknowledged = derived in TERMINAL and not acknowledged
    if unacknowledged:
        derived = "failed"
        error_class = "PERSISTENCE_ERROR"
    return {
        "run_id": str(run_id),
        "seq": int(seq),
        "repo": str(repo),
        "task_id": str(task_id),
        "kind": str(kind),
        "mode": str(mode),
        "status": derived,
        "stored_status": str(status),
        "error_class": None if error_class is None else str(error_class),
        "failure_phase": None if failure_phase is None else str(failure_phase),
        "attempts": int(attempts),
        "duration_s": float(duration or 0.0),
        "replay_hash": None if replay is None else str(replay),
        "execution_id": None if execution_id is None else str(execution_id),
        "pid": holder[0] if holder else None,
        "started_ms": int(started),
        "updated_ms": int(updated),
        "acknowledged": bool(acknowledged),
        "report_json": report_json,
        "unacknowledged": unacknowledged,
    }


def _row(run: dict[str, Any]) -> dict[str, Any]:
    """One line of ``tidegate runs`` (``tidegate.store.views.run_row``)."""
    names = ("run_id", "repo", "task_id", "kind", "mode", "status", "error_class")
    return {
        **{name: run[name] for name in names},
        "attempts": run["attempts"],
        "duration_s": run["duration_s"],
        "started_ms": run["started_ms"],
        "problem": None,
    }


def _alive(pid: int, start: str, host: str) -> bool:
    """``ProcessIdentity.alive``: a run's holder still lives (another host's: assume so)."""
    if host != os.uname().nodename:
        return True
    now = _start_time(pid)
    if now is not None:
        return now == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not os.path.exists("/proc/self/stat")


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            raw = stat.read()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None
