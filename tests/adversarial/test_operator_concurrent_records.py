"""Attack: several operator commands at once on one state root, and links planted in it.

Eight ``tidegate goal-curation run`` (or ``meeting run``) processes start together; each
reads the goal register (or the memory records), adds its own entry and writes the whole
document back. Without a lock held across that read-modify-write, the last writer wins
and the others' updates are lost while every process exits 0. All eight updates must
survive: with every writer slowed between its read and its write, and round after round
at full speed. A link planted at the lock file's name is refused in one line,
and nothing outside the state root is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WRITERS = 8
LH, SP = "local-harness", "single-process"


SLOW_WRITER = {
    "TIDEGATE_FAULT": "records.between_read_and_write=run",
    "TIDEGATE_FAULT_RUN": "sleep 0.3",
}
"""Every writer pauses between its read and its write: without the lock, all eight read
the same document before any writes it back, so the loss is certain, not a matter of luck."""


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tidegate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _all_succeed(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err


def _goal_titles(root: Path) -> set[str]:
    register = json.loads((root / "goal_register.json").read_text())
    assert len(register["changes"]) == len(register["goals"])
    return {g["title"] for g in register["goals"]}


def _meetings(root: Path) -> list[str]:
    memory = json.loads((root / "memory_records.json").read_text())
    return sorted(r["value"]["decisions"][0] for r in memory["records"])


def _round(root: Path, command: str, tag: str, env: dict[str, str] | None = None) -> None:
    def objective(n: int) -> str:
        goal = f"goal: {tag} goal {n} | priority={n}"
        return goal if command == "goal-curation" else f"decision: {tag} decision {n}\n{goal}"

    procs = [
        _start(command, "run", LH, SP, objective(n), str(root), env=env)
        for n in range(1, WRITERS + 1)
    ]
    _all_succeed(procs)


@pytest.mark.parametrize("command", ["goal-curation", "meeting"])
def test_eight_concurrent_runs_keep_every_update(tmp_path: Path, command: str) -> None:
    root = tmp_path / "state"
    _round(root, command, "r0", SLOW_WRITER)
    assert _goal_titles(root) == {f"r0 goal {n}" for n in range(1, WRITERS + 1)}
    if command == "meeting":
        assert _meetings(root) == sorted(f"r0 decision {n}" for n in range(1, WRITERS + 1))


@pytest.mark.slow
@pytest.mark.parametrize("command", ["goal-curation", "meeting"])
def test_eight_concurrent_runs_keep_every_update_round_after_round(
    tmp_path: Path, command: str
) -> None:
    root = tmp_path / "state"
    rounds = 5
    for r in range(rounds):
        _round(root, command, f"r{r}")
        expected = {f"r{i} goal {n}" for i in range(r + 1) for n in range(1, WRITERS + 1)}
        assert _goal_titles(root) == expected, f"round {r}"
    if command == "meeting":
        assert len(_meetings(root)) == rounds * WRITERS


def test_a_link_at_the_lock_name_is_refused_and_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".records.lock").symlink_to(outside / "created-through-the-link")

    proc = _start("goal-curation", "run", LH, SP, "goal: G | priority=1", str(root))
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 1, err
    assert err == (
        f"tidegate: error: refusing to lock: {root}/.records.lock: a symlink; not followed\n"
    )
    assert list(outside.iterdir()) == []
    assert not (root / "goal_register.json").exists()
