"""The gym's workspace-damage figure over a real repository: every byte of the user's work
outside the scenario's paths counts, whatever a contestant did to hide it -- the same size
written back with the old mtime, a link retargeted to a name of the same length, a change
only to the index (staged, unstaged, a mode bit) -- and only the scenario's own paths and
``.tidegate/`` are exempt."""

from __future__ import annotations

import os

import pytest

from tests.conftest import Repo
from tidegate.gym.runner import damage, user_bytes


@pytest.fixture
def work(committed_repo: Repo) -> Repo:
    committed_repo.write("notes.txt", "my untracked notes\n")
    committed_repo.write("README.md", "# calc\nstaged\n")
    committed_repo.git("add", "README.md")
    return committed_repo


def test_nothing_changed_is_no_damage(work: Repo) -> None:
    assert damage(user_bytes(work.root), user_bytes(work.root), set()) == (0, [])


def test_a_same_size_overwrite_with_the_old_mtime_is_damage(work: Repo) -> None:
    path = work.root / "notes.txt"
    before = user_bytes(work.root)
    st = path.stat()
    path.write_text("MY untracked NOTES\n")  # same length, seven bytes differ
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert damage(before, user_bytes(work.root), set()) == (7, ["notes.txt"])


def test_a_link_retargeted_to_a_name_of_the_same_length_is_damage(work: Repo) -> None:
    (work.root / "link").symlink_to("calc.py")
    before = user_bytes(work.root)
    (work.root / "link").unlink()
    (work.root / "link").symlink_to("data.py")
    total, paths = damage(before, user_bytes(work.root), set())
    assert paths == ["link"] and total == 3  # c-a-l-c -> d-a-t-a


@pytest.mark.parametrize("how", ["unstage", "stage more", "chmod +x in the index only"])
def test_a_change_only_to_the_index_is_damage(work: Repo, how: str) -> None:
    before = user_bytes(work.root)
    if how == "unstage":
        work.git("reset", "-q", "--", "README.md")
    elif how == "stage more":
        work.git("add", "notes.txt")
    else:
        work.git("update-index", "--chmod=+x", "calc.py")
    after = user_bytes(work.root)
    assert {k: v for k, v in after.items() if k != "<index>"} == {
        k: v for k, v in before.items() if k != "<index>"
    }, "the work tree's bytes are the same"
    total, paths = damage(before, after, set())
    assert paths == ["<index>"] and total > 0


def test_deleted_and_created_files_count_their_bytes(work: Repo) -> None:
    before = user_bytes(work.root)
    (work.root / "notes.txt").unlink()
    work.write("new.txt", "abc\n")
    assert damage(before, user_bytes(work.root), set()) == (
        len("my untracked notes\n") + 4,
        ["new.txt", "notes.txt"],
    )


def test_only_the_scenarios_paths_and_tidegates_own_are_exempt(work: Repo) -> None:
    before = user_bytes(work.root)
    work.write("calc.py", "def add(a, b):\n    return a + b\n")
    work.write(".tidegate/rejects/x.rej", "rejected\n")
    work.write("notes.txt", "my untracked notes\nand a line the run added\n")
    total, paths = damage(before, user_bytes(work.root), {"calc.py"})
    assert paths == ["notes.txt"] and total == len("and a line the run added\n")
    # A path that only starts like an exempt one is not exempt.
    work.write("calc.py.orig", "x\n")
    work.write(".tidegate-notes", "x\n")
    _, paths = damage(before, user_bytes(work.root), {"calc.py"})
    assert paths == [".tidegate-notes", "calc.py.orig", "notes.txt"]


def test_the_git_directory_is_not_user_work_but_a_nested_git_file_is(work: Repo) -> None:
    before = user_bytes(work.root)
    (work.root / ".git" / "description").write_text("changed by git itself\n")
    assert damage(before, user_bytes(work.root), set()) == (0, [])
    work.write("vendor/.git", "gitdir: elsewhere\n")
    assert damage(before, user_bytes(work.root), set())[1] == ["vendor/.git"]
