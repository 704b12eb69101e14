"""Each gym correctness check passes exactly when its rule holds, over real files and real
run reports: a missing or unreadable file neither contains nor lacks a text, an absent
file is one with no directory entry at all (a dangling link is still there), a status
must be the one expected, a command must exit 0, and a finding must name a real line of
a file that exists. SWE-bench's resolve rate is resolved over every instance, errors
included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo
from tidegate.exec.guard import Clearance
from tidegate.gym.checks import run_check
from tidegate.gym.scenarios import Check
from tidegate.records.report import FindingOut, FlowReport

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
WRONG = "edit-file: calc.py\nreplace: no such text\nwith: x\n"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, FlowReport]:
    """Real reports: one run that succeeded and one that failed."""
    root = tmp_path_factory.mktemp("runs") / "repo"
    root.mkdir()
    repo = Repo(root)
    repo.git("init", "-q")
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.commit_all()
    failed = repo.run(WRONG, max_attempts=1)
    succeeded = repo.run(FIX)
    assert (failed.status, succeeded.status) == ("failed", "succeeded")
    return {"failed": failed, "succeeded": succeeded}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "present.txt").write_text("alpha\nbeta\n")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 beta\n")
    (tmp_path / "dangling").symlink_to("nowhere")
    return tmp_path


def check(files: Path, report: Any = None, **fields: Any) -> bool:
    spill = files.parent / "spill"
    result = run_check(
        Check(name="c", **fields), files, report, clearance=Clearance.user(), spill_dir=spill
    )
    assert result["name"] == "c" and result["kind"] == fields["kind"]
    return bool(result["passed"])


@pytest.mark.parametrize(
    ("path", "text", "passed"),
    [
        ("present.txt", "beta", True),
        ("present.txt", "gamma", False),
        ("missing.txt", "beta", False),
        ("latin1.txt", "beta", False),  # not text: nothing can be said to be in it
        ("dangling", "beta", False),
    ],
)
def test_file_contains(files: Path, path: str, text: str, passed: bool) -> None:
    assert check(files, kind="file_contains", path=path, text=text) is passed


@pytest.mark.parametrize(
    ("path", "text", "passed"),
    [
        ("present.txt", "gamma", True),
        ("present.txt", "beta", False),
        ("missing.txt", "beta", False),  # a deleted file does not "lack" the bug
        ("latin1.txt", "gamma", False),
        ("dangling", "gamma", False),
    ],
)
def test_file_lacks(files: Path, path: str, text: str, passed: bool) -> None:
    assert check(files, kind="file_lacks", path=path, text=text) is passed


@pytest.mark.parametrize(
    ("path", "passed"),
    [("missing.txt", True), ("present.txt", False), ("dangling", False), (".", False)],
)
def test_file_absent(files: Path, path: str, passed: bool) -> None:
    assert check(files, kind="file_absent", path=path) is passed


@pytest.mark.parametrize(
    ("report", "expected", "passed"),
    [
        ("succeeded", "succeeded", True),
        ("failed", "succeeded", False),
        ("failed", "failed", True),
        ("succeeded", "failed", False),
    ],
)
def test_status(
    files: Path, reports: dict[str, FlowReport], report: str, expected: str, passed: bool
) -> None:
    assert check(files, reports[report], kind="status", status=expected) is passed


@pytest.mark.parametrize(("run", "passed"), [("true", True), ("false", False), ("exit 3", False)])
def test_command(files: Path, run: str, passed: bool) -> None:
    assert check(files, kind="command", run=run) is passed


def test_command_runs_in_the_repository(files: Path) -> None:
    assert check(files, kind="command", run="test -f present.txt") is True


@pytest.mark.parametrize(
    ("finding", "path", "passed"),
    [
        (FindingOut(message="m", path="present.txt", line=2), "present.txt", True),
        (FindingOut(message="m", path="present.txt", line=None), "present.txt", True),
        (FindingOut(message="m", path="present.txt", line=3), "present.txt", False),
        (FindingOut(message="m", path="present.txt", line=0), "present.txt", False),
        (FindingOut(message="m", path="missing.txt", line=1), "missing.txt", False),
        (FindingOut(message="m", path="present.txt", line=1), "other.txt", False),
        (FindingOut(message="m", path=None, line=1), None, False),
        (FindingOut(message="m", path="present.txt", line=1), None, True),
    ],
)
def test_finding_at(
    files: Path,
    reports: dict[str, FlowReport],
    finding: FindingOut,
    path: str | None,
    passed: bool,
) -> None:
    report = reports["succeeded"].model_copy(update={"findings": [finding]})
    assert check(files, report, kind="finding_at", path=path) is passed


# -- SWE-bench's resolve rate ---------------------------------------------------------------


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tidegate.gym.swe_synthetic import build_mirrors

    directory = tmp_path_factory.mktemp("mirrors")
    build_mirrors(directory)
    return directory


def test_the_resolve_rate_is_over_every_instance_errors_included(
    capsys: pytest.CaptureFixture[str], mirrors: Path, tmp_path: Path
) -> None:
    """One resolved, one not (a gold patch that does not fix it), one that cannot even be
    set up (no clone of its repository): 1 of 3, not 1 of 2."""
    from tests.e2e._operator import op
    from tidegate.gym.swe_synthetic import shipped_instances

    first = json.loads(shipped_instances().read_text().splitlines()[0])
    wrong = {
        **first,
        "instance_id": first["instance_id"] + "-wrong",
        "patch": first["patch"].replace("+    return a + b", "+    return a * b"),
    }
    unset = {**first, "instance_id": first["instance_id"] + "-nowhere", "repo": "nobody/none"}
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(i) + "\n" for i in (first, wrong, unset)))
    res = op(capsys, "gym", "swe", str(instances), "--repos", str(mirrors), "--oracle", "--allow-uncontained",
             "--state-root", str(tmp_path / "s"), "--json")  # fmt: skip
    summary = res.json()
    statuses = [r["status"] for r in summary["results"]]
    assert statuses == ["resolved", "unresolved", "error"], summary
    assert (summary["instances"], summary["resolved"]) == (3, 1)
    assert summary["resolve_rate"] == 0.3333
    assert res.code == 1
