"""VALIDATE and AST_VALIDATE: judge the candidate tree before the shadow is touched."""

from __future__ import annotations

from tidegate.errors import ErrorClass, PhaseError
from tidegate.flow.state import RunState
from tidegate.git.command import Git
from tidegate.validate.comments import objective_allows_comment_changes, rewritten_comments
from tidegate.validate.config_guard import config_problems
from tidegate.validate.normalise import fold_edit_blocks, relax_diff
from tidegate.validate.policy import check_change, diff_and_stats, nested_writes
from tidegate.validate.shapes import shape_problems
from tidegate.validate.syntax import check_change as check_new_contents
from tidegate.workspace.candidate import DiffRefused, build_candidate
from tidegate.workspace.changes import PathChange


def validate(state: RunState) -> str:
    assert state.attempt.proposal is not None
    git = state.repo.git
    proposal, notes = fold_edit_blocks(state.attempt.proposal, state.tree)
    named = diff_paths(git, proposal.diff) if proposal.diff else set()
    if proposal.diff and proposal.edits:
        overlap = named & {e.path for e in proposal.edits}
        if overlap:
            raise PhaseError(
                ErrorClass.AST_VALIDATION_ERROR,
                f"changed both by the diff and by a whole-file edit: {', '.join(sorted(overlap))}",
            )
    named |= {e.path for e in proposal.edits}
    deleted = {e.path for e in proposal.edits if e.content is None}
    if proposal.diff:
        deleted |= diff_deletions(git, proposal.diff, named)
    if nested := nested_writes(named, deleted):
        raise PhaseError(
            ErrorClass.AST_VALIDATION_ERROR,
            f"the change breaks the diff policy: {nested[0]}",
            "The change was refused by the diff policy:\n" + "\n".join(f"  {p}" for p in nested),
        )
    index_file = state.scratch / f"candidate-{state.attempt.number}.index"
    t0, t0_index = state.snapshot.commit, state.snapshot.index_file
    try:
        tree = build_candidate(git, t0, proposal, index_file, t0_index, paths=named)
    except DiffRefused as exc:
        proposal, relaxed = relax_diff(proposal, state.tree, exc.stderr)
        notes += relaxed
        named = diff_paths(git, proposal.diff) if proposal.diff else set()
        named |= {e.path for e in proposal.edits}
        tree = build_candidate(git, t0, proposal, index_file, t0_index, paths=named)
    state.attempt.proposal = proposal  # APPLY reproduces exactly what is judged here
    state.notes.extend(f"attempt {state.attempt.number}: {note}" for note in notes)
    changes, stats = diff_and_stats(git, state.snapshot.commit, tree)
    if not changes:
        raise PhaseError(ErrorClass.LOGIC, "the proposal changes nothing at T0", retryable=False)
    problems = check_change(
        git, changes, stats, state.shadow.path, state.config.validate_, state.repo.root
    )
    changed = {c.path for c in changes}
    problems.extend(config_problems(git, state.snapshot.commit, tree, changed))
    problems.extend(shape_problems(git, changes, state.repo.index_path))
    if state.config.validate_.comment_guard and not objective_allows_comment_changes(
        state.request.objective
    ):
        problems.extend(_comment_rewrites(git, changes))
    if problems:
        raise PhaseError(
            ErrorClass.AST_VALIDATION_ERROR,
            f"the change breaks the diff policy: {problems[0]}",
            "The change was refused by the diff policy:\n" + "\n".join(f"  {p}" for p in problems),
        )
    state.attempt.candidate_tree = tree
    state.attempt.changes = changes
    suffix = f"; {len(notes)} relaxed match(es)" if notes else ""
    return f"{len(changes)} path(s) in the candidate tree {tree[:12]}{suffix}"


def _comment_rewrites(git: Git, changes: list[PathChange]) -> list[str]:
    pairs = [
        (c.path, c.before.blob, c.after.blob)
        for c in changes
        if c.before is not None and c.after is not None
        if c.before.is_regular and c.after.is_regular
    ]
    blobs = git.read_blobs([blob for _, old, new in pairs for blob in (old, new)])
    problems: list[str] = []
    for path, old, new in pairs:
        problems.extend(rewritten_comments(path, blobs[old], blobs[new]))
    return problems


def ast_validate(state: RunState) -> str:
    report = check_new_contents(state.repo.git, state.attempt.changes)
    state.notes.extend(f"attempt {state.attempt.number}: {note}" for note in report.notes)
    if report.problems:
        raise PhaseError(
            ErrorClass.AST_VALIDATION_ERROR,
            f"the change breaks a file: {report.problems[0]}",
            "The change introduces syntax or scope errors:\n"
            + "\n".join(f"  {p}" for p in report.problems),
        )
    slowest = max(report.parse_ms.values(), default=0.0)
    notes = f", {len(report.notes)} note(s)" if report.notes else ""
    return f"{report.checked} file(s) parsed (slowest {slowest:.1f} ms){notes}"


def diff_paths(git: Git, diff: str) -> set[str]:
    """Every path a unified diff names (both sides of a rename), as git parses it."""
    out = git.run(
        "apply", "--numstat", "-z", "-", input=diff.encode("utf-8", "surrogateescape"), check=False
    ).stdout
    paths: set[str] = set()
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        record = fields[i]
        if not record:
            i += 1
            continue
        tail = record.split(b"\t", 2)[-1]
        if tail:
            paths.add(tail.decode("utf-8", "surrogateescape"))
            i += 1
        else:  # a rename: the old and new names follow as two fields
            paths.update(f.decode("utf-8", "surrogateescape") for f in fields[i + 1 : i + 3])
            i += 3
    return paths


def diff_deletions(git: Git, diff: str, named: set[str]) -> set[str]:
    """The paths a unified diff deletes, from ``git apply --summary``, which writes each
    name as it is (unquoted), one record a line. A name holding a newline (``named``: every
    path the diff names) is left out, and so is a record that could be a piece of one:
    the caller then treats the path as written, the safe side."""
    out = git.run(
        "apply", "--summary", "-", input=diff.encode("utf-8", "surrogateescape"), check=False
    ).stdout
    prefix = b" delete mode "
    found = {
        line[len(prefix) :].split(b" ", 1)[1].decode("utf-8", "surrogateescape")
        for line in out.split(b"\n")
        if line.startswith(prefix) and b" " in line[len(prefix) :]
    }
    spanning = [p for p in named if "\n" in p]
    return {p for p in found if not any(p in name for name in spanning)}
