"""mini-swe-agent as ``bench/command_step.py``'s peer: its ``DefaultAgent.step()`` with
its ``DeterministicModel`` and ``LocalEnvironment`` (no effect capture), one ``cat FILE``
a step, in its own venv (created and installed when missing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MSA_DRIVER = r"""
import json, sys, time
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import DeterministicModel, make_output
repo, files = sys.argv[1], json.loads(sys.argv[2])
outputs = [make_output("step", [{"command": f"cat {f}"}], cost=0.0) for f in files]
agent = DefaultAgent(
    DeterministicModel(outputs=outputs, cost_per_call=0.0),
    LocalEnvironment(cwd=repo),
    system_template="You are a benchmark.", instance_template="{{task}}",
    step_limit=0, cost_limit=0,
)
agent.extra_template_vars |= {"task": "read files"}
agent.add_messages(
    agent.model.format_message(role="system", content=agent._render_template(agent.config.system_template)),
    agent.model.format_message(role="user", content=agent._render_template(agent.config.instance_template)),
)
times = []
for _ in files:
    start = time.perf_counter()
    agent.step()
    times.append((time.perf_counter() - start) * 1000)
assert all("<returncode>0</returncode>" in m["content"] for m in agent.messages[3::2]), "a cat failed"
import minisweagent
print(json.dumps({"version": minisweagent.__version__, "times": times}))
"""


def msa_python(venv: Path) -> tuple[Path | None, str]:
    """The venv's python with mini-swe-agent importable, installing it when missing."""
    python = venv / "bin" / "python"

    def importable() -> bool:
        if not python.exists():
            return False
        check = [str(python), "-c", "import minisweagent"]
        return subprocess.run(check, capture_output=True, check=False).returncode == 0

    if importable():
        return python, ""
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "pip"), "install", "-q", "mini-swe-agent"],
    ]
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            return None, f"{' '.join(argv[:3])} failed: {tail[0]}"
    return (python, "") if importable() else (None, "mini-swe-agent not importable after install")


def msa(python: Path, repo: Path, files: list[str]) -> tuple[list[float], str]:
    done = subprocess.run(
        [str(python), "-c", MSA_DRIVER, str(repo), json.dumps(files)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MSWEA_SILENT_STARTUP": "1", "MSWEA_CONFIGURED": "true"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"mini-swe-agent driver failed: {done.stderr.strip()[-400:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return list(data["times"])[1:], str(data["version"])  # the first step warms imports
