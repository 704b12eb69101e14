"""Temporary directories that belong to a process rather than to a run (a sub-agent's
private copy of the workspace, containment's private TMPDIR and HOME of one command), and
their removal once that process is dead.

Each is made in the OS temp dir with a tidegate prefix and the owner's pid and kernel
start time recorded inside it (``claims.mark_owner``), the liveness test of run claims.
A process killed while its copy exists leaves it behind; ``tidegate recover`` removes
the copies whose owner is dead and keeps those of a live process. Only real directories
with the prefix, owned by this user, are considered: a symlink planted at such a name is
never followed, and a directory without a readable owner record is left alone (its owner
may be between making it and marking it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from pathlib import Path

from tidegate.disk.owners import SANDBOX_PREFIX, owner_alive, owner_in_name
from tidegate.exec.groups import kill_recorded
from tidegate.exec.trees import remove_tree
from tidegate.workspace.claims import all_claims, directory_owner, mark_owner
from tidegate.workspace.repo import Repository

SUBAGENT_PREFIX = "tidegate-subagent-"
AGENT_PREFIX = "tidegate-agent-"
"""An agent CLI's private copy and home (``planners.agent.run_isolated``)."""
OWNED_PREFIXES = (SUBAGENT_PREFIX, AGENT_PREFIX)
UNNAMED_SANDBOX_GRACE_S = 300.0
"""How old a sandbox directory without an owner in its name must be before recovery may
remove it: it is made a moment before bubblewrap starts, and removed a moment after."""


def make_owned_temp(prefix: str) -> Path:
    """A fresh directory in the OS temp dir, marked as this process's."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        mark_owner(path)
    except BaseException:
        remove_tree(path)
        raise
    return path


def remove_dead_owned(parent: Path | None = None, dry_run: bool = False) -> list[str]:
    """Remove the owned temporary directories (``OWNED_PREFIXES``) in ``parent`` (the OS
    temp dir) whose owner process is dead; the removed paths, sorted (``dry_run``: the
    paths, nothing removed)."""
    where = parent if parent is not None else Path(tempfile.gettempdir())
    removed = []
    for path, _st in _real_dirs(where, OWNED_PREFIXES):
        owner = directory_owner(path)
        if owner is None or owner.alive:
            continue
        if not dry_run:
            remove_tree(path)
        removed.append(str(path))
    return sorted(removed)


def claimed_temp_dirs(repo: Repository) -> list[Path]:
    """The temp dirs dead runs of ``repo`` worked in (their claims' ``temp``), besides this
    process's own: a run started with another ``TMPDIR`` recorded its commands' process
    groups there. Only absolute paths to real directories (never a link)."""
    own = os.path.realpath(tempfile.gettempdir())
    found: set[str] = set()
    for owner in all_claims(repo).values():
        temp = owner.paths.get("temp", "")
        if owner.alive or not os.path.isabs(temp) or os.path.islink(temp):
            continue
        if os.path.isdir(temp) and os.path.realpath(temp) != own:
            found.add(temp)
    return [Path(t) for t in sorted(found)]


def remove_dead_sandboxes_of(
    temps: list[Path], killed: list[int], dry_run: bool = False
) -> list[str]:
    """``remove_dead_sandboxes`` in this process's temp dir and in ``temps``
    (``claimed_temp_dirs``, read before the dead runs' claims were released)."""
    removed = remove_dead_sandboxes(killed=killed, dry_run=dry_run)
    for temp in temps:
        removed += remove_dead_sandboxes(temp, killed=killed, dry_run=dry_run)
    return sorted(removed)


def remove_dead_sandboxes(
    parent: Path | None = None, killed: list[int] | None = None, dry_run: bool = False
) -> list[str]:
    """Remove containment's private directories (``SANDBOX_PREFIX``) in ``parent`` (the
    OS temp dir) that no live process owns; the removed paths, sorted.

    A name made with ``owners.owned_prefix`` names its owner: the directory goes once that
    process is dead, after the process groups it recorded there are killed
    (``exec.groups``: its uncontained commands, which a kill of tidegate leaves running);
    their ids are added to ``killed``. ``dry_run``: the same lists, nothing removed or
    killed. A name without one (how ``launch`` names them today) goes only when
    no live process of this user refers to it (bubblewrap binds it by path, the contained
    processes have it in TMPDIR and HOME) and it is older than
    ``UNNAMED_SANDBOX_GRACE_S`` (its owner might be between making it and starting
    bubblewrap)."""
    where = parent if parent is not None else Path(tempfile.gettempdir())
    removed: list[str] = []
    unnamed: list[Path] = []
    for path, st in _real_dirs(where, (SANDBOX_PREFIX,)):
        owner = owner_in_name(path.name, SANDBOX_PREFIX)
        if owner is not None:
            if not owner_alive(*owner):
                stopped = kill_recorded(path, dry_run)
                if killed is not None:
                    killed += stopped
                if not dry_run:
                    remove_tree(path)
                removed.append(str(path))
        elif time.time() - st.st_mtime > UNNAMED_SANDBOX_GRACE_S:
            unnamed.append(path)
    if unnamed:
        used = _referenced(unnamed)
        for path in unnamed:
            if path not in used:
                if not dry_run:
                    remove_tree(path)
                removed.append(str(path))
    return sorted(removed)


def _real_dirs(where: Path, prefixes: tuple[str, ...]) -> list[tuple[Path, os.stat_result]]:
    """The real directories of this user in ``where`` whose names start with one of
    ``prefixes`` (a symlink or a file planted at such a name is left out)."""
    with contextlib.suppress(FileNotFoundError), os.scandir(where) as entries:
        candidates = [e for e in entries if e.name.startswith(prefixes)]
        found = []
        for entry in candidates:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                found.append((Path(entry.path), st))
        return found
    return []


def _referenced(paths: list[Path]) -> set[Path]:
    """Those of ``paths`` that a live process names in its command line (bubblewrap binds
    the directory by path for as long as the command runs) or its environment (TMPDIR
    and HOME of the contained processes). A command line that cannot be read counts as
    naming all of them: when in doubt, keep. An environment that cannot be read (another
    user's process, a zombie, one that is not dumpable) is only a second witness."""
    wanted = {os.fsencode(p): p for p in paths}
    used: set[Path] = set()
    with os.scandir("/proc") as procs:
        pids = [e.name for e in procs if e.name.isdigit()]
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue  # gone
        except OSError:
            return set(paths)
        with contextlib.suppress(OSError):
            text += b"\0" + Path(f"/proc/{pid}/environ").read_bytes()
        used.update(p for raw, p in wanted.items() if raw in text)
    return used
