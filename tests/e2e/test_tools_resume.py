"""A killed `tidegate tools call` is recorded as interrupted; `tidegate resume` refuses it in
one line (tool runs keep no checkpoints), and nothing is run again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.conftest import Repo, requires_containment, tidegate_cli


@requires_containment
def test_an_interrupted_tool_run_is_not_resumable(committed_repo: Repo) -> None:
    repo = committed_repo
    args = {"command": "echo go >> started.txt; sleep 30"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidegate", "tools", "call", "command_run",
         "--args", json.dumps(args), "--approval", "trusted-workspace"],
        cwd=repo.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
        # the write must reach the tree while the command runs: no overlay capture
        env={**os.environ, "TIDEGATE_EFFECT_CAPTURE": "inventory"},
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while not (repo.root / "started.txt").exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.stderr is not None
    proc.stderr.close()

    listed = tidegate_cli("runs", "--json", cwd=repo.root)
    run = json.loads(listed.stdout)[0]
    assert (run["kind"], run["status"]) == ("tools", "interrupted")
    res = tidegate_cli("resume", run["run_id"], cwd=repo.root)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "cannot be resumed" in res.stderr
    assert (repo.root / "started.txt").read_text() == "go\n"
