"""The state root: where tidegate keeps run records, outside the workspace.

Chosen from ``--state-root``, else ``TIDEGATE_STATE_ROOT``, else the per-user state
directory (platformdirs). Validated before anything reads or writes it: no ``..``
component, not a symlink, not an existing non-directory, and not inside the workspace
(where a model working on the repository could reach it). It is canonicalised once and
each repository gets its own subdirectory.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import platformdirs

from tidegate.errors import UsageError

STATE_ROOT_ENV = "TIDEGATE_STATE_ROOT"


def resolve_state_root(explicit: str | None, workspace: Path) -> Path:
    raw = explicit or os.environ.get(STATE_ROOT_ENV) or platformdirs.user_state_dir("tidegate")
    path = Path(raw).expanduser()
    if ".." in path.parts:
        raise UsageError(f"state root {raw}: must not contain '..'")
    if path.is_symlink():
        raise UsageError(f"state root {raw}: is a symlink; give the real directory")
    if path.exists() and not path.is_dir():
        raise UsageError(f"state root {raw}: exists and is not a directory")
    canonical = path.resolve()
    work = workspace.resolve()
    if canonical == work or work in canonical.parents:
        raise UsageError(f"state root {canonical}: inside the workspace {work}; choose another")
    canonical.mkdir(parents=True, exist_ok=True, mode=0o700)
    return canonical


def repository_store(state_root: Path, common_dir: Path, name: str) -> Path:
    """The repository's own directory under the state root (stable per git directory)."""
    identity = hashlib.sha256(str(common_dir.resolve()).encode()).hexdigest()[:12]
    directory = state_root / f"{name}-{identity}"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory
