"""``codex_mcp_table``: the ``[mcp_servers.tidegate]`` table for Codex's config.toml reads
back, through a TOML parser, as exactly the argv and keys tidegate meant, whatever the
paths hold; a path TOML cannot hold is refused with one clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tidegate.agents.mcp_registration import claude_mcp_json, codex_mcp_table, tidegate_command
from tidegate.errors import UsageError


@pytest.mark.parametrize(
    "name", ["plain", 'with "quotes" and \\ back', "tab\tnew\nline", "del\x7fesc\x1b", "ünï ✓"]
)
def test_the_table_reads_back_as_the_argv_it_names(tmp_path: Path, name: str) -> None:
    workspace, state = tmp_path / name / "repo", tmp_path / name / "state"
    command = [str(tmp_path / name / "bin" / "python3"), "-m", "tidegate"]
    text = codex_mcp_table(workspace, command=command, state_root=state, approval="balanced")
    server = tomllib.loads(text)["mcp_servers"]["tidegate"]
    assert server["command"] == command[0]
    assert server["args"] == [
        "-m", "tidegate", "mcp", "serve", "--workspace", str(workspace),
        "--state-root", str(state), "--approval", "balanced",
    ]  # fmt: skip
    assert server["required"] is True
    assert server["enabled_tools"] == ["change_propose"]
    assert server["tools"]["change_propose"] == {"approval_mode": "approve"}
    assert server["startup_timeout_sec"] >= 30 and server["tool_timeout_sec"] >= 300


def test_the_default_command_is_this_tidegate_by_absolute_path(tmp_path: Path) -> None:
    command = tidegate_command()
    assert os.path.isabs(command[0]) and Path(command[0]).exists()
    args = tomllib.loads(codex_mcp_table(tmp_path))["mcp_servers"]["tidegate"]["args"]
    assert args[-4:] == ["mcp", "serve", "--workspace", str(tmp_path)]


def test_a_path_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    with pytest.raises(UsageError, match="not valid UTF-8"):
        codex_mcp_table(odd)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidegate", "mcp", "codex-config", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_cli_prints_the_table_for_the_repository_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    done = _cli("--workspace", str(repo / "sub"), "--state-root", str(tmp_path / "s"))
    assert done.returncode == 0, done.stderr
    server = tomllib.loads(done.stdout)["mcp_servers"]["tidegate"]
    args = server["args"]
    assert args[args.index("--workspace") + 1] == str(repo.resolve())
    assert args[args.index("--state-root") + 1] == str(tmp_path / "s")


@pytest.mark.parametrize("bad", [["--approval", "yolo"], []])
def test_the_cli_refuses_a_bad_profile_or_a_non_repository_in_one_line(
    tmp_path: Path, bad: list[str]
) -> None:
    done = _cli("--workspace", str(tmp_path), *bad)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error: ")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    return repo


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ("a file", "exists and is not a directory"),
        ("a symlink", "is a symlink"),
        ("inside the repository", "inside the workspace"),
        ("inside its git directory", "inside the workspace"),
        ("with '..'", "must not contain '..'"),
        ("a bad configuration", "invalid TOML"),
    ],
)
def test_the_cli_refuses_what_mcp_serve_would_refuse(
    tmp_path: Path, shape: str, words: str
) -> None:
    """``required = true`` for a server that cannot start would fail every Codex run: the
    same state-root and configuration checks as ``mcp serve``, in one line, first."""
    repo = _repo(tmp_path)
    (tmp_path / "file").write_text("x")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    state = {
        "a file": tmp_path / "file",
        "a symlink": tmp_path / "link",
        "inside the repository": repo / "state",
        "inside its git directory": repo / ".git" / "state",
        "with '..'": tmp_path / "real" / ".." / "real",
        "a bad configuration": tmp_path / "fine",
    }[shape]
    if shape == "a bad configuration":
        (repo / ".tidegate").mkdir()
        (repo / ".tidegate" / "config.toml").write_text("[verify\n")
    done = _cli("--workspace", str(repo), "--state-root", str(state))
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error: ")
    assert words in done.stderr, done.stderr
    serve = subprocess.run(
        [sys.executable, "-m", "tidegate", "mcp", "serve", "--workspace", str(repo),
         "--state-root", str(state)],
        capture_output=True, text=True, timeout=60, input="",
    )  # fmt: skip
    assert serve.returncode == 2 and words in serve.stderr, serve.stderr  # the same refusal
    assert not (tmp_path / "fine").exists() and not (repo / "state").exists()


def test_the_cli_creates_nothing_for_a_state_root_to_come(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    done = _cli("--workspace", str(repo), "--state-root", str(tmp_path / "later" / "state"))
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "later").exists()


# -- Claude Code: .mcp.json ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["plain", 'with "quotes" and \\ back', "tab\tnew\nline", "ünï ✓"])
def test_the_claude_json_reads_back_as_the_argv_it_names(tmp_path: Path, name: str) -> None:
    workspace, state = tmp_path / name / "repo", tmp_path / name / "state"
    command = [str(tmp_path / name / "bin" / "python3"), "-m", "tidegate"]
    text = claude_mcp_json(workspace, command=command, state_root=state, approval="balanced")
    assert list(json.loads(text)) == ["mcpServers"]
    server = json.loads(text)["mcpServers"]["tidegate"]
    assert server == {
        "type": "stdio",
        "command": command[0],
        "args": [
            "-m", "tidegate", "mcp", "serve", "--workspace", str(workspace),
            "--state-root", str(state), "--approval", "balanced",
        ],
        "env": {},
    }  # fmt: skip


def test_the_claude_json_refuses_a_path_that_is_not_utf8(tmp_path: Path) -> None:
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    with pytest.raises(UsageError, match=r"not valid UTF-8; Claude Code's \.mcp\.json"):
        claude_mcp_json(odd)


def test_the_cli_prints_claude_code_s_mcp_json(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidegate",
            "mcp",
            "claude-config",
            "--workspace",
            str(repo / "sub"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    server = json.loads(done.stdout)["mcpServers"]["tidegate"]
    assert server["type"] == "stdio" and os.path.isabs(server["command"])
    assert server["args"][-4:] == ["mcp", "serve", "--workspace", str(repo.resolve())]
    bad = subprocess.run(
        [sys.executable, "-m", "tidegate", "mcp", "claude-config", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.startswith("error: ")
