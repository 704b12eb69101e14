"""One canonical change set from whatever form a proposal came in.

SEARCH/REPLACE blocks become whole-file edits. A unified diff stays a diff while
``git apply`` takes it exactly; when it does not, ``relax_diff`` re-applies it hunk by hunk
with tolerant matching and the diff becomes whole-file edits too. Either way APPLY later
reproduces exactly the content that VALIDATE judged.
"""

from __future__ import annotations

from msgspec.structs import replace

from tidegate.errors import ErrorClass, PhaseError
from tidegate.records.proposal import FileEdit, Proposal, TreeView


def fold_edit_blocks(proposal: Proposal, tree: TreeView) -> tuple[Proposal, list[str]]:
    if not (proposal.search_replace and proposal.search_replace.strip()):
        return proposal, []
    # the parsers of a form are loaded when a proposal comes in that form
    from tidegate.validate.edit_blocks import EditBlockError, apply_edit_blocks, parse_edit_blocks

    edits = {e.path: e for e in proposal.edits}

    def read(path: str) -> bytes | None:
        return edits[path].content if path in edits else tree.read_bytes(path)

    try:
        contents, notes = apply_edit_blocks(parse_edit_blocks(proposal.search_replace), read)
    except EditBlockError as exc:
        raise PhaseError(
            ErrorClass.AST_VALIDATION_ERROR,
            f"the SEARCH/REPLACE blocks do not apply: {str(exc).splitlines()[0]}",
            f"The SEARCH/REPLACE blocks could not be applied to the repository at T0:\n{exc}",
        ) from exc
    for path, content in contents.items():
        executable = edits[path].executable if path in edits else tree.is_executable(path)
        edits[path] = FileEdit(path, content, executable)
    return replace(proposal, search_replace=None, edits=tuple(edits.values())), notes


def relax_diff(proposal: Proposal, tree: TreeView, git_error: str) -> tuple[Proposal, list[str]]:
    """Turn a diff git refused into whole-file edits, or explain precisely why it cannot."""
    from tidegate.validate.hunks import HunkError, apply_tolerantly

    assert proposal.diff is not None
    edited = {e.path for e in proposal.edits}
    try:
        result = apply_tolerantly(proposal.diff, tree.read_bytes, tree.is_executable)
    except HunkError as exc:
        raise PhaseError(
            ErrorClass.AST_VALIDATION_ERROR,
            f"the proposed diff does not apply to T0: {str(exc).splitlines()[0]}",
            f"The diff does not apply to the repository at T0.\n{exc}\n(git apply said: "
            f"{git_error.strip()})",
        ) from exc
    overlap = edited & set(result.contents)
    if overlap:
        raise PhaseError(
            ErrorClass.AST_VALIDATION_ERROR,
            f"changed both by the diff and by a whole-file edit: {', '.join(sorted(overlap))}",
        )
    edits = list(proposal.edits) + [
        FileEdit(path, content, result.executable.get(path, False))
        for path, content in result.contents.items()
    ]
    return replace(proposal, diff=None, edits=tuple(edits)), result.notes
