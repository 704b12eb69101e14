"""The structured objective format: edit blocks a person (or a script) writes by hand.

::

    Fix the sign in add().            <- free text before the first directive

    edit-file: calc.py
    replace: return a - b
    with: return a + b
    verify-contains: return a + b

    create-file: docs/NOTE.md
    content: <<<
    several lines,
    kept verbatim
    >>>

    delete-file: old.txt
    rename-file: a.txt
    to: b.txt
    chmod-file: run.sh
    executable: true
    patch-file: fix.diff

A value is the rest of its line, or a block opened by ``<<<`` (or ``<<<TAG``) and closed
by a line holding only ``>>>`` (or ``TAG``); a block's value keeps every line's newline.
After the first directive only directives, blank lines and ``#`` comments may appear.
Errors name the line.
"""

from __future__ import annotations

import re

import msgspec

from tidegate.errors import UsageError

STARTERS = ("edit-file", "create-file", "delete-file", "rename-file", "chmod-file", "patch-file")
_FOLLOWERS = {
    "edit-file": ("replace", "with", "verify-contains"),
    "create-file": ("content", "executable", "verify-contains"),
    "delete-file": (),
    "rename-file": ("to",),
    "chmod-file": ("executable",),
    "patch-file": (),
}
_DIRECTIVE = re.compile(r"^([a-z][a-z-]*):(?: (.*)|)$")


class ObjectiveError(UsageError):
    pass


class Block(msgspec.Struct):
    kind: str
    path: str
    line: int
    replacements: list[tuple[str, str]] = msgspec.field(default_factory=list)
    content: str | None = None
    executable: bool | None = None
    to: str | None = None
    checks: list[str] = msgspec.field(default_factory=list)


class Objective(msgspec.Struct):
    text: str
    prose: str
    blocks: list[Block]

    @property
    def has_edits(self) -> bool:
        return bool(self.blocks)


def parse_objective(text: str, source: str = "objective") -> Objective:
    # Split on "\n" only: str.splitlines() would also break at \f, \x1c, U+2028 ... and
    # blocks must keep those, and every \r of a CRLF text, verbatim.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    prose: list[str] = []
    blocks: list[Block] = []
    pending_replace: tuple[str, int] | None = None
    i = 0
    while i < len(lines):
        lineno = i + 1
        raw = lines[i]
        m = _DIRECTIVE.match(raw.rstrip("\r"))
        if m is None or (not blocks and m.group(1) not in STARTERS):
            if blocks and raw.strip() and not raw.lstrip().startswith("#"):
                raise ObjectiveError(
                    f"{source}:{lineno}: expected a directive ('key: value'), got {raw.strip()[:60]!r}"
                )
            if not blocks:
                prose.append(raw)
            i += 1
            continue
        key, value = m.group(1), (m.group(2) or "").rstrip("\r")
        value, i = _read_value(lines, i, value, source)
        if key in STARTERS:
            if pending_replace is not None:
                raise ObjectiveError(f"{source}:{pending_replace[1]}: 'replace:' has no 'with:'")
            blocks.append(_starter(key, value, f"{source}:{lineno}", lineno))
            continue
        if not blocks:
            raise ObjectiveError(f"{source}:{lineno}: '{key}:' before any file directive")
        pending_replace = _follow(blocks[-1], key, value, (source, lineno), pending_replace)
    if pending_replace is not None:
        raise ObjectiveError(f"{source}:{pending_replace[1]}: 'replace:' has no 'with:'")
    for block in blocks:
        _check_complete(block, source)
    return Objective(text=text, prose="\n".join(prose).strip(), blocks=blocks)


def _starter(key: str, value: str, where: str, lineno: int) -> Block:
    """The block a file directive (``edit-file:`` ...) opens."""
    if not value.strip():
        raise ObjectiveError(f"{where}: '{key}:' needs a path")
    path = value.strip()
    if key != "patch-file":  # a patch file is a local file, not a repository path
        path = repo_path(path, f"{where}: '{key}:'")
    return Block(kind=key, path=path, line=lineno)


def _follow(
    block: Block,
    key: str,
    value: str,
    at: tuple[str, int],
    pending_replace: tuple[str, int] | None,
) -> tuple[str, int] | None:
    """A directive that follows a file directive (at ``(source, line)``), applied to its
    ``block``; returns the ``replace:`` still waiting for its ``with:``."""
    where = f"{at[0]}:{at[1]}"
    if key not in _FOLLOWERS.get(block.kind, ()):
        allowed = ", ".join(_FOLLOWERS[block.kind]) or "nothing"
        raise ObjectiveError(
            f"{where}: '{key}:' does not belong to '{block.kind}:' (allowed: {allowed})"
        )
    if key == "replace":
        if pending_replace is not None:
            raise ObjectiveError(f"{where}: two 'replace:' without 'with:'")
        if value == "":
            raise ObjectiveError(f"{where}: 'replace:' text is empty")
        return (value, at[1])
    if key == "with":
        if pending_replace is None:
            raise ObjectiveError(f"{where}: 'with:' without 'replace:'")
        block.replacements.append((pending_replace[0], value))
        return None
    if key == "content":
        block.content = value
    elif key == "executable":
        if value.strip() not in ("true", "false"):
            raise ObjectiveError(f"{where}: 'executable:' takes true or false")
        block.executable = value.strip() == "true"
    elif key == "to":
        block.to = repo_path(value.strip(), f"{where}: 'to:'")
    elif key == "verify-contains":
        block.checks.append(value)
    return pending_replace


def repo_path(path: str, where: str) -> str:
    """``path`` as the repository-relative path git would name: ``docs//x`` and ``./docs/x``
    are ``docs/x``. An absolute path, ``..``, a backslash or a NUL is refused naming the
    line: the objective would otherwise name a file that can never exist in the tree."""
    if path.startswith("/"):
        raise ObjectiveError(
            f"{where} {path!r} is an absolute path; name files relative to the repository root"
        )
    if "\\" in path or "\0" in path:
        raise ObjectiveError(f"{where} {path!r}: a backslash or NUL is not allowed in a path")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ObjectiveError(f"{where} {path!r}: '..' is not allowed in a repository path")
    if not parts:
        raise ObjectiveError(f"{where} {path!r} names the repository root, not a file")
    return "/".join(parts)


def _read_value(lines: list[str], i: int, value: str, source: str) -> tuple[str, int]:
    """Return the directive's value and the index of the next unread line."""
    opener = re.fullmatch(r"<<<([A-Za-z0-9_]*)", value.strip())
    if opener is None:
        return value, i + 1
    terminator = opener.group(1) or ">>>"
    body: list[str] = []
    j = i + 1
    while j < len(lines):
        if lines[j].rstrip("\r") == terminator:
            return "".join(line + "\n" for line in body), j + 1
        body.append(lines[j])
        j += 1
    raise ObjectiveError(f"{source}:{i + 1}: block opened here is never closed with {terminator!r}")


def _check_complete(block: Block, source: str) -> None:
    where = f"{source}:{block.line}"
    if block.kind == "edit-file" and not block.replacements and not block.checks:
        raise ObjectiveError(f"{where}: 'edit-file: {block.path}' has no 'replace:'/'with:' pair")
    if block.kind == "create-file" and block.content is None:
        raise ObjectiveError(f"{where}: 'create-file: {block.path}' has no 'content:'")
    if block.kind == "rename-file" and not block.to:
        raise ObjectiveError(f"{where}: 'rename-file: {block.path}' has no 'to:'")
    if block.kind == "chmod-file" and block.executable is None:
        raise ObjectiveError(f"{where}: 'chmod-file: {block.path}' has no 'executable:'")
