"""``tidegate ledger`` run as a user runs it: real subprocesses, a real repository."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate import ledger

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a ** b\n"
PLAN = """\
# Plan

## Brief

Fix calc.

## T1: Fix add

add() subtracts.

Verify: `{python} -c 'from calc import add; assert add(2, 3) == 5'`

```tidegate
edit-file: calc.py
replace: return a - b
with: return a + b
```

## T2: Fix mul

mul() raises to a power.

Verify: `{python} -c 'from calc import add, mul; assert mul(2, 3) == 6 and add(2, 3) == 5'`

```tidegate
edit-file: calc.py
replace: return a ** b
with: return a * b
```
"""


def _ok(res: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    return res.stdout


def _usage_error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("tidegate: error: "), res.stderr
    assert "Traceback" not in res.stderr
    return res.stderr


def _evidence_rows(task: Path) -> dict[str, list[str]]:
    rows = {}
    for line in (task / "implementation-notes.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith("E-"):
            rows[cells[0]] = cells
    return rows


def test_ledger_run_over_two_items_then_ship(repo: Repo, tmp_path: Path) -> None:
    repo.write("calc.py", CALC)
    head = repo.commit_all("calc")
    task = tmp_path / "task"
    out = _ok(
        tidegate_cli(
            "ledger", "init", str(task), "--route", "medium", "--brief", "Fix calc.",
            "--item", "Fix add", "--item", "Fix mul",
        )
    )  # fmt: skip
    assert "next: claim T1: Fix add" in out
    (task / "plan.md").write_text(PLAN.format(python=sys.executable))

    records = tmp_path / "records"
    records.mkdir()
    res = tidegate_cli(
        "ledger", "run", str(task), "--repo", str(repo.root), "--all", "--json",
        "--allow-uncontained",
        "--state-root", str(records),
    )  # fmt: skip
    runs: list[dict[str, Any]] = json.loads(_ok(res))
    assert [r["item"] for r in runs] == ["T1", "T2"]
    reports = [r["report"] for r in runs]
    assert [r["status"] for r in reports] == ["succeeded", "succeeded"]
    # Each item run is recorded in the state root it was given.
    for report in reports:
        stored = tidegate_cli(
            "read", report["run_id"], "--repo", str(repo.root), "--state-root", str(records),
            "--json",
        )  # fmt: skip
        assert json.loads(_ok(stored))["run_id"] == report["run_id"]

    # The repository: both fixes as unstaged edits, HEAD and the index untouched.
    assert repo.read("calc.py") == CALC.replace("a - b", "a + b").replace("a ** b", "a * b")
    assert repo.status() == " M calc.py\n"
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert reports[1]["t0_commit"] != reports[0]["t0_commit"]  # T2 ran on top of T1's edit

    # The ledger: both items done, each with the run's own evidence, checkable in the repo.
    ledger_md = (task / "ledger.md").read_text()
    assert "| T1 | Fix add | done | yes | - | tidegate | 0 | - | E-1 |" in ledger_md
    assert "| T2 | Fix mul | done | yes | - | tidegate | 0 | - | E-2 |" in ledger_md
    rows, notes = _evidence_rows(task), (task / "implementation-notes.md").read_text()
    for evidence_id, report in zip(("E-1", "E-2"), reports, strict=True):
        _, item_id, attempt, kind, result, ref, _ = rows[evidence_id]
        assert (item_id, kind, result, attempt) == (f"T{evidence_id[-1]}", "run", "pass", "1")
        assert ref.startswith(f"run {report['run_id']} succeeded; diff sha256 ")
        assert report["diff_sha256"][:12] in ref
        assert hashlib.sha256(report["diff"].encode()).hexdigest() == report["diff_sha256"]
        assert f"- final diff sha256: {report['diff_sha256']}" in notes
        assert f"verify `{report['verify']['command']}` exit 0" in ref
        repo.git("rev-parse", "--verify", f"refs/tidegate/keep:{report['run_id']}/t0")

    status = json.loads(_ok(tidegate_cli("ledger", "status", str(task), "--json")))
    assert [i["status"] for i in status["items"]] == ["done", "done"]
    assert status["stage"] == "review" and status["next_action"]["kind"] == "review"

    refused = _ok(tidegate_cli("ledger", "ship", str(task)), code=1)
    assert "review-report.md:3: verdict is pending; ship needs approved" in refused
    review = task / "review-report.md"
    review.write_text(
        review.read_text()
        .replace("Verdict: pending", "Verdict: approved")
        .replace("none", "E-1, E-2")
    )
    assert "task shipped" in _ok(tidegate_cli("ledger", "ship", str(task)))
    assert _ok(tidegate_cli("ledger", "next", str(task))) == "shipped: nothing left to do\n"
    assert "- Stage: ship (completed)" in (task / "checkpoint.md").read_text()


def test_transitions_and_attested_checks_through_the_cli(tmp_path: Path) -> None:
    task = tmp_path / "task"
    ledger.init(task, ledger.Route.SMALL, "Fix add", [])
    assert "claimed by ana" in _ok(tidegate_cli("ledger", "claim", str(task), "T1", "--as", "ana"))
    failing = _ok(
        tidegate_cli("ledger", "record", str(task), "T1", "--run", "echo boom; exit 3"), code=1
    )
    assert "E-1 recorded for T1 attempt 1 (command, fail)" in failing
    passing = _ok(tidegate_cli("ledger", "record", str(task), "T1", "--run", "echo fine"))
    assert "E-2 recorded for T1 attempt 1 (command, pass)" in passing
    notes = (task / "implementation-notes.md").read_text()
    assert "- run by tidegate (host-attested)" in notes and "boom" in notes
    assert "T1 done with E-2" in _ok(tidegate_cli("ledger", "done", str(task), "T1"))
    human = _ok(tidegate_cli("ledger", "status", str(task)))
    assert "route small   stage ship_summary (in_progress)" in human
    assert "T1  done" in human


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["done", "{task}", "T1"], "T1: pending -> done is not allowed; from pending: in_progress"),
        (["record", "{task}", "T1", "--evidence", "agent says done"], "is a claim, not evidence"),
        (["claim", "{task}", "T9"], "no item 'T9'"),
        (["run", "{task}", "--model", "gpt"], "--model takes openai:MODEL"),
        (["status", "{task}/nope"], "no such task directory"),
        (["route", "{task}", "--to", "huge", "--reason", "x"], "'huge' is not one of"),
    ],
    ids=["illegal", "rejected-evidence", "unknown-item", "model", "no-task", "bad-route"],
)
def test_usage_errors_are_one_line_exit_2(tmp_path: Path, argv: list[str], where: str) -> None:
    task = tmp_path / "task"
    ledger.init(task, ledger.Route.SMALL, "Fix add", [])
    before = {p.name: p.read_bytes() for p in task.glob("*.md")}
    stderr = _usage_error(tidegate_cli("ledger", *[a.format(task=task) for a in argv]))
    assert where in stderr
    assert {p.name: p.read_bytes() for p in task.glob("*.md")} == before


def test_a_malformed_file_is_reported_with_its_line(tmp_path: Path) -> None:
    task = tmp_path / "task"
    ledger.init(task, ledger.Route.SMALL, "Fix add", [])
    ledger_md = task / "ledger.md"
    ledger_md.write_text(ledger_md.read_text().replace("| pending |", "| doing |"))
    stderr = _usage_error(tidegate_cli("ledger", "next", str(task)))
    assert stderr.startswith("tidegate: error: ledger.md:7: unknown status 'doing'")


def test_help_lists_the_ledger_commands(tmp_path: Path) -> None:
    out = _ok(tidegate_cli("ledger", "--help", cwd=tmp_path))
    for command in (
        "init", "status", "next", "claim", "record", "done", "requeue", "block", "discard",
        "route", "ship", "run",
    ):  # fmt: skip
        assert f"  {command} " in out
