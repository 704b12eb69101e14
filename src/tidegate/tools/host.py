"""Building an executor for an operator surface (``tidegate tools``, ``tidegate mcp``).

The workspace must be an existing directory. Artifacts and task checkpoints go under the
validated state root (never inside the workspace), in a directory per workspace path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from tidegate.errors import UsageError
from tidegate.tools.context import ContainmentMode, ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, NetworkAccess, TaskMode

PROFILES = tuple(p.value for p in ApprovalProfile)
MODES = tuple(m.value for m in TaskMode)
NETWORK = ("allowed", "denied", "policy_gated")
CONTAINMENT = ("auto", "required", "none")


def _choice(value: str, choices: tuple[str, ...], option: str) -> str:
    if value not in choices:
        raise UsageError(f"{option}: {value!r} is not one of {', '.join(choices)}")
    return value


def open_executor(
    workspace: Path,
    *,
    approval: str = "balanced",
    mode: str = "patch",
    network: str = "policy_gated",
    containment: str = "auto",
    doubles: bool = False,
    state_root: str | None = None,
    validation_command: str | None = None,
    grants: Iterable[str] = (),
) -> ToolExecutor:
    """An executor with every available tool active, for an operator-driven session."""
    from tidegate.store.state_root import resolve_state_root
    from tidegate.workspace.port import WorkspacePort

    profile = ApprovalProfile(_choice(approval, PROFILES, "--approval"))
    task_mode = TaskMode(_choice(mode, MODES, "--mode"))
    net: NetworkAccess = _choice(network, NETWORK, "--network")  # type: ignore[assignment]
    contain: ContainmentMode = _choice(containment, CONTAINMENT, "--containment")  # type: ignore[assignment]
    if not workspace.is_dir():
        raise UsageError(f"--workspace {workspace}: not a directory")
    root = workspace.resolve()
    state = resolve_state_root(state_root, root)
    identity = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    tool_state = state / "tools" / f"{root.name}-{identity}"
    context = ToolContext(
        workspace=WorkspacePort(root),
        mode=task_mode,
        approval_profile=profile,
        network=net,
        containment=contain,
        grants=frozenset(grants),
        artifact_dir=tool_state / "artifacts",
        task_state_path=tool_state / "task.json",
        validation_command=validation_command,
    )
    return ToolExecutor(context, doubles=doubles, activate_all=True)
