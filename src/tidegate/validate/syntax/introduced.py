"""Before versus after: the syntax errors a change introduced."""

from __future__ import annotations

from tidegate.validate.scope.lines import LineDiff
from tidegate.validate.syntax.issue import SyntaxIssue


def introduced(
    before: list[SyntaxIssue] | None, after: list[SyntaxIssue], diff: LineDiff
) -> list[SyntaxIssue]:
    """The errors of ``after`` that the change introduced (doubtful ones never count).

    Each T0 error excuses at most one error after the change; an error is excused by

    1. a T0 error on one of the unchanged lines it covers (tree-sitter's recovery may start
       an ERROR on a changed line and extend over an untouched old error: that is the old
       error; the same line still erroneous is the common case);
    2. for an error entirely on changed lines, a T0 error with the same line text (ignoring
       whitespace) among the lines that hunk replaced (a re-indented broken line);
    3. for an error starting on an unchanged line, any T0 error with the same line text.

    Anything else is new. An error on changed lines is therefore always new unless the
    change merely re-indented an old broken line or tree-sitter folded it into the extent of
    an old error, and an old error left untouched is always excused: wherever the change
    causes an error (even on an unchanged line, e.g. by deleting a closing bracket), it is
    reported, because no T0 error can excuse it.
    """
    certain = [issue for issue in after if not issue.doubt]
    if before is None or not before or not certain:
        return certain
    free = list(before)  # T0 errors not used yet
    unresolved: list[SyntaxIssue] = []
    for issue in certain:  # rule 1
        old_lines = {diff.same[n] for n in issue.lines if n in diff.same}
        if not old_lines or not _excuse(free, lines=old_lines):
            unresolved.append(issue)
    new: list[SyntaxIssue] = []
    for issue in unresolved:  # rules 2 and 3
        if all(n in diff.changed for n in issue.lines):
            replaced = diff.old_range_of(issue.line)
            excused = _excuse(free, key=issue.key, within=replaced)
        else:
            excused = issue.line not in diff.changed and _excuse(free, key=issue.key)
        if not excused:
            new.append(issue)
    return sorted(new)


def _excuse(
    free: list[SyntaxIssue],
    *,
    lines: set[int] | None = None,
    key: str | None = None,
    within: range | None = None,
) -> bool:
    """Use up the first T0 error that matches, if any."""
    for i, old in enumerate(free):
        if lines is not None and not lines.intersection(old.lines):
            continue
        if key is not None and old.key != key:
            continue
        if within is not None and old.line not in within:
            continue
        del free[i]
        return True
    return False
