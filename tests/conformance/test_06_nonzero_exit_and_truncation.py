"""Conformance 6: a non-zero exit is a structured result (not a transport success and not
a passed validation), and large output is truncated per stream with the truncation said,
while the spill files keep the output up to their cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance._commands import BACKENDS, run_sh
from tests.conftest import Repo


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_zero_exit_is_structured(backend: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    res = run_sh(backend, ws, "echo partial; echo broken >&2; exit 3")
    assert (res.exit_code, res.ok, res.stop_reason) == (3, False, None)
    assert (res.stdout_tail, res.stderr_tail) == ("partial\n", "broken\n")
    assert not res.stdout_truncated and not res.stderr_truncated


@pytest.mark.parametrize("backend", BACKENDS)
def test_output_is_truncated_per_stream_and_says_so(backend: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    res = run_sh(
        backend,
        ws,
        "seq 1 50000; seq 1 10 >&2; exit 1",
        stdout_limit=1000,
        stderr_limit=1000,
        spill_limit=100_000,
    )
    assert res.exit_code == 1
    assert res.stdout_truncated and len(res.stdout_tail) <= 1000
    assert res.stdout_tail.endswith("49999\n50000\n")
    assert not res.stderr_truncated and res.stderr_tail == "".join(f"{i}\n" for i in range(1, 11))
    full = "".join(f"{i}\n" for i in range(1, 50001)).encode()
    assert res.stdout_bytes == len(full) and res.spill_truncated
    assert res.stdout_file.read_bytes() == full[:100_000]
    assert res.stderr_file.read_text() == res.stderr_tail


def test_a_failing_verify_command_fails_the_run_with_its_exit_code(committed_repo: Repo) -> None:
    report = committed_repo.run(
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        verify="seq 1 300000; echo 'expected 5 got 6' >&2; exit 4",
        max_attempts=1,
    )
    assert report.status == "failed" and report.failure_phase == "VERIFY"
    assert report.verify is not None and report.verify.exit_code == 4
    assert not report.verify.timed_out
    assert "exited 4" in report.message
    assert sum(len(f) for f in report.feedback) < 20_000  # bounded, not 2 MB of output
    assert "return a - b" in committed_repo.read("calc.py")  # nothing applied
