"""Structured diagnostics parsed out of a failed command's output, and the shared context the
parsers need to make paths relative to the shadow root and to tell project code from
installed code.
"""

from __future__ import annotations

import posixpath
import re
import sys
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Literal

import msgspec

from tidegate.errors import ErrorClass

Severity = Literal["error", "warning", "note"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# Path segments that mark installed or generated code, never the project's own.
_EXTERNAL_SEGMENTS = frozenset(
    {"node_modules", "site-packages", "dist-packages", ".venv", "venv", ".tox", ".cargo"}
)


class Diagnostic(msgspec.Struct, frozen=True):
    """One problem a tool reported.

    ``path`` is relative to the shadow root when the file is inside it (as the tool printed
    it otherwise); ``line`` and ``column`` are 1-based. ``error_class`` is the class this
    diagnostic alone points to; the diagnosis picks one class from all of them.
    ``trace`` lists further project locations on the way to the error (outermost first),
    e.g. the test line that called the function which raised. ``detail`` holds a few more
    lines of the tool's explanation (an assertion's diff, expected and received values).
    """

    tool: str
    message: str
    path: str | None = None
    line: int | None = None
    column: int | None = None
    code: str | None = None
    test_id: str | None = None
    severity: Severity = "error"
    error_class: ErrorClass = ErrorClass.LOGIC
    trace: tuple[tuple[str, int], ...] = ()
    detail: str = ""

    @property
    def location(self) -> str | None:
        """``path:line`` (or just ``path``), or None without a path."""
        if self.path is None:
            return None
        return self.path if self.line is None else f"{self.path}:{self.line}"


class ParseContext(msgspec.Struct, frozen=True, dict=True):
    """What parsers know besides the text: the shadow root, the command and its exit code."""

    root: Path | None = None
    command: str = ""
    exit_code: int | None = None

    @cached_property
    def _roots(self) -> tuple[str, ...]:
        if self.root is None:
            return ()
        found = [str(self.root)]
        try:
            resolved = str(self.root.resolve())
        except OSError:
            resolved = found[0]
        if resolved not in found:
            found.append(resolved)
        return tuple(r.rstrip("/") for r in found)

    def rel(self, path: str) -> str:
        """``path`` relative to the root when it lies inside it; normalised otherwise."""
        path = path.strip()
        if path.startswith("file://"):
            path = path[len("file://") :]
        if path.startswith("/"):
            for root in self._roots:
                if path.startswith(root + "/"):
                    return posixpath.normpath(path[len(root) + 1 :])
            return posixpath.normpath(path)
        if path.startswith("<") or not path:
            return path
        return posixpath.normpath(path)

    def strip_root(self, text: str) -> str:
        """Remove the shadow root's prefix wherever it appears in ``text``."""
        for root in self._roots:
            text = text.replace(root + "/", "")
        return text

    @staticmethod
    def is_project(path: str | None) -> bool:
        """A path (already through ``rel``) that names a file of the project itself."""
        if not path or path.startswith(("/", "<", "../", "node:")) or path == "..":
            return False
        parts = PurePosixPath(path).parts
        return not any(p in _EXTERNAL_SEGMENTS for p in parts)

    def python_module_is_local(self, module: str) -> bool:
        """Whether a missing Python module belongs to the project (a wrong import in the
        code, not a missing dependency): its top-level package is in the tree, or it is a
        standard library name."""
        top = module.split(".")[0]
        if top in sys.stdlib_module_names:
            return True
        if self.root is None or not top.isidentifier():
            return False
        for base in (self.root, self.root / "src", self.root / "lib"):
            if (base / top).is_dir() or (base / f"{top}.py").is_file():
                return True
        return False

    @cached_property
    def go_module(self) -> str | None:
        """The module path declared in the root's go.mod, if any."""
        if self.root is None:
            return None
        try:
            text = (self.root / "go.mod").read_text("utf-8", "replace")
        except OSError:
            return None
        m = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
        return m.group(1).strip('"') if m else None

    def go_package_dir(self, import_path: str) -> str | None:
        """The folder (relative to the root) of a package of the root's Go module."""
        module = self.go_module
        if module is None:
            return None
        if import_path == module:
            return ""
        if import_path.startswith(module + "/"):
            return import_path[len(module) + 1 :]
        return None


def strip_ansi(text: str) -> str:
    """Remove terminal colour and cursor escapes."""
    return _ANSI.sub("", text)


def normalise_newlines(text: str) -> str:
    """CRLF to LF; for carriage-return progress redraws keep only the last state of a line."""
    text = text.replace("\r\n", "\n")
    if "\r" not in text:
        return text
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def clean_text(text: str) -> str:
    """Output as parsers see it: no terminal escapes, ``\\n`` line ends."""
    return normalise_newlines(strip_ansi(text))


class Diagnosis(msgspec.Struct):
    error_class: ErrorClass
    summary: str
    failing_tests: list[str] = msgspec.field(default_factory=list)
    locations: list[str] = msgspec.field(default_factory=list)
    """``path:line: message`` of the first error locations."""
    feedback: str = ""
    diagnostics: list[Diagnostic] = msgspec.field(default_factory=list)
    tools: list[str] = msgspec.field(default_factory=list)
    """The tools whose output was recognised, in order of first diagnostic."""
    files_involved: list[str] = msgspec.field(default_factory=list)
    """Project files the diagnostics name (relative to the shadow root), most relevant
    first: what the next attempt's context can be narrowed to."""
    command: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    output: str = ""
    """The output's tail with the noise removed."""
    rule: str = ""
    """Which classification rule decided (see the module docstring)."""
