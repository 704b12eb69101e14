"""Line-preserving markdown: the few structures the task files use.

A ``TextFile`` keeps every line and its own line ending, so writing it back reproduces the
bytes it was read from. The finders below locate key lines, headed sections, pipe tables
and checklists by line index (0-based; errors report 1-based lines), skipping fenced code
blocks, so that an edit replaces or inserts only the lines whose meaning changed and
everything a person added around them survives.
"""

from __future__ import annotations

import re

import msgspec

from tidegate.ledger.errors import LedgerFormatError

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([^`\s]*)")
_KEY = re.compile(
    r"^(?P<prefix>\s*(?:[-*+]\s+)?)(?P<b1>\*\*)?(?P<key>[A-Za-z][A-Za-z -]*?[A-Za-z])"
    r"(?P<b2>\*\*)?:(?P<b3>\*\*)?(?P<sep>[ \t]*)(?P<value>.*?)[ \t]*$"
)
_CHECK = re.compile(r"^(?P<prefix>\s*[-*+]\s+)\[(?P<mark>[ xX])\](?P<sep>\s+)(?P<text>.*?)\s*$")
_SEPARATOR_CELL = re.compile(r"^:?-{3,}:?$")


class Fence(msgspec.Struct, frozen=True):
    open: int
    close: int | None
    info: str


class TextFile(msgspec.Struct):
    name: str
    lines: list[str]
    endings: list[str]
    fences: list[Fence] = msgspec.field(default_factory=list)
    _fenced: set[int] = msgspec.field(default_factory=set)

    @classmethod
    def parse(cls, name: str, data: bytes) -> TextFile:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise LedgerFormatError(name, line, "not UTF-8 text") from exc
        lines: list[str] = []
        endings: list[str] = []
        # Only \n (or \r\n) ends a line: str.splitlines() would also split at \f, \x1c,
        # U+2028 ..., and a person's line must stay one line.
        pos = 0
        while pos < len(text):
            nl = text.find("\n", pos)
            if nl == -1:
                lines.append(text[pos:])
                endings.append("")
                break
            crlf = nl > pos and text[nl - 1] == "\r"
            lines.append(text[pos : nl - 1 if crlf else nl])
            endings.append("\r\n" if crlf else "\n")
            pos = nl + 1
        file = cls(name, lines, endings)
        file._scan_fences()
        return file

    @classmethod
    def from_text(cls, name: str, text: str) -> TextFile:
        return cls.parse(name, text.encode("utf-8"))

    def render(self) -> str:
        return "".join(line + end for line, end in zip(self.lines, self.endings, strict=True))

    @property
    def newline(self) -> str:
        """The file's usual line ending, for lines this program adds."""
        crlf = sum(1 for e in self.endings if e == "\r\n")
        return "\r\n" if crlf > len(self.endings) / 2 else "\n"

    def error(self, index: int, message: str) -> LedgerFormatError:
        return LedgerFormatError(self.name, index + 1, message)

    def fenced(self, index: int) -> bool:
        return index in self._fenced

    def _scan_fences(self) -> None:
        self.fences, self._fenced = [], set()
        i = 0
        while i < len(self.lines):
            m = _FENCE.match(self.lines[i])
            if m is None:
                i += 1
                continue
            marker = m.group(1)
            close = next(
                (
                    j
                    for j in range(i + 1, len(self.lines))
                    if self.lines[j].strip().startswith(marker[0] * len(marker))
                    and set(self.lines[j].strip()) == {marker[0]}
                ),
                None,
            )
            self.fences.append(Fence(i, close, m.group(2).lower()))
            end = len(self.lines) - 1 if close is None else close
            self._fenced.update(range(i, end + 1))
            i = end + 1

    # -- editing ---------------------------------------------------------------------

    def replace(self, index: int, line: str) -> None:
        self.lines[index] = line
        self._scan_fences()

    def insert(self, index: int, new_lines: list[str]) -> None:
        nl = self.newline
        if index > 0 and self.endings[index - 1] == "":
            self.endings[index - 1] = nl  # the last line had no newline: give it one
        self.lines[index:index] = new_lines
        self.endings[index:index] = [nl] * len(new_lines)
        self._scan_fences()

    def append_section(self, title: str, body: list[str], level: int = 2) -> None:
        """Add ``## title`` and its body at the end of the file, after one blank line."""
        block = ["#" * level + " " + title, "", *body]
        if self.lines and self.lines[-1].strip():
            block.insert(0, "")
        self.insert(len(self.lines), block)

    # -- finding ---------------------------------------------------------------------

    def headings(self) -> list[tuple[int, int, str]]:
        """``(index, level, title)`` of every heading outside code fences."""
        found = []
        for i, line in enumerate(self.lines):
            m = _HEADING.match(line)
            if m and not self.fenced(i):
                found.append((i, len(m.group(1)), m.group(2)))
        return found

    def section(self, title: str) -> tuple[int, int] | None:
        """``(heading index, end index)`` of the section titled ``title`` (any case), the end
        being the next heading of the same or a higher level, or the end of the file."""
        heads = self.headings()
        matches = [(i, lvl) for i, lvl, t in heads if t.strip().lower() == title.lower()]
        if not matches:
            return None
        if len(matches) > 1:
            raise self.error(matches[1][0], f"second '{title}' section (one is allowed)")
        start, level = matches[0]
        end = next((i for i, lvl, _ in heads if i > start and lvl <= level), len(self.lines))
        return start, end

    def preamble_end(self) -> int:
        """Index of the first ``##`` (or deeper) heading: key lines live before it."""
        return next((i for i, lvl, _ in self.headings() if lvl >= 2), len(self))

    def append_to_section(self, title: str, new_lines: list[str], gap: bool = False) -> None:
        """Insert lines after the last non-blank line of a section (creating it if absent);
        ``gap``: leave a blank line between the section's last content and the new lines."""
        span = self.section(title)
        if span is None:
            self.append_section(title, new_lines)
            return
        start, end = span
        last = max((i for i in range(start, end) if self.lines[i].strip()), default=start)
        if last == start:
            self.insert(start + 1, ["", *new_lines])
        else:
            self.insert(last + 1, ["", *new_lines] if gap else new_lines)

    def __len__(self) -> int:
        return len(self.lines)


class KeyLine(msgspec.Struct):
    index: int
    key: str
    value: str
    match: re.Match[str]

    def with_value(self, value: str) -> str:
        m = self.match
        sep = m.group("sep") or " "
        return (
            f"{m.group('prefix')}{m.group('b1') or ''}{m.group('key')}{m.group('b2') or ''}:"
            f"{m.group('b3') or ''}{sep if value else ''}{value}"
        )


def key_lines(file: TextFile, keys: set[str], end: int) -> dict[str, KeyLine]:
    """The ``Key: value`` lines (optionally bulleted or bold) among ``keys`` before ``end``.
    Keys are matched without regard to case; a key given twice is an error."""
    found: dict[str, KeyLine] = {}
    for i in range(end):
        if file.fenced(i):
            continue
        m = _KEY.match(file.lines[i])
        if m is None:
            continue
        key = m.group("key").strip().lower()
        if key not in keys:
            continue
        if key in found:
            raise file.error(
                i, f"'{m.group('key')}:' given twice (first at line {found[key].index + 1})"
            )
        found[key] = KeyLine(i, key, m.group("value"), m)
    return found


class Table(msgspec.Struct):
    header: int
    columns: list[str]
    """Column names, stripped and lower-cased."""
    rows: list[tuple[int, list[str]]]
    """``(index, raw cells)``: cells keep their padding so unchanged ones are rewritten as is."""
    leading_pipe: list[bool]

    @property
    def end(self) -> int:
        return (self.rows[-1][0] if self.rows else self.header + 1) + 1


def split_row(line: str) -> list[str]:
    """Cells of a pipe-table row; ``\\|`` is a literal bar inside a cell."""
    body = line.strip()
    cells, current, i = [], [], 0
    body = body[1:] if body.startswith("|") else body
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            current.append("\\|")
            i += 2
            continue
        if ch == "|":
            cells.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    if "".join(current).strip() or not line.rstrip().endswith("|"):
        cells.append("".join(current))
    return cells


def cell_text(raw: str) -> str:
    return raw.strip().replace("\\|", "|")


def escape_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def is_table_line(line: str) -> bool:
    return line.lstrip().startswith("|")


def parse_table(file: TextFile, header: int) -> Table:
    """The pipe table whose header row is at ``header``: a separator row must follow, and
    every row must have as many cells as the header."""
    columns = [cell_text(c).lower() for c in split_row(file.lines[header])]
    sep = header + 1
    if sep >= len(file) or not is_table_line(file.lines[sep]):
        raise file.error(header, "table header is not followed by a separator row (| --- |)")
    sep_cells = [c.strip() for c in split_row(file.lines[sep])]
    if len(sep_cells) != len(columns) or not all(_SEPARATOR_CELL.match(c) for c in sep_cells):
        raise file.error(sep, f"broken table: separator row must have {len(columns)} '---' cells")
    rows: list[tuple[int, list[str]]] = []
    i = sep + 1
    while i < len(file) and is_table_line(file.lines[i]) and not file.fenced(i):
        cells = split_row(file.lines[i])
        if len(cells) != len(columns):
            raise file.error(
                i, f"broken table: row has {len(cells)} cells, the header has {len(columns)}"
            )
        rows.append((i, cells))
        i += 1
    return Table(header, columns, rows, [file.lines[r].lstrip().startswith("|") for r, _ in rows])


def find_tables(file: TextFile, first_column: str, start: int, end: int) -> list[int]:
    """Header indices of the tables in ``[start, end)`` whose first column is named so."""
    found = []
    for i in range(start, end):
        if file.fenced(i) or not is_table_line(file.lines[i]):
            continue
        if i > 0 and is_table_line(file.lines[i - 1]) and not file.fenced(i - 1):
            continue  # not the first line of its table
        cells = split_row(file.lines[i])
        if cells and cell_text(cells[0]).lower() == first_column:
            found.append(i)
    return found


def aligned_widths(file: TextFile, table: Table) -> list[int | None]:
    """Per column, the width a person aligned it to: the header cell's, where the separator
    cell below it has the same width (``| Status  |`` over ``|:--------|``); else None.
    Both rows are never rewritten, so the alignment survives any cell's change."""
    header = split_row(file.lines[table.header])
    separator = split_row(file.lines[table.header + 1])
    return [len(h) if len(h) == len(s) else None for h, s in zip(header, separator, strict=True)]


def render_row(
    old_cells: list[str],
    new_values: list[str | None],
    leading: bool,
    widths: list[int | None] | None = None,
) -> str:
    """A row with changed cells replaced (``None`` keeps the old cell byte for byte); in an
    aligned column the new text is padded to the column's width."""
    cells = []
    for n, (old, new) in enumerate(zip(old_cells, new_values, strict=True)):
        if new is None:
            cells.append(old)
            continue
        width = (widths[n] if widths else None) or 0
        cells.append(" " + escape_cell(new).ljust(width - 2) + " ")
    body = "|".join(cells)
    return ("|" + body + "|") if leading else (body + "|")


def make_row(values: list[str]) -> str:
    return "| " + " | ".join(escape_cell(v) for v in values) + " |"


class Check(msgspec.Struct):
    index: int
    closed: bool
    text: str
    match: re.Match[str]

    def with_closed(self, closed: bool) -> str:
        m = self.match
        return f"{m.group('prefix')}[{'x' if closed else ' '}]{m.group('sep')}{m.group('text')}"


def checklist(file: TextFile, start: int, end: int) -> list[Check]:
    """``- [ ] text`` / ``- [x] text`` lines in ``(start, end)``; a line that begins like a
    checklist entry but is not one is an error."""
    found = []
    for i in range(start + 1, end):
        if file.fenced(i):
            continue
        line = file.lines[i]
        m = _CHECK.match(line)
        if m is not None:
            found.append(Check(i, m.group("mark") != " ", m.group("text"), m))
        elif re.match(r"^\s*[-*+]\s+\[", line):
            raise file.error(i, "malformed checklist entry (expected '- [ ] text' or '- [x] text')")
    return found
