"""``tidegate gc`` beside runs that are alive: several runs share one repository, and gc
must tell a live run's refs, shadow and scratch directory (claimed by a live process,
``workspace.claims``) from a dead run's, whatever retention says. A claim planted with
links, or naming paths without tidegate's prefixes, removes nothing it points to."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.integration._store import cli
from tidegate.disk.owners import process_start

OLD = "20200101-000000-0a0a0a"
"""A run id older than any retention keeps."""


def _plant_run(repo: Repo, run_id: str) -> dict[str, str]:
    """The refs a run makes while it runs, as a running run has them."""
    head = repo.git("rev-parse", "HEAD").strip()
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    t0 = repo.git("commit-tree", tree, "-p", head, "-m", f"tidegate T0 for run {run_id}").strip()
    blob = repo.git("hash-object", "-w", "--stdin", input=b'{"request": 1}').strip()
    refs = {f"refs/tidegate/runs/{run_id}/t0": t0, f"refs/tidegate/runs/{run_id}/request": blob}
    for ref, oid in refs.items():
        repo.git("update-ref", ref, oid)
    return refs


def _claim(repo: Repo, run_id: str, pid: int, **paths: str) -> None:
    claims = repo.root / ".git" / "tidegate" / "claims"
    claims.mkdir(parents=True, exist_ok=True)
    record = {"run_id": run_id, "pid": pid, "start": process_start(pid), "paths": paths}
    (claims / f"{run_id}.json").write_text(json.dumps(record))


def _refs(repo: Repo) -> dict[str, str]:
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/tidegate/")
    return dict(line.split(" ") for line in out.splitlines())


def test_gc_leaves_a_live_runs_refs_shadow_and_scratch_alone(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    repo.write(".tidegate/config.toml", "[retention]\nruns = 1\n")
    fix = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    code, _, err = cli("run", "--objective", fix, "--verify", "true", cwd=repo.root)
    assert code == 0, err  # a newer run: OLD is past retention
    refs = {**_refs(repo), **_plant_run(repo, OLD)}
    shadow = Path(tempfile.mkdtemp(prefix=f"tidegate-shadow-{OLD}-"))
    scratch = Path(tempfile.mkdtemp(prefix=f"tidegate-run-{OLD}-"))
    (shadow / "work.txt").write_text("the live run's\n")
    holder = subprocess.Popen(["sleep", "120"])
    try:
        _claim(repo, OLD, holder.pid, shadow=str(shadow), scratch=str(scratch))

        code, summary, err = cli("gc", cwd=repo.root)

        assert code == 0, err
        assert isinstance(summary, dict)
        assert OLD not in summary["runs_pruned"] and OLD not in summary["runs_folded"]
        assert _refs(repo) == refs  # neither folded nor pruned: the run is alive
        assert (shadow / "work.txt").read_text() == "the live run's\n" and scratch.is_dir()
    finally:
        holder.kill()
        holder.wait()
    # Dead now, and past retention: everything of it goes.
    code, summary, err = cli("gc", cwd=repo.root)
    assert code == 0, err
    assert isinstance(summary, dict) and summary["runs_pruned"] == [OLD]
    assert list(_refs(repo)) == ["refs/tidegate/keep"]
    assert not shadow.exists() and not scratch.exists()


def test_a_planted_claim_removes_nothing_it_points_to(committed_repo: Repo, tmp_path: Path) -> None:
    """A dead claim whose paths are links with tidegate's prefixes, or plain directories
    without them: gc follows no link and removes no path that is not tidegate's."""
    repo = committed_repo
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me\n")
    tmp = Path(tempfile.gettempdir())
    links = [tmp / "tidegate-run-planted-a", tmp / "tidegate-shadow-planted-b"]
    for link in links:
        link.unlink(missing_ok=True)
        link.symlink_to(victim)
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        _claim(repo, "planted-a", dead.pid, scratch=str(links[0]), shadow=str(victim))
        _claim(repo, "planted-b", dead.pid, scratch=str(victim), shadow=str(links[1]))
        before = repo.tree_state(with_mtimes=True)

        code, _, err = cli("gc", cwd=repo.root)

        assert code == 0, err
        assert (victim / "precious.txt").read_text() == "keep me\n"
        assert all(link.is_symlink() for link in links)
        assert repo.tree_state(with_mtimes=True) == before
    finally:
        for link in links:
            link.unlink(missing_ok=True)


def test_a_run_folded_meanwhile_by_another_process_is_not_lost(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs end at once: B folds itself between A's read of the keep ref and A's
    write. A's compare-and-swap fails, A reads again, and both are kept."""
    from tidegate.workspace import keep
    from tidegate.workspace.repo import discover

    repo = discover(committed_repo.root)
    first, second = "20260101-000000-aaaaaa", "20260101-000001-bbbbbb"
    _plant_run(committed_repo, first)
    _plant_run(committed_repo, second)
    real = keep.read_kept
    reads: list[int] = []

    def racing(repo_: object) -> keep.Kept:
        seen = real(repo)
        reads.append(1)
        if len(reads) == 1:
            keep.update_kept(repo, keep.fold_only(second))  # the other run, in between
        return seen

    monkeypatch.setattr(keep, "read_kept", racing)
    keep.update_kept(repo, keep.fold_only(first))

    assert len(reads) >= 3  # ours, the other's, ours again after the swap failed
    assert committed_repo.git("ls-tree", "--name-only", "refs/tidegate/keep").split() == [
        first,
        second,
    ]
    assert list(_refs(committed_repo)) == ["refs/tidegate/keep"]


def test_links_planted_in_the_state_root_are_not_followed(committed_repo: Repo) -> None:
    """The undo byte store's directories replaced by links to someone else's files: gc
    prunes nothing through them, names the refusal in one line and exits 1."""
    from tests.integration._store import state_root

    repo = committed_repo
    code, _, err = cli("gc", cwd=repo.root)  # makes the repository's directory in the state root
    assert code == 0, err
    victim = repo.root.parent / "victim"
    (victim / "sha256" / "ab").mkdir(parents=True)
    (victim / "sha256" / "ab" / ("c" * 62)).write_text("not tidegate's\n")
    (victim / "old.json").write_text('{"session": "old", "created": 0, "calls": []}')
    [directory] = [d for d in state_root().iterdir() if d.is_dir()]
    for name in ("blobs", "undo"):
        (directory / name).symlink_to(victim)

    res = tidegate_cli("gc", cwd=repo.root)

    assert res.returncode == 1
    assert res.stdout.count("error: the undo byte store could not be pruned") == 1
    assert (victim / "old.json").exists()
    assert (victim / "sha256" / "ab" / ("c" * 62)).read_text() == "not tidegate's\n"


def test_gc_during_a_real_run_in_another_process(committed_repo: Repo) -> None:
    """A real run (another process) verifying while gc runs beside it: its refs, shadow
    and scratch directory are left as they are; when it ends it folds itself in."""
    import os
    import sys
    import time

    repo = committed_repo
    repo.write(".tidegate/config.toml", "[retention]\nruns = 1\n")
    fix = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    run = subprocess.Popen(
        [sys.executable, "-m", "tidegate", "run", "--objective", fix, "--verify", "sleep 15"],
        cwd=repo.root, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    claims = repo.root / ".git" / "tidegate" / "claims"
    try:
        deadline = time.monotonic() + 60
        while True:
            records = [json.loads(p.read_text()) for p in claims.glob("*.json")]
            paths = records[0]["paths"] if records else {}
            if "shadow" in paths and Path(paths["shadow"], "calc.py").exists() and _refs(repo):
                break
            assert time.monotonic() < deadline and run.poll() is None, "the run never started"
            time.sleep(0.05)
        run_id = records[0]["run_id"]
        refs = _refs(repo)

        code, summary, err = cli("gc", cwd=repo.root)

        assert run.poll() is None, "the run ended before gc was done: the test proved nothing"
        assert code == 0, err
        assert isinstance(summary, dict) and summary["runs_pruned"] == []
        after = _refs(repo)  # the run may have added refs of its own meanwhile
        assert {ref: after.get(ref) for ref in refs} == refs
        assert all(ref.startswith(f"refs/tidegate/runs/{run_id}/") for ref in after)
        assert Path(paths["shadow"], "calc.py").exists() and Path(paths["scratch"]).is_dir()
    finally:
        assert run.wait(timeout=120) == 0
    assert list(_refs(repo)) == ["refs/tidegate/keep"]
    assert repo.git("ls-tree", "--name-only", "refs/tidegate/keep").split() == [run_id]
    assert not Path(paths["shadow"]).exists()
