"""APPLY and ROLLBACK: the only phases that change the shadow work tree."""

from __future__ import annotations

import os

from tidegate.errors import ErrorClass, GitError, PhaseError
from tidegate.flow.state import RunState
from tidegate.workspace.fs import LocalFS, creation_mode


def apply(state: RunState) -> str:
    """Bring the shadow to the candidate tree: ``git apply`` for the diff (``--3way`` if the
    plain apply is refused), a three-way ``git merge-file`` for whole-file edits; then check
    that every changed path of the shadow holds exactly the validated candidate's content."""
    proposal = state.attempt.proposal
    assert proposal is not None and state.attempt.candidate_tree is not None
    shadow = state.shadow
    shadow.will_write(state.attempt.changes)  # before any write: what ROLLBACK must undo
    try:
        _write(state)
    except BaseException:
        shadow.unknown()  # a write may have stopped half-way (a temp file left)
        raise
    mismatched = shadow.mismatched_paths(state.attempt.changes)
    if mismatched:
        raise PhaseError(
            ErrorClass.UNKNOWN,
            f"the shadow does not hold the validated candidate {state.attempt.candidate_tree[:12]} "
            f"at {', '.join(mismatched[:5])}",
        )
    return f"shadow holds the candidate tree {state.attempt.candidate_tree[:12]}"


def _write(state: RunState) -> None:
    proposal = state.attempt.proposal
    assert proposal is not None
    shadow = state.shadow
    if proposal.diff and proposal.diff.strip():
        diff = (proposal.diff if proposal.diff.endswith("\n") else proposal.diff + "\n").encode(
            "utf-8", "surrogateescape"
        )
        # Work tree only: writing the shadow's index would make git re-read every file the
        # checkout wrote in the same second ("racily clean"), which on a large repository
        # costs more than everything else APPLY does.
        plain = shadow.git.run("apply", "--whitespace=nowarn", "-", input=diff, check=False)
        if plain.returncode != 0:
            shadow.unknown()  # --3way writes the shadow's index (conflict stages) too
            try:
                shadow.git.run("apply", "--3way", "--whitespace=nowarn", "-", input=diff)
            except GitError as exc:
                raise PhaseError(
                    ErrorClass.AST_VALIDATION_ERROR,
                    "the diff did not apply in the shadow",
                    exc.stderr,
                ) from exc
    fs = LocalFS(shadow.path)
    for edit in proposal.edits:
        if edit.content is None:
            if fs.read(edit.path).kind != "missing":
                fs.remove(edit.path)
            continue
        content = _merged_content(state, edit.path, edit.content)
        mode = creation_mode(edit.executable)
        fs.write_file(edit.path, content, mode, f".tidegate-apply-{os.getpid()}")


def _merged_content(state: RunState, path: str, theirs: bytes) -> bytes:
    """Three-way merge of the shadow's content, T0's, and the edit (trivial at T0)."""
    ours = state.tree.read_bytes(path)
    if ours is None:
        return theirs
    t0 = state.repo.git.run(
        "cat-file", "--filters", f"--path={path}", f"{state.snapshot.commit}:{path}", check=False
    )
    if t0.returncode != 0:
        return theirs
    base = t0.stdout
    if ours == base:
        return theirs
    files = []
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        f = state.scratch / f"apply-merge.{name}"
        f.write_bytes(data)
        files.append(str(f))
    res = state.shadow.git.run("merge-file", "-p", *files, check=False)
    if res.returncode != 0:
        raise PhaseError(ErrorClass.AST_VALIDATION_ERROR, f"{path}: whole-file edit conflicts")
    return res.stdout


def rollback(state: RunState) -> str:
    """Restore the shadow to T0, whatever the failed attempt left (conflicts included)."""
    undone = state.shadow.reset()
    if undone is None:
        return "shadow reset to T0 in full"
    return f"shadow back at T0: undid the {undone} path(s) the attempt wrote"
