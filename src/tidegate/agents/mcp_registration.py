"""Registering ``tidegate mcp serve`` with the Codex CLI: its ``[mcp_servers.tidegate]``
table in ``$CODEX_HOME/config.toml``, so that Codex makes its edits through tidegate's
guarded transaction (``change_propose``); and with Claude Code: its ``.mcp.json``
(``claude_mcp_json``).

Each key is there for a reason found by driving the real Codex CLI 0.171 against a
scripted model server (``docs/agents.md``, "Codex calling change_propose"):

- ``required = true``. Codex gives an optional server about one second to start before it
  builds the model's tool list without it, and says nothing. ``tidegate mcp serve`` takes
  one to two seconds to answer ``initialize`` on a busy two-core machine, so registered
  as optional it was missing from the model's tools. Required, Codex waits for it (up to
  ``startup_timeout_sec``) and fails the run when it cannot start.
- ``enabled_tools = ["change_propose"]``. Only the guarded change: the other tools of
  ``mcp serve`` overlap Codex's own.
- ``approval_mode = "approve"`` for ``change_propose``. Whenever Codex's own sandbox is on,
  it asks before an MCP call that may write; ``codex exec`` cannot ask (its approval policy
  is ``never``) and refuses the call. The call is the guard itself: tidegate's approval
  profile still decides (``strict`` refuses it), and nothing reaches the work tree but a
  validated, verified three-way merge as unstaged edits.
- ``tool_timeout_sec``: one call runs the verify command, which may take minutes.

Codex starts the server with its own small environment, not the caller's, so everything
tidegate needs is in ``args``: the workspace, and the state root when one is chosen.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tidegate.errors import UsageError

SERVER = "tidegate"
TOOL = "change_propose"
STARTUP_TIMEOUT_S = 60
TOOL_TIMEOUT_S = 900


def tidegate_command() -> list[str]:
    """The argv that starts this tidegate: the entry point beside the interpreter (a
    venv's ``bin/tidegate``), else ``python -m tidegate``. Absolute, since Codex's PATH
    need not hold the venv."""
    entry = Path(sys.executable).parent / "tidegate"
    if entry.is_file():
        return [str(entry.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "tidegate"]


def codex_mcp_table(
    workspace: Path,
    *,
    command: Sequence[str] | None = None,
    state_root: Path | None = None,
    approval: str | None = None,
) -> str:
    """The TOML of ``[mcp_servers.tidegate]`` serving ``workspace``'s ``change_propose``.

    ``command`` defaults to ``tidegate_command()``; ``approval`` is passed on as
    ``--approval`` when given. Raises UsageError for a path TOML cannot hold (not UTF-8)."""
    argv, args = _serve_argv(workspace, command, state_root, approval)
    lines = [
        f"[mcp_servers.{SERVER}]",
        f"command = {_string(argv[0])}",
        f"args = [{', '.join(_string(a) for a in args)}]",
        "required = true",
        f"startup_timeout_sec = {STARTUP_TIMEOUT_S}",
        f"tool_timeout_sec = {TOOL_TIMEOUT_S}",
        f"enabled_tools = [{_string(TOOL)}]",
        "",
        f"[mcp_servers.{SERVER}.tools.{TOOL}]",
        'approval_mode = "approve"',
    ]
    return "\n".join(lines) + "\n"


def claude_mcp_json(
    workspace: Path,
    *,
    command: Sequence[str] | None = None,
    state_root: Path | None = None,
    approval: str | None = None,
) -> str:
    """The ``.mcp.json`` document (Claude Code's project-scope file, at the repository's
    root) that registers ``tidegate mcp serve`` for ``workspace``: every tool, with the
    annotations the server reports, so Claude Code asks before the writing ones only.

    The one server entry is also what ``claude mcp add-json tidegate JSON`` takes."""
    argv, args = _serve_argv(workspace, command, state_root, approval)
    entry = {"type": "stdio", "command": argv[0], "args": args, "env": {}}
    for text in (argv[0], *args):
        _utf8(text, "Claude Code's .mcp.json")
    return json.dumps({"mcpServers": {SERVER: entry}}, indent=2, ensure_ascii=False) + "\n"


def _serve_argv(
    workspace: Path,
    command: Sequence[str] | None,
    state_root: Path | None,
    approval: str | None,
) -> tuple[list[str], list[str]]:
    """The command that starts ``mcp serve`` for ``workspace``, and its arguments."""
    argv = list(command or tidegate_command())
    args = [*argv[1:], "mcp", "serve", "--workspace", str(Path(workspace).absolute())]
    if state_root is not None:
        args += ["--state-root", str(Path(state_root).absolute())]
    if approval is not None:
        args += ["--approval", approval]
    return argv, args


def _utf8(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{text!r} is not valid UTF-8; {where} cannot name it") from None


def _string(text: str) -> str:
    """A TOML basic string. JSON's escapes are all valid TOML escapes (DEL, which JSON
    leaves bare, is escaped too); a lone surrogate (a path that is not UTF-8) cannot be
    written, and is refused."""
    _utf8(text, "Codex's config.toml")
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
