"""The candidate tree built along the changed paths equals the one built through a copy of
the whole T0 index, for every kind of change; where it cannot be sure it steps aside."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.errors import PhaseError
from tidegate.git.command import Git
from tidegate.records.proposal import FileEdit, Proposal
from tidegate.workspace import candidate
from tidegate.workspace.candidate import build_candidate


def _diff(repo: Repo, change: str) -> str:
    """The unified diff of a change made in the work tree by the shell ``change``."""
    subprocess.run(["/bin/sh", "-c", change], cwd=repo.root, check=True)
    repo.git("add", "-A")
    diff = repo.git("diff", "--cached", "--binary", "--full-index")
    repo.git("reset", "-q", "--hard")
    repo.git("clean", "-fdq")
    return diff


def _both(repo: Repo, tmp_path: Path, proposal: Proposal, paths: set[str]) -> tuple[str, str]:
    git = Git(repo.root)
    head = repo.git("rev-parse", "HEAD").strip()
    whole = build_candidate(git, head, proposal, tmp_path / "whole.index")
    by_paths = build_candidate(git, head, proposal, tmp_path / "paths.index", paths=paths)
    assert not (tmp_path / "paths.index").exists()
    return whole, by_paths


@pytest.fixture
def tree(repo: Repo) -> Repo:
    repo.write("a/b/c.txt", "one\ntwo\n")
    repo.write("a/b/d.txt", "d\n")
    repo.write("a/solo/only.txt", "alone\n")
    repo.write("top.txt", "top\n")
    repo.write("run.sh", "#!/bin/sh\n", mode=0o755)
    (repo.root / "link").symlink_to("top.txt")
    repo.write("a/b-c.txt", "sorts between a/b and a/b/ in git's order\n")
    repo.commit_all()
    return repo


CHANGES = {
    "modify deep": ("sed -i s/two/TWO/ a/b/c.txt", {"a/b/c.txt"}),
    "create in new dirs": ("mkdir -p x/y/z && echo new > x/y/z/n.txt", {"x/y/z/n.txt"}),
    "delete the last file of a dir": ("rm a/solo/only.txt", {"a/solo/only.txt"}),
    "rename across dirs": ("git mv a/b/d.txt e.txt", {"a/b/d.txt", "e.txt"}),
    "mode only": ("chmod -x run.sh", {"run.sh"}),
    "retarget a symlink": ("ln -sfn a/b/c.txt link", {"link"}),
    "name sorting near a dir": ("echo x > a/b-c.txt && echo y > a/b.txt", {"a/b-c.txt", "a/b.txt"}),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_diff_gives_the_same_tree_both_ways(
    tree: Repo, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    change, paths = CHANGES[name]
    proposal = Proposal(diff=_diff(tree, change))
    calls: list[str] = []
    real = candidate.edit_tree
    monkeypatch.setattr(candidate, "edit_tree", lambda *a: calls.append("x") or real(*a))
    whole, by_paths = _both(tree, tmp_path, proposal, paths)
    assert by_paths == whole
    assert calls, "the change was not built along its paths"


def test_whole_file_edits_give_the_same_tree_both_ways(tree: Repo, tmp_path: Path) -> None:
    proposal = Proposal(
        edits=(
            FileEdit("a/b/c.txt", b"rewritten\n"),
            FileEdit("new/tool.sh", b"#!/bin/sh\n", executable=True),
            FileEdit("top.txt", None),
        )
    )
    whole, by_paths = _both(tree, tmp_path, proposal, {"a/b/c.txt", "new/tool.sh", "top.txt"})
    assert by_paths == whole


def test_edits_of_every_kind_of_t0_entry_give_the_same_tree_both_ways(
    tree: Repo, tmp_path: Path
) -> None:
    """Whole-file edits alone build the candidate without T0's entries in the scratch
    index: a symlink made a file, an executable made plain, a file rewritten unchanged."""
    proposal = Proposal(
        edits=(
            FileEdit("link", b"now a file\n"),
            FileEdit("run.sh", b"#!/bin/sh\n", executable=False),
            FileEdit("a/b/d.txt", b"d\n"),
        )
    )
    whole, by_paths = _both(tree, tmp_path, proposal, {"link", "run.sh", "a/b/d.txt"})
    assert by_paths == whole


@pytest.mark.parametrize(
    ("edits", "paths"),
    [
        ((FileEdit("top.txt/inner", b"x\n"),), {"top.txt/inner"}),  # a file becomes a dir
        ((FileEdit("a/solo", b"x\n"),), {"a/solo"}),  # a dir becomes a file
    ],
)
def test_a_file_directory_swap_is_left_to_the_index(
    tree: Repo, tmp_path: Path, edits: tuple[FileEdit, ...], paths: set[str]
) -> None:
    proposal = Proposal(edits=edits)
    whole, by_paths = _both(tree, tmp_path, proposal, paths)
    assert by_paths == whole


def test_a_refused_diff_is_refused_in_the_index_ways_words(tree: Repo, tmp_path: Path) -> None:
    bad = "--- a/top.txt\n+++ b/top.txt\n@@ -1 +1 @@\n-not there\n+x\n"
    git = Git(tree.root)
    head = tree.git("rev-parse", "HEAD").strip()
    with pytest.raises(PhaseError) as whole:
        build_candidate(git, head, Proposal(diff=bad), tmp_path / "w.index")
    with pytest.raises(PhaseError) as by_paths:
        build_candidate(git, head, Proposal(diff=bad), tmp_path / "p.index", paths={"top.txt"})
    assert str(by_paths.value) == str(whole.value)
    assert by_paths.value.feedback == whole.value.feedback


def test_case_folding_repositories_take_the_whole_index_way(
    tree: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree.git("config", "core.ignorecase", "true")
    calls: list[str] = []
    real = candidate.edit_tree
    monkeypatch.setattr(candidate, "edit_tree", lambda *a: calls.append("x") or real(*a))
    proposal = Proposal(edits=(FileEdit("TOP.txt", b"other spelling\n"),))
    whole, by_paths = _both(tree, tmp_path, proposal, {"TOP.txt"})
    assert by_paths == whole
    assert not calls
