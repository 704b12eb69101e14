"""An agent's isolated copy of T0, and the capture of what it changed.

The agent gets a work tree ``work/`` whose ``.git`` is a file pointing at a git directory
of its own (``agent-git/``): HEAD is the T0 commit on a private branch, objects are read
from the user's repository through ``alternates`` and written to its own store. Whatever it
runs there — ``git add -A && git commit``, ``git stash``, ``git reset --hard``, branches,
config edits, hooks — changes only that directory: never the user's index, refs, stash or
work tree (they are not even writable to it under containment).

The capture never uses the agent's git directory (which it may have filled with hooks,
filters or an fsmonitor): tidegate reads the work tree through a git directory of its own
(``capture-git/``, fresh config, no drivers defined), so no file the agent wrote makes
tidegate's git run anything. The proposal is the difference between T0's tree and the
work tree as it is at the end (commits included, since a commit leaves its files in the
tree), as a binary-safe unified diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from tidegate.git.command import Git

_CAPTURE_CONFIG = (
    "-c", "core.fsmonitor=false",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.symlinks=true",
    "-c", "core.attributesFile=/dev/null",
    "-c", "diff.external=",
    "-c", "core.quotePath=false",
)  # fmt: skip


class AgentWorkspace(msgspec.Struct, frozen=True):
    root: Path
    workdir: Path
    agent_git: Path
    capture_git: Path
    t0_commit: str
    t0_tree: str
    objects: Path
    """The user's object store, read through ``alternates`` (visible read-only to the agent)."""


def prepare(shadow_root: Path, scratch: Path) -> AgentWorkspace:
    """A private copy of the shadow's T0 under ``scratch`` (an empty directory)."""
    shadow = Git(shadow_root)
    t0_commit = shadow.out("rev-parse", "--verify", "HEAD^{commit}")
    t0_tree = shadow.out("rev-parse", "--verify", "HEAD^{tree}")
    objects = Path(shadow.out("rev-parse", "--path-format=absolute", "--git-path", "objects"))
    workdir, agent_git, capture_git = (
        scratch / "work",
        scratch / "agent-git",
        scratch / "capture-git",
    )
    workdir.mkdir()
    host = Git(scratch)
    host.run("init", "-q", f"--separate-git-dir={agent_git}", str(workdir))
    (agent_git / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    agent = Git(workdir)
    agent.run("update-ref", "refs/heads/tidegate-t0", t0_commit)
    agent.run("symbolic-ref", "HEAD", "refs/heads/tidegate-t0")
    agent.run(*_CAPTURE_CONFIG, "read-tree", "-u", "--reset", "HEAD")
    host.run("init", "-q", "--bare", str(capture_git))
    (capture_git / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    return AgentWorkspace(scratch, workdir, agent_git, capture_git, t0_commit, t0_tree, objects)


def capture(ws: AgentWorkspace) -> str:
    """The agent's change against T0 as ``git diff --binary`` text ('' when none)."""
    git = Git(ws.root)
    index = ws.root / "capture.index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    base = ("--git-dir", str(ws.capture_git), "--work-tree", str(ws.workdir), *_CAPTURE_CONFIG)
    git.run(*base, "read-tree", ws.t0_tree, env=env)
    git.run(*base, "add", "-A", "--", ".", env=env)
    tree = git.run(*base, "write-tree", env=env).text.strip()
    diff = git.run(
        *base, "diff-tree", "-p", "--binary", "--full-index", "--no-renames", "--no-color",
        "--no-ext-diff", "--no-textconv", ws.t0_tree, tree,
    ).stdout  # fmt: skip
    index.unlink(missing_ok=True)
    return diff.decode("utf-8", "surrogateescape")


def agent_gitconfig(home: Path) -> None:
    """A home ``.gitconfig`` so the agent's own commits work (it has no user identity)."""
    (home / ".gitconfig").write_text(
        "[user]\n\tname = tidegate agent\n\temail = agent@tidegate.invalid\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
    )
    os.chmod(home / ".gitconfig", 0o600)
