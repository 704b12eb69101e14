"""tidegate.feedback: classify a failed verification and shrink it into feedback.

- :mod:`.diagnostics`: the :class:`Diagnostic` record and the parsing context.
- :mod:`.parsers`: one parser per tool (pytest, unittest, mypy, ruff, flake8, tsc, eslint,
  jest, go, cargo, plain Python tracebacks) plus environment signals.
- :mod:`.classify`: :func:`diagnose` and the classification rules.
- :mod:`.shrink`: :func:`build_feedback`, noise removal, excerpts, the token estimate.
"""

from tidegate.feedback.classify import classify, diagnose, file_reader
from tidegate.feedback.diagnostics import Diagnosis, Diagnostic, ParseContext
from tidegate.feedback.shrink import build_feedback, clean_output, estimate_tokens, render_excerpt

__all__ = [
    "Diagnosis",
    "Diagnostic",
    "ParseContext",
    "build_feedback",
    "classify",
    "clean_output",
    "diagnose",
    "estimate_tokens",
    "file_reader",
    "render_excerpt",
]
