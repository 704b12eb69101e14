"""Matrix 41: a trace write or flush failure at any point cannot produce a completed run.

A control run counts the trace flushes of a two-attempt scenario. Then the same scenario
runs once per flush with that flush failing (``trace.write:K``: nothing written), and for
every third flush (and the last ones) with its acknowledgement failing (``trace.ack:K``:
written, never acknowledged). No run succeeds; every one ends PERSISTENCE_ERROR; and
when the failing flush comes before APPLY_BACK the work tree is untouched. The workspace
evidence a checkpoint carries (the fingerprint) is captured before the first checkpoint;
without it the run does not start (see ``Driver.start``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._store import FIX, run_recorded

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
