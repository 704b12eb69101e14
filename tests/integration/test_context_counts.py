"""CONTEXT's summary counts what T0 captured: paths differing from HEAD, and staged."""

from __future__ import annotations

import pytest

from tests.conftest import Repo

EDIT = "edit-file: f.txt\nreplace: two\nwith: TWO\n"


def _context(repo: Repo) -> str:
    report = repo.run(EDIT, max_attempts=1)
    assert report.status == "succeeded", report.message
    (detail,) = [p.detail for p in report.phases if p.phase == "CONTEXT"]
    return detail


@pytest.mark.parametrize(
    ("staged", "unstaged", "expected"),
    [
        ([], [], "T0 differs from HEAD in 0 path(s), 0 staged"),
        (["a.txt"], [], "T0 differs from HEAD in 1 path(s), 1 staged"),  # index == T0
        ([], ["b.txt"], "T0 differs from HEAD in 1 path(s), 0 staged"),
        (["a.txt"], ["b.txt"], "T0 differs from HEAD in 2 path(s), 1 staged"),
        (["a.txt"], ["a.txt"], "T0 differs from HEAD in 1 path(s), 1 staged"),
    ],
)
def test_dirty_and_staged_paths_are_counted(
    repo: Repo, staged: list[str], unstaged: list[str], expected: str
) -> None:
    for name in ("f.txt", "a.txt", "b.txt"):
        repo.write(name, "one\ntwo\n" if name == "f.txt" else "base\n")
    repo.commit_all()
    for name in staged:
        repo.write(name, "staged\n")
        repo.git("add", name)
    for name in unstaged:
        repo.write(name, "unstaged\n")
    assert _context(repo) == expected
