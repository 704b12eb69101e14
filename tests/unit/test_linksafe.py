"""The link-safe write primitives on real directories: what each refuses, and that what a
link, a hard link or a FIFO points at is never written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tidegate.disk.linksafe import (
    WriteRefused,
    fresh_file,
    held_lock,
    open_dir,
    opened_dir,
    replace_file,
    temp_name,
)

VICTIM = b"elsewhere\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_bytes(VICTIM)
    return path


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\0b"])
def test_a_name_that_is_not_one_component_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(WriteRefused, match="not a single file name"):
        open_dir(tmp_path, name)


def test_open_dir_refuses_a_linked_component_and_makes_missing_ones(
    tmp_path: Path, victim: Path
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "link").symlink_to(tmp_path)
    with pytest.raises(WriteRefused, match=r"real/link: a symlink; not followed"):
        open_dir(tmp_path, "real", "link", "deeper", create=True)
    assert not (tmp_path / "deeper").exists()
    with pytest.raises(WriteRefused, match="victim: not a directory"):
        open_dir(tmp_path, "victim")
    with opened_dir(tmp_path, "a", "b", create=True, mode=0o700) as fd:
        assert stat.S_ISDIR(os.fstat(fd).st_mode)
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700


def test_replace_file_keeps_a_hard_link_elsewhere_and_the_mode(
    tmp_path: Path, victim: Path
) -> None:
    target = tmp_path / "doc"
    os.link(victim, target)
    target.chmod(0o640)
    with opened_dir(tmp_path) as fd:
        replace_file(fd, "doc", b"new\n")
    assert target.read_bytes() == b"new\n"
    assert victim.read_bytes() == VICTIM
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc", "victim"]  # no temp left


def test_replace_file_refuses_to_replace_a_link(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "doc").symlink_to(victim)
    with opened_dir(tmp_path) as fd, pytest.raises(WriteRefused, match="doc: a symlink"):
        replace_file(fd, "doc", b"new\n", shown=tmp_path / "doc")
    assert (tmp_path / "doc").is_symlink() and victim.read_bytes() == VICTIM


def test_temporary_names_are_unpredictable() -> None:
    names = {temp_name("ledger.md") for _ in range(100)}
    assert len(names) == 100
    assert all(n.startswith(".ledger.md.") and n.endswith(".tmp") for n in names)


@pytest.mark.parametrize("planted", ["symlink", "hard link", "fifo"])
def test_fresh_file_unlinks_what_was_planted(tmp_path: Path, victim: Path, planted: str) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    if planted == "symlink":
        (spill / "out").symlink_to(victim)
    elif planted == "hard link":
        os.link(victim, spill / "out")
    else:
        os.mkfifo(spill / "out")
    with opened_dir(spill) as dir_fd:
        fd = fresh_file(dir_fd, "out")
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"output\n")
    assert (spill / "out").read_bytes() == b"output\n"
    assert victim.read_bytes() == VICTIM


def test_a_lock_link_or_a_fifo_is_refused(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "a.lock").symlink_to(tmp_path / "created-through-the-link")
    os.mkfifo(tmp_path / "b.lock")
    with opened_dir(tmp_path) as fd:
        with pytest.raises(WriteRefused, match=r"a\.lock: a symlink"), held_lock(fd, "a.lock"):
            pass
        with (
            pytest.raises(WriteRefused, match=r"b\.lock: not a regular file"),
            held_lock(fd, "b.lock"),
        ):
            pass
        with (
            held_lock(fd, "c.lock"),
            pytest.raises(BlockingIOError),
            held_lock(fd, "c.lock", blocking=False),
        ):
            pass
    assert not (tmp_path / "created-through-the-link").exists()
