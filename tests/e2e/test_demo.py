"""`make demo` is one of the README's two quickstart commands: the demo script must keep
working end to end (model-driven fix, staged edit kept, the run's record shown)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_script_runs_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the demo keeps its repo there
    res = subprocess.run(
        ["bash", str(ROOT / "examples" / "demo.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = res.stdout
    assert "succeeded patch run" in out and "after 2 attempt(s)" in out
    after = out.split("== after: git status")[1].split("==")[0]
    assert "MM calc.py" in after and " M README.md" in after
    assert "a1.plan.r1   workspace.read   succeeded" in out
    assert "chain verified" in out
    # The model's tool calls show up live, inside the phase that made them.
    assert '· PLAN workspace.read {"path":"calc.py"}' in res.stderr
