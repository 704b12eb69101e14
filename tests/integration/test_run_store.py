"""Run records: every CLI run is recorded in the state root and can be listed and read."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.text.sanitize import redact

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


def _json(*args: str, cwd: Path) -> object:
    res = tidegate_cli(*args, "--json", cwd=cwd)
    assert res.returncode in (0, 1), res.stderr
    return json.loads(res.stdout)


def test_runs_are_recorded_listed_and_read(committed_repo: Repo) -> None:
    root = committed_repo.root
    first = tidegate_cli(
        "run",
        "--objective",
        "edit-file: nope.py\nreplace: a\nwith: b\n",
        "--max-attempts",
        "1",
        "--json",
        cwd=root,
    )
    assert first.returncode == 1
    second = tidegate_cli("run", "--objective", FIX, "--json", cwd=root)
    assert second.returncode == 0, second.stderr
    listed = _json("runs", cwd=root)
    assert isinstance(listed, list)
    assert [(r["status"], r["mode"]) for r in listed] == [
        ("succeeded", "patch"),
        ("failed", "patch"),
    ]
    latest = tidegate_cli("read", "latest", "--json", cwd=root)
    assert json.loads(latest.stdout) == json.loads(second.stdout)
    by_id = tidegate_cli("read", json.loads(first.stdout)["run_id"], "--json", cwd=root)
    assert json.loads(by_id.stdout) == json.loads(first.stdout)
    human = tidegate_cli("read", "latest", cwd=root)
    assert "APPLY_BACK" in human.stdout and "succeeded" in human.stdout

    stores = list(Path(os.environ["TIDEGATE_STATE_ROOT"]).glob("*/runs.sqlite3"))
    assert len(stores) == 1
    with sqlite3.connect(stores[0]) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        events = db.execute("SELECT COUNT(*) FROM phase_events").fetchone()[0]
    assert events == len(json.loads(first.stdout)["phases"]) + len(
        json.loads(second.stdout)["phases"]
    )


def test_reading_an_unknown_run_is_a_usage_error(committed_repo: Repo) -> None:
    res = tidegate_cli("read", "no-such-run", cwd=committed_repo.root)
    assert res.returncode == 2
    assert (
        res.stderr.strip() == "tidegate: error: no recorded run 'no-such-run' for this repository"
    )


@pytest.mark.parametrize("kind", ["inside", "file", "symlink", "dotdot"])
def test_bad_state_roots_are_refused_before_anything_changes(
    committed_repo: Repo, tmp_path: Path, kind: str
) -> None:
    root = committed_repo.root
    if kind == "inside":
        state = root / "state"
    elif kind == "file":
        state = tmp_path / "a-file"
        state.write_text("x")
    elif kind == "symlink":
        state = tmp_path / "link"
        state.symlink_to(tmp_path)
    else:
        state = tmp_path / "x" / ".." / "y"
    before = committed_repo.tree_state(with_mtimes=True)
    res = tidegate_cli("run", "--objective", FIX, "--state-root", str(state), cwd=root)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("tidegate: error: state root") and res.stderr.count("\n") == 1
    assert committed_repo.tree_state(with_mtimes=True) == before
    assert committed_repo.git("for-each-ref", "refs/tidegate") == ""


def test_secrets_are_redacted_before_they_are_stored(committed_repo: Repo) -> None:
    root = committed_repo.root
    verify = "API_KEY=sk-abcdefghijklmnopqrstuvwx true && echo password=hunter22"
    res = tidegate_cli("run", "--objective", FIX, "--verify", verify, "--json", cwd=root)
    assert res.returncode == 0, res.stderr
    stored = tidegate_cli("read", "latest", "--json", cwd=root).stdout
    assert "sk-abcdefghijklmnopqrstuvwx" not in stored and "hunter22" not in stored
    assert "[REDACTED]" in stored


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("OPENAI_API_KEY=sk-proj-0123456789abcdef0123", "sk-proj"),
        ("Authorization: Bearer abcdefghijklmnopqrstu", "abcdefghijklmnopqrstu"),
        ("https://user:s3cretpass@example.com/x", "s3cretpass"),
        ("--token ghp_0123456789abcdefghijABCDEF", "ghp_0123"),
        ("db_password: 'correct horse'", "correct"),
    ],
)
def test_redact(text: str, secret: str) -> None:
    assert secret not in redact(text)


def test_prose_about_tokens_is_left_alone() -> None:
    text = "~312 tokens of feedback; the token expired; password reset page"
    assert redact(text) == text
