"""Conformance 53 (the POSIX sh half): dialect probes through the real runner, contained
and uncontained - variables, chaining, redirection, Unicode and space paths,
cancellation, timeouts and output bounds all behave as POSIX sh says."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.conformance._commands import BACKENDS, run_sh


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.mark.parametrize("backend", BACKENDS)
def test_variables(backend: str, ws: Path) -> None:
    res = run_sh(
        backend,
        ws,
        'X="a b"; echo "$X|${UNSET:-default}|${#X}|$FROM_ENV"; '
        "Y=inner sh -c 'echo $Y'; echo \"[$Y]\"",
        env={"PATH": "/usr/bin:/bin", "FROM_ENV": "given"},
    )
    assert res.stdout_tail == "a b|default|3|given\ninner\n[]\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_chaining_and_exit_status(backend: str, ws: Path) -> None:
    res = run_sh(
        backend, ws, "false && echo no; true && echo and; false || echo or; echo one; echo two"
    )
    assert res.stdout_tail == "and\nor\none\ntwo\n" and res.exit_code == 0
    assert run_sh(backend, ws, "true; false").exit_code == 1
    assert run_sh(backend, ws, "exit 42").exit_code == 42


@pytest.mark.parametrize("backend", BACKENDS)
def test_redirection(backend: str, ws: Path) -> None:
    res = run_sh(
        backend,
        ws,
        "echo first > f; echo second >> f; cat < f; echo to-err 1>&2; "
        "ls /nonexistent 2>/dev/null || echo quiet; (echo merged 2>&1 >&2) 2>&1",
    )
    assert res.stdout_tail == "first\nsecond\nquiet\nmerged\n"
    assert res.stderr_tail == "to-err\n"
    assert (ws / "f").read_text() == "first\nsecond\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_unicode_and_space_paths(backend: str, ws: Path) -> None:
    res = run_sh(
        backend,
        ws,
        "mkdir -p 'dir with space/ünïcödé ✓' && cd 'dir with space/ünïcödé ✓' && "
        "printf 'ß\\n' > 'file name.txt' && pwd && cat 'file name.txt'",
    )
    assert res.exit_code == 0, res.stderr_tail
    where = ws.resolve() / "dir with space" / "ünïcödé ✓"
    assert res.stdout_tail == f"{where}\nß\n"
    assert (where / "file name.txt").read_text() == "ß\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancellation(backend: str, ws: Path) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    res = run_sh(backend, ws, "echo up; sleep 30", cancel=cancel)
    timer.cancel()
    assert res.cancelled and res.exit_code is None and res.stdout_tail == "up\n"
    assert res.duration_s < 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_timeout(backend: str, ws: Path) -> None:
    res = run_sh(backend, ws, "echo up; sleep 30", timeout_s=0.3)
    assert res.timed_out and res.stop_reason == "timeout" and res.exit_code is None
    assert res.stdout_tail == "up\n" and res.duration_s < 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_output_bounds(backend: str, ws: Path) -> None:
    res = run_sh(
        backend,
        ws,
        "head -c 3000000 /dev/zero | tr '\\0' o; head -c 5000 /dev/zero | tr '\\0' e >&2",
        stdout_limit=4096,
        stderr_limit=10_000,
        spill_limit=1_000_000,
    )
    assert res.exit_code == 0
    assert (res.stdout_bytes, res.stderr_bytes) == (3_000_000, 5000)
    assert res.stdout_tail == "o" * 4096 and res.stdout_truncated
    assert res.stderr_tail == "e" * 5000 and not res.stderr_truncated
    assert res.stdout_file.stat().st_size == 1_000_000 and res.spill_truncated
