"""The process groups of this process's commands, recorded while they run, so that when
tidegate itself is killed (SIGKILL, the OOM killer) what it started does not run on
unwatched: ``tidegate recover``, ``resume`` and ``gc`` kill the groups a dead process
recorded (``workspace.owned_temp.stop_dead_groups``).

A contained command needs no record to die with tidegate (bubblewrap's
``--die-with-parent``, and its pid namespace ends with it), but an uncontained one runs in
a session of its own, and nothing else stops it. The record is an empty file
``g-<pgid>-<start>`` in the process's own directory (``sandbox_dirs.process_dir``, whose
name names its owner), removed once the group was killed and reaped. A recorded group is
killed only while it is still that group: its leader alive with the recorded start time,
or the leader gone and members left (a group id is never given to a new process while the
group has members); a leader pid now another process's is left alone.

The group's id is its leader's pid, known only once it is spawned, so an uncontained
command must not run before its record exists (tidegate killed in between would leave it
running unrecorded). ``started`` spawns it behind a gate: ``/bin/sh`` as the group's
leader reads one line from its stdin, and only when that line is ``go`` execs the command
in its own place (same pid, same start time). tidegate writes ``go`` once the record is
made (or could not be: recording is best effort); if tidegate dies first, the shell reads
the end of its input and exits, and the command never starts. The gate costs one more
exec (~1 ms, ``bench/runner.py``); a contained command, which bubblewrap ties to tidegate,
starts without it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from tidegate.disk.faults import maybe_crash
from tidegate.disk.owners import process_start
from tidegate.exec.sandbox_dirs import process_dir
from tidegate.text.numbers import whole_number

PREFIX = "g-"
_GATE = 'IFS= read -r go && [ "$go" = go ] || exit 125; exec "$@"'
"""The leader's script: the command's argv are its positional parameters, never code."""


@contextlib.contextmanager
def started(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    *,
    gated: bool,
    stdin: bool = False,
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` spawned in a session of its own (stdout and stderr piped), its group
    recorded while the block runs (the block kills and reaps it). ``gated``: the command
    starts only once the record exists (for an uncontained command; a program that cannot
    be found raises as ``subprocess.Popen`` would). ``stdin``: the command's stdin is the
    process's pipe (else ``/dev/null``). Recording is best effort: a command is never
    refused for want of a record."""
    if gated:
        _check_startable(argv[0], cwd, env)
        script = _GATE if stdin else _GATE + " </dev/null"
        argv = ["/bin/sh", "-c", script, "tidegate-gate", *argv]
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if gated or stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        bufsize=0,
    )
    maybe_crash("exec.spawned")  # crash tests: die before the record (a gated command waits)
    path = _record(proc.pid)
    if gated:
        _let_go(proc, keep_stdin=stdin)
    try:
        yield proc
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _let_go(proc: subprocess.Popen[bytes], keep_stdin: bool) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(b"go\n")
        if not keep_stdin:
            proc.stdin.close()
    except OSError:
        pass  # the gate is gone already (killed): supervision sees it exit


def _check_startable(program: str, cwd: Path, env: Mapping[str, str] | None) -> None:
    """Raise the error ``subprocess.Popen`` raises for ``program`` when it cannot be
    started (the gate's shell would report it only as exit 127): not found on the PATH
    the command gets, or (a path, taken from ``cwd``) missing or not executable."""
    if "/" in program:
        path = os.path.join(cwd, program)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return
    search = (os.environ if env is None else env).get("PATH", os.defpath)
    dirs = os.pathsep.join(os.path.join(cwd, d) for d in search.split(os.pathsep))
    if shutil.which(program, path=dirs) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def _record(pid: int) -> Path | None:
    start = process_start(pid)
    if start is None:
        return None  # already gone (or no /proc): nothing to tell a successor
    try:
        path = process_dir() / f"{PREFIX}{pid}-{start}"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError:
        return None
    return path


def kill_recorded(parent: Path, dry_run: bool = False) -> list[int]:
    """Kill the process groups recorded in ``parent``, a dead process's own directory
    (the caller checked its owner is dead); the group ids killed, sorted (``dry_run``:
    those that would be, none killed)."""
    killed: list[int] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return killed
    for name in names:
        parsed = _parse(name)
        if parsed is None:
            continue
        pgid, start = parsed
        now = process_start(pgid)
        if now is not None and now != start:
            continue  # the pid was given to another process: not that group
        try:
            os.killpg(pgid, 0 if dry_run else signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pgid)
    return sorted(killed)


def _parse(name: str) -> tuple[int, str] | None:
    if not name.startswith(PREFIX):
        return None
    fields = name[len(PREFIX) :].split("-")
    if len(fields) != 2:
        return None
    pgid, start = whole_number(fields[0]), fields[1]
    if pgid is None or pgid <= 1 or whole_number(start) is None:
        return None
    return pgid, start
