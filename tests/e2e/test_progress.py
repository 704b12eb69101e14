"""Progress on a terminal: while VERIFY runs, the status line shows the elapsed time and
the latest line of the command's output, sanitised and cut to the terminal's width; piped,
there is no status line at all."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests._terminal import on_a_terminal
from tests.conftest import Repo

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
SLOW = (
    'echo "step 1"; sleep 0.4; echo "step 2"; sleep 0.4; '
    "printf 'hostile \\033[2J \\033]52;c;aGk=\\007 %s end\\n' "
    '"$(printf "%0200d" 0)"; sleep 1.3; echo "step 3"'
)
ARGV = [sys.executable, "-m", "tidegate", "run", "--objective", FIX, "--verify", SLOW]


def _repo(root: Path) -> Repo:
    root.mkdir()
    repo = Repo(root)
    repo.git("init", "-q")
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.commit_all("calc")
    return repo


def test_verify_shows_elapsed_time_and_its_latest_line(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "work")
    columns = 70
    shown = on_a_terminal(ARGV, repo.root, columns).decode("utf-8")
    plain = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", f) for f in re.split(r"\r|\n", shown)]
    status = [s for s in plain if re.search(r"VERIFY [0-9]+s", s)]
    assert any(re.search(r"VERIFY [0-9]+s\s+step 1", s) for s in status), status
    assert any(re.search(r"VERIFY [0-9]+s\s+step 2", s) for s in status), status
    assert any(re.search(r"VERIFY [1-9][0-9]*s\s+hostile", s) for s in status), status
    assert any(re.search(r"VERIFY ([2-9]|[1-9][0-9]+)s", s) for s in status), (
        status
    )  # the time moves
    hostile = [s for s in status if "hostile" in s]
    # the command's escape sequences are shown, not obeyed
    assert all("\\x1b[2J \\x1b]52;c;aGk=\\x07" in s for s in hostile), hostile
    assert "\x1b]52" not in shown and "\x1b[2J" not in shown
    # cut to the terminal's width: the long line ends in an ellipsis, never wraps
    assert all(len(s.rstrip()) <= columns for s in status), status
    assert any(s.rstrip().endswith("…") for s in hostile), hostile
    assert "succeeded" in shown


def test_piped_there_is_no_status_line(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "work")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    res = subprocess.run(ARGV, cwd=repo.root, env=env, capture_output=True, check=False)
    assert res.returncode == 0, res.stderr
    # the phase lines only (VERIFY's names its command): no status line, no spinner
    assert not re.search(rb"VERIFY [0-9]+s|step 2  |\xe2\xa0", res.stderr), res.stderr
    assert b"\x1b" not in res.stderr and b"\r" not in res.stderr
    phases = [line for line in res.stderr.decode().splitlines() if line.strip()]
    assert phases[0] == "attempt 1"
    assert all(line.startswith("  ✓ ") for line in phases[1:]), phases
    as_json = subprocess.run(
        [*ARGV, "--json"], cwd=_repo(tmp_path / "other").root, env=env, capture_output=True
    )
    assert as_json.returncode == 0 and as_json.stderr == b""
