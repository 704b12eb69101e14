"""The state root: where tidegate keeps run records, outside the workspace.

Chosen from ``--state-root``, else ``TIDEGATE_STATE_ROOT``, else the per-user state
directory (platformdirs). Validated before anything reads or writes it: no ``..``
component, not a symlink, not an existing non-directory, and not inside the workspace or
its git directory (where a model working on the repository could reach it). It is
canonicalised once; each repository gets its own subdirectory (named after the work tree
and a digest of its git directory), holding ``runs.sqlite3``. The checkpoint key lives in
the state root itself.

A state root that cannot be written (read-only, full, not permitted) fails before any run
starts, in one line naming it, what could not be done and the errno
(``StateRootUnusable``): exit 2 when the operator must choose another one, 1 when the
condition may pass (a full disk, an I/O error). A run store that cannot be opened stays a
``PersistenceError`` (PERSISTENCE_ERROR, exit 1), named the same way.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from tidegate.disk.linksafe import opened_dir
from tidegate.disk.state_dir import user_state_dir
from tidegate.errors import PersistenceError, TidegateError, UsageError
from tidegate.store.checkpoints import KEY_FILE, CheckpointKey
from tidegate.store.db import RunStore
from tidegate.store.faults import StoreFaults
from tidegate.workspace.repo import Repository, discover

STATE_ROOT_ENV = "TIDEGATE_STATE_ROOT"
STORE_FILE = "runs.sqlite3"
_OPERATOR_ERRNOS = frozenset(
    {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP}
)
"""Errors that stay until the operator gives another state root (exit 2)."""
_SQLITE_OPERATOR = frozenset({"SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM"})


class StateRootUnusable(TidegateError):
    """The state root cannot be created or written; nothing was run."""

    def __init__(self, root: Path, what: str, cause: BaseException) -> None:
        if isinstance(cause, OSError) and cause.errno is not None:
            name = errno.errorcode.get(cause.errno, str(cause.errno))
            reason = f"{cause.strerror or cause} ({name})"
            operator = cause.errno in _OPERATOR_ERRNOS
        else:
            name = str(getattr(cause, "sqlite_errorname", "") or type(cause).__name__)
            reason = f"{cause} ({name})"
            operator = name in _SQLITE_OPERATOR
        super().__init__(f"state root {root}: cannot {what}: {reason}")
        self.exit_code = 2 if operator else 1


@contextlib.contextmanager
def _state_root_step(root: Path, what: str) -> Iterator[None]:
    """Turn an OS or SQLite failure while setting up ``root`` into ``StateRootUnusable``."""
    try:
        yield
    except OSError as exc:
        raise StateRootUnusable(root, what, exc) from exc


def resolve_state_root(
    explicit: str | None,
    workspace: Path | None,
    *,
    create: bool = True,
    git_dir: Path | None = None,
) -> Path:
    """The validated, canonical state root (created unless ``create`` is False)."""
    raw = explicit or os.environ.get(STATE_ROOT_ENV) or user_state_dir()
    path = Path(raw).expanduser()
    if ".." in path.parts:
        raise UsageError(f"state root {raw}: must not contain '..'")
    if path.is_symlink():
        raise UsageError(f"state root {raw}: is a symlink; give the real directory")
    if path.exists() and not path.is_dir():
        raise UsageError(f"state root {raw}: exists and is not a directory")
    canonical = path.resolve()
    for owner, what in ((workspace, "the workspace"), (git_dir, "the repository's git directory")):
        if owner is None:
            continue
        inside = owner.resolve()
        if canonical == inside or inside in canonical.parents:
            raise UsageError(f"state root {canonical}: inside {what} {inside}; choose another")
    if create:
        with _state_root_step(canonical, "create it"):
            canonical.mkdir(parents=True, exist_ok=True, mode=0o700)
    from tidegate.exec.guard import hide_state_root

    hide_state_root(str(canonical))
    return canonical


def repository_store(state_root: Path, common_dir: Path, name: str, *, create: bool = True) -> Path:
    """The repository's own directory under the state root (stable per git directory)."""
    identity = hashlib.sha256(str(common_dir.resolve()).encode()).hexdigest()[:12]
    directory = state_root / f"{name}-{identity}"
    if create:
        with (
            _state_root_step(state_root, f"create the repository's directory {directory.name}"),
            opened_dir(state_root, directory.name, create=True),  # a link there: refused
        ):
            pass
    return directory


def open_run_store(
    repo_path: Path,
    explicit: str | None,
    *,
    faults: StoreFaults | None = None,
    repo: Repository | None = None,
) -> RunStore:
    """The repository's run store, for writing: state root validated and created, the
    checkpoint key loaded (or created). ``repo``: ``repo_path`` already discovered."""
    if repo is None:
        repo = discover(repo_path)
    root = resolve_state_root(explicit, repo.root, git_dir=repo.common_dir)
    if os.statvfs(root).f_flag & os.ST_RDONLY:  # named as such, not as a failed write
        raise StateRootUnusable(root, "write", OSError(errno.EROFS, os.strerror(errno.EROFS)))
    directory = repository_store(root, repo.common_dir, repo.root.name)
    with _state_root_step(root, "create the checkpoint key"):
        key = CheckpointKey.load_or_create(root)
    try:
        return RunStore(directory / STORE_FILE, key=key, faults=faults)
    except PersistenceError as exc:
        # Still PERSISTENCE_ERROR (the store cannot be written or read), but named by the
        # state root and the SQLite or OS code, not by a bare path.
        unusable = StateRootUnusable(
            root, f"open the run store {directory.name}/{STORE_FILE}", exc.__cause__ or exc
        )
        raise PersistenceError(str(unusable)) from exc


def read_run_store(repo: Repository, explicit: str | None) -> RunStore | None:
    """The repository's run store opened read-only, or None when nothing was recorded.
    Creates nothing: not the state root, not the store, not the key."""
    root = resolve_state_root(explicit, repo.root, create=False, git_dir=repo.common_dir)
    path = repository_store(root, repo.common_dir, repo.root.name, create=False) / STORE_FILE
    return _read_only(root, path)


def read_all_run_stores(explicit: str | None) -> list[RunStore]:
    """Every repository's store under the state root, read-only (for ``runs`` outside a
    repository)."""
    root = resolve_state_root(explicit, None, create=False)
    if not root.is_dir():
        return []
    stores = [_read_only(root, p / STORE_FILE) for p in sorted(root.iterdir()) if p.is_dir()]
    return [s for s in stores if s is not None]


def _read_only(root: Path, path: Path) -> RunStore | None:
    if not path.is_file():
        return None
    key = None
    if (root / KEY_FILE).is_file():
        try:
            key = CheckpointKey.load(root / KEY_FILE)
        except UsageError:
            key = None  # reading still works; checkpoints then show as unverifiable
    return RunStore.open_read_only(path, key=key)
