"""What each phase of the model planner asks the model for (the phase briefs) and how its
final answers are read: a change set (SEARCH/REPLACE blocks or a unified diff), checked
before VALIDATE so a broken one goes back for repair, and findings, one per line."""

from __future__ import annotations

import re
from collections.abc import Callable

from tidegate.records.proposal import Finding, Proposal, TreeView
from tidegate.validate.edit_blocks import EditBlockError, apply_edit_blocks, parse_edit_blocks
from tidegate.workspace.port import SecretFiles

_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\s*$", re.MULTILINE)
_DIFF_FENCE = re.compile(r"^```(?:diff|patch)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_DIFF_START = re.compile(r"^(diff --git |--- (?:a/|/dev/null))", re.MULTILINE)
_FINDING = re.compile(
    r"^\s*[-*]\s+(?:\[?(?P<sev>error|warning|info)\]?:?\s+)?"
    r"(?:(?P<path>[^\s:]*[./][^\s:]*):(?:(?P<line>\d+):)?\s+)?(?P<msg>\S.*)$",
    re.IGNORECASE,
)

PLAN_BRIEF = """\
Phase PLAN. Explore the repository with the read-only tools until you know what the goal \
needs; nothing can be changed in this phase. Then answer without calling tools: a short \
plan naming each file to change and what to change in it."""

PATCH_BRIEF = """\
Phase PATCH. Produce the change the plan describes. You may read files with the tools; \
you cannot write. Your final answer is the change itself, in one of two forms:

SEARCH/REPLACE blocks: the file's path alone on a line, then a line `<<<<<<< SEARCH`, \
the exact current lines (copied from the file as it is now), `=======`, the new lines, \
and `>>>>>>> REPLACE`. An empty SEARCH creates a new file. Use one block per place.

Or one unified diff in a ```diff fence, with a/ and b/ paths and correct context lines.

Do not put anything else that looks like a diff or an edit block in the answer."""

REVIEW_BRIEF = """\
Phase REVIEW. Inspect the repository with the read-only tools and report the problems \
that matter for the goal; change nothing. Answer without calling tools, one finding per \
line: `- error|warning|info PATH:LINE: message` (leave out PATH:LINE when there is no \
location). Report only what you observed."""


def parse_change_set(text: str) -> Proposal | None:
    """SEARCH/REPLACE blocks or a unified diff from a final answer; None when neither."""
    if _SEARCH.search(text):
        return Proposal(search_replace=text)
    fenced = _DIFF_FENCE.search(text)
    body = fenced.group(1) if fenced else None
    if body is None:
        start = _DIFF_START.search(text)
        if start is None:
            return None
        body = text[start.start() :]
        body = re.sub(r"\n```\s*\Z", "\n", body.rstrip() + "\n")
    if "@@" not in body and "Binary files" not in body and "GIT binary patch" not in body:
        return None
    return Proposal(diff=body if body.endswith("\n") else body + "\n")


def change_set_check(tree: TreeView, secrets: SecretFiles) -> Callable[[str], str | None]:
    """A repair request for an answer VALIDATE would refuse outright, else None. Blocks on
    a withheld (secret-shaped) file are refused before they are matched: a failed match
    quotes the file's nearest lines, which would hand the model its content."""

    def check(text: str) -> str | None:
        proposal = parse_change_set(text)
        if proposal is None:
            return (
                "Your answer holds no change set. Answer again with SEARCH/REPLACE blocks or "
                "one unified diff in a ```diff fence, as the phase instructions say."
            )
        if proposal.search_replace is None:
            return None
        try:
            blocks = parse_edit_blocks(proposal.search_replace)
            if withheld := sorted({b.path for b in blocks if secrets.withheld(b.path)}):
                return (
                    f"{', '.join(withheld)}: secret-shaped file(s), withheld from you; "
                    "leave them out of the change."
                )
            apply_edit_blocks(blocks, tree.read_bytes)
        except EditBlockError as exc:
            return (
                "Your SEARCH/REPLACE blocks do not apply to the files as they are now:\n"
                f"{exc}\nRead the file again and answer with corrected blocks."
            )
        return None

    return check


def parse_findings(text: str) -> list[Finding]:
    findings = []
    for line in text.splitlines():
        match = _FINDING.match(line)
        if match is None:
            continue
        severity = (match.group("sev") or "warning").lower()
        findings.append(
            Finding(
                message=match.group("msg").strip()[:1000],
                path=match.group("path"),
                line=int(match.group("line")) if match.group("line") else None,
                severity=severity,  # type: ignore[arg-type]
                source="model",
            )
        )
    return findings
