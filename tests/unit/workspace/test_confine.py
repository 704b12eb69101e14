"""Path confinement on a real file system: lexical checks, then no-follow resolution."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from tidegate.errors import UsageError
from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.refusal import PathRefused, check_relative
from tidegate.workspace.confine.rename import RENAME_EXCHANGE, RENAME_NOREPLACE, renameat2
from tidegate.workspace.states import DIRECTORY, MISSING, EntryState


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b.txt", "a/b.txt"),
        ("./a//b/", "a/b"),
        (".", "."),
        ("./", "."),
        ("a/./b", "a/b"),
        ("..foo/bar..", "..foo/bar.."),
        ("dir/~backup", "dir/~backup"),
    ],
)
def test_check_relative_accepts_and_normalises(path: str, expected: str) -> None:
    assert check_relative(path) == PurePosixPath(expected)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "empty"),
        ("a\0b", "nul"),
        ("/etc/passwd", "absolute"),
        ("~/x", "home"),
        ("~root/.ssh", "home"),
        ("..", "parent"),
        ("a/../b", "parent"),
        ("a/b/../../..", "parent"),
        ("a\\..\\b", "backslash"),
    ],
)
def test_check_relative_refuses_lexical_escapes(path: str, reason: str) -> None:
    with pytest.raises(PathRefused) as caught:
        check_relative(path)
    assert caught.value.reason == reason
    assert isinstance(caught.value, UsageError)
    assert caught.value.path == path


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """/w/proj (the root) beside /w/proj_evil and /w/outside."""
    root = tmp_path / "proj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("inside\n")
    evil = tmp_path / "proj_evil"
    evil.mkdir()
    (evil / "secret").write_text("evil\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("outside\n")
    return root, tmp_path


def test_absolute_paths_inside_the_root_are_compared_by_component(
    layout: tuple[Path, Path],
) -> None:
    root, base = layout
    with RootHandle(root) as handle:
        assert handle.relative(str(root / "src" / "pkg")) == PurePosixPath("src/pkg")
        assert handle.relative(str(root)) == PurePosixPath(".")
        for sibling in (str(base / "proj_evil" / "secret"), str(base / "proj_evil")):
            with pytest.raises(PathRefused) as caught:
                handle.relative(sibling)
            assert caught.value.reason == "absolute"
        with pytest.raises(PathRefused) as caught:
            handle.relative(str(root / ".." / "proj_evil" / "secret"))
        assert caught.value.reason in ("absolute", "parent")


def test_a_root_reached_through_a_symlink_accepts_both_spellings(
    layout: tuple[Path, Path],
) -> None:
    root, base = layout
    alias = base / "alias"
    os.symlink(root, alias)
    with RootHandle(alias) as handle:
        assert handle.real_root == root.resolve()
        assert handle.relative(str(alias / "src")) == PurePosixPath("src")
        assert handle.relative(str(root / "src")) == PurePosixPath("src")
        assert handle.state("src/pkg/mod.py") == EntryState.file(b"inside\n")


@pytest.mark.parametrize(
    "target",
    ["OUTSIDE_ABS", "../../outside", "../../proj_evil", "pkg/../../../outside", "/etc"],
)
def test_symlinks_leaving_the_root_are_refused_anywhere_on_the_path(
    layout: tuple[Path, Path], target: str
) -> None:
    root, base = layout
    link_target = str(base / "outside") if target == "OUTSIDE_ABS" else target
    os.symlink(link_target, root / "src" / "esc")
    with RootHandle(root) as handle:
        for rel in ("src/esc/secret", "src/esc"):
            with pytest.raises(PathRefused) as caught:
                handle.resolve(PurePosixPath(rel), follow_final=True)
            assert caught.value.reason == "symlink_escape"
        # Not following the final component is fine: the link itself is inside.
        where = handle.resolve(PurePosixPath("src/esc"))
        where.close()
        assert handle.state("src/esc").kind == "symlink"
        with pytest.raises(PathRefused):
            handle.state("src/esc/secret")


def test_a_relative_symlink_is_judged_where_it_lands(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.symlink("../outside", root / "src" / "esc")  # root/outside: inside, and missing
    with RootHandle(root) as handle, pytest.raises(FileNotFoundError):
        handle.resolve(PurePosixPath("src/esc/secret"), follow_final=True)


def test_symlinks_that_stay_inside_are_followed_to_a_canonical_path(
    layout: tuple[Path, Path],
) -> None:
    root, _ = layout
    os.symlink("src/pkg", root / "short")
    os.symlink(str(root / "src"), root / "abs_inside")
    os.symlink("../pkg/../pkg", root / "src" / "pkg" / "again")
    with RootHandle(root) as handle:
        for rel, canonical in (
            ("short/mod.py", "src/pkg/mod.py"),
            ("abs_inside/pkg/mod.py", "src/pkg/mod.py"),
            ("short/again/mod.py", "src/pkg/mod.py"),
        ):
            where = handle.resolve(PurePosixPath(rel), follow_final=True)
            try:
                assert str(where.rel) == canonical
                assert where.name == "mod.py"
            finally:
                where.close()


def test_symlink_loops_are_refused(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    with RootHandle(root) as handle, pytest.raises(PathRefused) as caught:
        handle.resolve(PurePosixPath("a/x"), follow_final=True)
    assert caught.value.reason == "symlink_loop"


def test_state_of_every_kind(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.mkfifo(root / "pipe")
    os.symlink("nowhere", root / "dangling")
    with RootHandle(root) as handle:
        assert handle.state("src") == DIRECTORY
        assert handle.state(".") == DIRECTORY
        assert handle.state("src/pkg/mod.py") == EntryState.file(b"inside\n")
        assert handle.state("dangling") == EntryState.symlink(b"nowhere")
        assert handle.state("pipe").kind == "special"  # and the open did not block
        assert handle.state("missing/deeper/file") == MISSING
        assert handle.state("src/pkg/mod.py/below") == MISSING


def test_create_dirs_makes_real_directories_only(layout: tuple[Path, Path]) -> None:
    root, base = layout
    os.symlink(str(base / "outside"), root / "out")
    with RootHandle(root) as handle:
        where = handle.resolve(PurePosixPath("new/deep/file.txt"), create_dirs=True)
        where.close()
        assert where.created == ("new", "new/deep")
        assert (root / "new" / "deep").is_dir()
        with pytest.raises(PathRefused):
            handle.resolve(PurePosixPath("out/made/file.txt"), create_dirs=True)
    assert not (base / "outside" / "made").exists()


def test_walk_is_sorted_depth_first_never_follows_and_resumes(layout: tuple[Path, Path]) -> None:
    root, base = layout
    (root / "a-b").mkdir()
    (root / "a").mkdir()
    (root / "a" / "z").write_text("z")
    os.symlink(str(base / "outside"), root / "a" / "link")
    with RootHandle(root) as handle:
        items = [i.rel for i in handle.walk(PurePosixPath("."), max_depth=10)]
        assert items == ["a", "a/link", "a/z", "a-b", "src", "src/pkg", "src/pkg/mod.py"]
        resumed = [
            i.rel for i in handle.walk(PurePosixPath("."), max_depth=10, after=("a", "link"))
        ]
        assert resumed == ["a/z", "a-b", "src", "src/pkg", "src/pkg/mod.py"]
        shallow = [(i.rel, i.descended) for i in handle.walk(PurePosixPath("."), max_depth=1)]
        assert shallow == [("a", False), ("a-b", False), ("src", False)]


def test_renameat2_flags_work_here(tmp_path: Path) -> None:
    (tmp_path / "one").write_text("1")
    (tmp_path / "two").write_text("2")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert renameat2(fd, "one", "two", RENAME_EXCHANGE)
        assert (tmp_path / "one").read_text() == "2"
        with pytest.raises(FileExistsError):
            renameat2(fd, "one", "two", RENAME_NOREPLACE)
    finally:
        os.close(fd)
