"""The state root is full or read-only at the worst moment: while the checkpoint key is
created, while the run store is opened, before any run. Real filesystems: a 4 MiB tmpfs
filled to the last block, and the same tmpfs remounted read-only.

Each run fails before it starts, in one line naming the state root, what could not be done
and the errno (exit 1 for a full disk, 2 for a read-only state root), never a traceback
or a PERSISTENCE_ERROR (except when the run store itself cannot be written); the workspace and ``.git/index`` are untouched, and no partial key
file (under its own name or a temp name) and no empty store is left behind. Reading the
runs already recorded in a read-only state root still works."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.integration._store import FIX


def _mount(point: Path) -> None:
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        # A developer without mount rights skips; CI runs as root and must run these.
        why = f"this host does not let the tests mount a tmpfs: {proc.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of our own (unmounted afterwards)."""
    point = tmp_path / "fs"
    point.mkdir()
    _mount(point)
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def _fill(fs: Path) -> None:
    """Use up every block of ``fs`` (big writes first, then ever smaller ones)."""
    fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        size = 1 << 16
        while size:
            try:
                os.write(fd, b"\0" * size)
            except OSError:
                size //= 2
    finally:
        os.close(fd)


def _remount_ro(fs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)


def _tree(repo: Repo) -> dict[str, bytes]:
    files = {
        str(p.relative_to(repo.root)): p.read_bytes()
        for p in sorted(repo.root.rglob("*"))
        if p.is_file() and p.relative_to(repo.root).parts[0] != ".git"
    }
    files[".git/index"] = (repo.root / ".git" / "index").read_bytes()
    return files


def _run(repo: Repo, state_root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return tidegate_cli(
        "run",
        "--objective",
        FIX,
        "--verify",
        "true",
        "--state-root",
        str(state_root),
        cwd=repo.root,
        env=env,
    )


def _one_line(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    if "PERSISTENCE_ERROR: " not in words:
        assert "PERSISTENCE_ERROR" not in proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def _key_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*checkpoint.key*")) if root.exists() else []


def test_a_full_disk_while_the_key_is_created(committed_repo: Repo, small_fs: Path) -> None:
    root = small_fs / "state"
    root.mkdir(mode=0o700)
    _fill(small_fs)
    before = _tree(committed_repo)
    proc = _run(committed_repo, root)
    assert proc.returncode == 1
    _one_line(proc, f"state root {root}", "checkpoint key", "ENOSPC")
    assert proc.stdout == ""
    assert _key_files(root) == []
    assert _tree(committed_repo) == before


def test_a_full_disk_while_the_store_is_created(committed_repo: Repo, small_fs: Path) -> None:
    root = small_fs / "state"
    ok = _run(committed_repo, root)  # a first run creates the key and a store
    assert ok.returncode == 0, ok.stderr
    committed_repo.git("checkout", "--", "calc.py")
    for store in root.glob("*/runs.sqlite3*"):
        store.unlink()
    key = (root / "checkpoint.key").read_bytes()
    _fill(small_fs)
    before = _tree(committed_repo)
    proc = _run(committed_repo, root)
    assert proc.returncode == 1
    # The store itself cannot be written: PERSISTENCE_ERROR, named by state root and code.
    _one_line(proc, "PERSISTENCE_ERROR: ", f"state root {root}", "run store", "SQLITE_FULL")
    assert (root / "checkpoint.key").read_bytes() == key
    assert list(root.glob("*/runs.sqlite3")) == []  # no empty store left to be read later
    assert _tree(committed_repo) == before


def test_the_key_write_failing_leaves_no_partial_key(committed_repo: Repo, tmp_path: Path) -> None:
    """The same failure through the fault point, on any filesystem: the temp file is gone."""
    root = tmp_path / "state"
    before = _tree(committed_repo)
    proc = _run(committed_repo, root, TIDEGATE_FAULT="state_root.key_write=ENOSPC")
    assert proc.returncode == 1
    _one_line(proc, f"state root {root}", "checkpoint key", "ENOSPC")
    assert _key_files(root) == []
    assert _tree(committed_repo) == before
    again = _run(committed_repo, root)  # the next run, with room, creates a good key
    assert again.returncode == 0, again.stderr
    assert _key_files(root) == ["checkpoint.key"]
    assert (root / "checkpoint.key").stat().st_mode & 0o777 == 0o600


def test_a_read_only_state_root(committed_repo: Repo, small_fs: Path) -> None:
    root = small_fs / "state"
    ok = _run(committed_repo, root)
    assert ok.returncode == 0, ok.stderr
    committed_repo.git("checkout", "--", "calc.py")
    _remount_ro(small_fs)
    before = _tree(committed_repo)
    proc = _run(committed_repo, root)
    assert proc.returncode == 2
    _one_line(proc, f"state root {root}", "EROFS")
    assert _tree(committed_repo) == before
    # What was recorded can still be read: reading never writes.
    listed = tidegate_cli("runs", "--state-root", str(root), cwd=committed_repo.root)
    assert listed.returncode == 0 and "succeeded" in listed.stdout, listed.stderr
    read = tidegate_cli("read", "latest", "--state-root", str(root), cwd=committed_repo.root)
    assert read.returncode == 0 and "(verified)" in read.stdout, read.stderr
    tools = tidegate_cli(
        "tools",
        "call",
        "workspace.read",
        "--args",
        '{"path": "calc.py"}',
        "--state-root",
        str(root),
        cwd=committed_repo.root,
    )
    assert tools.returncode == 2
    _one_line(tools, f"state root {root}", "EROFS")


def test_a_state_root_that_cannot_be_created(committed_repo: Repo, small_fs: Path) -> None:
    _remount_ro(small_fs)
    root = small_fs / "new" / "state"
    before = _tree(committed_repo)
    proc = _run(committed_repo, root)
    assert proc.returncode == 2
    _one_line(proc, f"state root {root}", "EROFS")
    assert _tree(committed_repo) == before
