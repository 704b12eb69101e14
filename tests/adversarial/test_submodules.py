"""Attack: a repository with a submodule, and proposals aimed at it.

Changing the submodule pointer, replacing it with files, or creating a file inside it is
refused in VALIDATE with a reason naming the submodule (it used to surface as an internal
APPLY error or a conflict with rejects); a file inside it named by an objective is
explained as inside the submodule, not "no such file"; a run elsewhere still works and
leaves the submodule exactly as it was.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.adversarial._repo_shapes import cli, report_of
from tests.conftest import Repo


@pytest.fixture
def with_submodule(committed_repo: Repo, tmp_path: Path) -> Repo:
    lib = Repo(tmp_path / "libsrc")
    lib.root.mkdir()
    lib.git("init", "-q")
    lib.write("lib.py", "VALUE = 1\n")
    lib.commit_all("lib")
    committed_repo.git(
        "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib.root), "lib"
    )
    committed_repo.git("commit", "-q", "-m", "add the submodule")
    committed_repo.write("calc.py", "# dirty\n")
    return committed_repo


def _submodule_state(repo: Repo) -> tuple[str, str]:
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo.root / "lib", capture_output=True, text=True
    ).stdout
    return head, (repo.root / "lib" / "lib.py").read_text()


def _pointer_diff(repo: Repo) -> str:
    old = repo.git("rev-parse", "HEAD:lib").strip()
    return (
        "diff --git a/lib b/lib\n"
        f"index {old[:7]}..1111111 160000\n--- a/lib\n+++ b/lib\n@@ -1 +1 @@\n"
        f"-Subproject commit {old}\n+Subproject commit {'1' * 40}\n"
    )


@pytest.mark.parametrize("how", ["pointer", "create-inside", "replace-with-file"])
def test_change_to_the_submodule_is_refused_in_validate(with_submodule: Repo, how: str) -> None:
    repo = with_submodule
    if how == "pointer":
        patch = repo.root.parent / "pointer.diff"
        patch.write_text(_pointer_diff(repo))
        objective = f"patch-file: {patch}"
    elif how == "create-inside":
        objective = "create-file: lib/new.py\ncontent: x = 1\n"
    else:
        old = repo.git("rev-parse", "HEAD:lib").strip()
        patch = repo.root.parent / "replace.diff"
        patch.write_text(
            f"diff --git a/lib b/lib\ndeleted file mode 160000\nindex {old[:7]}..0000000\n"
            f"--- a/lib\n+++ /dev/null\n@@ -1 +0,0 @@\n-Subproject commit {old}\n"
            "diff --git a/lib b/lib\nnew file mode 100644\nindex 0000000..e69de29\n"
            "--- /dev/null\n+++ b/lib\n@@ -0,0 +1 @@\n+a file now\n"
        )
        objective = f"patch-file: {patch}"
    before = repo.tree_state()
    sub = _submodule_state(repo)

    res = cli("run", "--objective", objective, "--json", cwd=repo.root)

    report = report_of(res)
    assert res.returncode == 1, report["message"]
    events = report["attempt_events"]
    assert events[0]["failure_phase"] == "VALIDATE", events
    assert "lib: a submodule" in report["feedback"][0], report["feedback"]
    assert not (repo.root / ".tidegate" / "rejects").exists()
    assert repo.tree_state() == before
    assert _submodule_state(repo) == sub


@pytest.mark.parametrize(
    "objective",
    ["edit-file: lib/lib.py\nreplace: VALUE = 1\nwith: VALUE = 2\n", "delete-file: lib\n"],
    ids=["inside", "itself"],
)
def test_file_inside_the_submodule_is_named_as_such(with_submodule: Repo, objective: str) -> None:
    repo = with_submodule
    before = repo.tree_state()

    res = cli("run", "--objective", objective, "--json", cwd=repo.root)

    report = report_of(res)
    assert res.returncode == 1
    assert "the submodule lib" in report["message"], report["message"]
    assert repo.tree_state() == before


def test_run_elsewhere_works_and_leaves_the_submodule_alone(with_submodule: Repo) -> None:
    repo = with_submodule
    index = repo.index_bytes()
    sub = _submodule_state(repo)

    res = cli(
        "run",
        "--objective",
        "edit-file: README.md\nreplace: # calc\nwith: # calc (edited)\n",
        "--json",
        cwd=repo.root,
    )

    report = report_of(res)
    assert res.returncode == 0, report["message"]
    assert repo.read("README.md") == "# calc (edited)\n"
    assert repo.read("calc.py") == "# dirty\n"
    assert _submodule_state(repo) == sub
    assert repo.index_bytes() == index
