"""A model asks git.exec for a diff that hides part of the change, to earn the complete
``diff_review`` evidence without showing it: only a diff whose options are presentation
alone is complete; a filtered, reversed, reworded or staged-only one is an inspection."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import call, executor


@pytest.fixture
def changed(committed_repo: Repo) -> Repo:
    committed_repo.write("calc.py", "changed\n")
    committed_repo.write("added.py", "new file\n")
    committed_repo.git("add", "-N", "added.py")  # intent-to-add: git diff shows it
    return committed_repo


@pytest.mark.parametrize(
    "argv",
    [
        ["diff", "--diff-filter=A"],  # hides the modification
        ["diff", "--diff-f=M"],  # the same, abbreviated
        ["diff", "-R"],
        ["diff", "-Schanged"],
        ["diff", "--word-diff"],
        ["diff", "-w"],
        ["diff", "--cached"],  # what is staged, not the change
        ["diff", "--stat"],
        ["diff", "-I", "changed"],
        ["diff", "--relative=sub"],
    ],
    ids=" ".join,
)
def test_a_partial_diff_earns_no_diff_review(changed: Repo, argv: list[str]) -> None:
    with executor(changed.root) as ex:
        result = ex.execute(call("git_exec", args=argv))
    assert result.ok and result.output is not None, result
    assert result.output["complete_diff"] is False
    assert result.effects.diff_review is None


@pytest.mark.parametrize("argv", [["diff"], ["diff", "-U10"], ["diff", "--binary"]])
def test_the_whole_patch_is_a_diff_review(changed: Repo, argv: list[str]) -> None:
    with executor(changed.root) as ex:
        result = ex.execute(call("git_exec", args=argv))
    assert result.ok and result.output is not None and result.output["complete_diff"]
    review = result.effects.diff_review
    assert review is not None and set(review.paths) == {"calc.py", "added.py"}
