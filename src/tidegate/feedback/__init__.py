"""tidegate.feedback: classify a failed verification and shrink it into feedback.

- :mod:`.diagnostics`: the :class:`Diagnostic` record and the parsing context.
- :mod:`.parsers`: one parser per tool (pytest, unittest, mypy, ruff, flake8, tsc, eslint,
  jest, go, cargo, plain Python tracebacks) plus environment signals.
- :mod:`.classify`: :func:`diagnose` and the classification rules.
- :mod:`.noise`: :func:`clean_output`, noise removal.
- :mod:`.shrink`: :func:`build_feedback`, excerpts, the token estimate.
"""

from tidegate.feedback.classify import classify, diagnose, file_reader
from tidegate.feedback.diagnostics import Diagnosis, Diagnostic, ParseContext
from tidegate.feedback.noise import clean_output
from tidegate.feedback.shrink import build_feedback, estimate_tokens, render_excerpt

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
