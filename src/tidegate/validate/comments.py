"""The comment guard: a change may not rewrite (or translate) existing comments unless the
objective asks for comment changes.

Comments are found with tree-sitter (every node whose type names a comment), so ``#`` in a
string is not a comment. The before and after files are aligned line by line; in every
replaced region, an old comment that disappears while a different comment appears is a
rewrite. Deleting code together with its comments, adding comments, and moving code with
its comments unchanged are all allowed.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass

from tidegate.validate.languages import detect_language, parser_for

_ASKS_FOR_COMMENTS = re.compile(r"\bcomment|\bdocstring|\btranslat", re.IGNORECASE)


@dataclass(frozen=True)
class Comment:
    line: int
    """0-based line where the comment starts."""
    text: str


def objective_allows_comment_changes(objective: str) -> bool:
    return bool(_ASKS_FOR_COMMENTS.search(objective))


def comments(path: str, data: bytes) -> list[Comment] | None:
    """Every comment of a file, or None when its language is not known."""
    language = detect_language(path)
    if language is None or language == "json":
        return None
    tree = parser_for(language).parse(data)
    found: list[Comment] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if "comment" in node.type:
            text = data[node.start_byte : node.end_byte].decode("utf-8", "replace")
            found.append(Comment(node.start_point[0], " ".join(text.split())))
            continue
        stack.extend(node.children)
    return sorted(found, key=lambda c: c.line)


def rewritten_comments(path: str, before: bytes, after: bytes) -> list[str]:
    """One line per comment the change rewrote: ``path:line: 'old' -> 'new'``."""
    old_comments = comments(path, before)
    new_comments = comments(path, after)
    if old_comments is None or new_comments is None or not old_comments:
        return []
    old_lines = before.split(b"\n")
    new_lines = after.split(b"\n")
    problems: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace":
            continue
        old = Counter(c.text for c in old_comments if i1 <= c.line < i2)
        new = Counter(c.text for c in new_comments if j1 <= c.line < j2)
        gone, added = old - new, new - old
        if gone and added:
            first_old = next(iter(gone))
            first_new = next(iter(added))
            problems.append(
                f"{path}:{i1 + 1}: comment rewritten: {_short(first_old)} -> {_short(first_new)}"
            )
    return problems


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
