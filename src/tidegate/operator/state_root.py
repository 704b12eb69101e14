"""The operator state root: one directory that every operator command of a session shares
(meeting -> goals -> engineer -> review -> improvement curation), so that carry-over is
explicit rather than hidden global state.

The rules, checked before any durable read or write:

- a root spelled with a ``..`` component, a symlink, or an existing non-directory is
  refused;
- a safe root is canonicalised once and that path is used for the whole command;
- ``run`` commands and ``goal-curation read`` take the optional positional, else
  ``TIDEGATE_STATE_ROOT``, else the per-user default ``<user state dir>/operator``;
- ``meeting read``, ``improvement-curation read`` and ``review read`` *require* the
  positional and deliberately ignore the environment (a read must say where it reads);
- a read never creates the root: it must already be a directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tidegate.operator.errors import OperatorError

STATE_ROOT_ENV = "TIDEGATE_STATE_ROOT"


def default_root() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("tidegate")) / "operator"


def _validate(raw: str, origin: str) -> Path:
    path = Path(raw).expanduser()
    if not raw or "\x00" in raw:
        raise OperatorError(f"state root {raw!r} ({origin}): not a usable path")
    if ".." in path.parts:
        raise OperatorError(f"state root {raw} ({origin}): must not contain '..'")
    if path.is_symlink():
        raise OperatorError(f"state root {raw} ({origin}): is a symlink; give the real directory")
    if path.exists() and not path.is_dir():
        raise OperatorError(f"state root {raw} ({origin}): exists and is not a directory")
    return path.resolve()


def run_root(explicit: str | None, repo: Any = None) -> Path:
    """The root for a ``run`` command: validated, refused inside ``repo``'s work tree or
    git directory (a model working there could reach it), then created (mode 0700)."""
    root = _choose(explicit)
    if repo is not None:
        check_outside(root, repo.root, repo.common_dir)
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise OperatorError(f"state root {root}: cannot create it: {exc.strerror}") from exc
    return root


def read_root(explicit: str | None, *, required: str | None = None) -> Path:
    """The root for a read. ``required`` names the command (``"meeting read <base-type>"``)
    whose positional is mandatory; the environment is then not consulted."""
    if required is not None and explicit is None:
        raise OperatorError(
            f"missing required argument STATE_ROOT for `tidegate {required}`: "
            f"this read does not consult {STATE_ROOT_ENV}; pass the state root explicitly"
        )
    root = _choose(explicit)
    if not root.is_dir():
        raise OperatorError(f"state root {root}: does not exist (nothing has been recorded there)")
    return root


def _choose(explicit: str | None) -> Path:
    from tidegate.exec.guard import hide_state_root

    if explicit is not None:
        root = _validate(explicit, "argument")
    elif env := os.environ.get(STATE_ROOT_ENV):
        root = _validate(env, STATE_ROOT_ENV)
    else:
        root = _validate(str(default_root()), "default")
    hide_state_root(str(root))  # no command this process contains may read it
    return root


def check_outside(root: Path, workspace: Path, git_dir: Path) -> None:
    """A state root inside the workspace or its git directory is within a model's reach."""
    for owner, what in ((workspace, "the workspace"), (git_dir, "the repository's git directory")):
        inside = owner.resolve()
        if root == inside or inside in root.parents:
            raise OperatorError(f"state root {root}: inside {what} {inside}; choose another")
