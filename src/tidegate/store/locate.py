"""Where a repository's recorded runs are: the repository (one ``rev-parse``, started
without ``subprocess``), the state root validated as the engine validates it, and the
repository's store under it (``store.reading`` opens it read-only).

The regular case is answered here, on the standard library's core; a path git spells
oddly, or a repository or state root the engine refuses, is put to the engine's own
function (``workspace.repo.discover``, ``store.state_root.resolve_state_root``), so the
answer or the one-line error is the engine's.
"""

from __future__ import annotations

import os

from tidegate.disk.state_dir import user_state_dir
from tidegate.errors import UsageError
from tidegate.store.reading import STATE_ROOT_ENV, Irregular, Store, opened, sha256


def repository(path: str) -> tuple[str, str]:
    """The work tree and git common directory of the repository ``path`` is in; what the
    engine refuses raises its error (``UsageError``)."""
    try:
        return _probed(path)
    except Irregular:
        from pathlib import Path

        from tidegate.workspace.repo import discover

        found = discover(Path(path))
        return str(found.root), str(found.common_dir)


def _probed(path: str) -> tuple[str, str]:
    from tidegate.git.env import DISCOVERY, discovery_lines, probe

    path = os.path.expanduser(path)
    if not os.path.isdir(path):
        raise Irregular("no such directory")
    try:
        code, out = probe(path, DISCOVERY)
    except OSError as exc:
        raise Irregular("git cannot be started") from exc
    lines = discovery_lines(out.decode("utf-8", "surrogateescape"))
    if code != 0 or len(lines) != 6:
        raise Irregular("not a repository git describes in six lines")
    bare, inside, _git_dir, common, top, _head = lines
    if bare != "false" or inside != "false" or not top:
        raise Irregular("not a work tree")
    if not os.path.isabs(common):
        common = os.path.join(path, common)
    return os.path.realpath(top), os.path.realpath(common)


def is_repository(path: str) -> bool:
    """Whether ``path`` is in a repository the engine accepts."""
    try:
        repository(path)
    except UsageError:
        return False
    return True


def state_root(explicit: str | None, workspace: str | None, git_dir: str | None) -> str:
    """The canonical state root (``resolve_state_root`` without creating it)."""
    raw = explicit or os.environ.get(STATE_ROOT_ENV) or user_state_dir()
    path = os.path.normpath(os.path.expanduser(raw))
    refused = ".." in os.path.expanduser(raw).split("/") or os.path.islink(path)
    refused = refused or (os.path.exists(path) and not os.path.isdir(path))
    canonical = os.path.realpath(path)
    for owner in (workspace, git_dir):
        inside = None if owner is None else os.path.realpath(owner)
        if inside is not None and (canonical + "/").startswith(inside.rstrip("/") + "/"):
            refused = True
    if refused:
        from pathlib import Path

        from tidegate.store.state_root import resolve_state_root

        work = None if workspace is None else Path(workspace)
        common = None if git_dir is None else Path(git_dir)
        return str(resolve_state_root(explicit, work, create=False, git_dir=common))
    return canonical


def repository_store(explicit: str | None, root: str, common: str) -> Store | None:
    """The repository's store, or None when nothing was recorded for it."""
    state = state_root(explicit, root, common)
    identity = sha256(common.encode()).hexdigest()[:12]
    return opened(state, os.path.join(state, f"{os.path.basename(root)}-{identity}"))


def all_stores(explicit: str | None) -> list[Store]:
    """Every repository's store under the state root (``runs`` outside a repository)."""
    state = state_root(explicit, None, None)
    if not os.path.isdir(state):
        return []
    stores = (opened(state, os.path.join(state, name)) for name in sorted(os.listdir(state)))
    return [s for s in stores if s is not None]
