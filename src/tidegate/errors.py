"""tidegate's errors, sorted by who handles them.

::

    TidegateError
    ├── UsageError            the operator's input is wrong: one line, exit 2
    │   └── NotARepositoryError   outside a repo, bare repo, unborn HEAD
    ├── RepositoryLockedError another run holds the repository lock (RESOURCE_LOCK_ERROR, exit 4)
    └── PhaseError            a phase of a run failed; carries an ErrorClass
        ├── retryable classes: COMPILATION, LINT, TEST, LOGIC, AST_VALIDATION_ERROR
        └── terminal classes:  DEPENDENCY_ERROR, RESOURCE_LOCK_ERROR, CONFLICT, UNKNOWN,
                               CONTEXT_BUDGET, PERSISTENCE_ERROR, CAPABILITY_MISMATCH,
                               UNKNOWN_OUTCOME, APPROVAL_DENIED, CANCELLED
    ├── PersistenceError      the store did not acknowledge a write (PERSISTENCE_ERROR)
    ├── CapabilityMismatch    the host lacks a required capability (CAPABILITY_MISMATCH)
    └── UnknownOutcome        a tool's side effects are unknown; the run ends durably

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
    CONTEXT_BUDGET = "CONTEXT_BUDGET"
    """The assembled model context cannot fit, even after compaction."""
    PERSISTENCE_ERROR = "PERSISTENCE_ERROR"
    """The durable store did not acknowledge a trace flush, checkpoint or final report."""
    CAPABILITY_MISMATCH = "CAPABILITY_MISMATCH"
    """The host cannot provide what the run needs (an interpreter, containment, a model)."""
    UNKNOWN_OUTCOME = "UNKNOWN_OUTCOME"
    """A tool's side effects are unknown (a throw after dispatch, bad output after a write):
    the run ends durably and is never retried."""
    APPROVAL_DENIED = "APPROVAL_DENIED"
    CANCELLED = "CANCELLED"

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


class PersistenceError(TidegateError):
    """The durable store failed to write or acknowledge a trace flush, checkpoint or report.

    A run that meets this never reports success, even if the underlying write committed.
    """

    error_class = ErrorClass.PERSISTENCE_ERROR


class CapabilityMismatch(TidegateError):
    """The host cannot provide what the run requires (a published interpreter, required
    containment, a model capability). Raised before any side effect."""

    error_class = ErrorClass.CAPABILITY_MISMATCH


class UnknownOutcome(TidegateError):
    """A tool's side effects could not be established (an adapter threw after dispatch, or
    its output failed its schema after a write). Never retried; ends the run durably."""

    error_class = ErrorClass.UNKNOWN_OUTCOME


EXTRAS = {
    "openai": "models",
    "anthropic": "models",
    "httpx2": "models",
    "tiktoken": "models",
    "mcp": "mcp",
    "mcp_types": "mcp",
    "anyio": "mcp",
    "pexpect": "terminal",
    "ptyprocess": "terminal",
    "pyte": "terminal",
    "ray": "ray",
    "opentelemetry": "otel",
    "acp": "acp",
    "starlette": "inspect",
    "uvicorn": "inspect",
    "swebench": "gym",
}
"""The optional packages a command may need, by the extra that installs them (the core
install is the engine and the CLI: pyproject.toml's optional-dependencies)."""


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """One line naming the extra to install when ``exc`` is an optional package that is
    not installed; None for any other missing module (a bug, reported as one)."""
    top = (exc.name or "").partition(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (
        f"this needs the [{extra}] extra ({top} is not installed): pip install 'tidegate[{extra}]'"
    )
