"""A syntax error as AST_VALIDATE reports it, and the source line it quotes."""

from __future__ import annotations

import msgspec


class SyntaxIssue(msgspec.Struct, frozen=True):
    """One syntax error: 1-based line and column (in characters) and what is wrong.

    ``text`` is the stripped source line, used to recognise the same error on both sides of
    the change. ``doubt`` is empty for a real error, else why it is not counted. An ERROR
    node of tree-sitter covers the lines ``line`` to ``end_line`` (what its recovery skipped).
    Issues sort by line, column and message alone.
    """

    line: int
    column: int
    message: str
    text: str = ""
    doubt: str = ""
    end_line: int = 0  # last line of the error's extent

    def __lt__(self, other: SyntaxIssue) -> bool:
        """By line, column and message alone: issues equal on those keep their order in a
        sort (Python's sort is stable), whatever their text, doubt or extent."""
        return (self.line, self.column, self.message) < (other.line, other.column, other.message)

    @property
    def lines(self) -> range:
        return range(self.line, max(self.line, self.end_line) + 1)

    @property
    def key(self) -> str:
        """The line text without any whitespace: what identifies the error across versions."""
        return "".join(self.text.split())

    def describe(self) -> str:
        shown = self.text if len(self.text) <= 100 else self.text[:97] + "..."
        return (
            f"syntax error, {self.message}: {shown}" if shown else f"syntax error, {self.message}"
        )


def line_text(lines: list[bytes], line: int) -> str:
    if 1 <= line <= len(lines):
        return lines[line - 1].decode("utf-8", "replace").strip()
    return ""
