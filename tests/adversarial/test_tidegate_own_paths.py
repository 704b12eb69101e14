"""A conflict on a path tidegate itself wrote is not blamed on the user.

The attacker's change creates a path where tidegate keeps its own files: a ``.rej`` of an
earlier run under ``.tidegate/rejects/``, or the temp file an interrupted atomic write
left. The merge plan (real git trees, real work tree) must refuse it as a conflict whose
reason names tidegate's file, never "you created this path".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.git.command import Git
from tidegate.workspace.changes import diff_trees
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.merge_back import plan_merge


def _tree_with(repo: Repo, path: str, content: bytes) -> str:
    """HEAD's tree plus ``path``, built through a scratch index (the user's is not used)."""
    blob = repo.git("hash-object", "-w", "--stdin", input=content).strip()
    env_index = repo.root.parent / "scratch.index"
    git = Git(repo.root)
    env = {"GIT_INDEX_FILE": str(env_index)}
    git.run("read-tree", "HEAD", env=env)
    git.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    return git.out("write-tree", env=env)


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (".tidegate/rejects/20260101-000000-abcdef/calc.py.rej", "a .rej file tidegate wrote"),
        ("src/.tidegate-tmp-20260101-000000-abcdef-0", "a temporary file an interrupted"),
    ],
)
def test_a_tidegate_file_in_the_way_is_named_as_tidegates(
    committed_repo: Repo, tmp_path: Path, path: str, named: str
) -> None:
    repo = committed_repo
    repo.write(path, "left by tidegate\n")
    git = Git(repo.root)
    changes = diff_trees(git, "HEAD^{tree}", _tree_with(repo, path, b"the change\n"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    plan = plan_merge(git, LocalFS(repo.root), changes, scratch)

    [conflict] = plan.conflicts
    assert conflict.path == path
    assert named in conflict.reason
    assert "you created" not in conflict.reason
    assert plan.ops == []
