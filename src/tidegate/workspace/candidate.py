"""Turning a proposal into a candidate tree in git's object store, touching no work tree.

The candidate tree (T1) is T0 with the proposal applied, built through a temporary index:
``git apply --cached`` for the diff, ``hash-object`` + ``update-index`` for whole-file
edits. VALIDATE and AST_VALIDATE judge T1 before anything is written, and APPLY must then
reproduce exactly T1 in the shadow.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tidegate.errors import ErrorClass, GitError, PhaseError
from tidegate.git.command import Git
from tidegate.git.settings import IDENTITY, git_bool, no_index
from tidegate.records.proposal import Proposal
from tidegate.workspace.fs import UnsafePathError, check_relative
from tidegate.workspace.tree_edit import edit_tree
from tidegate.workspace.tree_walk import tree_entries


class DiffRefused(PhaseError):
    """``git apply`` refused the proposal's diff; ``stderr`` says why. VALIDATE may still
    apply it tolerantly."""

    def __init__(self, stderr: str) -> None:
        super().__init__(
            ErrorClass.AST_VALIDATION_ERROR,
            "the proposed diff does not apply to T0",
            f"The diff does not apply to the repository at T0. git said:\n{stderr.strip()}",
        )
        self.stderr = stderr


def build_candidate(
    git: Git,
    t0_commit: str,
    proposal: Proposal,
    index_file: Path,
    t0_index: Path | None = None,
    paths: set[str] | None = None,
) -> str:
    """Return the tree id of T0 + proposal. Raises AST_VALIDATION_ERROR if it cannot apply.

    ``paths``, every path the proposal names, lets the candidate be built from an index
    of those paths alone and T0's trees along them (``tree_edit``): a cost that follows
    the change, not the repository. Whenever that way is not certain to give the same
    tree (or refuses the proposal), the whole-index way below decides. ``t0_index``, an
    index already holding T0, saves reading the whole tree again."""
    if paths:
        tree = _by_paths(git, t0_commit, proposal, index_file, paths)
        if tree is not None:
            return tree
    env = {"GIT_INDEX_FILE": str(index_file), **IDENTITY}
    index_file.unlink(missing_ok=True)
    if t0_index is not None and t0_index.exists():
        shutil.copyfile(t0_index, index_file)
    else:
        git.run("read-tree", t0_commit, env=env)
    _apply(git, proposal, env)
    try:
        tree = git.out("write-tree", env=env)
    except GitError as exc:
        raise PhaseError(
            ErrorClass.AST_VALIDATION_ERROR,
            "the proposal leaves the tree in an unmergeable state",
            f"Applying the proposal left conflicts: {exc.stderr.strip()}",
        ) from exc
    index_file.unlink(missing_ok=True)
    return tree


def _by_paths(
    git: Git, t0_commit: str, proposal: Proposal, index_file: Path, paths: set[str]
) -> str | None:
    """The candidate through a scratch index holding only ``paths`` at T0, or None."""
    if _folds_names(git):
        return None  # the index would match a name to another spelling of it
    env = {"GIT_INDEX_FILE": str(index_file), **IDENTITY}
    index_file.unlink(missing_ok=True)
    try:
        known = tree_entries(git, t0_commit, sorted(paths))
        if known is not None:
            if any(kind == "tree" for _mode, kind, _oid in known.values()):
                return None  # a named path is a directory at T0
            before: dict[str, tuple[str, str]] | None = {
                path: (mode, oid) for path, (mode, _kind, oid) in known.items()
            }
        else:
            listed = git.run(
                "ls-tree",
                "-r",
                "-z",
                "--full-tree",
                t0_commit,
                "--",
                *sorted(paths),
                env={"GIT_LITERAL_PATHSPECS": "1", **no_index()},
            ).stdout
            before = _entries(listed, staged=False)
        if before is None or not set(before) <= paths:
            return None  # a named path is a directory at T0
        # T0's entries are what a diff applies to. Whole-file edits alone replace (or
        # remove) every one of them: git would drop none of those replacements (each path
        # is in T0, so it passed the same path checks), and leaving them out saves a read
        # and a write of the scratch index.
        has_diff = bool(proposal.diff and proposal.diff.strip())
        if before and (has_diff or not set(before) <= {e.path for e in proposal.edits}):
            info = b"".join(
                f"{mode} {oid}\t".encode() + os.fsencode(path) + b"\0"
                for path, (mode, oid) in before.items()
            )
            git.run("update-index", "-z", "--index-info", env=env, input=info)
        _apply(git, proposal, env)
        after = _entries(git.run("ls-files", "-s", "-z", env=env).stdout, staged=True)
    except (GitError, PhaseError):
        return None  # the whole-index way refuses it, in its own words
    finally:
        index_file.unlink(missing_ok=True)
    if after is None:
        return None  # unmerged
    changes: dict[str, tuple[str, str] | None] = {}
    for path in set(before) | set(after):
        if after.get(path) != before.get(path):
            changes[path] = after.get(path)
    if not set(changes) <= paths:
        return None
    return edit_tree(git, t0_commit, changes)


def _folds_names(git: Git) -> bool:
    """Does git match paths case-insensitively or unicode-normalised here? Then a path the
    proposal spells differently from T0 finds T0's entry in a whole index, and only there."""
    settings = git.core_settings()
    keys = ("core.ignorecase", "core.precomposeunicode")
    return any(git_bool(value) for key in keys for value in settings.get(key, []))


def _entries(raw: bytes, staged: bool) -> dict[str, tuple[str, str]] | None:
    """``ls-tree -z`` (mode type oid) or ``ls-files -s -z`` (mode oid stage) records as
    path -> (mode, oid); None if an entry is unmerged."""
    out: dict[str, tuple[str, str]] = {}
    for record in raw.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        fields = meta.decode().split()
        if staged:
            mode, oid, stage = fields
            if stage != "0":
                return None
        else:
            mode, _kind, oid = fields
        out[os.fsdecode(path)] = (mode, oid)
    return out


def _apply(git: Git, proposal: Proposal, env: dict[str, str]) -> None:
    """The proposal's diff and whole-file edits, into the index ``env`` names."""
    if proposal.diff and proposal.diff.strip():
        diff = proposal.diff if proposal.diff.endswith("\n") else proposal.diff + "\n"
        try:
            git.run(
                "apply",
                "--cached",
                "--3way",
                "--whitespace=nowarn",
                "-",
                env=env,
                input=diff.encode("utf-8", "surrogateescape"),
            )
        except GitError as exc:
            raise DiffRefused(exc.stderr) from exc
    entries: list[bytes] = []
    for edit in proposal.edits:
        try:
            # update-index drops a path it finds unsafe without failing: the change would
            # then "change nothing" instead of saying which path was wrong.
            check_relative(edit.path)
        except UnsafePathError as exc:
            raise PhaseError(
                ErrorClass.AST_VALIDATION_ERROR, f"a whole-file edit names an unsafe path: {exc}"
            ) from exc
        raw_path = edit.path.encode("utf-8", "surrogateescape")
        if edit.content is None:
            entries.append(b"0 " + b"0" * 40 + b"\t" + raw_path + b"\0")
            continue
        blob = git.run(
            "hash-object", "-w", "--stdin", f"--path={edit.path}", input=edit.content
        ).text.strip()
        mode = b"100755" if edit.executable else b"100644"
        entries.append(mode + b" " + blob.encode() + b"\t" + raw_path + b"\0")
    if entries:
        try:
            git.run("update-index", "-z", "--index-info", env=env, input=b"".join(entries))
        except GitError as exc:
            raise PhaseError(
                ErrorClass.AST_VALIDATION_ERROR,
                f"the proposed edits are inconsistent: {exc.stderr}",
            ) from exc
