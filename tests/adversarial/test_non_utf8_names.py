"""A command plants a file whose name is not UTF-8 (``printf x > $'\\xff\\xfe'``). The host
reads the name back from the file system as surrogates, which no UTF-8 encoder takes: the
recorded effect, the stored report and the JSON answer would each fail to encode.

The effect must be recorded losslessly and JSON-safe -- an escaped display form in
``path`` plus the exact bytes in ``path_bytes_hex`` -- and told apart from a real UTF-8
name that merely looks like the escape (a backslash, an ``x``, ``ff``). ``tidegate read``
shows it escaped; over MCP the session answers normally."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import Repo, requires_containment, tidegate_cli

# One file named with the bytes ff fe, one named with the six characters \xff\xfe.
PLANT = 'printf x > "$(printf "\\377\\376")"; printf y > "\\\\xff\\\\xfe"'
LOOKALIKE = "\\xff\\xfe"


def _planted_names(repo: Repo) -> set[bytes]:
    return {n for n in os.listdir(os.fsencode(repo.root)) if n not in (b".git", b"calc.py")} - {
        b"README.md",
        b".gitignore",
    }


def _writes(effects: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w.get("path_bytes_hex") or w["path"]: w for w in effects["write"]}


def _check_effects(repo: Repo, effects: dict[str, Any]) -> None:
    writes = _writes(effects)
    raw = writes["fffe"]
    assert raw["path"] == LOOKALIKE  # the escaped display form
    assert bytes.fromhex(raw["path_bytes_hex"]) == b"\xff\xfe"
    real = writes[LOOKALIKE]  # the UTF-8 name that looks the same: no bytes field
    assert "path_bytes_hex" not in real and real["after"] != raw["after"]
    # Lossless: the recorded bytes name the planted files exactly.
    recorded = {
        bytes.fromhex(w["path_bytes_hex"]) if "path_bytes_hex" in w else w["path"].encode()
        for w in effects["write"]
    }
    assert recorded == _planted_names(repo)


def test_a_non_utf8_name_is_recorded_losslessly(committed_repo: Repo) -> None:
    repo = committed_repo
    argv = ["tools", "call", "command.run", "--args", json.dumps({"command": PLANT})]
    argv += ["--approval", "trusted-workspace"]
    proc = tidegate_cli(*argv, cwd=repo.root)
    if proc.returncode == 3:  # an uncontained command asks first: grant it, as a user would
        request = json.loads(proc.stdout)["approval_request"]["request_id"]
        proc = tidegate_cli(*argv, "--grant", request, cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] is True
    _check_effects(repo, result["effects"])

    detail = tidegate_cli("read", "latest", "--json", "--detail", cwd=repo.root)
    assert detail.returncode == 0, detail.stderr
    view = json.loads(detail.stdout)
    assert view["run"]["status"] == "succeeded" and view["run"]["acknowledged"] is True
    [call] = view["effects"]["tool_calls"]
    _check_effects(repo, call["effects"])
    human = tidegate_cli("read", "latest", cwd=repo.root)
    assert human.returncode == 0 and "Traceback" not in human.stderr
    # shown escaped: as is, or quoted git-style (backslashes doubled) by the report table
    assert "\\xff\\xfe" in human.stdout or '"\\\\xff\\\\xfe"' in human.stdout, human.stdout
    assert "\udcff" not in human.stdout


def test_a_listing_that_names_it_is_answered_and_recorded(committed_repo: Repo) -> None:
    """Inspecting the directory puts the name in the output and the inspect effect: both
    show it escaped, and the call is on record (no PERSISTENCE_ERROR, no traceback)."""
    repo = committed_repo
    (repo.root / os.fsdecode(b"\xff\xfe")).write_text("x")
    proc = tidegate_cli("tools", "call", "workspace.list", "--args", '{"path": "."}', cwd=repo.root)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    result = json.loads(proc.stdout)
    names = [e["path"] if isinstance(e, dict) else e for e in result["output"]["entries"]]
    assert LOOKALIKE in names
    assert LOOKALIKE in result["effects"]["inspect"][0]["paths"]
    [call] = json.loads(tidegate_cli("read", "latest", "--json", "--detail", cwd=repo.root).stdout)[
        "effects"
    ]["tool_calls"]
    assert call["status"] == "succeeded"


@requires_containment  # over MCP an uncontained command asks, and no one can grant it
def test_a_non_utf8_name_over_mcp(committed_repo: Repo) -> None:
    repo = committed_repo
    keep = ("TIDEGATE_STATE_ROOT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "PYTHONPATH")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "tidegate",
            "mcp",
            "serve",
            "--workspace",
            str(repo.root),
            "--approval",
            "trusted-workspace",
            "--containment",
            "required",
        ],
        env={k: os.environ[k] for k in keep if k in os.environ},
    )

    async def main() -> tuple[Any, Any]:
        # A liveness guard, not a timing assertion: a server that died mid-session would
        # otherwise leave the client waiting forever.
        with open(os.devnull, "w") as errlog, anyio.fail_after(120):
            async with (
                stdio_client(params, errlog=errlog) as streams,
                ClientSession(*streams) as session,
            ):
                await session.initialize()
                planted = await session.call_tool("command_run", {"command": PLANT})
                after = await session.call_tool("workspace_list", {"path": "."})
                return planted, after

    planted, after = anyio.run(main)
    assert planted.is_error is False, planted.structured_content
    _check_effects(repo, planted.structured_content["effects"])
    assert after.is_error is False
