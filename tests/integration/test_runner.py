"""The command runner with real processes, uncontained: exit codes, deadlines,
cancellation, process-group cleanup, cwd confinement and bounded output."""

from __future__ import annotations

import itertools
import os
import resource
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tidegate.errors import UsageError
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import CommandResult, CwdRefused, confine_cwd, run_command, shell_argv


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def sh(ws: Path, command: str, **kwargs: Any) -> CommandResult:
    kwargs.setdefault("timeout_s", 20)
    return run_command(
        shell_argv(command), ws, spill_dir=ws.parent / "spill", **kwargs, clearance=Clearance.user()
    )


def _alive(pid: int, grace_s: float = 3.0) -> bool:
    """Whether ``pid`` still runs once a SIGKILL had time to land (delivery is asynchronous:
    on a loaded machine the victim can still be scheduled for a moment)."""
    end = time.monotonic() + grace_s
    while True:
        try:
            os.kill(pid, 0)
            status = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return False
        if status == "Z":
            return False
        if time.monotonic() >= end:
            return True
        time.sleep(0.02)


def test_non_zero_exit_is_a_result_with_both_streams(ws: Path) -> None:
    res = sh(ws, "echo out; echo err >&2; exit 7")
    assert (res.exit_code, res.ok, res.stop_reason, res.timed_out) == (7, False, None, False)
    assert (res.stdout_tail, res.stderr_tail) == ("out\n", "err\n")
    assert res.stdout_file.read_text() == "out\n" and res.stderr_file.read_text() == "err\n"
    assert res.containment.backend == "none" and res.launcher == ()


def test_timeout_kills_the_group_and_reports_no_exit_code(ws: Path) -> None:
    start = time.monotonic()
    res = sh(ws, "echo $$ > pid; sleep 30 & echo $! > child; wait", timeout_s=0.5)
    assert time.monotonic() - start < 5
    assert (res.exit_code, res.stop_reason, res.timed_out, res.ok) == (None, "timeout", True, False)
    assert not _alive(int((ws / "child").read_text()))


def test_an_absolute_deadline_wins_over_a_longer_timeout(ws: Path) -> None:
    res = sh(ws, "sleep 30", timeout_s=60, deadline=time.monotonic() + 0.3)
    assert res.stop_reason == "deadline" and res.timed_out and res.duration_s < 5


def test_a_passed_deadline_or_a_set_cancel_spawns_nothing(ws: Path) -> None:
    res = sh(ws, "touch ran", deadline=time.monotonic() - 1)
    assert res.stop_reason == "deadline" and res.exit_code is None
    cancel = threading.Event()
    cancel.set()
    res = sh(ws, "touch ran", cancel=cancel)
    assert res.cancelled and res.stop_reason == "cancelled" and not res.ok
    assert not (ws / "ran").exists()


def test_children_left_behind_after_a_normal_exit_are_killed(ws: Path) -> None:
    # A double fork: the grandchild is re-parented but stays in the process group.
    res = sh(ws, "(sleep 30 & echo $! > grandchild) ; echo done")
    assert res.exit_code == 0 and res.stdout_tail == "done\n"
    pid = int((ws / "grandchild").read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)


def test_a_setsid_grandchild_escapes_without_containment(ws: Path) -> None:
    """The documented gap of containment "none": a process that leaves the group with
    setsid survives the group kill (docs/commands.md). It keeps the output pipe open, so
    the runner stops draining after a grace period and says so."""
    marker = ws / "escaped"
    res = sh(ws, f"setsid sh -c 'sleep 1.5; touch {marker}' & sleep 0.3; echo started")
    assert res.exit_code == 0 and res.stray_output
    assert res.containment.backend == "none"
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()


def test_streams_are_bounded_independently(ws: Path) -> None:
    res = sh(
        ws,
        "i=0; while [ $i -lt 2000 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done",
        stdout_limit=100,
        stderr_limit=100_000,
    )
    assert res.stdout_truncated and not res.stderr_truncated
    assert len(res.stdout_tail.encode()) <= 100 and res.stdout_tail.endswith("out1999\n")
    assert res.stderr_tail.startswith("err0\n") and res.stderr_tail.endswith("err1999\n")
    assert res.stdout_bytes == res.stdout_file.stat().st_size  # the spill is complete
    assert res.stdout_file.read_text().startswith("out0\nout1\n")


def test_spill_cap_keeps_the_head_on_disk_and_the_tail_in_memory(ws: Path) -> None:
    res = sh(ws, "seq 1 100000", spill_limit=1000, stdout_limit=50)
    assert res.exit_code == 0 and res.spill_truncated
    assert res.stdout_bytes == len("".join(f"{i}\n" for i in range(1, 100001)))
    assert res.stdout_file.stat().st_size == 1000
    assert res.stdout_file.read_text().startswith("1\n2\n3\n")
    assert res.stdout_tail.endswith("99999\n100000\n")


def test_a_tail_does_not_start_with_half_a_character(ws: Path) -> None:
    res = sh(ws, "printf 'ééééé'", stdout_limit=5)  # 10 bytes; the cut lands mid-character
    assert res.stdout_truncated and res.stdout_tail == "éé"


def test_one_gigabyte_of_output_does_not_grow_memory(ws: Path) -> None:
    """1 GB on stdout: memory stays flat (tail only), the spill stops at its cap."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    res = sh(ws, "head -c 1000000000 /dev/zero", timeout_s=120, spill_limit=8 << 20)
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert res.exit_code == 0
    assert res.stdout_bytes == 1_000_000_000 and res.stdout_truncated and res.spill_truncated
    assert res.stdout_file.stat().st_size == 8 << 20
    assert len(res.stdout_tail) == 64 * 1024
    assert growth_mb < 50, growth_mb


def test_cwd_must_resolve_inside_the_workspace(ws: Path, tmp_path: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "out").symlink_to(tmp_path)
    (ws / "file").write_text("x")
    assert confine_cwd(ws, "sub") == (ws / "sub").resolve()
    assert confine_cwd(ws, ws) == ws.resolve()
    for bad in ("..", "out", "file", "missing", str(tmp_path), "sub/../.."):
        with pytest.raises(CwdRefused) as info:
            confine_cwd(ws, bad)
        assert isinstance(info.value, UsageError)
    with pytest.raises(CwdRefused):
        run_command(
            ["touch", "x"],
            ws / "out",
            5,
            tmp_path / "spill",
            workspace=ws,
            clearance=Clearance.user(),
        )
    assert not (tmp_path / "x").exists()
    res = run_command(
        ["pwd"], ws / "sub", 5, tmp_path / "spill", workspace=ws, clearance=Clearance.user()
    )
    assert res.stdout_tail == f"{(ws / 'sub').resolve()}\n"


def test_argv_is_spawned_directly_not_through_a_shell(ws: Path) -> None:
    res = run_command(
        ["echo", "$HOME; touch pwned"], ws, 5, ws.parent / "spill", clearance=Clearance.user()
    )
    assert res.stdout_tail == "$HOME; touch pwned\n"
    assert not (ws / "pwned").exists()


def test_the_command_is_its_groups_leader_with_stdin_from_dev_null(ws: Path) -> None:
    """Behind the start gate (``exec.groups.started``) the command takes the gate's place:
    its own pid leads its group and session, its argv[0] is as given, stdin is /dev/null."""
    script = (
        'name=$0; set -- $(cat /proc/$$/stat); echo "$1 $5 $6"; readlink /proc/self/fd/0; '
        'echo "$name"'
    )
    res = run_command(
        ["sh", "-c", script, "named"], ws, 5, ws.parent / "spill", clearance=Clearance.user()
    )
    pid, pgid, sid, stdin, name = res.stdout_tail.split()
    assert pid == pgid == sid
    assert (stdin, name) == ("/dev/null", "named")


@pytest.mark.parametrize(
    ("program", "error"),
    [
        ("no-such-program-tidegate", FileNotFoundError),
        ("./missing.sh", FileNotFoundError),
        ("./plain.txt", PermissionError),
        ("./", PermissionError),
    ],
)
def test_a_program_that_cannot_start_raises_as_popen_does(
    ws: Path, program: str, error: type[OSError]
) -> None:
    (ws / "plain.txt").write_text("not a program\n")
    with pytest.raises(error):
        run_command([program], ws, 5, ws.parent / "spill", clearance=Clearance.user())


def test_a_relative_program_is_found_from_the_commands_cwd(ws: Path) -> None:
    tool = ws / "tool.sh"
    tool.write_text("#!/bin/sh\necho from-cwd\n")
    tool.chmod(0o755)
    res = run_command(["./tool.sh"], ws, 5, ws.parent / "spill", clearance=Clearance.user())
    assert res.stdout_tail == "from-cwd\n"


def test_an_output_observer_is_told_the_latest_line_while_the_command_runs(ws: Path) -> None:
    """Told as it runs, not at the end: a line followed by silence still arrives within
    the interval (the drain wakes for it), and a flood is told at most every 100 ms."""
    started = time.monotonic()
    told: list[tuple[float, str]] = []

    def seen(line: str) -> None:
        told.append((time.monotonic() - started, line))

    flood = "i=0; while [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); done"
    res = sh(ws, f"echo one; echo two; sleep 1; {flood}; echo last >&2; sleep 0.5", output=seen)
    assert res.ok
    assert [line for _, line in told][-1] == "last"  # stderr too
    two = next(at for at, line in told if line == "two")
    assert two < 0.8, told  # long before the sleep ended
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(told)]
    assert all(gap >= 0.09 for gap in gaps), told
    assert len(told) <= 2 + (res.duration_s / 0.1), told


def test_without_an_observer_nothing_is_watched(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tidegate.exec import streams

    def refuse(*_: object) -> None:
        raise AssertionError("a LineWatch was made without an observer")

    monkeypatch.setattr(streams.LineWatch, "__init__", refuse)
    assert sh(ws, "echo hello").stdout_tail == "hello\n"
