"""Two agents, two processes, one work tree: their contained commands run at the same
time, and each call's effects are exactly its own.

Agent A (another process, its own tool host) runs a command that writes ``a.txt``, sleeps,
then writes ``shared.txt``. While it sleeps, agent B (this process) runs one that writes
``b.txt`` and ``shared.txt``. B's call must finish while A's still runs -- the commit lock
is not held while a command runs in its overlay, so eight agents do not queue behind one
another -- and each call must report exactly what its own merge changed: B ``b.txt`` and
``shared.txt`` from the committed text, A ``a.txt`` and ``shared.txt`` from B's text
(merged in between) to A's. Nothing of A's is taken for B's or the other way round."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from typing import Any

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor

AGENT_A = r"""
import json, sys, time
from pathlib import Path
from tidegate.tools.calls import ToolCall
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.port import WorkspacePort

ctx = ToolContext(workspace=WorkspacePort(Path(sys.argv[1])), containment="required")
with ToolExecutor(ctx) as ex:
    command = "echo a > a.txt; sleep 3; echo a2 > shared.txt"
    print("started", flush=True)
    result = ex.execute(ToolCall(call_id="a1", name="command_run", arguments={"command": command}))
    ended = time.time()
print(json.dumps({"ended": ended, "result": result.to_json()}))
"""


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _writes(result: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    return {
        w["path"]: (w["before"]["sha256"], w["after"]["sha256"]) for w in result["effects"]["write"]
    }


@requires_containment
def test_two_agents_commands_overlap_and_each_reports_its_own(committed_repo: Repo) -> None:
    root = committed_repo.root
    committed_repo.write("shared.txt", "committed\n")
    agent_a = subprocess.Popen(
        [sys.executable, "-c", AGENT_A, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert agent_a.stdout is not None
    assert agent_a.stdout.readline().strip() == "started"
    time.sleep(1.0)  # A's command is in its sleep now (its first write is in its overlay)
    with executor(root, containment="required") as ex:
        b = ex.execute(call("command_run", command="echo b > b.txt; echo b1 > shared.txt"))
        b_ended = time.time()
    out, err = agent_a.communicate(timeout=60)
    assert agent_a.returncode == 0, err
    a = json.loads(out.strip().splitlines()[-1])
    assert b.ok and b.output is not None and b.output["exit_code"] == 0, b
    assert a["result"]["ok"] and a["result"]["output"]["exit_code"] == 0, a
    assert b_ended < a["ended"], "B's command waited for A's to end"
    assert b.effects is not None
    assert _writes(b.to_json()) == {
        "b.txt": (None, _sha("b\n")),
        "shared.txt": (_sha("committed\n"), _sha("b1\n")),
    }
    assert _writes(a["result"]) == {
        "a.txt": (None, _sha("a\n")),
        "shared.txt": (_sha("b1\n"), _sha("a2\n")),
    }
    assert (root / "shared.txt").read_text() == "a2\n"
    assert (root / "a.txt").read_text() == "a\n" and (root / "b.txt").read_text() == "b\n"
