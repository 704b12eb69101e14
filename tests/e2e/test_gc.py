"""Retention and ``tidegate gc`` end to end, through the real CLI, on a repository with
staged, unstaged and untracked work: one ref and one commit of tidegate's in the ordinary
views whatever the number of runs, runs past ``[retention] runs`` pruned (their objects
reclaimable by ``git gc``), held runs never, undo of a retained run still working, and the
work tree, ``.git/index``, HEAD and every ref outside ``refs/tidegate/`` unchanged byte for
byte by ``gc``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._proc import running
from tests.conftest import Repo, tidegate_cli
from tests.e2e._landing import CHECK, dirty, held, landed, outside_refs
from tests.integration._store import cli

__all__ = ["dirty"]  # the fixture

ON = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
OFF = "edit-file: calc.py\nreplace: return a + b\nwith: return a - b\n"
ANY = "true"


def _keep(repo: Repo, runs: int) -> None:
    repo.write(".tidegate/config.toml", f"[retention]\nruns = {runs}\n")


def _kept_runs(repo: Repo) -> list[str]:
    return repo.git("ls-tree", "--name-only", "refs/tidegate/keep").split()


def _tidegate_refs(repo: Repo) -> list[str]:
    return repo.git("for-each-ref", "--format=%(refname)", "refs/tidegate/").split()


def _runs(repo: Repo, count: int) -> list[str]:
    return [landed(repo, ON if i % 2 == 0 else OFF, ANY) for i in range(count)]


def test_many_runs_leave_one_ref_and_one_commit_and_prune_past_retention(dirty: Repo) -> None:
    _keep(dirty, 3)
    user_commits = len(dirty.git("log", "--all", "--oneline").splitlines())
    ids, first_t0 = [], ""
    for i in range(5):
        dirty.write("notes/untracked.txt", f"untracked {i}\n")  # each run's T0 its own
        ids.append(landed(dirty, ON if i % 2 == 0 else OFF, ANY))
        first_t0 = first_t0 or dirty.git("rev-parse", f"refs/tidegate/keep:{ids[0]}/t0").strip()

    assert _tidegate_refs(dirty) == ["refs/tidegate/keep"]
    assert len(dirty.git("log", "--all", "--oneline").splitlines()) == user_commits + 1
    assert dirty.git("branch", "-a").count("\n") == 1  # main only
    assert _kept_runs(dirty) == sorted(ids[-3:])  # the end of each run prunes (ls-tree sorts)
    assert len(dirty.git("worktree", "list").splitlines()) == 1

    before, refs = dirty.tree_state(with_mtimes=True), outside_refs(dirty)
    code, summary, err = cli("gc", cwd=dirty.root)
    assert code == 0, err
    assert isinstance(summary, dict)
    assert (summary["runs_pruned"], summary["runs_kept"], summary["refs_left"]) == ([], 3, 1)
    assert dirty.tree_state(with_mtimes=True) == before
    assert outside_refs(dirty) == refs

    # The pruned runs' objects are garbage to git: gone after `git gc`; the kept ones stay.
    last_t0 = dirty.git("rev-parse", f"refs/tidegate/keep:{ids[-1]}/t0").strip()
    dirty.git("gc", "-q", "--prune=now")
    assert _missing(dirty, first_t0) and not _missing(dirty, last_t0)
    assert dirty.tree_state(with_mtimes=True) == before
    assert outside_refs(dirty) == refs


def test_undo_works_for_a_retained_run_after_gc_and_a_pruned_one_says_so(dirty: Repo) -> None:
    _keep(dirty, 1)
    first = landed(dirty, ON, ANY)
    second = landed(dirty, OFF, ANY)
    code, _, err = cli("gc", cwd=dirty.root)
    assert code == 0, err
    dirty.git("gc", "-q", "--prune=now")
    before = dirty.tree_state(with_mtimes=True)

    pruned = tidegate_cli("undo", first, cwd=dirty.root)
    assert pruned.returncode == 2
    assert pruned.stderr.count("\n") == 1 and "pruned by retention" in pruned.stderr
    assert dirty.tree_state(with_mtimes=True) == before

    undone = tidegate_cli("undo", second, cwd=dirty.root)
    assert undone.returncode == 0, undone.stderr
    assert "return a + b" in dirty.read("calc.py")  # the second run's change reversed
    assert dirty.read("README.md") == "# calc\n\nunstaged notes\n"


def test_a_held_run_is_never_pruned_and_applies_after_gc(dirty: Repo) -> None:
    _keep(dirty, 1)
    kept = held(dirty, verify=CHECK)
    others = _runs(dirty, 2)
    code, summary, err = cli("gc", cwd=dirty.root)
    assert code == 0, err
    assert isinstance(summary, dict) and kept not in summary["runs_pruned"]
    assert _kept_runs(dirty) == sorted([kept, others[-1]])
    dirty.git("gc", "-q", "--prune=now")

    applied = tidegate_cli("apply", kept, cwd=dirty.root)
    assert applied.returncode == 0, applied.stderr
    # Applied, it is an ordinary run again: past retention, the next gc prunes it.
    code, summary, err = cli("gc", cwd=dirty.root)
    assert isinstance(summary, dict) and summary["runs_pruned"] == [kept], err


def test_gc_folds_and_prunes_the_per_run_refs_of_older_versions(dirty: Repo) -> None:
    """Stores of older versions kept a commit per run under refs/tidegate/runs/."""
    _keep(dirty, 1)
    head = dirty.git("rev-parse", "HEAD").strip()
    tree = dirty.git("rev-parse", "HEAD^{tree}").strip()
    for old in ("20200101-000000-aaaaaa", "20200102-000000-bbbbbb"):
        t0 = dirty.git("commit-tree", tree, "-p", head, "-m", f"tidegate T0 for run {old}")
        dirty.git("update-ref", f"refs/tidegate/runs/{old}/t0", t0.strip())
    dry = tidegate_cli("gc", "--dry-run", cwd=dirty.root)
    assert dry.returncode == 0 and "1 would be pruned, 1 would be folded" in dry.stdout
    assert len(_tidegate_refs(dirty)) == 2  # --dry-run changed nothing

    code, summary, err = cli("gc", cwd=dirty.root)

    assert code == 0, err
    assert isinstance(summary, dict)
    assert summary["runs_folded"] == ["20200102-000000-bbbbbb"]
    assert summary["runs_pruned"] == ["20200101-000000-aaaaaa"]
    assert _tidegate_refs(dirty) == ["refs/tidegate/keep"]
    assert dirty.git("rev-parse", "refs/tidegate/keep:20200102-000000-bbbbbb/t0").strip() == tree


def test_gc_removes_the_idle_warm_pool(dirty: Repo) -> None:
    code, _, err = cli("run", "--warm-shadow", "--objective", ON, "--verify", ANY, cwd=dirty.root)
    assert code == 0, err
    assert len(dirty.git("worktree", "list").splitlines()) == 2
    dry = tidegate_cli("gc", "--dry-run", cwd=dirty.root)
    assert dry.returncode == 0, dry.stderr
    assert "would remove what dead runs left" in dry.stdout and "1 idle warm pool" in dry.stdout
    assert len(dirty.git("worktree", "list").splitlines()) == 2  # --dry-run changed nothing
    code, summary, err = cli("gc", cwd=dirty.root)
    assert code == 0, err
    assert isinstance(summary, dict) and summary["removed_pool"]
    assert len(dirty.git("worktree", "list").splitlines()) == 1


def test_a_repository_may_not_change_retention(dirty: Repo) -> None:
    dirty.write("pyproject.toml", "[tool.tidegate.retention]\nruns = 1\n")
    dirty.git("add", "pyproject.toml")
    code, report, err = cli("run", "--objective", ON, "--verify", ANY, cwd=dirty.root)
    assert code == 0, err
    assert isinstance(report, dict)
    assert any("retention.runs" in note for note in report["notes"]), report["notes"]
    landed(dirty, OFF, ANY)
    assert len(_kept_runs(dirty)) == 2  # the user's default (50), not the repository's 1


def _missing(repo: Repo, oid: str) -> bool:
    import subprocess

    res = subprocess.run(["git", "cat-file", "-e", oid], cwd=repo.root, check=False)
    return res.returncode != 0


def test_gc_dry_run_lists_what_a_killed_run_left_and_changes_nothing(
    dirty: Repo, tmp_path: Path
) -> None:
    """A run killed in VERIFY leaves its shadow, its scratch directory, its process
    directory and its uncontained verify command running: `gc --dry-run` names each and
    touches none (the command still runs); `gc` then removes them and kills it."""
    marker = tmp_path / "verify.pid"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidegate", "run", "--repo", str(dirty.root), "--objective", ON,
         "--verify", f"echo $$ > {marker}; sleep 300", "--containment", "none", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, "VERIFY never started"
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    verify = int(marker.read_text())
    try:
        worktrees = dirty.git("worktree", "list")
        dry = cli("gc", "--dry-run", cwd=dirty.root, env={"TMPDIR": str(tmp_path)})
        code, summary, err = dry
        assert code == 0, err
        assert isinstance(summary, dict) and summary["dry_run"]
        assert len(summary["removed_shadows"]) == 1 and len(summary["removed_scratch"]) == 1
        assert summary["removed_sandboxes"] and summary["killed_groups"]
        assert summary["undo_bytes_freed"] is None  # not measured, not a zero
        for path in [*summary["removed_shadows"], *summary["removed_scratch"],
                     *summary["removed_sandboxes"]]:  # fmt: skip
            assert Path(path).exists(), path
        assert dirty.git("worktree", "list") == worktrees
        assert os.path.exists(f"/proc/{verify}")  # still running: nothing was killed
        text = tidegate_cli("gc", "--dry-run", cwd=dirty.root, env={"TMPDIR": str(tmp_path)})
        assert summary["removed_shadows"][0] in text.stdout

        code, summary, err = cli("gc", cwd=dirty.root, env={"TMPDIR": str(tmp_path)})
        assert code == 0, err
        assert isinstance(summary, dict) and summary["killed_groups"]
        for path in [*summary["removed_shadows"], *summary["removed_scratch"]]:
            assert not Path(path).exists(), path
        deadline = time.monotonic() + 10
        while running(verify):
            assert time.monotonic() < deadline, "gc left the verify command running"
            time.sleep(0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(verify, signal.SIGKILL)


def test_the_kept_runs_read_through_the_kept_reader_are_ls_trees(
    dirty: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold at a run's end reads the keep commit's tree through the run's kept
    ``cat-file`` (no ``ls-tree`` process), and finds what ``ls-tree`` lists."""
    from tests._git_calls import record_git_calls
    from tidegate.workspace.keep import read_kept
    from tidegate.workspace.repo import discover

    _runs(dirty, 3)
    repo = discover(dirty.root)
    expected = read_kept(repo).runs  # outside kept_processes: the ls-tree
    assert sorted(expected) == sorted(_kept_runs(dirty)) and len(expected) == 3
    calls = record_git_calls(monkeypatch)
    with repo.git.kept_processes():
        assert read_kept(repo).runs == expected
    assert "ls-tree" not in calls
