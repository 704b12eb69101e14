"""Undo of tool calls against a hostile work tree and a tampered byte store (issue #25):
a symlink planted where a file was is never followed, a blob whose bytes no longer match
its hash is refused, and a call or session ID that is a path is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.integration.tools.undo_support import (
    dirty,
    last_call,
    repo_dir,
    sessions,
    sha,
    tools_call,
    undo,
)

LINES = "".join(f"line {i}\n" for i in range(1, 6))


def _written(repo: Repo, path: str = "lines.txt") -> None:
    """A workspace.write that replaced uncommitted ``path``."""
    repo.write(path, LINES)
    data = (repo.root / path).read_bytes()
    tools_call(repo, "workspace.write", path=path, content="tool\n", expect=sha(data))


def _one_error_line(stderr: str, words: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidegate: error: "), stderr
    assert words in lines[0], lines[0]


def test_a_symlink_planted_at_the_path_is_not_followed(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    dirty(repo)
    _written(repo)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"tool\n")  # has the call's after-hash: a follower would restore into it
    (repo.root / "lines.txt").unlink()
    (repo.root / "lines.txt").symlink_to(victim)
    before = repo.tree_state()
    proc = undo(repo, "--call", last_call())
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "symlink; not followed" in proc.stdout
    assert victim.read_bytes() == b"tool\n"
    (repo.root / "lines.txt.rej").unlink()
    assert repo.tree_state() == before


def test_a_symlinked_parent_directory_is_not_followed(committed_repo: Repo, tmp_path: Path) -> None:
    repo = committed_repo
    repo.write("sub/lines.txt", LINES)
    data = (repo.root / "sub/lines.txt").read_bytes()
    tools_call(repo, "workspace.write", path="sub/lines.txt", content="tool\n", expect=sha(data))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lines.txt").write_bytes(b"tool\n")
    (repo.root / "sub/lines.txt").unlink()
    (repo.root / "sub").rmdir()
    (repo.root / "sub").symlink_to(outside)
    proc = undo(repo, "--call", last_call())
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert (outside / "lines.txt").read_bytes() == b"tool\n"
    assert sorted(p.name for p in outside.iterdir()) == ["lines.txt"]  # no .rej through it


def test_a_tampered_blob_is_refused(committed_repo: Repo) -> None:
    repo = committed_repo
    dirty(repo)
    _written(repo)
    [entry] = sessions()[-1]["calls"][-1]["paths"]
    raw = entry["before"]["kept"].removeprefix("sha256:")
    blob = repo_dir() / "blobs" / "sha256" / raw[:2] / raw[2:]
    assert blob.read_bytes() == LINES.encode()
    assert blob.stat().st_mode & 0o777 == 0o600
    blob.chmod(0o600)
    blob.write_bytes(b"import os; os.system('evil')\n")
    before = repo.tree_state()
    proc = undo(repo, "--call", last_call())
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    _one_error_line(proc.stderr, "do not match its hash")
    assert repo.tree_state() == before


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--call", "../../etc/passwd"),
        ("--call", "a/b"),
        ("--call", ".."),
        ("--session", "../undo/x"),
        ("--session", "/etc/passwd"),
        ("--session", "x/../../y"),
    ],
)
def test_an_id_that_is_a_path_is_refused(committed_repo: Repo, option: str, value: str) -> None:
    repo = committed_repo
    dirty(repo)
    _written(repo)
    before = repo.tree_state()
    proc = undo(repo, option, value)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    _one_error_line(proc.stderr, "ID refused: an identifier has letters")
    assert repo.tree_state() == before


def test_a_linked_blob_directory_is_not_written_through(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """Someone links the store's ``blobs`` elsewhere: nothing is written there, the call
    itself still runs, and stderr says it is not undoable."""
    repo = committed_repo
    dirty(repo)
    _written(repo)  # creates the repository's directory in the state root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    blobs = repo_dir() / "blobs"
    shutil.rmtree(blobs)
    blobs.symlink_to(elsewhere)
    repo.write("more.txt", "mine\n")
    proc = tidegate_cli(
        "tools",
        "call",
        "workspace.write",
        "--args",
        json.dumps({"path": "more.txt", "content": "tool\n", "expect": sha(b"mine\n")}),
        cwd=repo.root,
    )
    assert proc.returncode == 0, proc.stderr
    assert repo.read("more.txt") == "tool\n"
    assert "tidegate: note: not undoable: cli-1:" in proc.stderr
    assert list(elsewhere.iterdir()) == []
