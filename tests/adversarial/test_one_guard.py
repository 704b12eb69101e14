"""One guard: code or commands chosen by a model, an agent, an MCP client, a repository's
files or a benchmark never run uncontained without the user's approval.

"No bubblewrap" is made real for each test by pointing ``TIDEGATE_BWRAP`` at a program
that does not exist: the probe then fails exactly as on a machine without bubblewrap.
Each attack plants a marker-writing command; the marker must not exist afterwards and the
user's work tree and index must be byte-identical. Each surface's test fails when its
call site starts the command around the guard (a ``Clearance.user()`` in its place, or
``launch`` not asking ``admit``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tidegate.exec.containment import host_launch, launch, policy_for
from tidegate.exec.guard import Clearance, GuardRefused, Origin, admit, least_trusted
from tidegate.exec.runner import run_command, shell_argv
from tidegate.flow.request import verify_clearance
from tidegate.records.request import RunRequest

NO_BWRAP = "/nonexistent/bwrap"
UNTRUSTED = [o for o in Origin if o is not Origin.USER]


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDEGATE_BWRAP", NO_BWRAP)


# -- the decision itself ---------------------------------------------------------------


@pytest.mark.parametrize("origin", UNTRUSTED)
def test_anything_but_the_user_is_refused_uncontained_without_approval(origin: Origin) -> None:
    with pytest.raises(GuardRefused, match="nothing was run"):
        admit(Clearance(origin), "bubblewrap unavailable")
    assert "approved by --allow-uncontained" in admit(
        Clearance(origin, "--allow-uncontained"), "bubblewrap unavailable"
    )
    assert admit(Clearance.user(), "containment is off") == "containment is off"


def test_the_least_trusted_origin_wins() -> None:
    assert least_trusted(Origin.USER, Origin.USER) is Origin.USER
    assert least_trusted(Origin.USER, Origin.MODEL) is Origin.MODEL
    assert least_trusted(Origin.MCP_CLIENT, Origin.USER) is Origin.MCP_CLIENT


def test_verify_is_the_models_code_when_a_model_wrote_the_change(tmp_path: Path) -> None:
    base = {"repo": tmp_path, "objective": "x", "verify": "pytest -q"}
    assert verify_clearance(RunRequest(**base)).origin is Origin.USER  # type: ignore[arg-type]
    model = RunRequest(**base, model="openai:gpt-4.1")  # type: ignore[arg-type]
    assert verify_clearance(model) == Clearance(Origin.MODEL)
    agent = RunRequest(**base, agent="codex")  # type: ignore[arg-type]
    assert verify_clearance(agent).origin is Origin.AGENT
    scripted = RunRequest(**base, model="scripted:mine.json")  # type: ignore[arg-type]
    assert verify_clearance(scripted).origin is Origin.USER  # the user's own file
    client = RunRequest(**base, origin="mcp-client")  # type: ignore[arg-type]
    assert verify_clearance(client) == Clearance(Origin.MCP_CLIENT)
    off = RunRequest(**base, model="openai:m", containment="none")  # type: ignore[arg-type]
    assert verify_clearance(off) == Clearance(Origin.MODEL, "--containment none")


# -- the one gate: launch and the runner ------------------------------------------------


@pytest.mark.parametrize("origin", UNTRUSTED)
def test_the_runner_spawns_nothing_for_an_unapproved_command(
    tmp_path: Path, no_bubblewrap: None, origin: Origin
) -> None:
    marker = tmp_path / "ran"
    policy = policy_for("auto", network=False, writable=(tmp_path,))
    for containment in (policy, None):
        with pytest.raises(GuardRefused):
            run_command(
                shell_argv(f"touch {marker}"),
                tmp_path,
                10,
                tmp_path / "spill",
                clearance=Clearance(origin),
                containment=containment,
            )
        assert not marker.exists()
    with pytest.raises(GuardRefused):
        host_launch(Clearance(origin))
    with pytest.raises(GuardRefused), launch(None, tmp_path, clearance=Clearance(origin)):
        pass


def test_an_approved_command_runs_and_the_report_names_the_approval(
    tmp_path: Path, no_bubblewrap: None
) -> None:
    policy = policy_for("auto", network=False, writable=(tmp_path,))
    res = run_command(
        shell_argv("echo ran"),
        tmp_path,
        10,
        tmp_path / "spill",
        clearance=Clearance(Origin.MODEL, "an approval prompt"),
        containment=policy,
    )
    assert res.ok and res.stdout_tail.strip() == "ran"
    assert res.containment.backend == "none"
    assert "approved by an approval prompt; ran uncontained" in res.containment.reason


@requires_containment
def test_under_bubblewrap_every_origin_runs_contained(tmp_path: Path) -> None:
    policy = policy_for("auto", network=False, writable=(tmp_path,))
    res = run_command(
        shell_argv("echo ran"),
        tmp_path,
        10,
        tmp_path / "spill",
        clearance=Clearance(Origin.MCP_CLIENT),
        containment=policy,
    )
    assert res.ok and res.containment.backend == "bubblewrap"


# -- the surfaces -----------------------------------------------------------------------

DIFF = """\
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,3 @@
+# changed by the client
"""


def _client_diff(repo: Repo) -> str:
    first = repo.read("calc.py").splitlines(keepends=True)[:2]
    body = "".join(" " + line for line in first)
    return DIFF + body


def test_change_propose_verify_is_refused_without_containment(
    committed_repo: Repo, tmp_path: Path, no_bubblewrap: None
) -> None:
    from tidegate.mcp.change import ChangeTool

    committed_repo.write("calc.py", committed_repo.read("calc.py") + "# user edit\n")
    before = committed_repo.tree_state()
    marker = tmp_path / "pwned"
    tool = ChangeTool(committed_repo.root, str(tmp_path / "state"), "patch", "balanced")
    out = tool.call({"diff": _client_diff(committed_repo), "verify": f"touch {marker}"})
    assert out["ok"] is False
    assert "MCP client" in str(out.get("message") or out.get("error"))
    assert not marker.exists()
    assert committed_repo.tree_state() == before


@requires_containment
def test_change_propose_verify_runs_contained(committed_repo: Repo, tmp_path: Path) -> None:
    from tidegate.mcp.change import ChangeTool

    tool = ChangeTool(committed_repo.root, str(tmp_path / "state"), "patch", "balanced")
    out = tool.call({"diff": _client_diff(committed_repo), "verify": "true"})
    assert out["ok"] is True, out
    assert out["containment"]["backend"] == "bubblewrap"


def test_a_models_change_is_not_verified_on_the_host_without_approval(
    committed_repo: Repo, tmp_path: Path, no_bubblewrap: None
) -> None:
    from tidegate.config import load_config
    from tidegate.flow.transaction import containment_refusal

    config = load_config(committed_repo.root)
    base = {"repo": committed_repo.root, "objective": "x", "verify": "pytest -q"}
    refused = containment_refusal(RunRequest(**base, model="openai:m"), config)  # type: ignore[arg-type]
    assert refused is not None and "a model's command or code" in refused
    own = RunRequest(**base)  # type: ignore[arg-type]
    assert containment_refusal(own, config) is None  # the user's own: runs, said so
    approved = RunRequest(**base, model="openai:m", containment="none")  # type: ignore[arg-type]
    assert containment_refusal(approved, config) is None
    # the user's own local configuration saying none is their approval too; a
    # repository's pyproject cannot say it (tidegate.config tightens only)
    committed_repo.write("pyproject.toml", '[tool.tidegate.containment]\nmode = "none"\n')
    repo_says = load_config(committed_repo.root)
    assert repo_says.containment.mode == "auto"
    assert containment_refusal(RunRequest(**base, model="openai:m"), repo_says) is not None  # type: ignore[arg-type]
    committed_repo.write(".tidegate/config.toml", '[containment]\nmode = "none"\n')
    user_says = load_config(committed_repo.root)
    assert containment_refusal(RunRequest(**base, model="openai:m"), user_says) is None  # type: ignore[arg-type]


def test_a_gym_check_runs_a_models_code_only_contained_or_approved(
    tmp_path: Path, no_bubblewrap: None
) -> None:
    from tidegate.gym.checks import run_check
    from tidegate.gym.scenarios import Check

    marker = tmp_path / "ran"
    check = Check.model_validate({"name": "c", "kind": "command", "run": f"touch {marker}"})
    refused = run_check(
        check, tmp_path, None, clearance=Clearance(Origin.MODEL), spill_dir=tmp_path / "s"
    )
    assert refused["passed"] is False and "not run" in refused["detail"]
    assert not marker.exists()
    approved = run_check(
        check,
        tmp_path,
        None,
        clearance=Clearance(Origin.MODEL, "--allow-uncontained"),
        spill_dir=tmp_path / "s",
    )
    assert approved["passed"] is True and marker.exists()


def test_a_benchmark_instances_tests_are_refused_uncontained(
    tmp_path: Path, no_bubblewrap: None
) -> None:
    from tidegate.errors import UsageError
    from tidegate.exec.containment import policy_for
    from tidegate.gym.swe_env import benchmark_run

    marker = tmp_path / "ran"
    policy = policy_for("auto", network=False, writable=(tmp_path,))
    assert policy is not None
    with pytest.raises(UsageError, match="benchmark"):
        benchmark_run(["/bin/sh", "-c", f"touch {marker}"], tmp_path, policy,
                      Clearance(Origin.BENCHMARK), "tests")  # fmt: skip
    assert not marker.exists()


def test_a_ledger_plans_verify_line_runs_uncontained_only_when_approved(
    committed_repo: Repo, tmp_path: Path, no_bubblewrap: None
) -> None:
    # A plan's 'Verify:' line is a command from the task's files: without bubblewrap it is
    # refused unless the user approves (--allow-uncontained); --verify on the command line
    # is the user's own and runs.
    from tests.integration.test_ledger_run import write_plan
    from tests.unit.ledger.helpers import new_task
    from tidegate.ledger import RunOptions, run_next

    marker = tmp_path / "ran"
    fix = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    task = new_task(tmp_path, items=("Fix add",))
    write_plan(task, {"T1": (fix, f"touch {marker}")})
    before = committed_repo.tree_state()
    refused = run_next(task, RunOptions(repo=committed_repo.root, max_attempts=1))
    assert refused.report is not None and refused.report.status == "failed"
    assert "a command from the repository's files" in refused.report.message
    assert not marker.exists()
    assert committed_repo.tree_state() == before
    own = RunOptions(repo=committed_repo.root, max_attempts=1, verify=f"touch {marker}")
    assert run_next(task, own).report.status == "succeeded"  # type: ignore[union-attr]
    assert marker.exists()


def test_agent_submit_does_not_start_an_agent_it_cannot_contain(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_bubblewrap: None
) -> None:
    from tests.integration.agents.test_agent_submit import fake_contract
    from tidegate.operator.agent_submit import submit

    committed_repo.write("untracked.txt", "mine\n")
    committed_repo.write("calc.py", committed_repo.read("calc.py") + "# staged\n")
    committed_repo.git("add", "calc.py")
    before = committed_repo.tree_state()
    contract = fake_contract(tmp_path, "ok", monkeypatch)
    audit = submit(contract, committed_repo.root, startup_timeout_s=2.0, completion_timeout_s=2.0)
    assert audit.outcome == "runtime-failure"
    assert "the agent was not started" in audit.detail
    assert "launched" not in audit.steps
    assert committed_repo.tree_state() == before


def test_mcp_clients_commands_are_never_the_users(committed_repo: Repo) -> None:
    from tidegate.cli.tools import open_cli_executor

    mcp = open_cli_executor(
        committed_repo.root, "balanced", "patch", "policy_gated", "auto", False, None,
        mcp_client=True,
    )  # fmt: skip
    assert mcp.context.origin is Origin.MCP_CLIENT
    by_hand = open_cli_executor(
        committed_repo.root, "balanced", "patch", "policy_gated", "auto", False, None
    )
    assert by_hand.context.origin is Origin.USER


def test_a_tool_call_without_approval_carries_no_approval_to_the_runner() -> None:
    from tidegate.tools.effects import ApprovalEffect
    from tidegate.tools.observed_call import clearance

    allowed = clearance(Origin.MODEL, ApprovalEffect(status="not_required"))
    assert allowed == Clearance(Origin.MODEL)
    granted = clearance(
        Origin.MODEL, ApprovalEffect(status="granted", request_id="apr_1", decided_by="user")
    )
    assert granted.approved_by == "user (approval apr_1)"


def test_a_command_the_approver_grants_runs_uncontained_under_that_approval(
    committed_repo: Repo, tmp_path: Path, no_bubblewrap: None
) -> None:
    # The executor hands the granted approval to the runner's guard: without it the
    # guard refuses the model's command, since bubblewrap is unusable here.
    from tests.integration.tools.support import call, executor
    from tidegate.tools.context import ApprovalAnswer
    from tidegate.tools.scripted import ScriptedApprover

    marker = tmp_path / "ran"
    yes = ScriptedApprover(
        script=lambda r: ApprovalAnswer(r.request_id, True, by="user"), label="scripted yes"
    )
    with executor(committed_repo.root, approver=yes, activate_all=True) as ex:
        result = ex.execute(call("command_run", command=f"touch {marker}"))
    assert result.ok, result
    assert marker.exists()
    assert result.effects.approval is not None
    assert result.effects.approval.status == "granted"


# -- the state root, however it is named -------------------------------------------------


@requires_containment
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_state_root_given_by_option_is_hidden_like_one_from_the_environment(
    committed_repo: Repo, how: str
) -> None:
    # A state root under /opt, a system directory the sandbox binds read-only: VERIFY
    # must not see it (its checkpoint.key signs the run records), however it was named.
    import os
    import shutil
    import sys
    import tempfile

    try:
        bound = Path(tempfile.mkdtemp(prefix="tidegate-test-", dir="/opt"))
    except OSError:
        pytest.skip("/opt is not writable here")
    try:
        state = bound / "state"
        # VERIFY fails (and so the run) if the command can see the key that signs records
        verify = f"test ! -e {state}/checkpoint.key && ! ls {state}/*/runs.sqlite3"
        env = dict(os.environ)
        args = [sys.executable, "-m", "tidegate", "run", "--repo", str(committed_repo.root),
                "--objective", "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
                "--verify", verify, "--json"]  # fmt: skip
        if how == "option":
            args += ["--state-root", str(state)]
            env.pop("TIDEGATE_STATE_ROOT", None)
        else:
            env["TIDEGATE_STATE_ROOT"] = str(state)
        res = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        assert (state / "checkpoint.key").is_file(), res.stderr
        assert res.returncode == 0, res.stdout[-2000:]
    finally:
        shutil.rmtree(bound, ignore_errors=True)


def test_a_fifo_planted_at_a_spill_name_does_not_block_the_run(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    os.mkfifo(spill / "cmd.stderr")  # opening a FIFO for writing would block for ever
    res = run_command(shell_argv("echo ok"), tmp_path, 10, spill, clearance=Clearance.user())
    assert res.ok and (spill / "cmd.stderr").is_file()
