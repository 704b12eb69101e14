"""LocalFS (the apply-back file system): descriptor-relative, never through symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidegate.workspace.fs import LocalFS, ReadOnlyFS, UnsafePathError


@pytest.fixture
def fs(tmp_path: Path) -> LocalFS:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s\n")
    os.symlink(tmp_path / "outside", root / "out")
    return LocalFS(root)


def test_reads_every_kind_without_following(fs: LocalFS) -> None:
    (fs.root / "d").mkdir()
    (fs.root / "d" / "f").write_bytes(b"data")
    (fs.root / "d" / "f").chmod(0o755)
    assert fs.read("d/f").content == b"data" and fs.read("d/f").executable
    assert fs.read("d").kind == "dir"
    assert fs.read("out").kind == "symlink"
    assert fs.read("nope/deeper").kind == "missing"
    with pytest.raises(UnsafePathError):
        fs.read("out/secret")
    with pytest.raises(UnsafePathError):
        fs.read("../outside/secret")


def test_writes_are_atomic_and_refuse_symlinked_parents(fs: LocalFS, tmp_path: Path) -> None:
    created = fs.write_file("a/b/c.txt", b"new\n", 0o640, ".tmp-c")
    assert created == ["a", "a/b"]
    target = fs.root / "a" / "b" / "c.txt"
    assert target.read_bytes() == b"new\n" and (os.stat(target).st_mode & 0o777) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.txt"]
    with pytest.raises(UnsafePathError):
        fs.write_file("out/planted", b"x", 0o644, ".tmp-x")
    with pytest.raises(UnsafePathError):
        fs.write_symlink("out/link", b"/etc", ".tmp-l")
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret"]
    fs.write_symlink("a/link", b"b/c.txt", ".tmp-l")
    assert os.readlink(fs.root / "a" / "link") == "b/c.txt"


def test_remove_prunes_empty_parents_only(fs: LocalFS) -> None:
    fs.write_file("x/y/z.txt", b"z", 0o644, ".t")
    fs.write_file("x/keep.txt", b"k", 0o644, ".t")
    fs.remove("x/y/z.txt")
    assert not (fs.root / "x" / "y").exists() and (fs.root / "x" / "keep.txt").exists()
    with pytest.raises(FileNotFoundError):
        fs.remove("missing/file.txt")
    with pytest.raises(UnsafePathError):
        fs.remove("out/secret")


def test_read_only_view_refuses_every_write(fs: LocalFS) -> None:
    view = ReadOnlyFS(fs)
    with pytest.raises(PermissionError):
        view.write_file("f", b"x", 0o644, ".t")
    with pytest.raises(PermissionError):
        view.remove("f")
    assert list(p.name for p in fs.root.iterdir()) == ["out"]
