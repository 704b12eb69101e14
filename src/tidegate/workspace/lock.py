"""The two locks of a work tree: each live run's own, and the landing lock.

Many runs may work on one repository at once: each has its own T0, shadow and scratch,
and nothing of theirs is shared until the change lands. So a run only registers itself
(``RunLock``: ``<git-dir>/tidegate/live/<run-id>.lock``, held for the whole run), which
refuses nothing but a second process for the same run id (a resume of a run still
running) and tells ``tidegate status``, ``recover`` and ``gc`` which runs are alive.

What must happen one at a time is every write to the work tree: APPLY_BACK, ``apply``,
``discard``, ``undo`` (tool calls' too) and ``recover``'s journal work. They take
``ApplyLock`` (``<git-dir>/tidegate/apply.lock``), waiting their turn, for as long as it
takes to plan the merge against the tree as it is at that moment and write it. An
apply-back journal found by the holder of the landing lock was left by a process that
died mid-write: ``landing`` refuses to write until ``tidegate recover`` has dealt with it.

Both are ``flock``s: the kernel releases them when the holder dies, so a lock file left
by a killed process is simply taken over. Each file names its holder, so a refusal can say
who holds it; lock files are never opened through links.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tidegate.disk.linksafe import open_lock_file, opened_dir, temp_name
from tidegate.disk.owners import pid_exists
from tidegate.errors import RepositoryLockedError, TidegateError, UsageError
from tidegate.workspace.journal import pending_journals

LIVE_DIR = "live"
APPLY_LOCK = "apply.lock"
POOL_SLOTS = 8
"""How many warm shadows a work tree's pool keeps at most: one per run using the pool at
the same moment, each made only when every other slot is in use (``workspace.shadow``)."""
_TAKEOVER_WAIT_S = 1.0
"""How long a registration waits for a dead run's file that ``live_runs`` is looking at."""
APPLY_WAIT_S = 600.0
"""How long a landing waits for the one in progress before it gives up (nothing written);
``TIDEGATE_LANDING_WAIT_S`` overrides it."""


class LockFileError(TidegateError):
    """The lock file cannot be created or opened (a read-only or foreign-owned runtime
    directory): no run can start here, and none is running."""

    exit_code = 1


def _open(path: Path, what: str) -> int:
    """The lock file at ``path`` (in a runtime directory or its ``live/``; directories made
    when missing), never through a link."""
    runtime = path.parent.parent if path.parent.name == LIVE_DIR else path.parent
    parts = (runtime.name, LIVE_DIR) if path.parent.name == LIVE_DIR else (runtime.name,)
    try:
        # Never through a link planted at a directory or the lock's name: the lock
        # file is truncated and rewritten.
        with opened_dir(runtime.parent, *parts, create=True, mode=0o777) as dir_fd:
            return open_lock_file(dir_fd, path.name, shown=path)
    except OSError as exc:
        why = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else "error"
        raise LockFileError(
            f"cannot open the {what} {path}: {why} ({exc.strerror}); tidegate "
            f"needs to write its runtime directory {runtime}"
        ) from exc


class _Lock:
    """An exclusive ``flock`` on one file that names its holder."""

    path: Path
    what = "lock"

    def __init__(self, path: Path, holder: dict[str, Any]) -> None:
        self.path = path
        self.holder = holder
        self._fd: int | None = None
        self.took_over: dict[str, object] | None = None
        """The record of a holder that died holding this lock, when there was one."""

    def _try(self) -> bool:
        fd = _open(self.path, self.what)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.busy_holder = _read_holder(fd)
            os.close(fd)
            return False
        previous = _read_holder(fd)
        if previous.get("pid"):
            # The file named a holder but nobody held the flock: that process is gone.
            self.took_over = previous
        self._fd = fd
        self._write({**self.holder, "pid": os.getpid(), "since": time.time()})
        return True

    def _write(self, record: dict[str, Any]) -> None:
        assert self._fd is not None
        data = json.dumps(record).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        self.holder = record

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _unlock(self) -> None:
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


class RunLock(_Lock):
    """A live run's registration: held from the run's start to its end.

    Born locked: the record is written and locked under a random name, then linked into
    place (or, over a dead run's file, that file's lock is taken over), so a file at
    ``live/<run-id>.lock`` is always either held by its live run or left by a dead one
    (``live_runs`` can tell, without ever racing a run that is starting), and two
    processes registering one run never both hold it (``_register``). Liveness is asked
    with a shared lock, which never refuses another asker."""

    what = "run lock"

    def __init__(self, runtime_dir: Path, run_id: str) -> None:
        super().__init__(runtime_dir / LIVE_DIR / f"{run_id}.lock", {"run_id": run_id})
        self.run_id = run_id

    def acquire(self) -> RunLock:
        temp = temp_name(self.path.name)
        fd = _open(self.path.with_name(temp), self.what)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh random name: free
            self._fd = fd
            self._write({**self.holder, "pid": os.getpid(), "since": time.time()})
            with opened_dir(self.path.parent.parent, LIVE_DIR) as dir_fd:
                try:
                    self._register(dir_fd, temp)
                finally:
                    with contextlib.suppress(OSError):
                        os.unlink(temp, dir_fd=dir_fd)
        except BaseException as exc:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if isinstance(exc, OSError):
                raise LockFileError(
                    f"cannot register run {self.run_id} at {self.path}: {exc}"
                ) from exc
            raise
        return self

    def _register(self, dir_fd: int, temp: str) -> None:
        """Put the locked ``temp`` in place as ``live/<run-id>.lock``: linked to the name
        when it is free (a link never replaces a file another process put there meanwhile),
        else by taking over the lock of the registration there when its run is dead. Two
        processes registering one run: one wins, the other is refused."""
        name = self.path.name
        deadline = time.monotonic() + _TAKEOVER_WAIT_S
        while True:
            try:
                os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                return
            except FileExistsError:
                pass
            holder = self._take_over(dir_fd, name)
            if holder is None:
                return
            if _pid_alive(holder.get("pid")) or time.monotonic() > deadline:
                raise RepositoryLockedError(
                    f"run {self.run_id} is already running (pid {holder.get('pid', '?')}); "
                    f"lock file {self.path}"
                )
            time.sleep(0.005)  # a dead run's file someone is looking at or removing

    def _take_over(self, dir_fd: int, name: str) -> dict[str, Any] | None:
        """Hold the registration at ``name`` when nobody holds it (its run died): our
        record is written into it and its descriptor becomes ours (None). Otherwise the
        record of whoever holds it ({} when the name went away, or held something that is
        not a lock file, now removed: try again)."""
        try:
            fd = os.open(name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                         dir_fd=dir_fd)  # fmt: skip
        except FileNotFoundError:
            return {}
        except OSError:  # a link or worse planted at the name: not a run's; it goes
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)
            return {}
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=dir_fd)
                return {}
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return _read_holder(fd)
            if not _same_file(self.path, fd):
                return {}  # removed (a dead run's, by ``live_runs``) meanwhile
            previous = _read_holder(fd)
        except BaseException:
            os.close(fd)
            raise
        if previous.get("pid"):
            self.took_over = previous  # its run died holding it (a resume takes it over)
        assert self._fd is not None
        os.close(self._fd)
        self._fd = fd
        self._write({**self.holder, "pid": os.getpid(), "since": time.time()})
        return None

    def describe(self, **facts: object) -> None:
        """Add what ``tidegate status`` shows (mode, phase, planner...) to the record."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self._write({**self.holder, **facts})

    def release(self) -> None:
        """Unlock and remove the registration (only if the name is still this one's)."""
        if self._fd is not None and _same_file(self.path, self._fd):
            with contextlib.suppress(OSError):
                self.path.unlink()
        self._unlock()


class ApplyLock(_Lock):
    """The landing lock: one writer of the work tree at a time, waiting its turn."""

    what = "landing lock"

    def __init__(self, runtime_dir: Path, what: str) -> None:
        super().__init__(runtime_dir / APPLY_LOCK, {"run_id": what})
        self.waited_s = 0.0
        self.held_s = 0.0
        self._since = 0.0

    def acquire(self, wait_s: float | None = None) -> ApplyLock:
        if wait_s is None:
            wait_s = _wait_s()
        start = time.monotonic()
        pause = 0.002
        while not self._try():
            if time.monotonic() - start >= wait_s:
                holder = self.busy_holder
                raise RepositoryLockedError(
                    f"another tidegate process is writing to this work tree: "
                    f"{holder.get('run_id', '?')} (pid {holder.get('pid', '?')}), for more "
                    f"than {wait_s:.0f}s; nothing was written; lock file {self.path}"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        self._since = time.monotonic()
        self.waited_s = self._since - start
        return self

    def try_acquire(self) -> bool:
        """Take the lock only if it is free now."""
        if self._try():
            self._since = time.monotonic()
            return True
        return False

    def release(self) -> None:
        if self._fd is not None:
            self.held_s = time.monotonic() - self._since
        self._unlock()


def pool_name(slot: int, suffix: str = "") -> str:
    """The name, in the runtime dir, of warm-pool slot ``slot``'s file: ``suffix`` "" its
    shadow's path, ".lock" its lock, ".touched" what its last run wrote. Slot 0's names are
    those of the one-slot pool before it, so an existing warm shadow stays warm."""
    return f"shadow-pool{f'.{slot}' if slot else ''}{suffix}"


class PoolLock(_Lock):
    """A warm-pool slot's: one run at a time uses the slot's pooled shadow; a run finding
    every slot in use makes a shadow of its own (``workspace.shadow``)."""

    def __init__(self, runtime_dir: Path, run_id: str, slot: int = 0) -> None:
        super().__init__(runtime_dir / pool_name(slot, ".lock"), {"run_id": run_id})

    def try_acquire(self) -> bool:
        return self._try()

    def release(self) -> None:
        self._unlock()


def _wait_s() -> float:
    return seconds_setting("TIDEGATE_LANDING_WAIT_S", APPLY_WAIT_S)


def seconds_setting(name: str, default: float) -> float:
    """The environment variable ``name`` as a finite number of seconds >= 0; ``default``
    when it is unset or anything else (a word, a negative number, ``nan``, ``inf``)."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if 0 <= value < float("inf") else default


@contextlib.contextmanager
def landing(runtime_dir: Path, what: str) -> Iterator[ApplyLock]:
    """The landing lock, with no interrupted apply-back pending (one-line refusal
    otherwise: ``tidegate recover`` first)."""
    lock = ApplyLock(runtime_dir, what).acquire()
    try:
        if pending := pending_journals(runtime_dir):
            raise UsageError(
                f"an apply-back interrupted by a crash is pending ({pending[0].name}); run "
                "`tidegate recover` (or `tidegate recover --rollback`) first"
            )
        yield lock
    finally:
        lock.release()


def crashed_journal(runtime_dir: Path) -> str | None:
    """The name of a journal a crashed apply-back left, when no landing is in progress
    (a journal seen while another process holds the landing lock may be its own)."""
    lock = ApplyLock(runtime_dir, "check")
    if not lock.try_acquire():
        return None
    try:
        pending = pending_journals(runtime_dir)
        return pending[0].name if pending else None
    finally:
        lock.release()


def live_runs(runtime_dir: Path) -> list[dict[str, Any]]:
    """The records of the runs alive in this work tree, oldest first. A registration whose
    holder is gone (killed) is removed on the way (only while it is still that file)."""
    directory = runtime_dir / LIVE_DIR
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(".lock") or name.startswith("."):
            continue  # a registration being born (``.<name>.<random>.tmp``) is not listed
        try:
            fd = _open(directory / name, "run lock")
        except (LockFileError, TidegateError):
            continue  # not a lock file (a planted link): not a run
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                record = _read_holder(fd)
                if record:
                    out.append(record)
                continue
            if _same_file(directory / name, fd):  # nobody holds it: a dead run's
                with contextlib.suppress(OSError):
                    os.unlink(directory / name)
        finally:
            os.close(fd)
    return sorted(out, key=lambda r: float(r.get("since", 0)))


def _pid_alive(pid: object) -> bool:
    return isinstance(pid, int) and pid > 0 and pid_exists(pid)


def _same_file(path: Path, fd: int) -> bool:
    try:
        named, held = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _read_holder(fd: int) -> dict[str, Any]:
    raw = os.pread(fd, 65536, 0)
    try:
        data = json.loads(raw.decode()) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
