"""Per-tool parsers of failed commands' output into :class:`Diagnostic` lists.

:func:`parse_output` runs every parser over the cleaned text (ANSI escapes removed, line ends
normalised); parsers only recognise their own tool's shapes, so one output can hold several
tools' diagnostics (``ruff check . && mypy src && pytest`` stops at the first failure, but
``make check`` may print them all). The generic Python traceback parser only runs when no
test framework's report was recognised, and the environment parser last, skipping what the
others already reported.
"""

from __future__ import annotations

from collections.abc import Callable

from tidegate.feedback.diagnostics import Diagnostic, ParseContext, clean_text
from tidegate.feedback.parsers import (
    cargo,
    environment,
    eslint,
    flake8,
    gotest,
    jest,
    mypy,
    pytest,
    python,
    ruff,
    tsc,
    unittest,
)

Parser = Callable[[str, ParseContext], list[Diagnostic]]

PARSERS: tuple[tuple[str, Parser], ...] = (
    ("pytest", pytest.parse),
    ("unittest", unittest.parse),
    ("mypy", mypy.parse),
    ("ruff", ruff.parse),
    ("flake8", flake8.parse),
    ("tsc", tsc.parse),
    ("eslint", eslint.parse),
    ("jest", jest.parse),
    ("go", gotest.parse),
    ("cargo", cargo.parse),
)


def parse_output(text: str, ctx: ParseContext) -> list[Diagnostic]:
    """Every diagnostic found in ``text``, in parser order, each parser's in output order."""
    text = clean_text(text)
    found: list[Diagnostic] = []
    for _, parser in PARSERS:
        found.extend(parser(text, ctx))
    if not any(d.tool in ("pytest", "unittest") for d in found) and not (
        pytest.detect(text) or unittest.detect(text)
    ):
        found.extend(python.parse(text, ctx))
    found.extend(environment.parse(text, ctx, found))
    return found


__all__ = ["PARSERS", "Parser", "parse_output"]
