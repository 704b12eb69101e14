"""A ``--model`` run's checkpoints bind it to the model, the prompt, the tool registry and
the effect policy: ``tidegate resume`` refuses when one of them changed and continues,
without repeating VERIFY, once it is back as it was."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.conftest import Repo
from tests.integration._store import cli, readonly_store

SCRIPT = {
    "model": "resume-model",
    "turns": [
        {"text": "Plan: make add() add."},
        {
            "text": "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n"
            "    return a + b\n>>>>>>> REPLACE\n"
        },
    ],
}


def test_resume_checks_the_model_hashes(committed_repo: Repo, tmp_path: Path) -> None:
    repo = committed_repo
    script = tmp_path / "model.json"
    script.write_text(json.dumps(SCRIPT))
    counter = tmp_path / "verify-runs"
    code, _, err = cli(
        "run", "--objective", "Make add() add.", "--model", f"scripted:{script}",
        "--verify", f"echo ran >> {counter}", "--containment", "none",
        cwd=repo.root, env={"TIDEGATE_FAULT": "phase.APPLY_BACK"},
    )  # fmt: skip
    assert code == -signal.SIGKILL, err
    code, listed, _ = cli("runs", cwd=repo.root)
    assert isinstance(listed, list) and listed[0]["status"] == "interrupted"
    run_id = listed[0]["run_id"]
    saved = readonly_store(repo).checkpoints(run_id)[-1].state
    hashes = saved["inputs"]["hashes"]
    assert all(hashes[name] for name in ("prompt", "registry", "effect_policy", "model_identity"))

    # Another model (the scripted double's identity covers its script): refused.
    script.write_text(json.dumps({**SCRIPT, "model": "another-model"}))
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and "model identity" in err and err.count("\n") == 1
    assert repo.read("calc.py").count("return a - b") == 1

    # The same model again: the run finishes without asking it or verifying again.
    script.write_text(json.dumps(SCRIPT))
    code, report, err = cli("resume", run_id, cwd=repo.root)
    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"
    assert counter.read_text() == "ran\n"
    assert repo.read("calc.py").count("return a + b") == 1
