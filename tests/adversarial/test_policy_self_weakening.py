"""The attacker is whatever proposes the change (a model, a script, a planner): it tries to
weaken the policy that judges it, so that this run or the next one may write what the
user protected (CI workflows, secrets, tidegate's own files).

Each attack runs through the real engine on a real repository and must be refused in
VALIDATE, leaving the work tree and ``.git/index`` byte-identical, and the next run must
still be judged by the user's policy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor
from tidegate.flow.transaction import execute
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest
from tidegate.store import StoreRecorder, open_run_store
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.policy import ApprovalProfile

PYPROJECT = '[project]\nname = "calc"\ndependencies = []\n'
WORKFLOW = "create-file: .github/workflows/x.yml\ncontent: <<<\non: push\n>>>\n"


def _refused(report: FlowReport, expected: str) -> None:
    assert report.status == "failed", report.message
    assert report.failure_phase == "VALIDATE", report.message
    assert report.error_class == "AST_VALIDATION_ERROR"
    assert expected in report.message, report.message
    assert not report.applied_files


def _attack(repo: Repo, objective: str, expected: str) -> FlowReport:
    before = repo.tree_state(with_mtimes=True)
    report = repo.run(objective, max_attempts=1)
    _refused(report, expected)
    assert repo.tree_state(with_mtimes=True) == before  # files, modes, mtimes and the index
    return report


@pytest.fixture
def project(committed_repo: Repo) -> Repo:
    committed_repo.write("pyproject.toml", PYPROJECT)
    committed_repo.commit_all("pyproject")
    return committed_repo


def test_emptying_protected_in_pyproject_is_refused_and_the_next_run_stays_guarded(
    project: Repo,
) -> None:
    weaken = (
        "edit-file: pyproject.toml\nreplace: dependencies = []\nwith: <<<\ndependencies = []\n\n"
        "[tool.tidegate.validate]\nprotected = []\n>>>\n"
    )
    _attack(project, weaken, "pyproject.toml: the change alters [tool.tidegate]")
    # Run 2: the workflow the weakened list would have let through is still protected.
    _attack(project, WORKFLOW, "protected by the pattern '.github/workflows/**'")


def test_an_existing_table_cannot_be_loosened(project: Repo) -> None:
    project.write(
        "pyproject.toml",
        PYPROJECT + '\n[tool.tidegate.validate]\nprotected = [".github/**"]\n',
    )
    project.commit_all("policy")
    loosen = 'edit-file: pyproject.toml\nreplace: [".github/**"]\nwith: ["docs/**"]\n'
    _attack(project, loosen, "alters [tool.tidegate]")
    # A model/base_url or containment change is just as much the user's decision.
    contain = (
        "edit-file: pyproject.toml\nreplace: [tool.tidegate.validate]\n"
        'with: <<<\n[tool.tidegate.containment]\nmode = "none"\n\n[tool.tidegate.validate]\n>>>\n'
    )
    _attack(project, contain, "alters [tool.tidegate]")


def test_the_rest_of_pyproject_stays_editable(project: Repo) -> None:
    project.write(
        "pyproject.toml",
        PYPROJECT + '\n[tool.tidegate.validate]\nprotected = [".github/**"]\n',
    )
    project.commit_all("policy")
    deps = 'edit-file: pyproject.toml\nreplace: dependencies = []\nwith: dependencies = ["attrs"]\n'
    report = project.run(deps)
    assert report.status == "succeeded", report.message
    assert 'dependencies = ["attrs"]' in project.read("pyproject.toml")


def test_editing_the_file_pyproject_links_to_is_judged_by_the_table_it_holds(
    committed_repo: Repo,
) -> None:
    committed_repo.write(
        "config/pyproject.toml", PYPROJECT + "\n[tool.tidegate.validate]\nmax_files = 5\n"
    )
    os.symlink("config/pyproject.toml", committed_repo.root / "pyproject.toml")
    committed_repo.commit_all("linked pyproject")
    weaken = "edit-file: config/pyproject.toml\nreplace: max_files = 5\nwith: max_files = 500\n"
    _attack(committed_repo, weaken, "alters [tool.tidegate]")


def test_replacing_pyproject_with_a_link_to_a_weaker_file_is_refused(
    project: Repo, tmp_path: Path
) -> None:
    project.write("pyproject.toml", PYPROJECT + "\n[tool.tidegate.validate]\nmax_files = 5\n")
    project.write("weak.toml", PYPROJECT + "\n[tool.tidegate.validate]\nprotected = []\n")
    project.commit_all("policy and an innocent-looking file")
    diff = tmp_path / "link.diff"
    diff.write_text(
        "diff --git a/pyproject.toml b/pyproject.toml\ndeleted file mode 100644\n"
        "--- a/pyproject.toml\n+++ /dev/null\n@@ -1,6 +0,0 @@\n"
        + "".join(f"-{line}\n" for line in project.read("pyproject.toml").splitlines())
        + "diff --git a/pyproject.toml b/pyproject.toml\nnew file mode 120000\n"
        "--- /dev/null\n+++ b/pyproject.toml\n@@ -0,0 +1 @@\n+weak.toml\n"
        "\\ No newline at end of file\n"
    )
    _attack(project, f"patch-file: {diff}\n", "alters [tool.tidegate]")


def test_the_local_config_file_is_out_of_reach(project: Repo, tmp_path: Path) -> None:
    """``.tidegate/`` is excluded from T0, so an attacker cannot edit the file in place; it
    can only send a new one (structured create, or a diff) hoping apply-back writes it."""
    project.write(".tidegate/config.toml", '[validate]\nprotected = [".github/**"]\n')
    weaken = "create-file: .tidegate/config.toml\ncontent: <<<\n[validate]\nprotected = []\n>>>\n"
    _attack(project, weaken, "inside tidegate's own .tidegate/ directory")
    diff = tmp_path / "config.diff"
    diff.write_text(
        "--- /dev/null\n+++ b/.tidegate/config.toml\n@@ -0,0 +1,2 @@\n+[validate]\n+protected = []\n"
    )
    _attack(project, f"patch-file: {diff}\n", "inside tidegate's own .tidegate/ directory")
    _attack(project, WORKFLOW, "protected by the pattern '.github/**'")


WEAKEN_MAIN = (
    # An uncontained verification finds the user's work tree through the shadow's git
    # metadata and rewrites its local configuration.
    'main=$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)") && '
    'mkdir -p "$main/.tidegate" && '
    "printf '[validate]\\nprotected = []\\n' > \"$main/.tidegate/config.toml\""
)


def _without_config(state: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in state.items() if not k.startswith((".tidegate", "dir:.tidegate"))}


def test_a_verify_command_rewriting_the_config_does_not_reach_the_next_attempt(
    project: Repo, tmp_path: Path
) -> None:
    """Policy is read once, at bootstrap: what a command writes into the user's config
    during the run (possible only without containment) does not judge later attempts."""
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "planner": "scripted",
                "attempts": [
                    {"objective": "create-file: notes.txt\ncontent: <<<\nhi\n>>>\n"},
                    {"objective": WORKFLOW},
                ],
            }
        )
    )
    (project.root / ".tidegate").mkdir()  # so that only .tidegate/ changes below
    before = project.tree_state(with_mtimes=True)
    report = project.run(
        "x",
        verify=WEAKEN_MAIN + "; exit 1",
        planner=f"scripted:{script}",
        max_attempts=2,
        containment="none",
    )
    assert (project.root / ".tidegate/config.toml").read_text() == "[validate]\nprotected = []\n"
    assert report.status == "failed"
    assert report.attempts == 2
    assert report.failure_phase == "VALIDATE", report.message
    assert "protected by the pattern '.github/workflows/**'" in report.message
    assert _without_config(project.tree_state(with_mtimes=True)) == _without_config(before)


def test_a_change_verified_while_the_config_was_rewritten_is_not_applied(project: Repo) -> None:
    (project.root / ".tidegate").mkdir()
    before = project.tree_state(with_mtimes=True)
    report = project.run(
        "create-file: notes.txt\ncontent: <<<\nhi\n>>>\n",
        verify=WEAKEN_MAIN,
        max_attempts=1,
        containment="none",
    )
    assert report.status == "failed"
    assert report.failure_phase == "APPLY_BACK", report.message
    assert "configuration" in report.message and "nothing was applied" in report.message
    assert not (project.root / "notes.txt").exists()
    assert _without_config(project.tree_state(with_mtimes=True)) == _without_config(before)


def test_the_effective_policy_is_recorded_in_the_report_and_the_trace(project: Repo) -> None:
    project.write(".tidegate/config.toml", '[validate]\nprotected = ["secret/**"]\n')
    report = project.run(WORKFLOW, max_attempts=1, containment="none")
    policy = report.effective_policy
    assert policy is not None
    assert policy.validate_policy["protected"] == ["secret/**"]
    assert [s.path for s in policy.sources] == [".tidegate/config.toml"]
    assert policy.containment["mode"] == "none"
    assert "pyproject.toml [tool.tidegate]" in policy.always_refused
    assert len(policy.sha256) == 64
    # A recorded run keeps the same record in its stored report and as a trace event.
    store = open_run_store(project.root, None)
    request = RunRequest(
        repo=project.root, objective=WORKFLOW, objective_base=project.root, max_attempts=1
    )
    recorded = execute(request, recorder=StoreRecorder(store))
    assert recorded.effective_policy is not None
    assert recorded.effective_policy.sha256 != policy.sha256  # the containment mode differs
    stored = store.get(recorded.run_id).report
    assert stored is not None and stored.effective_policy == recorded.effective_policy
    events = [e for e in store.events(recorded.run_id) if e.kind == "policy.effective"]
    assert len(events) == 1
    assert json.loads(events[0].payload)["sha256"] == recorded.effective_policy.sha256


# -- the tool host: a command that rewrites the configuration for the next run --------------


@pytest.mark.parametrize(
    "command",
    [
        "printf '\\n[tool.tidegate.validate]\\nprotected = []\\n' >> pyproject.toml",
        "mkdir -p .tidegate && printf '[validate]\\nprotected = []\\n' > .tidegate/config.toml",
    ],
    ids=["pyproject", "local"],
)
@requires_containment
def test_a_command_that_rewrites_the_config_ends_the_tool_session(
    project: Repo, command: str
) -> None:
    project.write(".git/info/exclude", ".tidegate/\n")  # as any earlier run leaves it
    with executor(project.root, approval=ApprovalProfile.TRUSTED_WORKSPACE) as ex:
        with pytest.raises(ToolOutcomeUnknown) as ended:
            ex.execute(call("command_run", command=command))
        assert "changed tidegate's own configuration" in ended.value.reason
        later = ex.execute(call("workspace_read", path="calc.py"))
    assert later.status != "ok" and later.error is not None
    assert "unknown outcome" in later.error.message


@requires_containment
def test_a_command_editing_only_dependencies_is_fine(project: Repo) -> None:
    with executor(project.root, approval=ApprovalProfile.TRUSTED_WORKSPACE) as ex:
        result = ex.execute(
            call(
                "command_run",
                command="sed -i 's/dependencies = \\[\\]/dependencies = [\"a\"]/' pyproject.toml",
            )
        )
    assert result.ok, result.error
    assert 'dependencies = ["a"]' in project.read("pyproject.toml")
