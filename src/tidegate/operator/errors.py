"""Operator errors, one line each: :class:`OperatorError` for a refused command (bad
arguments, state root or combination; exit 2, before anything is written) and
:class:`RecordError` for persisted data that is missing, malformed, tampered or unreadable
(exit 1)."""

from __future__ import annotations

from tidegate.errors import TidegateError, UsageError


class OperatorError(UsageError):
    """A refused operator command (exit 2)."""


class RecordError(TidegateError):
    """Persisted operator data that cannot be trusted (exit 1)."""

    exit_code = 1
