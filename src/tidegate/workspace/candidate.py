"""Turning a proposal into a candidate tree in git's object store, touching no work tree.

The candidate tree (T1) is T0 with the proposal applied, built through a temporary index:
``git apply --cached`` for the diff, ``hash-object`` + ``update-index`` for whole-file
edits. VALIDATE and AST_VALIDATE judge T1 before anything is written, and APPLY must then
reproduce exactly T1 in the shadow.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tidegate.errors import ErrorClass, GitError, PhaseError
from tidegate.git import IDENTITY, Git
from tidegate.planners.base import Proposal
from tidegate.workspace.fs import UnsafePathError, check_relative


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
    git: Git, t0_commit: str, proposal: Proposal, index_file: Path, t0_index: Path | None = None
) -> str:
    """Return the tree id of T0 + proposal. Raises AST_VALIDATION_ERROR if it cannot apply.

    ``t0_index``, an index already holding T0, saves reading the whole tree again."""
    env = {"GIT_INDEX_FILE": str(index_file), **IDENTITY}
    index_file.unlink(missing_ok=True)
    if t0_index is not None and t0_index.exists():
        shutil.copyfile(t0_index, index_file)
    else:
        git.run("read-tree", t0_commit, env=env)
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
