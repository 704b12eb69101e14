"""Reading plan.md / brief.md sections, review-report.md and roadmap.md. Strict like the
rest of the parser (see ``tidegate.ledger.parse``)."""

from __future__ import annotations

import re

from tidegate.ledger.markdown import TextFile, key_lines
from tidegate.ledger.model import PlanSection, ReviewReport, Verdict
from tidegate.ledger.parse import NONE, digest, enum_error

_PLAN_HEADING = re.compile(r"^(?P<id>[A-Za-z][A-Za-z0-9._-]*):\s*(?P<title>.*)$")
_VERIFY = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?Verify:(?:\*\*)?\s*(?P<cmd>.+?)\s*$")
_DEPENDS = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?Depends on:(?:\*\*)?\s*(?P<ids>.*?)\s*$", re.I)


def parse_plan(file: TextFile, item_ids: set[str], whole_for: str | None) -> dict[str, PlanSection]:
    """The sections headed ``ID: title`` for known items. ``whole_for``: an item that the
    whole file describes when it has no section of its own (the one item of a small task)."""
    sections: dict[str, PlanSection] = {}
    heads = file.headings()
    for n, (start, level, title) in enumerate(heads):
        m = _PLAN_HEADING.match(title.strip())
        if m is None or m.group("id") not in item_ids:
            continue
        item = m.group("id")
        if item in sections:
            raise file.error(
                start, f"second plan section for {item} (first at line {sections[item].line})"
            )
        end = next((i for i, lvl, _ in heads[n + 1 :] if lvl <= level), len(file))
        sections[item] = _section(file, item, start, end)
    if whole_for is not None and whole_for not in sections:
        sections[whole_for] = _section(file, whole_for, 0, len(file))
    return sections


def _section(file: TextFile, item: str, start: int, end: int) -> PlanSection:
    blocks: list[tuple[int, str]] = []
    for fence in file.fences:
        if not start <= fence.open < end or fence.info != "tidegate":
            continue
        if fence.close is None or fence.close >= end:
            raise file.error(fence.open, "```tidegate block opened here is never closed")
        body = file.lines[fence.open + 1 : fence.close]
        blocks.append((fence.open + 2, "".join(line + "\n" for line in body)))
    verify = depends = None
    for i in range(start, end):
        if file.fenced(i):
            continue
        vm, dm = _VERIFY.match(file.lines[i]), _DEPENDS.match(file.lines[i])
        if vm and verify is None:
            verify = vm.group("cmd").strip().strip("`").strip()
        if dm and depends is None:
            depends = tuple(d for d in re.split(r"[\s,]+", dm.group("ids")) if d and d not in NONE)
    return PlanSection(
        item=item,
        line=start + 1,
        digest=digest(file.lines[start:end]),
        edit_blocks=tuple(blocks),
        verify=verify or None,
        depends_on=depends or (),
    )


def parse_review(file: TextFile) -> ReviewReport:
    keys = key_lines(file, {"verdict", "refs"}, file.preamble_end())
    if "verdict" not in keys:
        raise file.error(
            0, "missing 'Verdict:' line (pending, approved, changes_requested, blocked)"
        )
    line = keys["verdict"]
    try:
        verdict = Verdict(line.value.strip())
    except ValueError:
        raise file.error(
            line.index, enum_error("verdict", line.value, [v.value for v in Verdict])
        ) from None
    raw = keys["refs"].value if "refs" in keys else ""
    refs = tuple(r for r in re.split(r"[\s,]+", raw) if r and r.lower() not in NONE)
    return ReviewReport(verdict, refs, line.index + 1)


def parse_roadmap(file: TextFile) -> tuple[str, ...]:
    found: dict[str, int] = {}
    for index, level, title in file.headings():
        m = _PLAN_HEADING.match(title.strip())
        if level != 2 or m is None:
            continue
        if m.group("id") in found:
            raise file.error(
                index,
                f"milestone {m.group('id')} listed twice (first at line {found[m.group('id')]})",
            )
        found[m.group("id")] = index + 1
    return tuple(found)
