"""The caller's environment points git elsewhere, and read-only calls would refresh the index.

tidegate is started from a shell (or a hook, or an IDE) whose environment says
``GIT_DIR``/``GIT_WORK_TREE``/``GIT_INDEX_FILE`` of another repository and names programs
(``GIT_EXTERNAL_DIFF``, ``GIT_CONFIG_COUNT``/``KEY``/``VALUE``): a whole run's git work
still goes to the repository tidegate was pointed at, nothing happens in the other one,
and no named program runs. And a read-only call that plain git would use to refresh the
stat data in ``.git/index`` (``status`` after a file's mtime changed) leaves the index
byte-identical (``GIT_OPTIONAL_LOCKS=0``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, git
from tests.integration.tools.support import call, executor
from tidegate.git.command import Git
from tidegate.workspace.fingerprint import fingerprint_details
from tidegate.workspace.repo import discover
from tidegate.workspace.shadow import ShadowWorktree
from tidegate.workspace.snapshot import take_snapshot


def _other_repo(tmp_path: Path) -> Repo:
    other = Repo(tmp_path / "other")
    other.root.mkdir()
    git(other.root, "init", "-q", "-b", "main")
    other.write("other.txt", "the other repository\n")
    other.commit_all("other")
    return other


def _state(repo: Repo) -> tuple[object, bytes, str]:
    return repo.tree_state(), repo.index_bytes(), repo.git("for-each-ref")


def test_inherited_git_variables_redirect_nothing(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _other_repo(tmp_path)
    marker = tmp_path / "pwned"
    stray_index = tmp_path / "stray-index"
    committed_repo.write("calc.py", "changed\n")
    before_other, before_mine = _state(other), committed_repo.index_bytes()
    inherited = {
        "GIT_DIR": str(other.root / ".git"),
        "GIT_WORK_TREE": str(other.root),
        "GIT_INDEX_FILE": str(stray_index),
        "GIT_EXTERNAL_DIFF": f"touch {marker}",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": f"touch {marker}; echo",
    }
    with monkeypatch.context() as env:
        for key, value in inherited.items():
            env.setenv(key, value)
        # the variables are live: plain git follows them
        live = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=committed_repo.root, capture_output=True
        )
        assert live.stdout.decode().strip() == str(other.root)
        repo = discover(committed_repo.root)
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        snap = take_snapshot(repo, "run-env", scratch)
        shadow = ShadowWorktree.create(repo, snap.commit, "run-env")
        try:
            (shadow.path / "calc.py").write_text("from the shadow\n")
            shadow.reset()
        finally:
            shadow.remove()
        fingerprint = fingerprint_details(committed_repo.root)
        with executor(committed_repo.root, containment="none") as ex:
            diff = ex.execute(call("git_exec", args=["diff"]))
    assert repo.root == committed_repo.root.resolve()
    assert fingerprint.head == committed_repo.git("rev-parse", "HEAD").strip()
    assert committed_repo.git("rev-parse", "--verify", snap.ref).strip() == snap.commit
    assert diff.ok and diff.output is not None and "+changed" in diff.output["stdout"]
    assert _state(other) == before_other, "the other repository was touched"
    assert committed_repo.index_bytes() == before_mine
    assert not stray_index.exists() and not marker.exists()


def test_a_refreshing_read_leaves_the_index_byte_identical(
    committed_repo: Repo, tmp_path: Path
) -> None:
    old = 946684800  # same content, older mtime: the index's stat data is now stale
    os.utime(committed_repo.root / "calc.py", (old, old))
    copy = tmp_path / "copy"
    shutil.copytree(committed_repo.root, copy, symlinks=True)
    os.utime(copy / "calc.py", (old, old))
    copied = (copy / ".git" / "index").read_bytes()
    subprocess.run(["git", "status", "--porcelain"], cwd=copy, capture_output=True, check=True)
    assert (copy / ".git" / "index").read_bytes() != copied, "plain git status refreshes"
    index = committed_repo.index_bytes()
    Git(committed_repo.root).run("status", "--porcelain")  # tidegate's own git
    assert committed_repo.index_bytes() == index
    with executor(committed_repo.root, containment="none") as ex:
        for argv in (["status", "--porcelain"], ["diff"], ["status", "-sb"]):
            result = ex.execute(call("git_exec", args=argv))
            assert result.ok, result
    fingerprint_details(committed_repo.root)
    assert committed_repo.index_bytes() == index
