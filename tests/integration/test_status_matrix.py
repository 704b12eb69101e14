"""The four rows of the dirty-workspace status matrix, with the index compared byte for byte.

Every row ends with the verified change as unstaged edits, the user's staged content still
staged exactly as it was, and the user's own edits fused with the change.
"""

from __future__ import annotations

from tests.conftest import Repo

LINES = "".join(f"line {i}\n" for i in range(1, 11))
AI_EDIT = "edit-file: f.txt\nreplace: line 8\nwith: line 8 (tidegate)\n"


def _base(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_all()


def test_clean_row(repo: Repo) -> None:
    _base(repo)
    index = repo.index_bytes()
    report = repo.run(AI_EDIT)
    assert report.status == "succeeded", report.message
    assert repo.index_bytes() == index
    assert repo.status() == " M f.txt\n"
    assert repo.read("f.txt") == LINES.replace("line 8\n", "line 8 (tidegate)\n")


def test_staged_row(repo: Repo) -> None:
    _base(repo)
    repo.write("f.txt", LINES.replace("line 2\n", "line 2 staged\n"))
    repo.git("add", "f.txt")
    index = repo.index_bytes()
    staged_diff = repo.git("diff", "--cached")
    report = repo.run(AI_EDIT)
    assert report.status == "succeeded", report.message
    assert repo.index_bytes() == index
    assert repo.git("diff", "--cached") == staged_diff
    assert repo.status() == "MM f.txt\n"
    text = repo.read("f.txt")
    assert "line 2 staged\n" in text and "line 8 (tidegate)\n" in text


def test_unstaged_row(repo: Repo) -> None:
    _base(repo)
    repo.write("f.txt", LINES.replace("line 2\n", "line 2 draft\n"))
    index = repo.index_bytes()
    report = repo.run(AI_EDIT)
    assert report.status == "succeeded", report.message
    assert repo.index_bytes() == index
    assert repo.status() == " M f.txt\n"
    text = repo.read("f.txt")
    assert "line 2 draft\n" in text and "line 8 (tidegate)\n" in text


def test_double_dirty_row(repo: Repo) -> None:
    _base(repo)
    repo.write("f.txt", LINES.replace("line 2\n", "line 2 staged\n"))
    repo.git("add", "f.txt")
    repo.write(
        "f.txt", LINES.replace("line 2\n", "line 2 staged\n").replace("line 5\n", "line 5 draft\n")
    )
    index = repo.index_bytes()
    staged_diff = repo.git("diff", "--cached")
    report = repo.run(AI_EDIT)
    assert report.status == "succeeded", report.message
    assert repo.index_bytes() == index
    assert repo.git("diff", "--cached") == staged_diff
    assert repo.status() == "MM f.txt\n"
    text = repo.read("f.txt")
    for expected in ("line 2 staged\n", "line 5 draft\n", "line 8 (tidegate)\n"):
        assert expected in text
