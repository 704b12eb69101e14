"""project.detect and project.validate over real project layouts: detection evidence and
disclosure, the detected validation command run through the command port, and repository
scripts gated by approval or verified containment."""

from __future__ import annotations

import sys

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor
from tidegate.tools.policy import ApprovalProfile
from tidegate.workspace.fingerprint import workspace_fingerprint

PYPROJECT = '[project]\nname = "calc"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'


def test_detect_reports_manifests_and_disclosure(committed_repo: Repo) -> None:
    committed_repo.write("pyproject.toml", PYPROJECT)
    committed_repo.write("Cargo.toml", "this is [not toml")
    committed_repo.write("fixtures/package.json/readme.txt", "a directory, not a manifest\n")
    with executor(committed_repo.root) as ex:
        result = ex.execute(call("project_detect"))
        elsewhere = ex.execute(call("project_detect", path="src"))
    assert result.ok and result.output is not None
    project = result.output["project"]
    manifests = {m["path"]: m["status"] for m in project["manifests"]}
    assert manifests == {"Cargo.toml": "malformed", "pyproject.toml": "ok"}
    assert result.output["validation_command"] == "pytest"
    assert result.output["validation_source"] == "detection:pyproject.toml"
    assert any(".git" in x for x in project["excluded"])
    (inspected,) = result.effects.inspect
    assert inspected.kind == "project"
    assert set(inspected.paths) == {"Cargo.toml", "pyproject.toml"}
    assert elsewhere.error is not None and elsewhere.error.code == "unsupported"


@requires_containment
def test_operator_command_wins_over_detection(committed_repo: Repo) -> None:
    committed_repo.write("pyproject.toml", PYPROJECT)
    with executor(committed_repo.root, validation_command="true") as ex:
        detected = ex.execute(call("project_detect"))
        ran = ex.execute(call("project_validate"))
    assert detected.output is not None
    assert (detected.output["validation_command"], detected.output["validation_source"]) == (
        "true",
        "operator",
    )
    assert ran.output is not None and ran.output["status"] == "passed"


@requires_containment
def test_validate_runs_the_detected_repository_script(committed_repo: Repo) -> None:
    committed_repo.write(
        "Makefile",
        f"test:\n\t{sys.executable} -c \"from calc import add; assert add(2, 3) == 5, 'add'\"\n",
    )
    committed_repo.commit_all("make")
    fingerprint = workspace_fingerprint(committed_repo.root)
    with executor(committed_repo.root) as ex:
        assert ex.policy_context.containment_verified
        result = ex.execute(call("project_validate"))
    assert result.ok and result.output is not None
    out = result.output
    assert out["command"] == "make test"
    assert out["status"] == "failed" and out["exit_code"] == 2
    assert out["error_class"] is not None and "AssertionError" in out["output_tail"]
    assert out["containment"]["backend"] == "bubblewrap"
    evidence = result.effects.validate_
    assert evidence is not None and evidence.contained
    assert evidence.fingerprint == fingerprint
    assert evidence.status == "failed"


def test_uncontained_repository_scripts_need_approval(committed_repo: Repo) -> None:
    committed_repo.write("Makefile", "test:\n\ttouch ran\n")
    with executor(
        committed_repo.root, containment="none", approval=ApprovalProfile.TRUSTED_WORKSPACE
    ) as ex:
        result = ex.execute(call("project_validate"))
    assert result.status == "pending_approval"
    assert result.approval_request is not None
    assert any("without verified containment" in r for r in result.approval_request.reasons)
    assert not (committed_repo.root / "ran").exists()


@requires_containment
def test_no_validation_command(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        result = ex.execute(call("project_validate"))
    assert result.error is not None and result.error.code == "no_validation_command"
    assert result.effects.present() == []
