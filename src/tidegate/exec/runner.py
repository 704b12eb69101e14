"""Running a command: direct spawn, deadlines, cancellation, bounded output.

A shell string only ever runs through the published interpreter (``host_interpreter()``,
``/bin/sh -c``); nothing is spawned with an implicit shell. The command gets a new session
(so it has no controlling terminal and leads its own process group), stdin from
``/dev/null``, and two pipes that tidegate drains itself:

* each stream keeps only its last ``stdout_limit``/``stderr_limit`` bytes in memory;
* each stream is spilled to a file up to ``spill_limit`` bytes (the head of the output;
  the in-memory tail still ends where the output ended). ``stdout_bytes``/``stderr_bytes``
  say how much the command really wrote, so a cut spill is never mistaken for all of it.

The command stops at the earlier of ``timeout_s`` after the start and the absolute
``deadline`` (a ``time.monotonic()`` value), or when ``cancel`` is set. Stopping, and
normal exit too, SIGKILLs the whole process group, so children that outlived the command
die with it. Under bubblewrap the command's pid namespace dies with bwrap, which catches
processes that left the group with ``setsid``. Uncontained, such a process escapes the
group kill: that is the documented gap of containment ``none`` (``stray_output`` tells
when one still held the output pipes).

A non-zero exit is an ordinary result (``exit_code``); ``exit_code`` is None when the
command was stopped.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import msgspec

from tidegate.disk import faults
from tidegate.errors import UsageError
from tidegate.exec.containment import ContainmentPolicy, ContainmentReport, launch, uncontained
from tidegate.exec.environment import command_environment, without_secrets
from tidegate.exec.groups import started
from tidegate.exec.guard import Clearance
from tidegate.exec.interpreter import host_interpreter
from tidegate.exec.streams import LineWatch, OutputObserver, Stream, open_spill
from tidegate.exec.supervise import StopReason, supervise

SHELL = ("/bin/sh", "-c")
TAIL_BYTES = 64 * 1024
SPILL_BYTES = 128 * 1024 * 1024
"""Per stream: output beyond this is counted and kept in the tail, but not written."""


class CwdRefused(UsageError):
    """A command's working directory is not a directory inside the workspace."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cwd {path!r} refused: {reason}")
        self.path = path
        self.reason = reason


class CommandResult(msgspec.Struct, frozen=True):
    argv: list[str]
    """The interpreter argv (without the containment launcher)."""
    exit_code: int | None
    """None when the command was stopped (timeout, deadline, cancellation)."""
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    stdout_file: Path
    stderr_file: Path
    stdout_truncated: bool
    """The tail is not the whole of stdout."""
    stderr_truncated: bool
    cancelled: bool = False
    containment: ContainmentReport = msgspec.field(
        default_factory=lambda: uncontained("containment not requested")
    )
    stop_reason: StopReason | None = None
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    spill_limit: int = SPILL_BYTES
    stray_output: bool = False
    """The output pipes were still open after the group was killed (an escaped process)."""
    launcher: tuple[str, ...] = ()
    """What ran in front of ``argv`` (the bwrap command line; empty when uncontained)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.stop_reason is None

    @property
    def spill_truncated(self) -> bool:
        """The spill files hold only the first ``spill_limit`` bytes of some stream."""
        return max(self.stdout_bytes, self.stderr_bytes) > self.spill_limit

    @property
    def combined_tail(self) -> str:
        return "\n".join(t for t in (self.stdout_tail, self.stderr_tail) if t)


class SpawnHook(Protocol):
    """What goes in front of the command's argv (and of bubblewrap's) to capture its
    effects (``tools/capture.py``: ``nsenter`` into the namespace of the command's
    overlay); an empty list runs the command as is."""

    def launcher(self, cwd: Path) -> list[str]: ...


def shell_argv(command: str) -> list[str]:
    """The argv that runs a shell string through the host's published interpreter."""
    return host_interpreter().argv(command)


def confine_cwd(workspace: Path, cwd: Path | str) -> Path:
    """``cwd`` (relative to ``workspace``, or absolute) resolved, symlinks included, to a
    directory inside ``workspace``; CwdRefused otherwise."""
    root = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(root, cwd))
    if target != root and not target.startswith(root.rstrip("/") + "/"):
        raise CwdRefused(str(cwd), f"resolves to {target}, outside the workspace {root}")
    if not os.path.isdir(target):
        raise CwdRefused(str(cwd), "not a directory")
    return Path(target)


def run_command(
    argv: Sequence[str],
    cwd: Path,
    timeout_s: float,
    spill_dir: Path,
    env: Mapping[str, str] | None = None,
    label: str = "cmd",
    *,
    clearance: Clearance,
    containment: ContainmentPolicy | None = None,
    deadline: float | None = None,
    cancel: threading.Event | None = None,
    stdout_limit: int = TAIL_BYTES,
    stderr_limit: int = TAIL_BYTES,
    spill_limit: int = SPILL_BYTES,
    workspace: Path | None = None,
    spawn_hook: SpawnHook | None = None,
    passthrough: tuple[str, ...] = (),
    credentials: Mapping[str, str] | None = None,
    output: OutputObserver | None = None,
) -> CommandResult:
    """Run ``argv`` (spawned as is, never through an implicit shell) in ``cwd``.

    The command's environment: ``env`` as the caller built it, or by default the
    allowlisted part of tidegate's own plus the ``passthrough`` names; never a
    secret-shaped variable (``tidegate.exec.environment``). Contained, its HOME and
    TMPDIR are private.

    ``clearance``: who chose the command (``tidegate.exec.guard``): a command that is not
    the user's runs uncontained only when approved, else GuardRefused before anything is
    spawned. ``workspace``: when given, ``cwd`` must resolve inside it (CwdRefused).
    ``containment``: None runs uncontained; a policy runs under bubblewrap when it passed
    its probe, and raises CapabilityMismatch before spawning when the policy requires
    containment and it did not. Output goes to ``spill_dir/<label>.stdout`` and
    ``.stderr``, created without following a link planted there. ``spawn_hook``: see
    ``SpawnHook``. ``output``: told the latest line of the command's output (either
    stream) as it runs, at most every 100 ms (``streams.LineWatch``); raw text, for the
    caller to sanitise before it reaches a terminal.
    """
    argv = list(argv)
    if workspace is not None:
        cwd = confine_cwd(workspace, cwd)
    start = time.monotonic()
    end, reason = _stop_at(start, timeout_s, deadline)
    hooked = spawn_hook.launcher(cwd) if spawn_hook is not None else []
    base = command_environment(None, passthrough) if env is None else without_secrets(env)
    spills = (spill_dir / f"{label}.stdout", spill_dir / f"{label}.stderr")
    with (
        launch(containment, cwd, clearance=clearance, path=base.get("PATH")) as sandbox,
        _spilled(spills, (stdout_limit, stderr_limit), spill_limit) as streams,
    ):
        # ``credentials``: the one key a caller hands to this command on purpose
        # (an agent CLI's model key), past the secret filter and never recorded.
        child_env = {**base, **sandbox.env, **(credentials or {})}
        launched = [*hooked, *sandbox.prefix, *argv]
        watch = None if output is None else LineWatch(output)
        gated = not sandbox.prefix  # uncontained: it waits for its record (exec.groups)
        ran = _run(launched, cwd, child_env, streams, end, reason, cancel, watch, gated)
    launcher = (*hooked, *sandbox.prefix)
    return _result(argv, ran, start, streams, spills, sandbox.report, launcher)


def _stop_at(start: float, timeout_s: float, deadline: float | None) -> tuple[float, StopReason]:
    """When the command is stopped, the earlier of ``timeout_s`` after ``start`` and the
    absolute ``deadline``, and which of the two that is."""
    end = start + timeout_s
    if deadline is not None and deadline < end:
        return deadline, "deadline"
    return end, "timeout"


@contextmanager
def _spilled(
    paths: tuple[Path, Path], tail_limits: tuple[int, int], spill_limit: int
) -> Iterator[tuple[Stream, Stream]]:
    """The command's stdout and stderr streams, each spilled to a fresh file at ``paths``
    (``streams.open_spill``), closed when the command is done."""
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    with open_spill(paths[0]) as out_fh, open_spill(paths[1]) as err_fh:
        yield (
            Stream(out_fh, tail_limits[0], spill_limit),
            Stream(err_fh, tail_limits[1], spill_limit),
        )


def _result(
    argv: list[str],
    ran: tuple[StopReason | None, bool, int | None],
    start: float,
    streams: tuple[Stream, Stream],
    spills: tuple[Path, Path],
    containment: ContainmentReport,
    launcher: tuple[str, ...],
) -> CommandResult:
    """What the command did (``ran``: ``_run``'s answer), its output's tails and spill
    files, and how it was contained."""
    stop, stray, exit_code = ran
    duration = time.monotonic() - start
    out, err = streams
    out_tail, out_cut = out.text()
    err_tail, err_cut = err.text()
    return CommandResult(
        argv=argv,
        exit_code=exit_code,
        timed_out=stop in ("timeout", "deadline"),
        duration_s=duration,
        stdout_tail=out_tail,
        stderr_tail=err_tail,
        stdout_file=spills[0],
        stderr_file=spills[1],
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
        cancelled=stop == "cancelled",
        containment=containment,
        stop_reason=stop,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        spill_limit=out.spill_limit,
        stray_output=stray,
        launcher=launcher,
    )


def _run(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str],
    streams: tuple[Stream, Stream],
    end: float,
    reason: StopReason,
    cancel: threading.Event | None,
    watch: LineWatch | None,
    gated: bool,
) -> tuple[StopReason | None, bool, int | None]:
    """Spawn ``argv`` unless cancelled or out of time already, and supervise it: why it
    was stopped (None: it exited), whether a stray kept a pipe, its exit code."""
    if cancel is not None and cancel.is_set():
        return "cancelled", False, None
    if time.monotonic() >= end:
        return reason, False, None
    with started(argv, cwd, env, gated=gated) as proc:  # killed by `recover` if we die
        stop, stray = supervise(proc, streams, end, reason, cancel, watch)
    return stop, stray, None if stop else proc.returncode


def _fault_command(command: str) -> None:
    """The crash tests' ``=run`` fault (``tidegate.disk.faults``): the command set by whoever
    runs tidegate (the test), through this runner, in this process's working directory, as
    the user's own command."""
    import shutil
    import tempfile

    spill = Path(tempfile.mkdtemp(prefix="tidegate-fault-"))
    try:
        run_command(
            shell_argv(command), Path.cwd(), 600, spill, label="fault", clearance=Clearance.user()
        )
    finally:
        shutil.rmtree(spill, ignore_errors=True)


faults.run_command = _fault_command
