"""What dead runs left: their shadows and scratch directories, removed; a run's own
scratch directory, made and claimed."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import msgspec

from tidegate.workspace.claims import Claim, all_claims, claim, release
from tidegate.workspace.repo import Repository
from tidegate.workspace.shadow.worktrees import (
    SCRATCH_PREFIX,
    SHADOW_PREFIX,
    admin,
    discard,
    registered,
)


class Leftovers(msgspec.Struct):
    shadows: list[str] = msgspec.field(default_factory=list)
    scratch: list[str] = msgspec.field(default_factory=list)


def remove_stale_shadows(repo: Repository) -> list[str]:
    """``remove_leftovers``, returning the shadows it removed."""
    return remove_leftovers(repo).shadows


def remove_leftovers(repo: Repository, dry_run: bool = False) -> Leftovers:
    """Remove the shadows and scratch directories of runs that are no longer alive
    (``dry_run``: only say which).

    A shadow whose run's claim names a live process (in this work tree or in another
    linked one) is left alone. Only paths with tidegate's own prefixes are ever removed,
    whatever a claim file says."""
    claims = all_claims(repo)
    out = Leftovers()
    for path in registered(repo):
        if not os.path.basename(path).startswith(SHADOW_PREFIX):
            continue
        if Path(path).resolve() == repo.root:
            continue
        run_id = os.path.basename(path)[len(SHADOW_PREFIX) :].rsplit("-", 1)[0]
        owner = claims.get(run_id)
        if owner is not None and owner.alive:
            continue
        out.shadows.append(path)
        if dry_run:
            continue
        discard(repo, Path(path))
        # The run's scratch directory was made beside its shadow (runs from before claims).
        for scratch in Path(path).parent.glob(f"{SCRATCH_PREFIX}{run_id}-*"):
            shutil.rmtree(scratch, ignore_errors=True)
    for owner in claims.values():
        if not owner.alive:
            _sweep(repo, owner, out, dry_run)
    if not dry_run:
        with admin(repo):
            repo.git.run("worktree", "prune", check=False)
    return out


def _sweep(repo: Repository, owner: Claim, out: Leftovers, dry_run: bool) -> None:
    """Remove what a dead run claimed, then its claim."""
    scratch = owner.paths.get("scratch", "")
    if os.path.basename(scratch).startswith(SCRATCH_PREFIX) and os.path.lexists(scratch):
        if not dry_run:
            shutil.rmtree(scratch, ignore_errors=True)
        out.scratch.append(scratch)
    shadow = owner.paths.get("shadow", "")
    if os.path.basename(shadow).startswith(SHADOW_PREFIX) and os.path.lexists(shadow):
        if shadow not in out.shadows:
            out.shadows.append(shadow)
        if not dry_run:
            discard(repo, Path(shadow))  # made, but never registered as a worktree
    if not dry_run:
        release(repo, owner.run_id)


def make_scratch(repo: Repository, run_id: str) -> Path:
    """The run's scratch directory in the OS temp dir, claimed for this process."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{run_id}-"))
    try:
        # ``temp``: where this process's commands record their process groups
        # (``exec.groups``), so that a recover run with another TMPDIR finds them too.
        claim(repo, run_id, scratch=str(scratch), temp=tempfile.gettempdir())
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return scratch
