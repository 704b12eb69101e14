"""Running an agent CLI non-interactively on its isolated workspace, contained.

The agent's process runs under the command runner with a containment policy: its work
tree, its own git directory and its private home writable; everything else read-only
(the user's work tree and ``.git`` included); its own pid namespace, so nothing it starts
outlives it. Its network is left open, because it must reach its model endpoint (bubblewrap
cannot filter by destination): containment here is about files and processes.

Its environment is built, not inherited: a PATH, the locale, its private HOME, the
contract's variables, its endpoint, and exactly one credential — the variable its contract
names for the model key — read from tidegate's environment.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from tidegate.agents.contracts import AgentContract, expand
from tidegate.agents.workspace import AgentWorkspace, agent_gitconfig
from tidegate.errors import UsageError

if TYPE_CHECKING:
    from tidegate.exec.containment import ContainmentPolicy

ENV_FILE = "/usr/bin/env"


class AgentEndpoint(msgspec.Struct, frozen=True):
    model: str
    base_url: str

    @classmethod
    def of(cls, contract: AgentContract, model: str | None) -> AgentEndpoint:
        spec = contract.model
        return cls(
            model or spec.default, os.environ.get(spec.base_url_env) or spec.base_url_default
        )


class AgentRun(msgspec.Struct, frozen=True):
    exit_code: int | None
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    containment: dict[str, object]
    argv0: str


def prepare_home(contract: AgentContract, home: Path, values: dict[str, str]) -> None:
    """The agent's private home: a git identity and the contract's prepared files."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    agent_gitconfig(home)
    for prepared in contract.files:
        target = home / expand(prepared.path, values)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        target.write_text(expand(prepared.content, values))


def agent_env(contract: AgentContract, home: Path, values: dict[str, str]) -> dict[str, str]:
    program_dir = str(Path(values["program"]).parent)
    env = {
        "PATH": f"{program_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    env.update({k: expand(v, values) for k, v in contract.env.items()})
    env[contract.model.base_url_env] = values["base_url"]
    env.update(agent_credentials(contract))
    return env


def agent_credentials(contract: AgentContract) -> dict[str, str]:
    """Exactly one credential: the model key variable the contract names, if set."""
    key = os.environ.get(contract.model.key_env)
    return {contract.model.key_env: key} if key else {}


def _installed(contract: AgentContract) -> str:
    """The agent's program, found as its contract finds it; refused when not installed."""
    program = contract.find_program()
    if program is None:
        raise UsageError(
            f"agent {contract.name!r}: `{contract.program}` is not installed (install it with: "
            f"{contract.install})"
        )
    return program


def _values(
    contract: AgentContract,
    program: str,
    home: Path,
    ws: AgentWorkspace,
    endpoint: AgentEndpoint,
    task: str,
) -> dict[str, str]:
    """What the contract's ``{placeholders}`` expand to."""
    return {
        "program": program,
        "home": str(home),
        "workdir": str(ws.workdir),
        "model": endpoint.model,
        "base_url": endpoint.base_url,
        "key_env": contract.model.key_env,
        "task": task,
    }


def _policy(
    ws: AgentWorkspace,
    home: Path,
    program: str,
    containment: Literal["auto", "required"],
    read_only: bool,
    masked: tuple[Path, ...],
) -> ContainmentPolicy:
    """The agent's containment: its home (and, unless read-only, its tree and git
    directory) writable; T0's objects (and, read-only, its tree) visible read-only."""
    from tidegate.exec.containment import ContainmentPolicy

    return ContainmentPolicy(
        required=containment == "required" or read_only,
        network=True,
        writable=(home,) if read_only else (ws.workdir, ws.agent_git, home),
        # its git reads T0's objects from there; a read-only run sees its tree read-only
        readonly_overlays=(ws.objects, ws.workdir, ws.agent_git) if read_only else (ws.objects,),
        # its own installation (a uv tool venv in HOME, say) is visible, read-only
        executables=(os.path.realpath(program),),
        masked=masked,
    )


def run_batch(
    contract: AgentContract,
    ws: AgentWorkspace,
    task: str,
    endpoint: AgentEndpoint,
    *,
    home: Path,
    timeout_s: float,
    containment: Literal["auto", "required", "none"],
    spill_dir: Path,
    read_only: bool = False,
    masked: tuple[Path, ...] = (),
) -> AgentRun:
    """Run the agent's batch argv on ``ws``. ``read_only``: its work tree and git
    directory are bound read-only (only its private home is writable), which needs
    containment: a dry run that cannot be enforced is refused, not run. ``masked``: files
    of its tree it sees empty and read-only under containment (withheld secrets)."""
    from tidegate.exec.guard import Clearance, Origin
    from tidegate.exec.runner import run_command

    program = _installed(contract)
    values = _values(contract, program, home, ws, endpoint, task)
    prepare_home(contract, home, values)
    env = agent_env(contract, home, values)
    argv = [expand(a, values) for a in contract.batch.argv]
    # HOME is set on the agent itself: containment gives every command a private HOME of
    # its own, and the agent's prepared configuration lives in this one.
    argv = [ENV_FILE, f"HOME={home}", *argv]
    if read_only and containment == "none":
        raise UsageError(f"agent {contract.name!r}: a read-only run needs containment")
    policy = None
    if containment != "none":
        policy = _policy(ws, home, program, containment, read_only, masked)
    started = time.monotonic()
    result = run_command(
        argv,
        ws.workdir,
        timeout_s,
        spill_dir,
        env=env,
        label="agent",
        # ``none`` comes only from the user's own --containment none (agent planners
        # default to required): their approval to run the agent uncontained
        clearance=Clearance(Origin.AGENT, "--containment none" if containment == "none" else None),
        containment=policy,
        credentials=agent_credentials(contract),
    )
    return AgentRun(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration_s=time.monotonic() - started,
        stdout_tail=result.stdout_tail,
        stderr_tail=result.stderr_tail,
        containment=result.containment.to_json(),
        argv0=program,
    )
