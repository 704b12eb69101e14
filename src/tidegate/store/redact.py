"""Redaction before anything is stored: a re-export of ``tidegate.sanitize``, the one
sanitiser of the project (kept so that the store's callers keep their import)."""

from __future__ import annotations

from tidegate.sanitize import OMITTED_REASONING, REDACTED, redact, redact_value

__all__ = ["OMITTED_REASONING", "REDACTED", "redact", "redact_value"]
