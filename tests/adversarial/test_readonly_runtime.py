"""tidegate meets files and directories it cannot write: a read-only ``.git/tidegate``, a
read-only journal directory, one read-only file in the work tree, and ``recover`` unable to
restore a file.

Each is made real with a bubblewrap read-only bind mount over the path, so the kernel
answers EROFS/EBUSY exactly as a read-only file system or a bind-mounted file would. Every
case must end with one clear ``tidegate: error:`` line or a failed report, a non-zero
exit code, no traceback, and the user's files and index unchanged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.adversarial._applyback import OBJECTIVE, OLD, env, four_ops, journals, on_disk, run
from tests.conftest import Repo, requires_containment
from tests.integration._store import cli

__all__ = ["four_ops"]


def _read_only(
    paths: list[Path], *args: str, cwd: Path, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """The CLI in a mount namespace where each of ``paths`` is a read-only bind mount."""
    binds = [a for p in paths for a in ("--ro-bind", str(p), str(p))]
    return subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", *binds, sys.executable, "-m", "tidegate", *args],
        cwd=cwd,
        env={**os.environ, **env(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1 and lines[0].startswith("tidegate: error: "), stderr
    return lines[0]


@requires_containment
def test_a_read_only_runtime_directory_refuses_the_run_in_one_line(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    runtime = repo.root / ".git" / "tidegate"
    runtime.mkdir()
    before = repo.tree_state()

    res = _read_only(
        [runtime], "run", "--objective", OBJECTIVE, "--json", cwd=repo.root, tmp_path=tmp_path
    )

    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    report = json.loads(res.stdout)
    assert (report["status"], report["error_class"]) == ("failed", "PERSISTENCE_ERROR")
    assert "cannot open the run lock" in report["message"] and "EROFS" in report["message"]
    assert repo.tree_state() == before


@requires_containment
def test_recover_on_a_read_only_runtime_directory_says_so_in_one_line(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    runtime = repo.root / ".git" / "tidegate"
    runtime.mkdir()
    (runtime / "apply.lock").touch()  # exists, but cannot be opened for writing

    res = _read_only([runtime], "recover", cwd=repo.root, tmp_path=tmp_path)

    assert res.returncode == 1
    line = _one_error_line(res.stderr)
    assert "cannot open the landing lock" in line and "EROFS" in line


@requires_containment
def test_a_read_only_journal_directory_fails_the_apply_back_before_any_write(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    journal = repo.root / ".git" / "tidegate" / "journal"
    journal.mkdir(parents=True)
    before = repo.tree_state()

    res = _read_only(
        [journal], "run", "--objective", OBJECTIVE, "--json", cwd=repo.root, tmp_path=tmp_path
    )

    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["error_class"] == "PERSISTENCE_ERROR"
    assert "writing the apply-back journal: EROFS" in report["message"]
    assert report["applied_files"] == []
    assert repo.tree_state() == before


@requires_containment
def test_one_unwritable_file_rolls_back_the_files_written_before_it(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    before = repo.tree_state()

    res = _read_only(
        [repo.root / "b.sh"],
        "run",
        "--objective",
        OBJECTIVE,
        "--json",
        cwd=repo.root,
        tmp_path=tmp_path,
    )

    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["error_class"] == "PERSISTENCE_ERROR"
    assert "apply-back failed writing b.sh: EBUSY" in report["message"]
    assert "1 path(s) already written were restored" in report["message"]
    assert report["applied_files"] == []
    assert repo.tree_state() == before  # a.txt, written first, is back: bytes and mode
    assert journals(repo) == []


@requires_containment
def test_recover_that_cannot_restore_a_file_keeps_the_journal_and_says_why(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    code, _, _ = run(repo, tmp_path, TIDEGATE_FAULT="apply_back.after_write:1")
    assert code == -signal.SIGKILL
    [jdir] = journals(repo)

    res = _read_only(
        [repo.root / "a.txt"], "recover", "--rollback", cwd=repo.root, tmp_path=tmp_path
    )

    assert res.returncode == 1
    line = _one_error_line(res.stderr)
    assert f"run {jdir.name}: its apply-back journal could not be undone" in line
    assert "EBUSY" in line
    assert journals(repo) == [jdir]

    code, summary, err = cli("recover", "--rollback", cwd=repo.root, env=env(tmp_path))
    assert code == 0, err
    assert isinstance(summary, dict) and summary["journals"][0]["finished"] == ["a.txt"]
    assert on_disk(repo, OLD)
