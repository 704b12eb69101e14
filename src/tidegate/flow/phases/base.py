"""The shared base of every mode: PREFLIGHT, CONTEXT, EXPLORE (all read-only)."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass, PhaseError
from tidegate.flow.state import RunState
from tidegate.git.settings import no_index
from tidegate.workspace.tree_walk import root_tree, tree_entries

_PATH_TOKEN = re.compile(r"[\w./-]+\.[A-Za-z0-9]+|[\w.-]+/[\w./-]+")


def preflight(state: RunState) -> str:
    """The shadow exists and is at T0; the main repository is still there."""
    if not (state.repo.root / ".git").exists():
        raise PhaseError(ErrorClass.UNKNOWN, f"{state.repo.root}: the repository disappeared")
    if state.shadow.head_file() == state.snapshot.commit:
        return f"shadow at {state.snapshot.commit[:12]}"
    head = state.shadow.git.rev_parse("HEAD")  # symbolic, or not T0: git decides
    if head != state.snapshot.commit:
        raise PhaseError(ErrorClass.UNKNOWN, "the shadow worktree is not at T0")
    return f"shadow at {state.snapshot.commit[:12]}"


def context(state: RunState) -> str:
    """Summarise the dirty state T0 captured: what differs from HEAD, what is staged."""
    git = state.repo.git
    snap = state.snapshot
    tree_only = no_index()  # a tree-to-tree listing: the work tree's index is not needed
    if snap.tree is not None and root_tree(git, snap.head) == snap.tree:
        dirty_count = 0  # T0 is HEAD's tree (through the kept reader: no process)
    else:
        dirty = git.run(
            "diff-tree", "-r", "--name-only", "-z", snap.head, snap.commit, env=tree_only
        )
        dirty_count = len([p for p in dirty.stdout.split(b"\0") if p])
    staged_count = 0
    if snap.index_tree is not None and snap.index_tree == snap.tree:
        staged_count = dirty_count  # nothing unstaged: the index is T0's tree
    elif snap.index_tree is not None:
        staged = git.run(
            "diff-tree", "-r", "--name-only", "-z", snap.head, snap.index_tree, env=tree_only
        )
        staged_count = len([p for p in staged.stdout.split(b"\0") if p])
    return f"T0 differs from HEAD in {dirty_count} path(s), {staged_count} staged"


def explore(state: RunState) -> str:
    """Resolve the paths the objective names against T0 and record their hashes."""
    candidates = sorted(
        token
        for token in set(_PATH_TOKEN.findall(state.request.objective))
        if not token.startswith("/") and ".." not in token.split("/")
    )
    if not candidates:
        return "the objective names no paths"
    known = tree_entries(state.repo.git, state.snapshot.commit, candidates)
    if known is not None:
        for name, (_mode, _kind, oid) in known.items():
            state.context_files[name] = oid
        return f"{len(state.context_files)} named path(s) found at T0"
    res = state.repo.git.run(
        "ls-tree",
        "-z",
        "--full-tree",
        state.snapshot.commit,
        "--",
        *candidates,
        env={"GIT_LITERAL_PATHSPECS": "1"},
        check=False,
    )
    if res.returncode != 0:
        return f"could not resolve the named paths: {res.stderr.strip()[:200]}"
    for entry in res.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        state.context_files[path.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    return f"{len(state.context_files)} named path(s) found at T0"
