"""The ``tidegate`` command line, run as a user runs it: a real subprocess in a real repo."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CALC, Repo, tidegate_cli

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
FIXED_CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
REPORT_KEYS = {
    "status",
    "mode",
    "run_id",
    "attempts",
    "failure_phase",
    "error_class",
    "strategy",
    "fs_mode",
    "t0_ref",
    "diff_sha256",
    "changed_files",
}


def _one_json_object(stdout: str) -> dict[str, Any]:
    decoder = json.JSONDecoder()
    text = stdout.lstrip()
    obj, end = decoder.raw_decode(text)
    assert text[end:].strip() == "", f"more than one JSON value on stdout: {text[end:]!r}"
    assert isinstance(obj, dict)
    return obj


def _usage_error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.endswith("\n"), res.stderr
    # git's own form for a mistyped command; every other usage error is "error: ..."
    assert res.stderr.startswith("tidegate: error: ") or (
        res.stderr.startswith("tidegate: '") and "is not a tidegate command" in res.stderr
    ), res.stderr
    assert "Traceback" not in res.stderr
    return res.stderr


@pytest.mark.parametrize("args", [[], ["--help"]], ids=["bare", "help"])
def test_help(args: list[str], tmp_path: Path) -> None:
    res = tidegate_cli(*args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Usage: tidegate")
    for command in ("run", "review", "debug", "recover"):
        assert command in res.stdout
    assert res.stderr == ""


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--bogus"],
        ["--bogus"],
        ["frobnicate"],
        ["run", "--objective", FIX, "--mode", "yolo"],
        ["run", "--objective", FIX, "--max-attempts", "0"],
        ["run", "--objective", FIX, "--max-attempts", "many"],
        ["run", "--objective"],
    ],
    ids=[
        "unknown-option",
        "top-level-option",
        "unknown-command",
        "bad-mode",
        "zero",
        "nan",
        "no-value",
    ],
)
def test_bad_arguments_are_one_line_exit_2(committed_repo: Repo, args: list[str]) -> None:
    before = committed_repo.tree_state()
    _usage_error(tidegate_cli(*args, cwd=committed_repo.root))
    assert committed_repo.tree_state() == before
    assert committed_repo.git("for-each-ref", "refs/tidegate/") == ""


def test_unknown_option_names_it(committed_repo: Repo) -> None:
    stderr = _usage_error(tidegate_cli("run", "--bogus", cwd=committed_repo.root))
    assert "--bogus" in stderr


@pytest.mark.parametrize("both", [True, False], ids=["both", "neither"])
def test_exactly_one_objective_source(committed_repo: Repo, tmp_path: Path, both: bool) -> None:
    objective_file = tmp_path / "objective.txt"
    objective_file.write_text(FIX)
    args = ["--objective", FIX, "--objective-file", str(objective_file)] if both else []
    stderr = _usage_error(tidegate_cli("run", *args, cwd=committed_repo.root))
    assert "--objective" in stderr and "--objective-file" in stderr
    assert committed_repo.read("calc.py") == CALC


@pytest.mark.parametrize(
    ("objective", "where"),
    [
        ("Fix it.\nedit-file: calc.py\nreplace: return a - b\n", ":3:"),
        ("edit-file: calc.py\nwith: return a + b\n", ":2:"),
        ("create-file: new.txt\ncontent: <<<\nnever closed\n", ":2:"),
    ],
    ids=["replace-without-with", "with-without-replace", "unclosed-block"],
)
def test_malformed_objective_names_the_line(
    committed_repo: Repo, objective: str, where: str
) -> None:
    before = committed_repo.tree_state()
    stderr = _usage_error(tidegate_cli("run", "--objective", objective, cwd=committed_repo.root))
    assert where in stderr
    assert committed_repo.tree_state() == before
    assert committed_repo.git("for-each-ref", "refs/tidegate/") == ""


def test_missing_objective_file_is_a_usage_error(committed_repo: Repo, tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    stderr = _usage_error(
        tidegate_cli("run", "--objective-file", str(missing), cwd=committed_repo.root)
    )
    assert str(missing) in stderr


def test_json_report(committed_repo: Repo) -> None:
    committed_repo.write("README.md", "# calc\n\nmy draft\n")  # unrelated dirty state
    index = committed_repo.index_bytes()
    res = tidegate_cli(
        "run", "--objective", FIX, "--verify", "true", "--json", cwd=committed_repo.root
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stderr == ""
    report = _one_json_object(res.stdout)
    assert set(report) >= REPORT_KEYS
    assert report["status"] == "succeeded"
    assert report["mode"] == "patch"
    assert report["attempts"] == 1
    assert report["failure_phase"] is None and report["error_class"] is None
    assert report["strategy"] == "worktree"
    assert report["fs_mode"] == "read-write"
    run_id = report["run_id"]
    assert isinstance(run_id, str) and run_id
    assert report["t0_ref"] == f"refs/tidegate/keep:{run_id}/t0"
    committed_repo.git("rev-parse", "--verify", str(report["t0_ref"]))
    diff = report["diff"]
    assert isinstance(diff, str) and "+    return a + b" in diff
    assert report["diff_sha256"] == hashlib.sha256(diff.encode()).hexdigest()
    changed = report["changed_files"]
    assert isinstance(changed, list) and len(changed) == 1
    (entry,) = changed
    assert {"path", "before_sha256", "after_sha256"} <= set(entry)
    assert entry["path"] == "calc.py"
    assert entry["action"] == "modify"
    assert entry["before_sha256"] == hashlib.sha256(CALC.encode()).hexdigest()
    assert entry["after_sha256"] == hashlib.sha256(FIXED_CALC.encode()).hexdigest()
    assert committed_repo.read("calc.py") == FIXED_CALC
    assert committed_repo.read("README.md") == "# calc\n\nmy draft\n"
    assert committed_repo.index_bytes() == index


def test_json_report_for_a_created_file(committed_repo: Repo) -> None:
    res = tidegate_cli(
        "run",
        "--objective",
        "create-file: docs/new.md\ncontent: <<<\nhello\n>>>\n",
        "--json",
        cwd=committed_repo.root,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    (entry,) = _one_json_object(res.stdout)["changed_files"]
    assert entry["path"] == "docs/new.md"
    assert entry["action"] == "create"
    assert entry["before_sha256"] is None
    assert entry["after_sha256"] == hashlib.sha256(b"hello\n").hexdigest()
    assert committed_repo.read("docs/new.md") == "hello\n"


def test_verify_failing_after_all_attempts_exits_1(committed_repo: Repo, tmp_path: Path) -> None:
    """Two different proposals, both rejected by the verify command: every attempt is used."""
    before = committed_repo.tree_state()
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "attempts": [
                    {"objective": FIX.replace("a + b", "a * b")},
                    {"objective": FIX.replace("a + b", "b - a")},
                ]
            }
        )
    )
    res = tidegate_cli(
        "run",
        "--objective",
        "Fix add()",
        "--planner",
        f"scripted:{script}",
        "--verify",
        "grep -q 'return a + b' calc.py",
        "--max-attempts",
        "2",
        "--json",
        cwd=committed_repo.root,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    report = _one_json_object(res.stdout)
    assert report["status"] == "failed"
    assert report["attempts"] == 2
    assert report["failure_phase"] == "VERIFY"
    assert report["error_class"] == "LOGIC"
    assert len(report["feedback"]) == 2
    assert committed_repo.tree_state() == before


def test_verify_failing_human_output_exits_1(committed_repo: Repo) -> None:
    before = committed_repo.tree_state()
    res = tidegate_cli(
        "run",
        "--objective",
        FIX,
        "--verify",
        "false",
        "--max-attempts",
        "1",
        cwd=committed_repo.root,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.startswith("failed patch run ")
    assert "VERIFY" in res.stdout
    assert "Traceback" not in res.stderr
    assert committed_repo.tree_state() == before


def test_objective_file_with_relative_patch_file(committed_repo: Repo, tmp_path: Path) -> None:
    """``patch-file:`` is relative to the objective file, not to the current directory."""
    task = tmp_path / "task"
    task.mkdir()
    (task / "fix.diff").write_text(
        "--- a/calc.py\n"
        "+++ b/calc.py\n"
        "@@ -1,5 +1,5 @@\n"
        " def add(a, b):\n"
        "-    return a - b\n"
        "+    return a + b\n"
        " \n"
        " \n"
        " def mul(a, b):\n"
    )
    (task / "objective.txt").write_text("Fix add().\n\npatch-file: fix.diff\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = tidegate_cli(
        "run",
        "--repo",
        str(committed_repo.root),
        "--objective-file",
        "../task/objective.txt",
        "--json",
        cwd=elsewhere,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    report = _one_json_object(res.stdout)
    assert report["status"] == "succeeded"
    assert committed_repo.read("calc.py") == FIXED_CALC
    assert committed_repo.status() == " M calc.py\n"


def test_objective_from_stdin(committed_repo: Repo) -> None:
    res = tidegate_cli("run", "--objective-file", "-", "--json", cwd=committed_repo.root, input=FIX)
    assert res.returncode == 0, res.stdout + res.stderr
    assert committed_repo.read("calc.py") == FIXED_CALC


def test_recover_on_a_clean_repo(committed_repo: Repo, tmp_path: Path) -> None:
    before = committed_repo.tree_state()
    # A temp dir of its own: recover also sweeps the OS temp dir for what killed runs left
    # there (sub-agent copies, sandbox directories), and the shared one may hold some.
    (tmp_path / "tmp").mkdir()
    res = tidegate_cli("recover", cwd=committed_repo.root, env={"TMPDIR": str(tmp_path / "tmp")})
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "nothing to recover"
    assert committed_repo.tree_state() == before


def test_recover_json_on_a_clean_repo(committed_repo: Repo) -> None:
    res = tidegate_cli("recover", "--json", "--repo", str(committed_repo.root))
    assert res.returncode == 0, res.stdout + res.stderr
    summary = _one_json_object(res.stdout)
    assert summary["journals"] == [] and summary["removed_shadows"] == []
    assert summary["clean"] is True


def test_a_change_without_verify_is_not_called_verified(committed_repo: Repo) -> None:
    unverified = tidegate_cli("run", "--objective", FIX, "--json", cwd=committed_repo.root)
    assert unverified.returncode == 0, unverified.stderr
    message = _one_json_object(unverified.stdout)["message"]
    assert "unverified (no --verify)" in message and not message.startswith("verified"), message
    (committed_repo.root / "calc.py").write_text(CALC)
    verified = tidegate_cli(
        "run", "--objective", FIX, "--verify", "true", "--json", cwd=committed_repo.root
    )
    assert _one_json_object(verified.stdout)["message"].startswith("verified change applied")
