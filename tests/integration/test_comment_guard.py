"""The comment guard: existing comments are not rewritten unless the objective asks."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tidegate.validate.comments import comments, rewritten_comments

SOURCE = (
    "# Calculator helpers.\n"
    "def add(a, b):\n"
    "    # add the two numbers\n"
    "    return a - b  # bug here\n"
)


def test_rewriting_a_comment_is_refused(repo: Repo) -> None:
    repo.write("calc.py", SOURCE)
    repo.commit_all()
    objective = "edit-file: calc.py\nreplace: # add the two numbers\nwith: # suma los dos números\n"
    report = repo.run(objective, max_attempts=1)
    assert report.status == "failed"
    assert report.failure_phase == "VALIDATE"
    assert "calc.py:3: comment rewritten: '# add the two numbers' -> '# suma" in report.feedback[0]
    assert repo.read("calc.py") == SOURCE


def test_code_edits_next_to_comments_and_new_comments_are_fine(repo: Repo) -> None:
    repo.write("calc.py", SOURCE)
    repo.commit_all()
    objective = (
        "edit-file: calc.py\nreplace: <<<\n    return a - b  # bug here\n>>>\n"
        "with: <<<\n    # fixed: it subtracted\n    return a + b  # bug here\n>>>\n"
    )
    report = repo.run(objective)
    assert report.status == "succeeded", report.message


def test_the_objective_may_ask_for_comment_changes(repo: Repo) -> None:
    repo.write("calc.py", SOURCE)
    repo.commit_all()
    objective = (
        "Translate the comments to Spanish.\n\n"
        "edit-file: calc.py\nreplace: # add the two numbers\nwith: # suma los dos números\n"
    )
    report = repo.run(objective)
    assert report.status == "succeeded", report.message


def test_the_guard_can_be_turned_off(repo: Repo) -> None:
    repo.write("calc.py", SOURCE)
    repo.commit_all()
    repo.write(".tidegate/config.toml", "[validate]\ncomment_guard = false\n")
    report = repo.run("edit-file: calc.py\nreplace: # bug here\nwith: # note\n")
    assert report.status == "succeeded", report.message


@pytest.mark.parametrize(
    ("path", "before", "after", "rewritten"),
    [
        ("a.js", b"// one\nlet x = 1;\n", b"// uno\nlet x = 1;\n", True),
        ("a.ts", b"let s = '// not a comment';\n", b"let s = '// still not';\n", False),
        ("a.rs", b"/* block */\nfn f() {}\n", b"/* bloque */\nfn f() {}\n", True),
        ("a.go", b"package a\n// Doc\nfunc F() {}\n", b"package a\n\nfunc F() {}\n", False),
        ("a.py", b"s = '# not a comment'\n", b"s = '# changed string'\n", False),
        ("a.yaml", b"a: 1 # one\n", b"a: 2 # two\n", True),
        ("a.toml", b"a = 1 # one\n", b"a = 2 # one\n", False),
        ("a.json", b'{"a": 1}\n', b'{"a": 2}\n', False),
        ("a.unknown", b"# x\n", b"# y\n", False),
    ],
)
def test_comment_detection_per_language(
    path: str, before: bytes, after: bytes, rewritten: bool
) -> None:
    assert bool(rewritten_comments(path, before, after)) is rewritten


def test_comments_are_found_by_the_parser_not_by_text() -> None:
    found = comments("a.py", b"x = '#no'  # yes\n")
    assert found is not None and [c.text for c in found] == ["# yes"]
