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

import msgspec

from tidegate.validate.languages import detect_language, parser_for

_ASKS_FOR_COMMENTS = re.compile(r"\bcomment|\bdocstring|\btranslat", re.IGNORECASE)


class Comment(msgspec.Struct, frozen=True):
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
    language = detect_language(path)
    if language is None or language == "json":
        return []
    old_lines = before.split(b"\n")
    new_lines = after.split(b"\n")
    replaced = _replaced_regions(old_lines, new_lines)
    if not replaced or not _may_touch_comments(language, before, old_lines, replaced):
        return []  # no parse needed: no replaced line can hold a comment
    old_comments = comments(path, before)
    new_comments = comments(path, after)
    if not old_comments or new_comments is None:
        return []
    problems: list[str] = []
    for _, i1, i2, j1, j2 in replaced:
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


def _replaced_regions(old: list[bytes], new: list[bytes]) -> list[tuple[str, int, int, int, int]]:
    """difflib's ``replace`` opcodes, computed only on what lies between the common prefix
    and suffix (difflib is quadratic; most changes touch a few lines of a long file)."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    matcher = difflib.SequenceMatcher(
        None, old[start : len(old) - end], new[start : len(new) - end], autojunk=False
    )
    return [
        (tag, i1 + start, i2 + start, j1 + start, j2 + start)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag == "replace"
    ]


def _may_touch_comments(
    language: str,
    before: bytes,
    old_lines: list[bytes],
    replaced: list[tuple[str, int, int, int, int]],
) -> bool:
    """A cheap, sound pre-check: can any replaced line of ``before`` be part of a comment?"""
    if language in _HASH_COMMENTS:
        return any(b"#" in old_lines[k] for _, i1, i2, _, _ in replaced for k in range(i1, i2))
    if b"/*" in before:
        return True  # a block comment could span any line
    return any(b"//" in old_lines[k] for _, i1, i2, _, _ in replaced for k in range(i1, i2))


_HASH_COMMENTS = frozenset({"python", "yaml", "toml"})


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
