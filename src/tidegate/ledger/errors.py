"""The ledger's errors. All but the lock are the operator's to fix: one line, exit 2.

::

    UsageError (tidegate.errors)
    ├── LedgerFormatError   a task file is malformed: ``file:line: what is wrong``
    ├── TransitionRefused   an illegal status change or an unmet precondition
    └── EvidenceRejected    a reference that is not evidence ("agent says done", ...)
    TidegateError
    └── LedgerLockedError   another ledger command is updating the task directory (exit 4)

A refusal that is an answer rather than a mistake (``ship`` with work missing, a retry
over budget) is not an error: it is an ``Outcome`` with exit code 1.
"""

from __future__ import annotations

from tidegate.errors import TidegateError, UsageError


class LedgerFormatError(UsageError):
    """A task file does not follow its format. Never repaired: the person fixes it."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.file = file
        self.line = line
        self.message = message


class TransitionRefused(UsageError):
    """The requested change is not allowed from the item's (or the task's) current state."""


class EvidenceRejected(UsageError):
    """The reference given to ``record`` is not something a person could check."""


class LedgerLockedError(TidegateError):
    """Another ledger command holds the task directory's lock."""

    exit_code = 4
