"""A ``--model`` run's checkpoints record the model, prompt, tool registry and effect policy
hashes and the repository's tidegate configuration; ``tidegate resume`` refuses when one of
them changed and continues, without repeating VERIFY, once it is back as it was.

What this exercises: a changed model (the scripted double's identity covers its script, and
the script is no planner input nor configuration) is refused by the model-identity hash; a
changed configuration (a ``[model]`` setting and the containment policy) is refused by the
configuration digest, which ``resume`` compares before any model hash. The prompt, registry
and effect-policy hashes a ``--model`` run records come from the host's fixed review
configuration and the tool catalog, which no operator setting changes; they are asserted
present here and their refusal is covered at session level (matrix 16/17)."""

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

    # Another configuration (model settings, containment policy): refused by its digest.
    settings = repo.root / ".tidegate" / "config.toml"
    settings.parent.mkdir()
    settings.write_text('[model]\nmax_output_tokens = 64\n\n[containment]\nmode = "required"\n')
    script.write_text(json.dumps(SCRIPT))
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and "tidegate configuration changed" in err and err.count("\n") == 1
    settings.unlink()
    settings.parent.rmdir()

    # The same model and configuration again: the run finishes without asking the model or
    # verifying again.
    code, report, err = cli("resume", run_id, cwd=repo.root)
    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"
    assert counter.read_text() == "ran\n"
    assert repo.read("calc.py").count("return a + b") == 1
