"""``tidegate runs`` and ``tidegate read`` over the run store: read-only (the store's bytes
do not change), stable output with phases, attempts, effects and evidence, runs of several
repositories, and ledger runs recorded under their item."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from tests.conftest import Repo, tidegate_cli
from tests.integration._store import FIX, cli, readonly_store, state_root
from tests.integration.test_ledger_run import write_plan
from tests.unit.ledger.helpers import new_task
from tidegate.ledger import RunOptions, run_next


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under the state root except SQLite's shared-memory index."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm")
    }


def test_reading_never_changes_the_store(committed_repo: Repo) -> None:
    repo = committed_repo
    code, report, err = cli("run", "--objective", FIX, "--verify", "true", cwd=repo.root)
    assert code == 0, err
    before = _snapshot(state_root())
    assert any(name.endswith("runs.sqlite3") for name in before)

    outputs = [
        tidegate_cli("read", "latest", cwd=repo.root),
        tidegate_cli("read", "latest", "--json", "--detail", cwd=repo.root),
        tidegate_cli("read", "latest", "--json", cwd=repo.root),
        tidegate_cli("runs", cwd=repo.root),
        tidegate_cli("runs", "--json", cwd=repo.root),
    ]

    assert [o.returncode for o in outputs] == [0] * 5
    assert _snapshot(state_root()) == before
    # The same reads give the same output (a stable order).
    again = tidegate_cli("read", "latest", "--json", "--detail", cwd=repo.root)
    assert again.stdout == outputs[1].stdout
    assert json.loads(outputs[2].stdout) == report


def test_read_shows_phases_attempts_effects_and_evidence(committed_repo: Repo) -> None:
    repo = committed_repo
    code, report, _ = cli("run", "--objective", FIX, cwd=repo.root)
    assert code == 0 and isinstance(report, dict)
    detail = json.loads(tidegate_cli("read", "latest", "--json", "--detail", cwd=repo.root).stdout)
    assert list(detail) == [
        "run", "phases", "attempts", "effects", "evidence", "resume", "landings", "report",
    ]  # fmt: skip
    assert detail["run"]["status"] == "succeeded" and detail["run"]["acknowledged"] is True
    assert [p["phase"] for p in detail["phases"]] == [p["phase"] for p in report["phases"]]
    assert [p["seq"] for p in detail["phases"]] == list(range(1, len(detail["phases"]) + 1))
    assert [a["status"] for a in detail["attempts"]] == ["succeeded"]
    assert [f["path"] for f in detail["effects"]["applied_files"]] == ["calc.py"]
    evidence = detail["evidence"]
    assert evidence["checkpoint_chain"] == "verified"
    assert evidence["replay_hash"] == report["replay_hash"] == evidence["replay_hash_recomputed"]
    assert evidence["checkpoints"] == len(detail["phases"]) + 2  # bootstrap and attempt end
    assert detail["resume"] is None

    human = tidegate_cli("read", "latest", cwd=repo.root).stdout
    order = ["phases:", "attempts:", "effects:", "evidence:", "APPLY_BACK", "replay hash"]
    positions = [human.index(word) for word in order]
    assert positions[:4] == sorted(positions[:4])
    assert "checkpoints: " in human and "(verified)" in human


def test_runs_per_repository_and_across_the_state_root(
    committed_repo: Repo, tmp_path: Path
) -> None:
    other = Repo(tmp_path / "other")
    other.root.mkdir()
    other.git("init", "-q")
    other.write("calc.py", "def add(a, b):\n    return a - b\n")
    other.commit_all()
    assert cli("run", "--objective", FIX, cwd=committed_repo.root)[0] == 0
    assert cli("run", "--objective", FIX, cwd=other.root)[0] == 0
    outside = tmp_path / "not-a-repo"
    outside.mkdir()

    _, here, _ = cli("runs", cwd=committed_repo.root)
    _, there, _ = cli("runs", "--repo", str(other.root), cwd=outside)
    _, everywhere, _ = cli("runs", cwd=outside)

    assert isinstance(here, list) and isinstance(there, list) and isinstance(everywhere, list)
    assert [r["repo"] for r in here] == [str(committed_repo.root)]
    assert [r["repo"] for r in there] == [str(other.root)]
    assert sorted(r["repo"] for r in everywhere) == sorted(
        [str(committed_repo.root), str(other.root)]
    )
    human = tidegate_cli("runs", cwd=outside).stdout
    assert str(other.root) in human and str(committed_repo.root) in human


def test_the_state_root_is_private(committed_repo: Repo) -> None:
    assert cli("run", "--objective", FIX, cwd=committed_repo.root)[0] == 0
    root = state_root()
    key = root / "checkpoint.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "runs.sqlite3").stat().st_mode) == 0o600


def test_nothing_secret_reaches_the_trace_or_checkpoints(committed_repo: Repo) -> None:
    verify = "TOKEN=ghp_0123456789abcdefghijABCDEF true"
    code, _, err = cli("run", "--objective", FIX, "--verify", verify, cwd=committed_repo.root)
    assert code == 0, err
    raw = b"".join(p.read_bytes() for p in state_root().rglob("runs.sqlite3*"))
    assert b"ghp_0123456789abcdefghij" not in raw
    store = readonly_store(committed_repo)
    run = store.runs()[0]
    assert all("ghp_0123" not in e.payload + e.meta for e in store.events(run.run_id))
    assert all("ghp_0123" not in c.document for c in store.checkpoints(run.run_id))


def test_a_ledger_run_is_recorded_under_its_item(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Fix add",))
    check = f"{sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"
    write_plan(task, {"T1": (FIX, check)})
    outcome = run_next(
        task, RunOptions(repo=committed_repo.root, max_attempts=1, allow_uncontained=True)
    )
    assert outcome.report is not None and outcome.report.status == "succeeded"
    store = readonly_store(committed_repo)
    [run] = store.runs()
    assert (run.run_id, run.task_id, run.kind) == (outcome.report.run_id, "T1", "ledger")
    assert run.status == "succeeded"
    assert {e.task_id for e in store.events(run.run_id)} == {"T1"}
    assert outcome.report.replay_hash == run.replay_hash is not None
    assert os.environ["TIDEGATE_STATE_ROOT"] in str(store.path)
