"""Attack: text that reaches the user's terminal carries control sequences. A file name,
a repository's directory name or a command's output holds a clear-screen (CSI ``2J``), an
OSC 52 clipboard write, an 8-bit C1 CSI, a DCS string and a bare carriage return that
would overwrite the line before it. Every renderer of the real CLI (run's report and live
phase lines, ``read``, ``runs``, ``tools call``) must print them visibly, never raw.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import Repo, requires_containment
from tidegate.text.sanitize import escape_controls

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
C1_CSI = "\x9b31m"
DCS = "\x1bP1$qm\x1b\\"
OVERWRITE = "\rall tests passed"
EVIL = CLEAR + CLIPBOARD + C1_CSI + DCS + OVERWRITE
# For a file name (tidegate refuses a backslash in paths): the DCS ends with the 8-bit ST.
EVIL_NAME = "x" + EVIL.replace("\x1b\\", "\x9c") + ".txt"
# Raw in the output: ESC, BEL, CR, and C1 controls, UTF-8 encoded or as a bare byte.
RAW = re.compile("[\x07\x0d\x1b\x80-\x9f\udc80-\udc9f]")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """The real CLI in a subprocess; bytes, so nothing is decoded or cleaned on the way."""
    return subprocess.run(
        [sys.executable, "-m", "tidegate", *args],
        cwd=cwd,
        env=os.environ.copy(),
        capture_output=True,
        check=False,
    )


def assert_clean(res: subprocess.CompletedProcess[bytes]) -> None:
    for stream in (res.stdout, res.stderr):
        text = stream.decode("utf-8", "surrogateescape")
        found = RAW.search(text)
        assert found is None, (found, text[-2000:])


def test_escape_controls_renders_each_sequence_visibly() -> None:
    out = escape_controls(EVIL)
    assert out.isprintable()
    assert "\\x1b[2J" in out and "\\x1b]52;c;" in out and "\\x07" in out
    assert "\\u009b31m" in out and "\\x1bP1$qm" in out and "\\x0dall tests passed" in out
    assert escape_controls("a\tb\nc\r\nd") == "a\tb\nc\nd"  # tabs, newlines, CRLF kept


def _failing_run(repo: Repo) -> subprocess.CompletedProcess[bytes]:
    verify = f"printf '%b' {_shell_quote(EVIL)}; printf '%b' {_shell_quote(EVIL)} >&2; exit 1"
    objective = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    return cli(
        "run",
        "--repo",
        str(repo.root),
        "--objective",
        objective,
        "--verify",
        verify,
        "--max-attempts",
        "1",
    )


def _shell_quote(text: str) -> str:
    """``text`` (as UTF-8) as a printf %b argument: every byte an octal escape."""
    return "'" + "".join(f"\\0{b:o}" for b in text.encode("utf-8")) + "'"


def test_run_report_and_live_lines_show_command_output_escaped(committed_repo: Repo) -> None:
    committed_repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    committed_repo.commit_all()
    res = _failing_run(committed_repo)
    assert res.returncode == 1, res.stderr
    assert b"all tests passed" in res.stdout  # the feedback shows the output's text
    assert_clean(res)


def test_read_and_runs_show_stored_names_and_output_escaped(committed_repo: Repo) -> None:
    committed_repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    committed_repo.commit_all()
    assert _failing_run(committed_repo).returncode == 1
    objective = f"create-file: {EVIL_NAME}\ncontent: hello\n"
    made = cli("run", "--repo", str(committed_repo.root), "--objective", objective)
    assert made.returncode == 0, made.stderr
    shown = cli("read", "latest", "--repo", str(committed_repo.root))
    assert b"\\x1b]52;c;" in shown.stdout  # the applied file's name, escaped
    for args in (["read", "latest"], ["runs"], ["read", "latest", "--json", "--detail"]):
        res = cli(*args, "--repo", str(committed_repo.root))
        assert res.returncode == 0, res.stderr
        assert_clean(res)


def test_a_file_name_with_escapes_is_shown_escaped(committed_repo: Repo) -> None:
    objective = f"create-file: {EVIL_NAME}\ncontent: hello\n"
    res = cli(
        "run", "--repo", str(committed_repo.root), "--objective", objective, "--verify", "true"
    )
    assert res.returncode == 0, res.stderr
    assert_clean(res)
    assert b"\\x1b[2J" in res.stdout  # the changed-files table shows the name escaped
    assert (committed_repo.root / EVIL_NAME).is_file()
    listing = cli(
        "tools", "call", "workspace.list", "--args", "{}", "--workspace", str(committed_repo.root)
    )
    assert_clean(listing)
    assert b"\\u001b[2J" in listing.stdout  # JSON escapes it too


@requires_containment
def test_tools_call_prints_command_output_escaped(committed_repo: Repo) -> None:
    command = f"printf '%b' {_shell_quote(EVIL)}"
    res = cli(
        "tools",
        "call",
        "command.run",
        "--args",
        json.dumps({"command": command}),
        "--workspace",
        str(committed_repo.root),
        "--approval",
        "trusted-workspace",
    )
    assert res.returncode == 0, res.stderr
    assert_clean(res)
    assert json.loads(res.stdout)["output"]["stdout"] == EVIL  # escaped, not lost


def test_runs_across_repositories_shows_a_hostile_directory_name_escaped(
    tmp_path: Path,
) -> None:
    root = tmp_path / ("repo" + EVIL.replace("\r", "-"))
    for where in (root, tmp_path / "plain"):
        where.mkdir()
        subprocess.run(["git", "init", "-q", str(where)], check=True)
        (where / "a.txt").write_text("one\n")
        subprocess.run(["git", "-C", str(where), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(where), "commit", "-qm", "c"], check=True)
        objective = "edit-file: a.txt\nreplace: one\nwith: two\n"
        assert cli("run", "--repo", str(where), "--objective", objective).returncode == 0
    res = cli("runs", cwd=tmp_path)  # outside a repository: every repository, named
    assert res.returncode == 0, res.stderr
    assert b"\\x1b]52;c;" in res.stdout
    assert_clean(res)


def test_ledger_status_and_next_show_hostile_titles_escaped(tmp_path: Path) -> None:
    task = tmp_path / "task"
    made = cli("ledger", "init", str(task), "--route", "medium", "--brief", "b" + EVIL,
               "--item", "fix" + EVIL)  # fmt: skip
    assert made.returncode == 0, made.stderr
    for args in (["status"], ["next"], ["status", "--json"]):
        res = cli("ledger", *args[:1], str(task), *args[1:])
        assert res.returncode == 0, res.stderr
        assert_clean(res)
    assert b"\\x1b[2J" in cli("ledger", "status", str(task)).stdout
