"""Matrix 41: a trace write or flush failure at any point cannot produce a completed run.

A control run counts the trace flushes of a two-attempt scenario. Then the same scenario
runs once per flush with that flush failing (``trace.write:K``: nothing written), and for
every third flush (and the last ones) with its acknowledgement failing (``trace.ack:K``:
written, never acknowledged). No run succeeds; every one ends PERSISTENCE_ERROR; and
when the failing flush comes before APPLY_BACK the work tree is untouched.

The workspace evidence every checkpoint is checked against (the fingerprint) is captured
in ``Driver.start`` before the run is recorded. A run killed at that capture (the
``run.evidence`` crash point) leaves no run in the store, nothing in the work tree and no
lock behind: the next run starts normally and is the only one recorded."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._store import FIX, cli, run_recorded

CHECK = f"{sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"
WRONG = FIX.replace("a + b", "a * b")


@pytest.fixture
def scenario(committed_repo: Repo, tmp_path: Path) -> tuple[Repo, dict[str, object]]:
    script = tmp_path / "scenario.json"
    script.write_text(
        json.dumps({"planner": "scripted", "attempts": [{"objective": WRONG}, {"objective": FIX}]})
    )
    fields: dict[str, object] = {
        "planner": f"scripted:{script}",
        "verify": CHECK,
        "containment": "none",
    }
    return committed_repo, fields


def test_no_failing_flush_lets_the_run_complete(scenario: tuple[Repo, dict[str, object]]) -> None:
    repo, fields = scenario
    control, store = run_recorded(repo, "fix add", **fields)
    assert control.status == "succeeded"
    checkpoints = store.checkpoints(control.run_id)
    flushes = len(checkpoints) + 1  # one per checkpoint, one for the final report
    apply_back = next(c.seq for c in checkpoints if "APPLY_BACK" in c.state["attempt"]["completed"])
    repo.git("checkout", "--", "calc.py")
    before = repo.tree_state(with_mtimes=True)

    every = list(range(1, flushes + 1))
    sweeps = {"trace.write": every, "trace.ack": [*every[::3], apply_back, flushes]}
    for point, ks in sweeps.items():
        for k in sorted(set(ks)):
            report, _ = run_recorded(repo, "fix add", f"{point}:{k}", **fields)
            assert report.status != "succeeded", (point, k)
            assert report.error_class == "PERSISTENCE_ERROR", (point, k, report.message)
            if k < apply_back:
                assert repo.tree_state(with_mtimes=True) == before, (point, k)
            else:
                repo.git("checkout", "--", "calc.py")
                before = repo.tree_state(with_mtimes=True)


def test_a_crash_while_capturing_the_evidence_records_no_run(committed_repo: Repo) -> None:
    repo = committed_repo
    before = repo.tree_state(with_mtimes=True)
    code, report, err = cli(
        "run", "--objective", FIX, cwd=repo.root, env={"TIDEGATE_FAULT": "run.evidence"}
    )
    assert code == -signal.SIGKILL, err
    assert report is None
    assert repo.tree_state(with_mtimes=True) == before
    code, listed, _ = cli("runs", cwd=repo.root)
    assert code == 0 and listed == []

    code, report, err = cli("run", "--objective", FIX, cwd=repo.root)
    assert code == 0 and isinstance(report, dict) and report["status"] == "succeeded", err
    code, listed, _ = cli("runs", cwd=repo.root)
    assert isinstance(listed, list) and [r["run_id"] for r in listed] == [report["run_id"]]
