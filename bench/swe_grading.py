"""Grading time per SWE-bench instance against the official test command alone.

    python bench/swe_grading.py [--repeats 5] [--work DIR]

The instances: two real ones from more-itertools' release history (built from PyPI
sdists, ``tests/integration/gym/_sdist.py``) and the shipped synthetic ``calc``. For each,
with its environment already built (the first grading builds it, not timed):

* ``grade``: ``tidegate.gym.swe.run_swe`` on a predictions file holding the gold patch,
  the whole of it: the environment's lock and check, the testbed's reset, the patch, the
  undo of test-file changes, the test patch, the contained test run, parsing, the
  report and ``test_output.txt`` written;
* ``direct``: the official test command alone (``pytest -rA <test files>``, the env's
  ``bin`` first on PATH), run by a plain subprocess in the testbed already holding the
  gold and test patches.

Medians of ``--repeats`` runs and their ratio (the goal: at most 1.3).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.integration.gym._sdist import RELEASES, release_instance

from tidegate.gym.places import make_gym_root
from tidegate.gym.swe import run_swe
from tidegate.gym.swe_synthetic import build_mirrors, shipped_instances


def _instances(work: Path) -> tuple[Path, Path]:
    mirrors = work / "mirrors"
    shutil.rmtree(mirrors, ignore_errors=True)  # rebuilt; the sdists and envs are kept
    mirrors.mkdir(parents=True)
    build_mirrors(mirrors)
    rows = [json.loads(shipped_instances().read_text().splitlines()[0])]
    for old, new in RELEASES[:2]:
        rows.append(release_instance(old, new, mirrors, work / "sdists"))
    path = work / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, mirrors


def _grade(instances: Path, mirrors: Path, gym: Path, row: dict[str, Any]) -> dict[str, Any]:
    predictions = gym.parent / f"{row['instance_id']}.jsonl"
    predictions.write_text(json.dumps({"instance_id": row["instance_id"], "model_name_or_path": "gold",
                                       "model_patch": row["patch"]}) + "\n")  # fmt: skip
    summary = run_swe(instances, mirrors, gym, predictions=predictions)
    (result,) = summary["results"]
    assert result["status"] == "resolved", result
    return dict(result)


def _direct(result: dict[str, Any], row: dict[str, Any]) -> float:
    """The official command alone, on the testbed as the grading left it (reset, then
    the gold and test patches applied again, outside the timing)."""
    testbed = Path(result["python"]).parent.parent.parent / "testbed"
    git = ["git", "-C", str(testbed)]
    subprocess.run([*git, "checkout", "-q", "-f", row["base_commit"]], check=True)
    subprocess.run([*git, "clean", "-ffdxq", "-e", "*.egg-info"], check=True)
    for patch in (row["patch"], row["test_patch"]):
        subprocess.run(
            [*git, "apply", "--whitespace=nowarn", "-"], input=patch.encode(), check=True
        )
    files = sorted({line.split(" b/")[-1] for line in row["test_patch"].splitlines()
                    if line.startswith("diff --git") and line.endswith(".py")})  # fmt: skip
    env = {"PATH": f"{Path(result['python']).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "HOME": str(testbed)}  # fmt: skip
    started = time.monotonic()
    subprocess.run(["pytest", "-rA", *files], cwd=testbed, env=env, capture_output=True)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tidegate-bench-swe-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "cache"))
    instances, mirrors = _instances(work)
    (work / "state").mkdir(exist_ok=True)
    gym = make_gym_root(work / "state")
    rows = [json.loads(line) for line in instances.read_text().splitlines()]
    print(f"{'instance':<34} {'grade s':>8} {'direct s':>9} {'ratio':>6}")
    for row in rows:
        _grade(instances, mirrors, gym, row)  # builds the environment (not timed)
        graded, direct = [], []
        for _ in range(args.repeats):
            started = time.monotonic()
            result = _grade(instances, mirrors, gym, row)
            graded.append(time.monotonic() - started)
            direct.append(_direct(result, row))
        g, d = statistics.median(graded), statistics.median(direct)
        print(f"{row['instance_id']:<34} {g:8.3f} {d:9.3f} {g / d:6.2f}")


if __name__ == "__main__":
    main()
