"""Attack: a change where a file and a directory swap places, on a dirty tree.

``a`` (a file) becomes ``a/b.txt`` (a directory), and ``d/x.txt`` becomes the file ``d``.
The apply-back writes unstaged edits path by path; a swap would have it remove a directory
the user may still hold files in. tidegate refuses the swap in VALIDATE, naming the path,
before anything is written (before, it failed in APPLY with an internal error). And when
the user's side holds a directory where the change writes a file (or the reverse), the
run is a conflict: exit 3, nothing written but the rejects.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from tests.adversarial._repo_shapes import cli, diff_made_by_git, report_of, without_tidegate
from tests.conftest import Repo


@pytest.fixture
def swap_repo(committed_repo: Repo) -> Repo:
    committed_repo.write("a", "file a\n")
    committed_repo.write("d/x.txt", "x\n")
    committed_repo.commit_all("a file and a directory")
    committed_repo.write("calc.py", "# dirty\n")
    committed_repo.write("README.md", "# staged\n")
    committed_repo.git("add", "README.md")
    committed_repo.write("notes.txt", "untracked\n")
    return committed_repo


def _file_to_dir(clone: Path) -> None:
    (clone / "a").unlink()
    (clone / "a").mkdir()
    (clone / "a" / "b.txt").write_text("b\n")


def _dir_to_file(clone: Path) -> None:
    shutil.rmtree(clone / "d")
    (clone / "d").write_text("now a file\n")


@pytest.mark.parametrize(
    ("mutate", "path"),
    [(_file_to_dir, "a"), (_dir_to_file, "d")],
    ids=["file-to-dir", "dir-to-file"],
)
def test_swap_is_refused_in_validate_before_any_write(
    swap_repo: Repo, tmp_path: Path, mutate: object, path: str
) -> None:
    diff = tmp_path / "swap.diff"
    diff.write_bytes(diff_made_by_git(swap_repo, tmp_path, mutate))  # type: ignore[arg-type]
    before = swap_repo.tree_state()

    res = cli("run", "--objective", f"patch-file: {diff}", "--json", cwd=swap_repo.root)

    report = report_of(res)
    assert res.returncode == 1
    assert report["attempt_events"][0]["failure_phase"] == "VALIDATE"
    assert report["attempt_events"][0]["error_class"] == "AST_VALIDATION_ERROR"
    feedback = report["feedback"][0]
    assert f"{path}: the change replaces" in feedback, feedback
    assert "cannot swap places" in feedback
    assert report["applied_files"] == []
    assert swap_repo.tree_state() == before


def test_user_directory_where_the_change_creates_a_file_is_a_conflict(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """While VERIFY runs, the user makes ``n/`` a directory; the change creates the file
    ``n``: exit 3, the user's directory and every other file as they left them."""
    repo = committed_repo
    repo.write("calc.py", "# dirty\n")
    inside = repo.root / "n" / "mine.txt"
    verify = f"mkdir -p {shlex.quote(str(inside.parent))} && printf 'mine\\n' > {inside}"
    objective = "create-file: n\ncontent: <<<\nfrom the change\n>>>\n"
    index = repo.index_bytes()

    res = cli(
        "run",
        "--objective",
        objective,
        "--verify",
        verify,
        "--containment",
        "none",
        "--json",
        cwd=repo.root,
    )

    report = report_of(res)
    assert res.returncode == 3, report["message"]
    assert report["status"] == "conflict"
    assert report["applied_files"] == []
    assert inside.read_text() == "mine\n"
    assert repo.read("calc.py") == "# dirty\n"
    assert repo.index_bytes() == index
    assert [p for p in report["rejects"] if p.endswith("/n.rej")]


def test_user_file_where_the_change_writes_into_a_directory_is_a_conflict(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """The reverse: the change creates ``m/new.txt`` while the user makes ``m`` a file."""
    repo = committed_repo
    target = repo.root / "m"
    verify = f"printf 'a file\\n' > {shlex.quote(str(target))}"
    index = repo.index_bytes()

    res = cli(
        "run",
        "--objective",
        "create-file: m/new.txt\ncontent: new\n",
        "--verify",
        verify,
        "--containment",
        "none",
        "--json",
        cwd=repo.root,
    )

    report = report_of(res)
    assert res.returncode == 3, report["message"]
    assert report["status"] == "conflict"
    assert target.read_text() == "a file\n"
    assert repo.index_bytes() == index
    state = without_tidegate(repo.tree_state())
    assert "m" in state and not any(k.startswith("m/") for k in state)
