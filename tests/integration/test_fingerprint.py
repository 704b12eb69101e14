"""Workspace fingerprints and inventories on real repositories.

The fingerprint must change whenever relevant content changes (tracked, untracked, staged,
HEAD, modes, symlinks), stay put when only ignored or derived state or the index's stat
cache changes, and never write the user's index. Inventories must report typed per-path
changes and summarise derived directories without content hashes.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.workspace.fingerprint import (
    diff_inventory,
    fingerprint_details,
    take_inventory,
    workspace_fingerprint,
)
from tidegate.workspace.states import DIRECTORY, MISSING, EntryState


@pytest.fixture
def project(committed_repo: Repo) -> Repo:
    committed_repo.write("pkg/mod.py", "X = 1\n")
    committed_repo.write("node_modules/dep/index.js", "module.exports = 1;\n")
    committed_repo.write(".gitignore", ".env\nbuild/\n__pycache__/\nnode_modules/\n")
    committed_repo.commit_all("more")
    return committed_repo


def _index_identity(repo: Repo) -> tuple[bytes, int]:
    index = repo.root / ".git" / "index"
    return index.read_bytes(), os.stat(index).st_mtime_ns


def test_fingerprint_never_writes_the_index(project: Repo) -> None:
    project.write("calc.py", "changed\n")  # unstaged
    project.write("staged.txt", "s\n")
    project.git("add", "staged.txt")
    project.write("untracked.txt", "u\n")
    before = _index_identity(project)
    for _ in range(3):
        workspace_fingerprint(project.root)
        take_inventory(project.root)
    assert _index_identity(project) == before


def test_fingerprint_is_stable_and_ignores_stat_refreshes(project: Repo) -> None:
    first = workspace_fingerprint(project.root)
    assert workspace_fingerprint(project.root) == first
    # The user's own git refreshes stat data in the index: bytes change, content doesn't.
    old = time.time() - 1000
    os.utime(project.root / "calc.py", (old, old))
    before_refresh = (project.root / ".git" / "index").read_bytes()
    project.git("update-index", "--refresh")
    assert (project.root / ".git" / "index").read_bytes() != before_refresh
    assert workspace_fingerprint(project.root) == first


@pytest.mark.parametrize(
    "change",
    [
        "modify_tracked",
        "add_untracked",
        "delete_tracked",
        "chmod_exec",
        "stage_only",
        "commit",
        "symlink",
    ],
)
def test_fingerprint_changes_with_relevant_content(project: Repo, change: str) -> None:
    before = fingerprint_details(project.root)
    root = project.root
    if change == "modify_tracked":
        project.write("pkg/mod.py", "X = 2\n")
    elif change == "add_untracked":
        project.write("new/file.txt", "hello\n")
    elif change == "delete_tracked":
        (root / "README.md").unlink()
    elif change == "chmod_exec":
        (root / "calc.py").chmod(0o755)
    elif change == "stage_only":
        project.write("calc.py", "staged\n")
        project.git("add", "calc.py")
        project.write("calc.py", (root / "calc.py").read_text())  # no-op rewrite
    elif change == "commit":
        project.git("commit", "-q", "--allow-empty", "-m", "empty")
    elif change == "symlink":
        os.symlink("calc.py", root / "link")
    after = fingerprint_details(project.root)
    assert after.value != before.value
    if change == "commit":
        assert after.head != before.head and after.tree == before.tree
    if change == "stage_only":
        assert after.index != before.index


def test_fingerprint_ignores_ignored_and_derived_changes(project: Repo) -> None:
    before = workspace_fingerprint(project.root)
    project.write("node_modules/dep/index.js", "module.exports = 2;\n")
    project.write("build/out.o", b"\x7fELF")
    project.write(".env", "SECRET=1\n")
    assert workspace_fingerprint(project.root) == before


def test_fingerprint_sees_racily_clean_edits(project: Repo) -> None:
    """A same-size rewrite with the same mtime as the index is still noticed: the temp
    index keeps the real index's mtime, so git re-reads entries that are racily clean."""
    project.git("config", "core.trustctime", "false")
    target = project.root / "pkg" / "mod.py"
    stamp = time.time_ns() - 100 * 10**9
    target.write_text("X = 1\n")
    os.utime(target, ns=(stamp, stamp))
    project.git("add", "pkg/mod.py")
    os.utime(project.root / ".git" / "index", ns=(stamp, stamp))
    before = workspace_fingerprint(project.root)
    with target.open("r+") as fh:  # same inode, same size
        fh.write("X = 9\n")
    os.utime(target, ns=(stamp, stamp))
    assert workspace_fingerprint(project.root) != before


def test_fingerprint_from_a_subdirectory_covers_the_work_tree(project: Repo) -> None:
    sub = project.root / "pkg"
    before = workspace_fingerprint(sub)
    assert before == workspace_fingerprint(project.root)
    project.write("README.md", "# changed elsewhere\n")
    assert workspace_fingerprint(sub) != before


def test_fingerprint_without_git_walks_the_tree(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / ".git").mkdir()  # not a repository, but still never traversed
    (root / ".git" / "junk").write_text("x")
    details = fingerprint_details(root)
    assert details.method == "walk"
    (root / ".git" / "junk").write_text("y")
    assert workspace_fingerprint(root) == details.value
    (root / "src" / "a.py").write_text("a = 2\n")
    assert workspace_fingerprint(root) != details.value


# -- inventories ---------------------------------------------------------------------------


def test_inventory_reports_typed_changes(project: Repo) -> None:
    root = project.root
    project.write("old.txt", "old\n")
    project.write("swap", "file first\n")
    before = take_inventory(root)
    assert before.entries["pkg"] == DIRECTORY
    assert before.entries["calc.py"] == EntryState.file((root / "calc.py").read_bytes())
    assert not any(p.startswith(("node_modules", ".git/")) for p in before.entries)
    assert before.ignored and "node_modules/" in before.ignored

    project.write("calc.py", "edited\n")
    (root / "old.txt").unlink()
    (root / "emptydir").mkdir()
    os.symlink("calc.py", root / "link")
    (root / "swap").unlink()
    (root / "swap").mkdir()
    os.mkfifo(root / "pipe")
    after = take_inventory(root)

    changes, derived = diff_inventory(before, after)
    by_path = {c.path: c for c in changes}
    assert list(by_path) == sorted(by_path)
    assert by_path["calc.py"].after == EntryState.file(b"edited\n")
    assert by_path["old.txt"].after == MISSING
    assert (by_path["emptydir"].before, by_path["emptydir"].after) == (MISSING, DIRECTORY)
    assert by_path["link"].after == EntryState.symlink(b"calc.py")
    assert by_path["swap"].before.kind == "file" and by_path["swap"].after == DIRECTORY
    assert by_path["pipe"].after.kind == "special"
    assert set(by_path) == {"calc.py", "old.txt", "emptydir", "link", "swap", "pipe"}
    assert derived == []


def test_derived_directories_are_summarised_never_hashed(project: Repo) -> None:
    root = project.root
    project.write("src/app.py", "A = 1\n")
    project.write("src/__pycache__/m.cpython-311.pyc", b"\x00\x01")
    before = take_inventory(root)
    assert set(before.derived) == {"node_modules", "src/__pycache__"}
    assert all(v.startswith("meta-sha256:") for v in before.derived.values())
    project.write("node_modules/dep/new.js", "x\n")
    after = take_inventory(root)
    changes, derived = diff_inventory(before, after)
    assert changes == []
    assert derived == ["node_modules"]
    (root / "src" / "__pycache__" / "m.cpython-311.pyc").unlink()
    changes, derived = diff_inventory(after, take_inventory(root))
    assert changes == [] and derived == ["src/__pycache__"]


def test_a_derived_name_holding_tracked_files_is_ordinary_source(project: Repo) -> None:
    project.write("dist/README.txt", "shipped docs\n")
    project.git("add", "-f", "dist/README.txt")
    before = take_inventory(project.root)
    assert "dist" not in before.derived and "dist/README.txt" in before.entries
    project.write("dist/README.txt", "changed\n")
    changes, _ = diff_inventory(before, take_inventory(project.root))
    assert [c.path for c in changes] == ["dist/README.txt"]


def test_derived_fingerprint_is_bounded(project: Repo) -> None:
    for i in range(30):
        project.write(f"node_modules/p/f{i}.js", "x\n")
    inventory = take_inventory(project.root, derived_max_entries=10)
    assert inventory.derived["node_modules"].endswith(":partial")


def test_same_size_rewrites_with_restored_mtime_are_seen(project: Repo) -> None:
    """The hash cache is keyed by the full lstat signature (ctime included) and does not
    trust files touched within the racy window."""
    root = project.root
    target = root / "pkg" / "mod.py"
    old = time.time_ns() - 50 * 10**9
    os.utime(target, ns=(old, old))
    first = take_inventory(root)  # old enough to be cached
    with target.open("r+") as fh:
        fh.write("X = 7\n")
    os.utime(target, ns=(old, old))
    second = take_inventory(root)
    assert second.entries["pkg/mod.py"] == EntryState.file(b"X = 7\n")
    fresh = root / "fresh.txt"
    fresh.write_text("aaaa\n")
    third = take_inventory(root)
    stamp = os.stat(fresh).st_mtime_ns
    with fresh.open("r+") as fh:
        fh.write("bbbb\n")
    os.utime(fresh, ns=(stamp, stamp))
    assert take_inventory(root).entries["fresh.txt"] != third.entries["fresh.txt"]
    assert first.entries["pkg/mod.py"] != second.entries["pkg/mod.py"]


def test_previous_inventory_paths_cannot_be_hidden_by_gitignore(project: Repo) -> None:
    root = project.root
    project.write("notes.txt", "draft\n")
    before = take_inventory(root)
    project.write("notes.txt", "rewritten\n")
    with (root / ".gitignore").open("a") as fh:
        fh.write("notes.txt\n")
    changes, _ = diff_inventory(before, take_inventory(root, previous=before))
    by_path = {c.path: c for c in changes}
    assert by_path["notes.txt"].after == EntryState.file(b"rewritten\n")


def test_inventory_does_not_follow_symlinks_out(project: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s\n")
    os.symlink(outside, project.root / "escape")
    inventory = take_inventory(project.root)
    assert inventory.entries["escape"] == EntryState.symlink(os.fsencode(outside))
    assert not any(p.startswith("escape/") for p in inventory.entries)


def test_inventory_without_git(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "node_modules" / "x" / "i.js").write_text("1")
    (root / "a.txt").write_text("a")
    inventory = take_inventory(root)
    assert set(inventory.entries) == {"a.txt"}
    assert set(inventory.derived) == {"node_modules"}
    assert inventory.ignored == ()


def test_fingerprint_in_a_linked_worktree(project: Repo, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    project.git("worktree", "add", "-q", "--detach", str(linked))
    main_index = _index_identity(project)
    before = workspace_fingerprint(linked)
    (linked / "calc.py").write_text("linked edit\n")
    assert workspace_fingerprint(linked) != before
    assert _index_identity(project) == main_index
    subprocess.run(
        ["git", "worktree", "remove", "--force", str(linked)], cwd=project.root, check=True
    )


def test_fingerprint_with_unmerged_entries(project: Repo) -> None:
    project.git("checkout", "-q", "-b", "side")
    project.write("calc.py", "side\n")
    project.commit_all("side")
    project.git("checkout", "-q", "main")
    project.write("calc.py", "main\n")
    project.commit_all("main")
    subprocess.run(["git", "merge", "-q", "side"], cwd=project.root, capture_output=True)
    assert "UU calc.py" in project.status()
    before_index = _index_identity(project)
    details = fingerprint_details(project.root)
    assert details.index is not None and details.index.startswith("stage:")
    assert workspace_fingerprint(project.root) == details.value
    project.write("calc.py", "resolved\n")
    assert workspace_fingerprint(project.root) != details.value
    assert _index_identity(project) == before_index


def test_a_t0_snapshot_yields_the_same_fingerprint(project: Repo, tmp_path: Path) -> None:
    """A run derives its fingerprint from the trees T0 already built; it must equal the
    one computed from scratch (resume compares the two)."""
    from tidegate.flow.progress_inputs import workspace_identity
    from tidegate.workspace.repo import discover
    from tidegate.workspace.snapshot import ensure_excluded, take_snapshot

    project.write("staged.py", "x = 1\n")
    project.git("add", "staged.py")
    project.write("staged.py", "x = 2\n")
    project.write("untracked dir/new file.txt", "new\n")
    repo = discover(project.root)
    ensure_excluded(repo)
    snapshot = take_snapshot(repo, "fp-test", tmp_path)
    assert snapshot.tree is not None and snapshot.index_tree is not None
    from_t0 = workspace_identity(project.root, snapshot)
    assert from_t0 == workspace_identity(project.root)
    assert from_t0["value"] == workspace_fingerprint(project.root)
