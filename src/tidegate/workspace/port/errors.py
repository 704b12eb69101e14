"""What the workspace port refuses with.

Every ``WorkspaceError`` means nothing was changed; ``BadQuery`` is a caller mistake (a
``UsageError``) rather than a property of the workspace::

    TidegateError
    +-- WorkspaceError          (path, message)
    |   +-- PathNotFound
    |   +-- NotAFile            a directory, symlink or special entry where a file was needed
    |   +-- NotADirectory
    |   +-- StalePrecondition   the state differs from what the caller last saw
    |   +-- NotUtf8             a text operation met bytes that are not UTF-8
    |   +-- EditNotApplicable   not found, ambiguous, or no change
    |   +-- TooLarge
    |   +-- SecretWithheld      a secret-shaped file (``secret_files``) the user did not allow
    UsageError
    +-- BadQuery                a malformed precondition, pattern, regex or cursor

``confine.PathRefused`` (a path that would leave the root) completes the set.
"""

from __future__ import annotations

from typing import Literal

from tidegate.errors import TidegateError, UsageError
from tidegate.workspace.states import EntryState, Kind

__all__ = [
    "BadQuery",
    "EditNotApplicable",
    "NotADirectory",
    "NotAFile",
    "NotUtf8",
    "PathNotFound",
    "SecretWithheld",
    "StalePrecondition",
    "TooLarge",
    "WorkspaceError",
]


class WorkspaceError(TidegateError):
    """A workspace operation that could not be done. Nothing was changed."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class SecretWithheld(WorkspaceError):
    """The file is secret-shaped (``.env``, a private key...): its content is withheld."""

    reason = "secret"

    def __init__(self, path: str) -> None:
        super().__init__(
            path,
            "withheld: a secret-shaped file is not readable by the model's tools "
            "(the user may allow it with readable_secrets in [tools] of .tidegate/config.toml)",
        )


class PathNotFound(WorkspaceError):
    def __init__(self, path: str) -> None:
        super().__init__(path, "no such file or directory")


class NotAFile(WorkspaceError):
    """The path holds a directory, symlink or special entry where a file was needed."""

    def __init__(self, path: str, kind: Kind, detail: str = "") -> None:
        self.kind = kind
        super().__init__(path, detail or f"is a {kind}, not a regular file")


class NotADirectory(WorkspaceError):
    def __init__(self, path: str) -> None:
        super().__init__(path, "not a directory")


class StalePrecondition(WorkspaceError):
    """The workspace is not in the state the caller last saw; nothing was changed."""

    def __init__(self, path: str, expected: str, actual: EntryState) -> None:
        self.expected = expected
        self.actual = actual
        now = actual.kind if actual.sha256 is None else f"{actual.kind} {actual.sha256}"
        super().__init__(path, f"stale: expected {expected}, found {now}; read it again")


class NotUtf8(WorkspaceError):
    """Text that is not valid UTF-8: the file (``where="file"``, nothing rewritten) or the
    text given (``"content"``, ``"old"``, ``"new"``)."""

    def __init__(self, path: str, where: str = "file", sha256: str | None = None) -> None:
        self.where = where
        self.sha256 = sha256
        what = "the file is" if where == "file" else f"the {where} text is"
        super().__init__(path, f"{what} not valid UTF-8; text operations refuse it")


class EditNotApplicable(WorkspaceError):
    """``old`` was not found, found more than once without ``replace_all``, or the edit
    would change nothing."""

    def __init__(
        self, path: str, reason: Literal["not_found", "ambiguous", "no_change"], count: int = 0
    ) -> None:
        self.reason = reason
        self.count = count
        message = {
            "not_found": "the old text does not occur in the file",
            "ambiguous": f"the old text occurs {count} times; give more context or replace_all",
            "no_change": "old and new text are the same",
        }[reason]
        super().__init__(path, message)


class TooLarge(WorkspaceError):
    def __init__(self, path: str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(path, f"{size} bytes is more than the {limit}-byte limit for this")


class BadQuery(UsageError):
    """An unusable argument: a malformed precondition, pattern, regex or cursor."""
