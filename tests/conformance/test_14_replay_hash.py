"""Matrix 14: two isolated runs of the same scripted scenario have the same replay hash.

Two repositories built the same way in different directories, each with its own state
root, run the same two-attempt scenario (a wrong fix that fails its test, then the right
one) through the real CLI. Their run IDs, temp paths, T0 commits and timings all differ;
their replay hashes do not. A scenario that proposes something else hashes differently.
The stored hash is the one recomputed from the stored trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import Repo
from tests.integration._store import FIX, cli

CHECK = f"{sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"
WRONG = FIX.replace("a + b", "a * b")


def _isolated_run(base: Path, attempts: list[str]) -> dict[str, object]:
    repo = Repo(base / "work")
    repo.root.mkdir(parents=True)
    repo.git("init", "-q")
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.write("README.md", "# calc\n")
    repo.commit_all("initial")
    script = base / "scenario.json"
    script.write_text(
        json.dumps({"planner": "scripted", "attempts": [{"objective": o} for o in attempts]})
    )
    env = {"TIDEGATE_STATE_ROOT": str(base / "state")}
    args = ("run", "--objective", "fix add", "--planner", f"scripted:{script}", "--verify", CHECK)
    code, report, err = cli(*args, cwd=repo.root, env=env)
    assert code == 0, err
    assert isinstance(report, dict)
    code, detail, _ = cli("read", report["run_id"], "--detail", cwd=repo.root, env=env)
    assert isinstance(detail, dict)
    assert detail["evidence"]["replay_hash_recomputed"] == report["replay_hash"]
    return report


def test_the_same_scenario_replays_to_the_same_hash(tmp_path: Path) -> None:
    one = _isolated_run(tmp_path / "one", [WRONG, FIX])
    two = _isolated_run(tmp_path / "two", [WRONG, FIX])
    other = _isolated_run(tmp_path / "three", [FIX.replace("a + b", "b + a")])

    assert one["run_id"] != two["run_id"] and one["t0_commit"] != two["t0_commit"]
    assert one["attempts"] == two["attempts"] == 2
    assert str(one["replay_hash"]).startswith("sha256:")
    assert one["replay_hash"] == two["replay_hash"]
    assert other["replay_hash"] != one["replay_hash"]
