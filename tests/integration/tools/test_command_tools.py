"""command.run and command.session against real processes: writes come from the host's
own inventory, generated trees are derived mutations, non-zero exits are results, and the
session keeps its output bounded."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor
from tidegate.tools.context import ToolLimits
from tidegate.tools.policy import ApprovalProfile


@requires_containment
def test_command_writes_are_inventoried_and_dependency_trees_are_derived(
    committed_repo: Repo,
) -> None:
    script = (
        "echo out; echo err >&2; printf 'x' > made.txt; mkdir -p node_modules/pkg; "
        "echo '{}' > node_modules/pkg/package.json; exit 3"
    )
    with executor(committed_repo.root) as ex:
        result = ex.execute(call("command_run", command=script))
    assert result.ok and result.output is not None
    out = result.output
    assert (out["status"], out["exit_code"]) == ("failed", 3)
    assert (out["stdout"], out["stderr"]) == ("out\n", "err\n")
    assert out["interpreter"]["executable"] == "/bin/sh"
    assert out["interpreter"]["stdin"] == "closed" and out["interpreter"]["tty"] is False
    assert [w.path for w in result.effects.write] == ["made.txt"]
    (derived,) = result.effects.derived
    assert derived.path == "node_modules" and derived.before is None
    assert derived.after is not None and derived.after.startswith("meta-sha256:")
    assert result.effects.state_version == 1


@requires_containment
def test_a_command_that_changes_nothing_has_no_effect_but_approval(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        result = ex.execute(call("command_run", command="cat calc.py > /dev/null"))
    assert result.ok and result.effects.present() == ["approval"]


@requires_containment
def test_cwd_is_confined(committed_repo: Repo) -> None:
    (committed_repo.root / "sub").mkdir()
    (committed_repo.root / "out").symlink_to("/tmp")
    with executor(committed_repo.root) as ex:
        inside = ex.execute(call("command_run", command="pwd", cwd="sub"))
        up = ex.execute(call("command_run", command="pwd", cwd="../"))
        link = ex.execute(call("command_run", command="pwd", cwd="out"))
    assert inside.ok and inside.output is not None
    assert inside.output["stdout"].strip().endswith("/sub")
    assert up.error is not None and up.error.code == "cwd_refused"
    assert link.error is not None and link.error.code == "cwd_refused"


@requires_containment
def test_output_is_bounded_and_timeouts_are_results(committed_repo: Repo) -> None:
    with executor(committed_repo.root, limits=ToolLimits(output_bytes=1000)) as ex:
        big = ex.execute(call("command_run", command="yes abcdefghij | head -c 50000"))
        slow = ex.execute(call("command_run", command="sleep 5", timeout_s=0.3))
    assert big.output is not None and big.output["stdout_truncated"]
    assert len(big.output["stdout"]) <= 1000
    assert slow.ok and slow.output is not None
    assert slow.output["status"] == "timed_out" and slow.output["exit_code"] is None


def test_required_containment_without_bubblewrap_refuses(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIDEGATE_BWRAP", str(tmp_path / "no-bwrap"))
    with executor(
        committed_repo.root,
        containment="required",
        approval=ApprovalProfile.TRUSTED_WORKSPACE,
        grants=frozenset(),
    ) as ex:
        assert not ex.policy_context.containment_verified
        result = ex.execute(call("command_run", command="touch x"))
    # uncontained repository code needs approval, and nobody can give it here
    assert result.status == "pending_approval"
    assert result.approval_request is not None
    with executor(
        committed_repo.root,
        containment="required",
        grants=frozenset({result.approval_request.request_id}),
    ) as ex:
        refused = ex.execute(call("command_run", command="touch x"))
    assert refused.error is not None and refused.error.code == "containment_unavailable"
    assert not (committed_repo.root / "x").exists()


@requires_containment
def test_session_start_send_read_stop(committed_repo: Repo) -> None:
    program = (
        "import sys\n"
        "for line in sys.stdin:\n"
        "    open('seen.txt', 'a').write(line)\n"
        "    print('got', line.strip(), flush=True)\n"
    )
    committed_repo.write("echo_server.py", program)
    with executor(committed_repo.root, activate_all=True) as ex:
        started = ex.execute(
            call("command_session", action="start", command=f"{sys.executable} -u echo_server.py")
        )
        assert started.ok and started.output is not None and started.output["running"]
        sid = started.output["session_id"]
        sent = ex.execute(
            call("command_session", action="send", session_id=sid, input="hello\n", wait_s=5)
        )
        assert sent.ok and sent.output is not None
        assert sent.output["stdout"] == "got hello\n"
        assert [w.path for w in sent.effects.write] == ["seen.txt"]
        # a write by another tool in between is not attributed to the session
        other = ex.execute(
            call("workspace_write", path="other.txt", content="o\n", expect="must_not_exist")
        )
        assert other.ok
        quiet = ex.execute(call("command_session", action="read", session_id=sid, wait_s=0.1))
        assert quiet.ok and quiet.effects.write == ()
        stopped = ex.execute(call("command_session", action="stop", session_id=sid))
        assert stopped.ok and stopped.output is not None and not stopped.output["running"]
        gone = ex.execute(call("command_session", action="read", session_id=sid))
        assert gone.error is not None and gone.error.code == "unknown_session"


@requires_containment
def test_session_output_is_bounded(committed_repo: Repo) -> None:
    with executor(committed_repo.root, activate_all=True) as ex:
        started = ex.execute(
            call(
                "command_session",
                action="start",
                command="head -c 3000 /dev/zero | tr '\\0' a",
                wait_s=2,
                max_bytes=1000,
            )
        )
        assert started.ok and started.output is not None
        assert len(started.output["stdout"]) == 1000
        assert started.output["pending_bytes"] == 2000
        sid = started.output["session_id"]
        rest = ex.execute(
            call("command_session", action="read", session_id=sid, max_bytes=5000, wait_s=1)
        )
        assert rest.output is not None and len(rest.output["stdout"]) == 2000
        for _ in range(50):  # the exit follows the output closely
            if not rest.output["running"]:
                break
            rest = ex.execute(call("command_session", action="read", session_id=sid, wait_s=0.1))
            assert rest.output is not None
    assert rest.output["exit_code"] == 0 and not rest.output["running"]


def test_session_arguments_are_checked(committed_repo: Repo) -> None:
    with executor(committed_repo.root, activate_all=True) as ex:
        bad = ex.execute(call("command_session", action="send", session_id="x"))
    assert bad.error is not None and bad.error.code == "invalid_arguments"


@requires_containment
def test_session_writes_between_calls_are_reported_once(committed_repo: Repo) -> None:
    program = "import sys\nsys.stdin.readline()\nopen('late.txt', 'w').write('x')\nprint('done')\n"
    committed_repo.write("late_writer.py", program)
    with executor(committed_repo.root, activate_all=True) as ex:
        started = ex.execute(
            call(
                "command_session",
                action="start",
                command=f"{sys.executable} -u late_writer.py",
                wait_s=0,
            )
        )
        assert started.output is not None
        sid = started.output["session_id"]
        sent = ex.execute(
            call("command_session", action="send", session_id=sid, input="go\n", wait_s=0)
        )
        got = ex.execute(call("command_session", action="read", session_id=sid, wait_s=5))
        for _ in range(50):
            if got.output is not None and "done" in got.output["stdout"]:
                break
            got = ex.execute(call("command_session", action="read", session_id=sid, wait_s=0.2))
        after = ex.execute(call("command_session", action="read", session_id=sid, wait_s=0))
    reported = [w.path for r in (started, sent, got, after) for w in r.effects.write]
    assert reported == ["late.txt"]
