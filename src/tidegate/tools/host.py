"""Building an executor for an operator surface (``tidegate tools``, ``tidegate mcp``), and
the run that records its calls.

The workspace must be an existing directory. Artifacts and task checkpoints go under the
validated state root (never inside the workspace), in a directory per workspace path.

Runs are recorded in the run store of the repository that holds the workspace (the same
store ``tidegate run`` writes and ``tidegate runs`` / ``read`` show). A workspace outside
any repository (or in one without a first commit) has no such store, and ``read`` could not
find one keyed by a bare path, so there ``open_tool_run`` raises ``NotRecorded`` and the
surface says once that it records nothing; the calls themselves still run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from tidegate.errors import NotARepositoryError, UsageError
from tidegate.exec.guard import Origin
from tidegate.tools.context import ContainmentMode, ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, NetworkAccess, TaskMode
from tidegate.tools.recording import RunKind, ToolRun

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
    origin: Origin = Origin.USER,
) -> ToolExecutor:
    """An executor with every available tool active, for an operator-driven session.
    ``origin``: who chooses the calls (the user by hand, or an MCP client)."""
    from tidegate.config import load_policy
    from tidegate.store.state_root import resolve_state_root
    from tidegate.workspace.port import SecretFiles, WorkspacePort

    profile = ApprovalProfile(_choice(approval, PROFILES, "--approval"))
    task_mode = TaskMode(_choice(mode, MODES, "--mode"))
    net: NetworkAccess = _choice(network, NETWORK, "--network")  # type: ignore[assignment]
    contain: ContainmentMode = _choice(containment, CONTAINMENT, "--containment")  # type: ignore[assignment]
    if not workspace.is_dir():
        raise UsageError(f"--workspace {workspace}: not a directory")
    root = workspace.resolve()
    # The user's protected paths, read once as the session starts; nothing a call writes
    # changes them for this session (and tidegate's configuration is not writable by calls).
    loaded = load_policy(root)
    policy = loaded.config
    protected = policy.validate_.protected
    # Refused inside the repository that holds the workspace, its git directory included
    # (a linked work tree's lies outside it), before the root is created: as the run
    # store that records the calls would refuse it, but before anything is made there.
    owner, git_dir = _repository_of(root)
    state = resolve_state_root(state_root, owner, git_dir=git_dir)
    identity = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    tool_state = state / "tools" / f"{root.name}-{identity}"
    readable = policy.tools.readable_secrets
    context = ToolContext(
        workspace=WorkspacePort(root, secrets=SecretFiles(readable)),
        mode=task_mode,
        approval_profile=profile,
        network=net,
        containment=contain,
        origin=origin,
        grants=frozenset(grants),
        artifact_dir=tool_state / "artifacts",
        task_state_path=tool_state / "task.json",
        validation_command=validation_command,
        protected=protected,
        policy_notes=loaded.ignored,
    )
    return ToolExecutor(context, doubles=doubles, activate_all=True)


def _repository_of(root: Path) -> tuple[Path, Path | None]:
    """The work tree and git directory of the repository holding ``root`` (``root`` and
    None outside any repository)."""
    from tidegate.workspace.repo import discover

    try:
        repo = discover(root)
    except NotARepositoryError:
        return root, None
    return repo.root, repo.common_dir


class NotRecorded(Exception):
    """The workspace has no run store to record into (not in a repository with a commit)."""


SURFACES: Mapping[RunKind, str] = {"tools": "tools:cli", "mcp": "mcp:stdio"}


def open_tool_run(
    executor: ToolExecutor,
    kind: RunKind,
    state_root: str | None,
    settings: Mapping[str, object],
) -> ToolRun:
    """Open the workspace repository's run store, begin a run of ``kind`` in it and make
    it the executor's recorder.

    ``NotRecorded`` when the workspace is not in a repository with a commit; UsageError
    for a state root inside the repository; PersistenceError when the store cannot be
    opened or the start cannot be stored (then nothing has run). The store's SQLite
    connection belongs to the calling thread: record and finish from it."""
    from tidegate.store import StoreRecorder, open_run_store
    from tidegate.workspace.repo import discover

    root = executor.context.root
    try:
        repo = discover(root)
    except NotARepositoryError as exc:
        raise NotRecorded(str(exc)) from None
    store = open_run_store(repo.root, state_root)
    context = executor.context
    recorded = {
        "approval": context.approval_profile.value,
        "network": context.network,
        "containment": context.containment,
        "registry_hash": executor.registry.active_hash,
        "protected": list(context.protected),
        **settings,
    }
    run = ToolRun(
        StoreRecorder(store, kind=kind, pausable=False),
        kind=kind,
        repo=str(repo.root),
        workspace=str(root),
        mode=context.mode.value,
        read_only=context.mode.read_only,
        settings=recorded,
        surface=SURFACES[kind],
    )
    run.begin()
    executor.recorder = run.calls
    _keep_bytes(executor, state_root, repo, run.run_id)
    return run


def _keep_bytes(executor: ToolExecutor, state_root: str | None, repo: object, run_id: str) -> None:
    """Keep the bytes the session's calls replace or delete in the repository's directory
    in the state root (``store.blobs``), pruning old sessions by retention first."""
    from tidegate.store.blobs import ByteStore
    from tidegate.store.state_root import repository_store, resolve_state_root
    from tidegate.tools.undo_keep import CallKeeper, undo_retention

    root: Path = repo.root  # type: ignore[attr-defined]
    common: Path = repo.common_dir  # type: ignore[attr-defined]
    state = resolve_state_root(state_root, root, git_dir=common)
    store = ByteStore(repository_store(state, common, root.name))
    keeper = CallKeeper(store, run_id, executor.context.root, executor.context.workspace.secrets)
    keeper.prune(undo_retention(root))
    executor.keep_bytes(keeper)
