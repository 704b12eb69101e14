"""Tree-to-tree listings run without reading the work tree's index, and say the same."""

from __future__ import annotations

import os

from tests.conftest import Repo
from tidegate.git.command import Git
from tidegate.git.settings import no_index
from tidegate.workspace.changes import diff_trees


def test_a_tree_diff_without_the_index_is_the_diff_with_it(repo: Repo) -> None:
    repo.write("a/x.txt", "x\n")
    repo.write("b.txt", "b\n")
    old = repo.commit_all()
    repo.write("a/x.txt", "changed\n")
    (repo.root / "b.txt").unlink()
    repo.write("c/d/new.txt", "new\n")
    new = repo.commit_all()
    index = repo.index_bytes()

    changes = diff_trees(Git(repo.root), old, new)

    plain = repo.git("diff-tree", "-r", "--no-renames", "--name-status", old, new)
    status = {"create": "A", "delete": "D", "modify": "M"}
    assert sorted(f"{status[c.action]}\t{c.path}" for c in changes) == sorted(plain.splitlines())
    assert not os.path.lexists(no_index()["GIT_INDEX_FILE"])
    assert repo.index_bytes() == index
