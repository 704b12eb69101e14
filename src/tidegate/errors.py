"""tidegate's errors, sorted by who handles them.

::

    TidegateError
    ├── UsageError            the operator's input is wrong: one line, exit 2
    │   └── NotARepositoryError   outside a repo, bare repo, unborn HEAD
    ├── RepositoryLockedError another run holds the repository lock (RESOURCE_LOCK_ERROR, exit 4)
    └── PhaseError            a phase of a run failed; carries an ErrorClass
        ├── retryable classes: COMPILATION, LINT, TEST, LOGIC, AST_VALIDATION_ERROR
        └── terminal classes:  DEPENDENCY_ERROR, RESOURCE_LOCK_ERROR, UNKNOWN, ...

Errors raised by git or the operating system are translated at the boundary that called
them (``tidegate.git``, the phases) and re-raised ``from`` the original.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorClass(StrEnum):
    """The failure classes of a run. Only the first five may trigger another attempt."""

    COMPILATION = "COMPILATION"
    LINT = "LINT"
    TEST = "TEST"
    LOGIC = "LOGIC"
    AST_VALIDATION_ERROR = "AST_VALIDATION_ERROR"
    DEPENDENCY_ERROR = "DEPENDENCY_ERROR"
    RESOURCE_LOCK_ERROR = "RESOURCE_LOCK_ERROR"
    CONFLICT = "CONFLICT"
    UNKNOWN = "UNKNOWN"

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {
        ErrorClass.COMPILATION,
        ErrorClass.LINT,
        ErrorClass.TEST,
        ErrorClass.LOGIC,
        ErrorClass.AST_VALIDATION_ERROR,
    }
)


class TidegateError(Exception):
    """Base of every error tidegate raises on purpose."""


class UsageError(TidegateError):
    """Bad arguments, bad objective, bad repository: reported in one line, exit code 2."""


class NotARepositoryError(UsageError):
    """The target is not a usable git work tree (none, bare, or HEAD unborn)."""


class RepositoryLockedError(TidegateError):
    """Another live tidegate process holds this repository's run lock."""

    error_class = ErrorClass.RESOURCE_LOCK_ERROR
    exit_code = 4


class GitError(TidegateError):
    """A git command failed. ``argv`` and ``stderr`` say which and why."""

    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
        shown = " ".join(argv[:4])
        super().__init__(f"git {shown} failed ({returncode}): {stderr.strip()[:500]}")


class PhaseError(TidegateError):
    """A phase failed with a classified error.

    ``feedback`` is the text the next attempt's planner sees; ``message`` is the one-line
    summary for people.
    """

    def __init__(
        self,
        error_class: ErrorClass,
        message: str,
        feedback: str = "",
        *,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.message = message
        self.feedback = feedback or message
        self.retryable = error_class.retryable if retryable is None else retryable
