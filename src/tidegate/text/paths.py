"""Paths as text: exactly in JSON, safely on a terminal.

A repository path is any byte string without NUL. tidegate holds it as a ``str`` decoded
with ``surrogateescape``, so bytes that are not UTF-8 survive as lone surrogates. Those
cannot be written as UTF-8 (JSON, SQLite, a terminal), and a newline, an escape sequence
or rich markup in a name would forge lines or colours on the user's terminal. This module
gives each use its form:

* ``path_bytes`` / ``b64_bytes``: the exact bytes, for a lossless record;
* ``utf8_text``: valid UTF-8 text, undecodable bytes written ``\\xNN``;
* ``quote_path``: git's C-style quoting (``"new\\nline"``, ``"bad\\377"``) for display,
  applied only to names that need it.
"""

from __future__ import annotations

_NAMED = {
    0x07: "\\a",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0B: "\\v",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}


def path_bytes(path: str) -> bytes:
    """The bytes the file system holds for ``path``."""
    return path.encode("utf-8", "surrogateescape")


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def b64_bytes(path: str) -> str | None:
    """Base64 of the path's bytes when they are not UTF-8 (else None: the text is exact)."""
    if is_utf8(path):
        return None
    import base64  # only for a name that is not UTF-8 (not on the read-only fast path)

    return base64.b64encode(path_bytes(path)).decode("ascii")


def utf8_text(text: str) -> str:
    """``text`` as valid UTF-8: each byte that was not UTF-8 becomes ``\\xNN``."""
    if is_utf8(text):
        return text
    return path_bytes(text).decode("utf-8", "backslashreplace")


def _needs_quoting(ch: str) -> bool:
    return ch in '"\\' or not ch.isprintable() or "\udc80" <= ch <= "\udcff"


def quote_path(path: str) -> str:
    """``path`` for a terminal: unchanged when every character is printable and neither
    ``"`` nor ``\\``; otherwise double-quoted with C escapes, the way git shows it
    (``core.quotePath=false``: printable non-ASCII stays as it is)."""
    if not any(_needs_quoting(ch) for ch in path):
        return path
    out = ['"']
    for ch in path:
        if not _needs_quoting(ch):
            out.append(ch)
            continue
        for byte in path_bytes(ch):
            out.append(_NAMED.get(byte) or f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def git_quoted(path: str) -> bytes:
    """``path`` C-quoted for a git command that reads one path a line and unquotes a line
    starting with ``"`` (``hash-object --stdin-paths``, which has no ``-z``). Every path is
    quoted, so a name that itself starts with a quote, or holds a newline, a backslash or
    bytes that are not UTF-8, reaches git exactly."""
    out = bytearray(b'"')
    for byte in path_bytes(path):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\%03o" % byte
    return bytes(out + b'"')


_UNESCAPE = {ord(v[1]): k for k, v in _NAMED.items()}


def git_unquoted(name: str) -> str:
    """A name as git writes it in a diff header: unchanged unless it is C-quoted
    (``"new\\nline"``, ``"bad\\377"``), then its exact bytes (surrogateescape). A
    malformed quoting is returned as written."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 0
    while i < len(raw):
        byte = raw[i]
        if byte != 0x5C:
            out.append(byte)
            i += 1
        elif raw[i + 1 : i + 4].isdigit() and len(raw[i + 1 : i + 4]) == 3:
            out.append(int(raw[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        elif i + 1 < len(raw) and raw[i + 1] in _UNESCAPE:
            out.append(_UNESCAPE[raw[i + 1]])
            i += 2
        else:
            return name
    return out.decode("utf-8", "surrogateescape")


def visible(text: str) -> str:
    """One line of free text (a message, a note) for a terminal: characters that are not
    printable (control characters, escape sequences, undecodable bytes) written as escapes,
    so no text can move the cursor or forge a line."""
    if all(ch.isprintable() and not "\udc80" <= ch <= "\udcff" for ch in text):
        return text
    out = []
    for ch in text:
        if ch.isprintable() and not "\udc80" <= ch <= "\udcff":
            out.append(ch)
        elif "\udc80" <= ch <= "\udcff":
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)
