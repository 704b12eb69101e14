"""Attack: a command (a model's ``command.run``, or a verify command a change planted)
goes looking for the host's secrets: the user's SSH key, another checkout next to the
workspace, the state root and the key that signs its records, tidegate's model key in the
environment. Under real bubblewrap none of it is there; the toolchain still works.

The CLI runs in a subprocess with a HOME of the test's own that holds ``.ssh/id_rsa``.
The planted values are not secret-shaped, so redaction cannot be what hides them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.exec.containment import probe
from tidegate.exec.guard import Clearance

pytestmark = pytest.mark.skipif(not probe().verified, reason=probe().reason)

SSH_KEY = "ssh-private-marker-4f1c"
OTHER_REPO = "other-repo-marker-77d2"
SIGNING_KEY = "9a0bc3d4" * 8  # a well-formed key (64 hex digits), so tidegate uses it
PROVIDER_VARS = {
    "OPENAI_API_KEY": "openai-marker-1111",
    "ANTHROPIC_API_KEY": "anthropic-marker-2222",
    "GITHUB_TOKEN": "github-marker-3333",
    "AWS_SECRET_ACCESS_KEY": "aws-marker-4444",
    "DB_PASSWORD": "db-marker-5555",
    "AWS_PROFILE": "aws-profile-marker-6666",
}


@pytest.fixture
def host(committed_repo: Repo, tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SSH_KEY + "\n")
    (home / "bin").mkdir()
    (home / "bin" / "mytool").write_text("#!/bin/sh\necho mytool ran\n")
    (home / "bin" / "mytool").chmod(0o755)
    other = committed_repo.root.parent / "other-checkout"
    other.mkdir()
    (other / "secret.txt").write_text(OTHER_REPO + "\n")
    state = tmp_path / "state-root"
    state.mkdir()
    (state / "checkpoint.key").write_text(SIGNING_KEY + "\n")
    (state / "checkpoint.key").chmod(0o600)
    return {"ws": committed_repo.root, "home": home, "other": other, "state": state}


def _env(host: dict[str, Path]) -> dict[str, str]:
    venv_bin = os.path.dirname(sys.executable)
    return {
        "HOME": str(host["home"]),
        "TIDEGATE_STATE_ROOT": str(host["state"]),
        "PATH": f"{host['home'] / 'bin'}:{venv_bin}:/usr/bin:/bin",
        **PROVIDER_VARS,
    }


def _command_run(host: dict[str, Path], command: str, containment: str = "required") -> dict:  # type: ignore[type-arg]
    argv = ["tools", "call", "command.run", "--args", json.dumps({"command": command})]
    argv += ["--workspace", str(host["ws"]), "--approval", "trusted-workspace"]
    argv += ["--containment", containment]
    res = tidegate_cli(*argv, env=_env(host))
    if res.returncode == 3:  # an uncontained command asks first: grant it, as a user would
        request = json.loads(res.stdout)["approval_request"]["request_id"]
        res = tidegate_cli(*argv, "--grant", request, env=_env(host))
    assert res.returncode in (0, 1), res.stderr
    out = json.loads(res.stdout)["output"]
    assert isinstance(out, dict)
    return out


def test_ssh_key_is_not_visible(host: dict[str, Path]) -> None:
    out = _command_run(host, f"cat {host['home']}/.ssh/id_rsa; cat ~/.ssh/id_rsa; ls -a ~")
    assert SSH_KEY not in out["stdout"] + out["stderr"]
    assert out["containment"]["backend"] == "bubblewrap"


def test_another_checkout_beside_the_workspace_is_not_visible(host: dict[str, Path]) -> None:
    out = _command_run(host, f"cat {host['other']}/secret.txt; ls {host['ws'].parent}")
    assert OTHER_REPO not in out["stdout"] + out["stderr"]
    assert "other-checkout" not in out["stdout"]


def test_state_root_and_signing_key_are_not_visible(host: dict[str, Path]) -> None:
    out = _command_run(host, f"ls -a {host['state']}; cat {host['state']}/checkpoint.key")
    assert SIGNING_KEY not in out["stdout"] + out["stderr"]
    assert "checkpoint.key" not in out["stdout"]


def test_toolchain_in_home_is_not_visible(host: dict[str, Path]) -> None:
    out = _command_run(host, "mytool")
    assert "mytool ran" not in out["stdout"] and out["exit_code"] != 0


def test_provider_keys_are_not_in_the_environment(host: dict[str, Path]) -> None:
    out = _command_run(host, "env")
    for name, value in PROVIDER_VARS.items():
        assert value not in out["stdout"], name
    assert f"HOME={host['home']}" not in out["stdout"]  # a private HOME instead


def test_provider_keys_are_dropped_uncontained_too(host: dict[str, Path]) -> None:
    out = _command_run(host, "env", containment="none")
    assert out["containment"]["backend"] == "none"
    for name, value in PROVIDER_VARS.items():
        assert value not in out["stdout"], name
    assert "PATH=" in out["stdout"]


def test_python_git_and_the_venv_still_work(host: dict[str, Path]) -> None:
    venv = os.path.dirname(sys.executable)
    out = _command_run(
        host,
        f"python -c pass && git --version && {venv}/pytest --version && "
        f"{sys.executable} -c 'import pydantic, pytest; print(\"imports ok\")'",
    )
    assert out["exit_code"] == 0, out["stderr"]
    assert "git version" in out["stdout"] and "imports ok" in out["stdout"]


def test_verify_command_sees_no_key_and_no_home(
    host: dict[str, Path], committed_repo: Repo
) -> None:
    """The verify command gets the same view: the run only succeeds if every probe fails."""
    committed_repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    committed_repo.commit_all()
    verify = (
        f'test -z "$OPENAI_API_KEY$ANTHROPIC_API_KEY$AWS_PROFILE" '
        f"&& ! cat {host['home']}/.ssh/id_rsa && ! ls {host['state']} "
        f"&& ! ls {host['other']} && {sys.executable} -c pass"
    )
    objective = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    res = tidegate_cli(
        "run",
        "--repo",
        str(committed_repo.root),
        "--objective",
        objective,
        "--verify",
        verify,
        "--containment",
        "required",
        "--max-attempts",
        "1",
        "--json",
        env=_env(host),
    )
    report = json.loads(res.stdout)
    assert res.returncode == 0, (report["message"], report["feedback"])
    assert report["containment"]["backend"] == "bubblewrap"


def test_a_state_root_inside_a_bound_tree_is_covered(tmp_path: Path) -> None:
    """Defence in depth: were the state root inside something the command sees (here the
    writable tree itself), an empty read-only tmpfs covers it."""
    from tidegate.exec.containment import ContainmentPolicy
    from tidegate.exec.runner import run_command, shell_argv

    ws = tmp_path / "ws"
    (ws / "state").mkdir(parents=True)
    (ws / "state" / "checkpoint.key").write_text(SIGNING_KEY)
    policy = ContainmentPolicy(required=True, network=False, writable=(ws,), hidden=(ws / "state",))
    res = run_command(
        shell_argv("ls -a state; cat state/checkpoint.key; touch state/x"),
        ws,
        20,
        tmp_path / "spill",
        containment=policy,
        clearance=Clearance.user(),
    )
    assert SIGNING_KEY not in res.stdout_tail and "checkpoint.key" not in res.stdout_tail
    assert not (ws / "state" / "x").exists()
    assert (ws / "state" / "checkpoint.key").read_text() == SIGNING_KEY


def test_configured_pass_through_reaches_verify_and_secret_names_are_refused(
    host: dict[str, Path], committed_repo: Repo
) -> None:
    committed_repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    committed_repo.commit_all()
    local = committed_repo.root / ".tidegate" / "config.toml"
    local.parent.mkdir(exist_ok=True)
    objective = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    argv = ["run", "--repo", str(committed_repo.root), "--objective", objective, "--json"]
    env = {**_env(host), "MY_TOOL_OPTS": "yes"}

    local.write_text('[containment]\nenv = ["OPENAI_API_KEY"]\n')
    refused = tidegate_cli(*argv, "--verify", "true", env=env)
    assert refused.returncode == 2 and "looks like a secret" in refused.stderr
    assert refused.stderr.count("\n") == 1

    local.write_text('[containment]\nenv = ["MY_TOOL_OPTS"]\n')
    res = tidegate_cli(*argv, "--verify", 'test "$MY_TOOL_OPTS" = yes', env=env)
    assert res.returncode == 0, json.loads(res.stdout)["feedback"]
