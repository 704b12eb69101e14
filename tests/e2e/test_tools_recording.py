"""``tidegate tools call`` and ``tidegate mcp serve`` record into the repository's run store:
one call is one run of kind ``tools``, one MCP session one run of kind ``mcp``, and
``tidegate runs`` / ``tidegate read`` show them with their calls and host-attested effects.
Real subprocesses, a real SQLite store, the MCP SDK's own stdio client."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import Repo, requires_containment, tidegate_cli


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _detail(repo: Repo, *extra: str) -> dict[str, Any]:
    proc = tidegate_cli("read", "latest", "--json", "--detail", *extra, cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)
    assert isinstance(value, dict)
    return value


def _call(repo: Repo, tool: str, args: dict[str, Any], *extra: str, **env: str) -> Any:
    return tidegate_cli(
        "tools",
        "call",
        tool,
        "--args",
        json.dumps(args),
        "--workspace",
        str(repo.root),
        *extra,
        env=env,
    )


def test_a_write_call_is_one_run_with_its_effects(committed_repo: Repo) -> None:
    repo = committed_repo
    read = _call(repo, "workspace_read", {"path": "calc.py"})
    assert read.returncode == 0, read.stderr
    digest = json.loads(read.stdout)["output"]["sha256"]
    new = "def add(a, b):\n    return a + b\n"
    write = _call(repo, "workspace.write", {"path": "calc.py", "content": new, "expect": digest})
    assert write.returncode == 0, write.stderr
    assert write.stderr == ""
    assert repo.read("calc.py") == new

    detail = _detail(repo)
    run = detail["run"]
    assert (run["kind"], run["status"], run["acknowledged"]) == ("tools", "succeeded", True)
    assert run["run_id"].startswith("tools-")
    [call] = detail["effects"]["tool_calls"]
    assert (call["tool_call_id"], call["canonical_tool"], call["status"]) == (
        "cli-1",
        "workspace.write",
        "succeeded",
    )
    assert call["input_sha256"].startswith("sha256:")
    [effect] = call["effects"]["write"]
    assert effect == {
        "path": "calc.py",
        "before": {"kind": "file", "sha256": digest},
        "after": {"kind": "file", "sha256": _sha(new)},
    }
    assert detail["effects"]["changed_files"] == [
        {
            "path": "calc.py",
            "action": "modify",
            "before_sha256": digest,
            "after_sha256": _sha(new),
            "before_mode": None,
            "after_mode": None,
            "path_bytes": None,
        }
    ]
    assert detail["evidence"]["replay_hash"] == detail["evidence"]["replay_hash_recomputed"]
    assert detail["report"]["planner"] == "tools:cli"

    runs = tidegate_cli("runs", "--json", cwd=repo.root)
    rows = json.loads(runs.stdout)
    assert [(r["kind"], r["status"]) for r in rows] == [("tools", "succeeded")] * 2
    assert rows[0]["run_id"] == run["run_id"]  # newest first
    # The read run holds the read call, with its own input hash.
    older = _detail_of(repo, rows[1]["run_id"])
    [read_call] = older["effects"]["tool_calls"]
    assert read_call["canonical_tool"] == "workspace.read"
    assert read_call["input_sha256"] != call["input_sha256"]


def _detail_of(repo: Repo, run_id: str) -> dict[str, Any]:
    proc = tidegate_cli("read", run_id, "--json", "--detail", cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)
    assert isinstance(value, dict)
    return value


def test_a_failed_call_is_a_failed_run(committed_repo: Repo) -> None:
    denied = _call(
        committed_repo,
        "workspace_write",
        {"path": ".git/config", "content": "", "expect": "must_not_exist"},
    )
    assert denied.returncode == 1
    detail = _detail(committed_repo)
    assert (detail["run"]["status"], detail["run"]["error_class"]) == ("failed", "APPROVAL_DENIED")
    [call] = detail["effects"]["tool_calls"]
    assert call["status"] == "denied" and call["effects"]["approval"]["status"] == "denied"


def test_state_root_option_chooses_the_store(committed_repo: Repo, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    proc = _call(committed_repo, "workspace_list", {}, "--state-root", str(other))
    assert proc.returncode == 0, proc.stderr
    assert list(other.glob("*/runs.sqlite3"))
    assert _detail(committed_repo, "--state-root", str(other))["run"]["kind"] == "tools"
    default = tidegate_cli("runs", "--json", cwd=committed_repo.root)
    assert json.loads(default.stdout) == []  # nothing went to TIDEGATE_STATE_ROOT


def test_store_failures_print_the_result_and_one_persistence_line(committed_repo: Repo) -> None:
    repo = committed_repo
    # trace.write:2 -- the run starts, then the call's record fails after the write ran.
    # report.write -- the call is recorded, the run's final report is not.
    for n, fault in enumerate(("trace.write:2", "report.write")):
        path = f"new{n}.txt"
        args = {"path": path, "content": "x\n", "expect": "must_not_exist"}
        proc = _call(repo, "workspace_write", args, TIDEGATE_STORE_FAULT=fault)
        assert proc.returncode == 1, (fault, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("tidegate: error: PERSISTENCE_ERROR: ")
        assert len(proc.stderr.splitlines()) == 1
        result = json.loads(proc.stdout)
        assert result["status"] == "ok" and result["effects"]["write"][0]["path"] == path
        assert repo.read(path) == "x\n"
        run = _detail(repo)["run"]
        assert run["kind"] == "tools" and run["status"] != "succeeded"
        if fault == "trace.write:2":  # the failed report could still be stored
            assert (run["status"], run["error_class"]) == ("failed", "PERSISTENCE_ERROR")
        else:  # no report at all: the run reads as interrupted (its process is gone)
            assert run["status"] == "interrupted"


def test_outside_a_repository_the_call_runs_and_records_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "plain"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    proc = tidegate_cli(
        "tools",
        "call",
        "workspace_read",
        "--args",
        '{"path": "a.txt"}',
        "--workspace",
        str(workspace),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"]["content"] == "a\n"
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("tidegate: note: not recording")
    assert not list(Path(os.environ["TIDEGATE_STATE_ROOT"]).rglob("runs.sqlite3"))


# -- the MCP server ------------------------------------------------------------------------


def _server(repo: Repo, env: dict[str, str], extra: tuple[str, ...] = ()) -> StdioServerParameters:
    keep = ("TIDEGATE_STATE_ROOT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "PYTHONPATH")
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tidegate", "mcp", "serve", "--workspace", str(repo.root), *extra],
        env={**{k: os.environ[k] for k in keep if k in os.environ}, **env},
    )


def _session(repo: Repo, script: Any, extra: tuple[str, ...] = (), **env: str) -> tuple[Any, str]:
    """Run ``script`` against a served session (``extra``: more ``mcp serve`` options): its
    value, and the server's stderr."""

    async def main() -> Any:
        async with (
            stdio_client(_server(repo, env, extra), errlog=errlog) as streams,
            ClientSession(*streams) as session,
        ):
            await session.initialize()
            return await script(session)

    with tempfile.TemporaryFile("w+") as errlog:
        try:
            value = anyio.run(main)
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(errlog.read())
            raise
        errlog.seek(0)
        return value, errlog.read()


def test_an_mcp_session_is_one_run_recorded_call_by_call(committed_repo: Repo) -> None:
    repo = committed_repo

    async def script(session: ClientSession) -> dict[str, Any]:
        read = await session.call_tool("workspace_read", {"path": "calc.py"})
        digest = read.structured_content["output"]["sha256"]
        args = {"path": "calc.py", "content": "x = 1\n", "expect": digest}
        await session.call_tool("workspace_write", args)
        # While the session is open: running, and the finished calls already on record.
        during = await anyio.to_thread.run_sync(_detail, repo)
        await session.call_tool("workspace_write", args)  # stale now
        await session.call_tool("git_exec", {"args": ["status", "--short"]})
        return {"digest": digest, "during": during}

    got, _ = _session(repo, script)
    during = got["during"]
    assert (during["run"]["kind"], during["run"]["status"]) == ("mcp", "running")
    assert [c["tool_call_id"] for c in during["effects"]["tool_calls"]] == ["mcp-1", "mcp-2"]

    detail = _waited(repo, lambda d: d["run"]["status"] != "running")
    run = detail["run"]
    assert (run["kind"], run["status"], run["acknowledged"]) == ("mcp", "succeeded", True)
    calls = detail["effects"]["tool_calls"]
    assert [(c["tool_call_id"], c["canonical_tool"], c["status"]) for c in calls] == [
        ("mcp-1", "workspace.read", "succeeded"),
        ("mcp-2", "workspace.write", "succeeded"),
        ("mcp-3", "workspace.write", "failed"),
        ("mcp-4", "git.exec", "succeeded"),
    ]
    assert calls[1]["effects"]["write"][0]["before"]["sha256"] == got["digest"]
    assert calls[1]["effects"]["write"][0]["after"]["sha256"] == _sha("x = 1\n")
    assert "write" not in calls[2]["effects"]
    assert "closed stdin" in detail["report"]["message"]
    assert detail["report"]["planner"] == "mcp:stdio"


@requires_containment
def test_sigterm_ends_the_session_after_the_running_call(committed_repo: Repo) -> None:
    """SIGTERM mid-call: the call finishes and is recorded, then the run ends, and the
    server exits although the client still holds stdin open."""
    repo = committed_repo
    command = "echo go > started.txt; sleep 1; echo done > out.txt"

    async def script(session: ClientSession) -> tuple[str, bool]:
        await session.call_tool("workspace_list", {})
        pid = (await anyio.to_thread.run_sync(_detail, repo))["run"]["pid"]
        outcome = "no reply"

        async def call() -> None:
            nonlocal outcome
            try:
                reply = await session.call_tool("command_run", {"command": command})
                outcome = reply.structured_content["status"]
            except MCPError:
                outcome = "connection closed"

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(10):
                while not (repo.root / "started.txt").exists():
                    await anyio.sleep(0.02)
            os.kill(pid, signal.SIGTERM)
            gone = await anyio.to_thread.run_sync(_exited, pid)
        return outcome, gone

    (outcome, gone), _ = _session(repo, script)
    assert gone, "the server did not exit after SIGTERM"
    assert outcome in ("ok", "connection closed")
    detail = _detail(repo)
    assert (detail["run"]["status"], detail["run"]["acknowledged"]) == ("succeeded", True)
    assert "ended by SIGTERM" in detail["report"]["notes"]
    _, running = detail["effects"]["tool_calls"]
    assert (running["canonical_tool"], running["status"]) == ("command.run", "succeeded")
    written = {w["path"]: w["after"]["sha256"] for w in running["effects"]["write"]}
    assert written == {"started.txt": _sha("go\n"), "out.txt": _sha("done\n")}


def test_an_unstored_mcp_call_is_answered_and_ends_the_session(committed_repo: Repo) -> None:
    """The first call's record fails (the run's start was stored): its answer says so, the
    next call is refused undispatched, and the run ends failed with PERSISTENCE_ERROR."""
    repo = committed_repo
    args = {"path": "a.txt", "content": "a\n", "expect": "must_not_exist"}
    later = {"path": "b.txt", "content": "b\n", "expect": "must_not_exist"}

    async def script(session: ClientSession) -> list[Any]:
        return [
            await session.call_tool("workspace_write", args),
            await session.call_tool("workspace_write", later),
        ]

    (first, second), err = _session(repo, script, TIDEGATE_STORE_FAULT="trace.write:2")
    assert first.is_error and first.structured_content["status"] == "ok"
    assert "could not be stored" in first.structured_content["persistence_error"]
    assert repo.read("a.txt") == "a\n"
    assert second.is_error and second.structured_content["error"]["code"] == "persistence_error"
    assert not (repo.root / "b.txt").exists()
    detail = _waited(repo, lambda d: d["run"]["status"] != "running")
    assert (detail["run"]["status"], detail["run"]["error_class"]) == (
        "failed",
        "PERSISTENCE_ERROR",
    )
    assert [c["tool_call_id"] for c in detail["effects"]["tool_calls"]] == ["mcp-1"]
    errors = [x for x in err.splitlines() if "PERSISTENCE_ERROR" in x]
    assert len(errors) == 1 and errors[0].startswith("tidegate: error: PERSISTENCE_ERROR: ")


def _exited(pid: int, timeout_s: float = 10.0) -> bool:
    """Whether ``pid`` ended (gone, or a zombie its parent has not reaped yet) in time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def _waited(repo: Repo, done: Any, timeout_s: float = 15.0) -> dict[str, Any]:
    """The latest run's detail once ``done(detail)`` holds (the server records the end of
    its session as it exits, which the client does not wait for)."""
    deadline = time.monotonic() + timeout_s
    while True:
        detail = _detail(repo)
        if done(detail) or time.monotonic() > deadline:
            return detail
        time.sleep(0.1)
