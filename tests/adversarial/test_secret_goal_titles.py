"""A goal whose title holds a secret-shaped string. The register is stored redacted (as
every record is), and a goal's id is checked against its stored title on every read; the
id was hashed from the raw title, so the register refused every later read and write
until edited by hand. The id now derives from the title as stored: the goal is added,
read, updated and listed through the CLI, and the key is never written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.test_operator_refusals import LH, SP
from tests.e2e._operator import op

KEYS = ["sk-proj-" + "AbCdEf1234567890XyZ" * 2, "AKIA" + "ABCDEFGHIJ234567"]


@pytest.mark.parametrize("key", KEYS)
def test_a_goal_titled_with_a_secret_is_read_and_updated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: str
) -> None:
    root = tmp_path / "state"
    title = f"Rotate {key} before Friday"
    added = op(capsys, "goal-curation", "run", LH, SP, f"goal: {title} | priority=3", str(root))
    assert added.code == 0, added.err
    read = op(capsys, "goal-curation", "read", LH, SP, str(root), "--json")
    assert read.code == 0, read.err
    (goal,) = read.json()["backlog"]["proposed"]
    assert goal["title"] == "Rotate [REDACTED] before Friday" and goal["priority"] == 3
    again = f"goal: {title} | priority=1 | status=active | rationale=leaked"
    updated = op(capsys, "goal-curation", "run", LH, SP, again, str(root))
    assert updated.code == 0, updated.err
    met = op(
        capsys,
        "meeting",
        "run",
        LH,
        SP,
        f"goal: {title} | priority=2 | status=active | rationale=leaked",
        str(root),
    )
    assert met.code == 0, met.err
    view = op(capsys, "goal-curation", "read", LH, SP, str(root), "--json").json()
    (same,) = view["active_top"]  # the one goal, updated twice: not a second goal
    assert same["id"] == goal["id"]
    assert (same["priority"], same["status"], same["rationale"]) == (2, "active", "leaked")
    assert [g["id"] for g in view["backlog"]["active"]] == [goal["id"]]
    assert not any(view["backlog"][s] for s in ("proposed", "done", "dropped"))
    assert [c["goal_id"] for c in view["changes"]] == [goal["id"]] * 3
    text = op(capsys, "goal-curation", "read", LH, SP, str(root))
    assert text.code == 0 and "Rotate [REDACTED] before Friday" in text.out
    for path in root.rglob("*"):
        assert not path.is_file() or key.encode() not in path.read_bytes(), path
