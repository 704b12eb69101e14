"""``tidegate.cli.entry``: the console script ends the process without the interpreter's
teardown only when that teardown has nothing left to do, and never loses output."""

from __future__ import annotations

import os
import subprocess
import sys

ENTRY = (
    "import sys; from tidegate import cli; from tidegate.cli import runcmd; "
    "sys.argv = ['tidegate', *sys.argv[1:]]; "
    "runcmd.finished_cleanly = True; "  # as after a run that closed its store
    "{before}sys.exit(cli.entry())"
)


def _run(before: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    code = ENTRY.format(before=before)
    # Buffered streams, as in a user's shell (the test machine may export PYTHONUNBUFFERED).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, check=False, env=env
    )


def test_an_exit_handler_still_runs() -> None:
    res = _run("import atexit; atexit.register(print, 'the handler ran'); ", "--help")
    assert res.returncode == 0
    assert res.stdout.endswith(b"the handler ran\n")


def test_a_live_thread_gets_the_ordinary_exit() -> None:
    before = (
        "import threading, time; "
        "threading.Thread(target=lambda: (time.sleep(0.3), print('the thread finished'))).start(); "
    )
    res = _run(before, "--help")
    assert res.returncode == 0
    assert res.stdout.endswith(b"the thread finished\n")


def test_everything_written_is_flushed_and_the_code_kept() -> None:
    res = _run("", "--help")
    assert (
        res.returncode == 0
        and res.stdout.startswith(b"Usage: tidegate")
        and b"improvement" in res.stdout
    )
    bad = _run("", "run", "--no-such-option")
    assert bad.returncode == 2 and b"No such option" in bad.stderr
