"""A model or MCP client chooses the nastiest arguments it can: numbers strict JSON does
not have (``NaN``, ``Infinity``, ``-Infinity``, ``1e400`` which Python reads as ``inf``),
integers too long to convert, nesting deep enough to exhaust the parser's stack, unpaired
surrogates (``"\\udcff"``, or raw non-UTF-8 bytes on the command line), a 300-byte path
component, a NUL in a path.

``tidegate tools call`` answers each with a structured ``invalid_arguments`` (or
``path_refused``) result, one error line and exit 1 -- never a traceback, never an
"unknown outcome" -- and the refused call is recorded in the store. Over MCP each is an
error result and the same session keeps answering the next call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import Repo, tidegate_cli

LONG = "a" * 300
HOSTILE_TEXT: dict[str, tuple[str, str]] = {
    "NaN": ('{"path": "calc.py", "start_line": NaN}', "NaN is not a JSON number"),
    "Infinity": ('{"path": "calc.py", "start_line": Infinity}', "Infinity is not a JSON"),
    "-Infinity": ('{"path": "calc.py", "start_line": -Infinity}', "-Infinity is not a JSON"),
    "1e400": ('{"path": "calc.py", "start_line": 1e400}', "1e400 is out of range"),
    "huge int": ('{"path": "calc.py", "start_line": ' + "9" * 5000 + "}", "beyond 64 bits"),
    "deep nesting": ('{"path": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than"),
    "unpaired surrogate": ('{"path": "\\udcff"}', "unpaired surrogate"),
}


def _tree(repo: Repo) -> dict[str, bytes]:
    files = {
        str(p.relative_to(repo.root)): p.read_bytes()
        for p in sorted(repo.root.rglob("*"))
        if p.is_file() and p.relative_to(repo.root).parts[0] != ".git"
    }
    files[".git/index"] = (repo.root / ".git" / "index").read_bytes()
    return files


def _recorded_calls(repo: Repo) -> list[dict[str, Any]]:
    proc = tidegate_cli("read", "latest", "--json", "--detail", cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    detail = json.loads(proc.stdout)
    assert detail["run"]["kind"] in ("tools", "mcp")
    calls: list[dict[str, Any]] = detail["effects"]["tool_calls"]
    return calls


def _refused_in_one_line(proc: subprocess.CompletedProcess[Any], code: str, words: str) -> None:
    stderr = proc.stderr if isinstance(proc.stderr, str) else proc.stderr.decode()
    stdout = proc.stdout if isinstance(proc.stdout, str) else proc.stdout.decode()
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidegate: error: "), stderr
    assert words in lines[0], (words, lines[0])
    result = json.loads(stdout)
    assert result["ok"] is False and result["error"]["code"] == code
    assert result["effects"] == {}  # refused before anything was dispatched


@pytest.mark.parametrize("case", sorted(HOSTILE_TEXT))
def test_cli_refuses_values_strict_json_has_not(committed_repo: Repo, case: str) -> None:
    repo = committed_repo
    text, words = HOSTILE_TEXT[case]
    before = _tree(repo)
    proc = tidegate_cli("tools", "call", "workspace.read", "--args", text, cwd=repo.root)
    _refused_in_one_line(proc, "invalid_arguments", words)
    assert _tree(repo) == before
    [call] = _recorded_calls(repo)
    assert (call["canonical_tool"], call["status"]) == ("workspace.read", "failed")


def test_cli_refuses_non_utf8_bytes_on_the_command_line(committed_repo: Repo) -> None:
    """Raw 0xff in argv reaches Python as a lone surrogate (surrogateescape)."""
    repo = committed_repo
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidegate",
            "tools",
            "call",
            "workspace.write",
            "--args",
            b'{"path": "a\xffb", "content": "x", "expect": "must_not_exist"}',
        ],
        cwd=repo.root,
        capture_output=True,
        check=False,
    )
    _refused_in_one_line(proc, "invalid_arguments", "unpaired surrogate")
    assert not list(repo.root.glob("a*b"))
    [call] = _recorded_calls(repo)
    assert (call["canonical_tool"], call["status"]) == ("workspace.write", "failed")


PATHS: dict[str, tuple[str, str]] = {
    "300-byte component": (f"d/{LONG}", "a component of 300 bytes"),
    "NUL byte": ("calc.py\u0000.txt", "NUL"),
}


@pytest.mark.parametrize("case", sorted(PATHS))
def test_cli_refuses_unusable_paths(committed_repo: Repo, case: str) -> None:
    repo = committed_repo
    path, words = PATHS[case]
    before = _tree(repo)
    for tool, args in (
        ("workspace.read", {"path": path}),
        ("workspace.write", {"path": path, "content": "x", "expect": "must_not_exist"}),
    ):
        proc = tidegate_cli("tools", "call", tool, "--args", json.dumps(args), cwd=repo.root)
        _refused_in_one_line(proc, "path_refused", words)
        [call] = _recorded_calls(repo)
        assert (call["canonical_tool"], call["status"]) == (tool, "failed")
    assert _tree(repo) == before


# -- over MCP --------------------------------------------------------------------------


def _serve(repo: Repo) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tidegate", "mcp", "serve", "--workspace", str(repo.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _close(proc: subprocess.Popen[bytes]) -> bytes:
    """End the session as a client does (closing stdin); the server's stderr."""
    assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
    proc.stdin.close()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    return err


class RawClient:
    """A JSON-RPC client that writes exactly the bytes it is given (an SDK client would
    never send NaN; a hostile one will)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "hostile", "version": "1"},
                    },
                }
            )
        )
        assert self.receive()["id"] == 0
        self.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed the session"
        value: dict[str, Any] = json.loads(line)
        return value

    def call(self, request_id: int, name: str, arguments_text: str) -> dict[str, Any]:
        self.send(
            f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": '
            f'{{"name": "{name}", "arguments": {arguments_text}}}}}'
        )
        answer = self.receive()
        assert answer["id"] == request_id, answer
        result: dict[str, Any] = answer["result"]
        return result


MCP_HOSTILE = {
    # The transport has decoded these already: they arrive as Python floats.
    "NaN": ('{"path": "calc.py", "start_line": NaN}', "start_line: nan is not"),
    "Infinity": ('{"path": "calc.py", "start_line": Infinity}', "start_line: inf is not"),
    "-Infinity": ('{"path": "calc.py", "start_line": -Infinity}', "start_line: -inf is not"),
    "1e400": ('{"path": "calc.py", "start_line": 1e400}', "start_line: inf is not"),
    "huge int": ('{"path": "calc.py", "start_line": ' + "9" * 40 + "}", "beyond 64 bits"),
    "deep nesting": ('{"path": ' + "[" * 100 + "]" * 100 + "}", "nested deeper than"),
}


def test_mcp_refuses_each_hostile_call_and_the_session_goes_on(committed_repo: Repo) -> None:
    repo = committed_repo
    before = _tree(repo)
    proc = _serve(repo)
    try:
        client = RawClient(proc)
        ids = iter(range(1, 100))
        for case in sorted(MCP_HOSTILE):
            text, words = MCP_HOSTILE[case]
            result = client.call(next(ids), "workspace_read", text)
            assert result["isError"] is True, (case, result)
            error = result["structuredContent"]["error"]
            assert error["code"] == "invalid_arguments" and words in error["message"], case
        for path, code in ((f"d/{LONG}", "path_refused"), ("a\\u0000b", "path_refused")):
            args = '{"path": "' + path + '", "content": "x", "expect": "must_not_exist"}'
            result = client.call(next(ids), "workspace_write", args)
            assert result["isError"] is True
            assert result["structuredContent"]["error"]["code"] == code
        # The session still works.
        result = client.call(next(ids), "workspace_read", '{"path": "calc.py"}')
        assert result["isError"] is False
        assert result["structuredContent"]["output"]["path"] == "calc.py"
    finally:
        err = _close(proc)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err
    assert _tree(repo) == before
    calls = _recorded_calls(repo)
    assert [c["status"] for c in calls] == ["failed"] * (len(MCP_HOSTILE) + 2) + ["succeeded"]


def test_mcp_sdk_client_session_survives_hostile_calls(committed_repo: Repo) -> None:
    """The same through the MCP SDK's own stdio client: what an SDK can send."""
    repo = committed_repo
    keep = ("TIDEGATE_STATE_ROOT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "PYTHONPATH")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tidegate", "mcp", "serve", "--workspace", str(repo.root)],
        env={k: os.environ[k] for k in keep if k in os.environ},
    )
    nested: Any = []
    for _ in range(100):
        nested = [nested]
    hostile = [
        ({"path": "calc.py", "start_line": 2**80}, "invalid_arguments"),
        ({"path": nested}, "invalid_arguments"),
        ({"path": {"a": {"b": {"c": nested}}}}, "invalid_arguments"),
        ({"path": f"x/{LONG}/y"}, "path_refused"),
        ({"path": "calc.py\u0000"}, "path_refused"),
    ]

    async def main(errlog: Any) -> list[tuple[bool, str | None]]:
        with anyio.fail_after(120):
            return await session_calls(errlog)

    async def session_calls(errlog: Any) -> list[tuple[bool, str | None]]:
        async with (
            stdio_client(params, errlog=errlog) as streams,
            ClientSession(*streams) as session,
        ):  # fail_after: a liveness guard (a dead server would leave the client waiting)
            await session.initialize()
            seen = []
            for args, _ in hostile:
                result = await session.call_tool("workspace_read", args)
                error = (result.structured_content or {}).get("error") or {}
                seen.append((bool(result.is_error), error.get("code")))
            last = await session.call_tool("workspace_read", {"path": "calc.py"})
            seen.append((bool(last.is_error), None))
            return seen

    with tempfile.TemporaryFile("w+") as errlog:
        seen = anyio.run(main, errlog)
        errlog.seek(0)
        assert "Traceback" not in errlog.read()
    assert seen == [(True, code) for _, code in hostile] + [(False, None)]
    assert [c["status"] for c in _recorded_calls(repo)] == ["failed"] * len(hostile) + ["succeeded"]


def test_the_unpaired_surrogate_line_does_not_end_the_mcp_session(committed_repo: Repo) -> None:
    """A line the SDK's own JSON parser rejects (a lone surrogate escape) is dropped by the
    SDK before tidegate sees it; the session must still answer the next call."""
    repo = committed_repo
    proc = _serve(repo)
    try:
        client = RawClient(proc)
        client.send(
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
            '"workspace_read", "arguments": {"path": "\\udcff"}}}'
        )
        result = client.call(2, "workspace_read", '{"path": "calc.py"}')
        assert result["isError"] is False
    finally:
        err = _close(proc)
    assert proc.returncode == 0 and b"Traceback" not in err
    assert Path(repo.root / "calc.py").exists()
