"""Attack: a sparse checkout (cone mode), and a change reaching outside the cone.

A file created outside the cone is written into the work tree as an untracked file; the
next run's T0 must take it in (it used to fail every later run at BOOTSTRAP, because
``git add --all`` refuses paths outside the sparse definition). A change to a tracked file
outside the cone, which is not in the work tree, is refused in VALIDATE by name.
"""

from __future__ import annotations

import pytest

from tests.adversarial._repo_shapes import cli, report_of
from tests.conftest import Repo


@pytest.fixture(params=["full-index", "sparse-index"])
def sparse_repo(committed_repo: Repo, request: pytest.FixtureRequest) -> Repo:
    committed_repo.write("in/a.txt", "in\n")
    committed_repo.write("out/b.txt", "out\n")
    committed_repo.commit_all("two directories")
    index = ["--sparse-index"] if request.param == "sparse-index" else []
    committed_repo.git("sparse-checkout", "set", "--cone", *index, "in")
    assert not (committed_repo.root / "out").exists()
    committed_repo.write("in/a.txt", "in (dirty)\n")
    return committed_repo


def test_file_created_outside_the_cone_does_not_break_later_runs(sparse_repo: Repo) -> None:
    repo = sparse_repo
    index = repo.index_bytes()

    first = cli(
        "run", "--objective", "create-file: out/new.txt\ncontent: hi\n", "--json", cwd=repo.root
    )
    report = report_of(first)
    assert first.returncode == 0, report["message"]
    assert repo.read("out/new.txt") == "hi"

    second = cli(
        "run",
        "--objective",
        "edit-file: in/a.txt\nreplace: (dirty)\nwith: (edited)\n",
        "--json",
        cwd=repo.root,
    )
    report = report_of(second)
    assert second.returncode == 0, report["message"]
    assert repo.read("in/a.txt") == "in (edited)\n"
    assert repo.read("out/new.txt") == "hi"
    assert repo.index_bytes() == index


def test_user_file_outside_the_cone_does_not_break_a_run(sparse_repo: Repo) -> None:
    """The same shape made by the user: an untracked file outside the cone at T0."""
    repo = sparse_repo
    repo.write("out/mine.txt", "mine\n")
    index = repo.index_bytes()

    res = cli(
        "run",
        "--objective",
        "edit-file: in/a.txt\nreplace: (dirty)\nwith: (edited)\n",
        "--json",
        cwd=repo.root,
    )

    report = report_of(res)
    assert res.returncode == 0, report["message"]
    assert repo.read("out/mine.txt") == "mine\n"
    assert repo.index_bytes() == index


def test_change_to_a_file_outside_the_cone_is_refused_by_name(sparse_repo: Repo) -> None:
    repo = sparse_repo
    before = repo.tree_state()
    diff = "--- a/out/b.txt\n+++ b/out/b.txt\n@@ -1 +1 @@\n-out\n+out (changed)\n"
    patch = repo.root.parent / "outside.diff"
    patch.write_text(diff)

    res = cli("run", "--objective", f"patch-file: {patch}", "--json", cwd=repo.root)

    report = report_of(res)
    assert res.returncode == 1
    assert report["attempt_events"][0]["failure_phase"] == "VALIDATE"
    assert "out/b.txt: outside your sparse checkout" in report["feedback"][0]
    assert repo.tree_state() == before


def test_objective_naming_a_file_outside_the_cone_says_so(sparse_repo: Repo) -> None:
    repo = sparse_repo
    before = repo.tree_state()

    res = cli(
        "run",
        "--objective",
        "edit-file: out/b.txt\nreplace: out\nwith: OUT\n",
        "--json",
        cwd=repo.root,
    )

    report = report_of(res)
    assert res.returncode == 1
    assert "out/b.txt is outside your sparse checkout" in report["message"], report["message"]
    assert repo.tree_state() == before
