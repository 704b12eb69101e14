"""The secret-file index behind a contained command's mask, on real directories: exact
after every change a user makes between two commands, with no cap on the walk, and
listing again only the directories whose listing changed. Every test runs twice: with
inotify watches (``inotify``) and with the stat check alone (``stat``, as where inotify
cannot be trusted)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tidegate.workspace import secret_index
from tidegate.workspace.secret_files import SecretFiles, secret_shaped
from tidegate.workspace.secret_index import SecretIndex, UnlistableRoot

HOUR_NS = 3600 * 10**9


@pytest.fixture(autouse=True, params=["inotify", "stat"])
def watch_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "stat":
        monkeypatch.setattr(secret_index.DirWatch, "open", classmethod(lambda cls, root: None))
    return str(request.param)


def age(root: Path) -> None:
    """Every directory's mtime an hour back: none of them is racily listed."""
    then = time.time_ns() - HOUR_NS
    for here, dirs, _files in os.walk(root):
        for d in dirs:
            os.utime(os.path.join(here, d), ns=(then, then), follow_symlinks=False)
    os.utime(root, ns=(then, then))


def index(root: Path, allowed: tuple[str, ...] = ()) -> SecretIndex:
    return SecretIndex(str(root.resolve()), secret_shaped, SecretFiles(allowed).withheld)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, text in {
        "README.md": "x",
        ".env": "KEY=1",
        ".env.example": "KEY=",
        "app/config/prod.env": "KEY=2",
        "app/src/main.py": "print()",
        "deploy/id_ed25519": "k",
        "deploy/id_ed25519.pub": "pub",
        "node_modules/pkg/.npmrc": "token",  # dependency trees are entered too
        ".git/credentials": "not entered",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    os.symlink(".env", root / "link.env")  # a symlink is not a regular file of the tree
    age(root)
    return root


EXPECTED = [".env", "app/config/prod.env", "deploy/id_ed25519", "node_modules/pkg/.npmrc"]


def test_the_first_refresh_walks_everything_but_git(tree: Path) -> None:
    idx = index(tree)
    assert idx.refresh() == EXPECTED
    assert index(tree, allowed=(".env", "deploy/*")).refresh() == [
        "app/config/prod.env",
        "node_modules/pkg/.npmrc",
    ]


def test_an_unchanged_tree_is_only_stat_ed(tree: Path) -> None:
    idx = index(tree)
    idx.refresh()
    first = idx.listed
    assert idx.refresh() == EXPECTED
    assert first > 5 and idx.listed == 0


def test_a_secret_created_between_refreshes_is_found(tree: Path) -> None:
    idx = index(tree)
    idx.refresh()
    (tree / "app/src/.envrc").write_text("export KEY=3")
    (tree / "newdir/deeper").mkdir(parents=True)
    (tree / "newdir/deeper/server.key").write_text("k")
    found = idx.refresh()
    assert "app/src/.envrc" in found and "newdir/deeper/server.key" in found
    # only the changed directories and the new ones were listed
    assert idx.listed == 4  # root (newdir), app/src, newdir, newdir/deeper


def test_a_deleted_or_renamed_secret_is_dropped_or_renamed(tree: Path) -> None:
    idx = index(tree)
    idx.refresh()
    (tree / ".env").unlink()
    (tree / "deploy/id_ed25519").rename(tree / "deploy/id_ed25519.old")
    (tree / "app").rename(tree / "application")
    assert idx.refresh() == [
        "application/config/prod.env",
        "deploy/id_ed25519.old",
        "node_modules/pkg/.npmrc",
    ]


def test_a_directory_replaced_by_a_symlink_to_outside_is_not_followed(
    tree: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "config").mkdir(parents=True)
    (outside / "config/other.env").write_text("elsewhere")
    idx = index(tree)
    assert "app/config/prod.env" in idx.refresh()
    shutil.rmtree(tree / "app")
    os.symlink(outside, tree / "app")
    found = idx.refresh()
    assert not any(rel.startswith("app/") for rel in found), found
    shutil.rmtree(tree / "node_modules")  # a directory replaced by a file
    (tree / "node_modules").write_text("a file now")
    assert idx.refresh() == [".env", "deploy/id_ed25519"]


def test_a_directory_changed_in_the_tick_of_its_listing_is_listed_again(
    tree: Path, watch_mode: str
) -> None:
    """The racy case: a directory whose mtime is not older than the listing's start may
    change again within the same timestamp, leaving its stat as listed; it is listed
    again on the next refresh, even though its stat did not move. (Watched directories
    are not racy: the watch is there before the listing, and reports what follows.)"""
    if watch_mode == "inotify":
        pytest.skip("a watched directory's listing is never racy")
    now = time.time_ns()
    os.utime(tree / "app/src", ns=(now, now))
    idx = index(tree)
    idx.refresh()
    assert idx.refresh() == EXPECTED
    assert idx.listed == 1  # app/src, whose stat did not change
    # Listed now, more than the slack after its mtime: no longer racy.
    old = now - HOUR_NS
    os.utime(tree / "app/src", ns=(old, old))
    idx.refresh()
    assert idx.refresh() == EXPECTED and idx.listed == 0


@pytest.mark.slow
def test_a_secret_past_100k_entries_is_found(tmp_path: Path) -> None:
    """The old walk stopped after 100,000 entries: a repository padded past that hid its
    ``.env`` from the mask. 120,000 entries (hard links: no inode each, so the tree is
    made in seconds) come before it in the walk's order."""
    root = tmp_path / "padded"
    root.mkdir()
    sources = [f"s{n}" for n in range(4)]  # ext4 allows 65,000 links to one inode
    for name in sources:
        (root / name).touch()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for n in range(120_000):
            os.link(sources[n % 4], f"f{n}", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
    (root / "deep/er").mkdir(parents=True)
    (root / "deep/er/.env").write_text("KEY=padded")
    assert index(root).refresh() == ["deep/er/.env"]
    assert SecretFiles().find_in(root) == [root.resolve() / "deep/er/.env"]


def test_noted_changes_are_listed_again(tree: Path) -> None:
    idx = index(tree)
    idx.refresh()
    idx.note_changed(["app/src/main.py"])
    idx.refresh()
    assert idx.listed == 1  # app/src, though its stat did not change


def test_find_in_keeps_one_index_per_root(tree: Path) -> None:
    secrets = SecretFiles()
    assert secrets.find_in(tree) == [tree.resolve() / rel for rel in EXPECTED]
    (tree / "app/src/.pgpass").write_text("pw")
    assert tree.resolve() / "app/src/.pgpass" in secrets.find_in(tree)
    (index_of,) = secrets._indexes.values()
    assert index_of.listed == 1
    assert SecretFiles() == SecretFiles() and hash(secrets) == hash(SecretFiles())


def refuse_listing(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make the index's listing of directories named ``names`` fail with EACCES, as a
    mode-000 directory does for its non-root owner (root lists it: CAP_DAC_OVERRIDE)."""
    real = secret_index._open_dir

    def fake(path: str) -> int:
        if os.path.basename(path) in names:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(secret_index, "_open_dir", fake)


def test_an_unlistable_directory_is_reported_and_picked_up_once_readable(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "private").mkdir()
    (tree / "private/.env").write_text("KEY=3")
    age(tree)
    idx = index(tree)
    refuse_listing(monkeypatch, "private")
    assert "private/.env" not in idx.refresh()
    assert idx.unlistable == ["private"]
    assert idx.refresh() and idx.unlistable == ["private"]  # tried again, still reported
    monkeypatch.undo()  # readable now, its stat unchanged: listed all the same
    assert "private/.env" in idx.refresh()
    assert idx.unlistable == []


def test_find_in_names_unlistable_directories_after_the_files(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "private").mkdir()
    refuse_listing(monkeypatch, "private")
    found = SecretFiles().find_in(tree)
    assert found[-1] == tree.resolve() / "private"
    assert tree.resolve() / ".env" in found


def test_an_unlistable_root_is_refused(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_listing(monkeypatch, tree.name)
    with pytest.raises(UnlistableRoot, match="root cannot be listed"):
        index(tree).refresh()


def test_an_unchanged_watched_tree_is_not_even_stat_ed(tree: Path, watch_mode: str) -> None:
    idx = index(tree)
    idx.refresh()
    assert idx.watching == (watch_mode == "inotify")
    assert idx.refresh() == EXPECTED and idx.listed == 0
    assert idx.stated == (0 if idx.watching else idx.stated) and (idx.watching or idx.stated > 5)


def test_a_directory_replaced_under_the_same_name_is_walked_again(tree: Path) -> None:
    idx = index(tree)
    idx.refresh()
    shutil.rmtree(tree / "app")
    (tree / "app/config").mkdir(parents=True)
    (tree / "app/config/other.env").write_text("KEY=4")
    assert "app/config/other.env" in idx.refresh()
    (tree / "elsewhere/deep").mkdir(parents=True)
    (tree / "elsewhere/deep/.netrc").write_text("machine x")
    shutil.rmtree(tree / "deploy")
    (tree / "deploy").mkdir()  # an empty directory, then another renamed over it
    assert "elsewhere/deep/.netrc" in idx.refresh()
    (tree / "elsewhere").rename(tree / "deploy")
    assert idx.refresh() == [
        ".env",
        "app/config/other.env",
        "deploy/deep/.netrc",
        "node_modules/pkg/.npmrc",
    ]


def test_subtrees_moved_in_out_and_swapped_are_exact(tree: Path, tmp_path: Path) -> None:
    from tidegate.workspace.confine.rename import RENAME_EXCHANGE, renameat2

    outside = tmp_path / "outside"
    (outside / "x/y").mkdir(parents=True)
    (outside / "x/y/.pgpass").write_text("pw")
    idx = index(tree)
    idx.refresh()
    (outside / "x").rename(tree / "app/src/x")  # moved in from outside the root
    (tree / "node_modules/pkg").rename(tmp_path / "pkg")  # moved out
    assert idx.refresh() == [
        ".env",
        "app/config/prod.env",
        "app/src/x/y/.pgpass",
        "deploy/id_ed25519",
    ]
    (tree / "app/src/x/y/.pgpass").write_text("changed in a moved-in directory")
    (tree / "app/src/x/y/credentials").write_text("new in it")
    assert "app/src/x/y/credentials" in idx.refresh()
    (tree / "deploy/config").mkdir()  # the same subdirectory name on both sides
    (tree / "deploy/config/staging.env").write_text("KEY=5")
    idx.refresh()
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:  # app and deploy swap places in one call
        assert renameat2(fd, "app", "deploy", RENAME_EXCHANGE)
    finally:
        os.close(fd)
    assert idx.refresh() == [
        ".env",
        "app/config/staging.env",
        "app/id_ed25519",
        "deploy/config/prod.env",
        "deploy/src/x/y/.pgpass",
        "deploy/src/x/y/credentials",
    ]
    (tree / "deploy/src/x/y/.envrc").write_text("watched under its new name")
    assert "deploy/src/x/y/.envrc" in idx.refresh()


def test_a_lost_event_queue_stat_checks_everything(
    tree: Path, watch_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if watch_mode == "stat":
        pytest.skip("no event queue")
    from tidegate.workspace.dir_watch import DirWatch, Events

    idx = index(tree)
    idx.refresh()
    (tree / "app/src/.envrc").write_text("x")
    monkeypatch.setattr(DirWatch, "read", lambda self: Events(overflowed=True))
    assert "app/src/.envrc" in idx.refresh()
    assert idx.stated == len(idx._dirs) and idx.listed == 1
