"""Python names that resolve without any binding in the file."""

from __future__ import annotations

import builtins

# Names that resolve without any binding in the file. Besides this interpreter's builtins:
# builtins of other Python versions and platforms, module and class attributes the runtime
# provides, names ``site`` adds, and ``_`` (gettext.install puts it in builtins).
PYTHON_IMPLICIT: frozenset[str] = frozenset(dir(builtins)) | {
    "__file__",
    "__name__",
    "__doc__",
    "__spec__",
    "__loader__",
    "__package__",
    "__path__",
    "__builtins__",
    "__annotations__",
    "__annotate__",
    "__conditional_annotations__",
    "__dict__",
    "__module__",
    "__qualname__",
    "__class__",
    "__cached__",
    "__debug__",
    "__build_class__",
    "__import__",
    "WindowsError",
    "ExceptionGroup",
    "BaseExceptionGroup",
    "EncodingWarning",
    "PythonFinalizationError",
    "_IncompleteInputError",
    "aiter",
    "anext",
    "copyright",
    "credits",
    "license",
    "exit",
    "quit",
    "help",
    "reveal_type",
    "reveal_locals",
    "_",
    # builtins that Python 2 compatibility code still names
    "unicode",
    "long",
    "basestring",
    "xrange",
    "raw_input",
    "unichr",
    "reduce",
    "file",
    "execfile",
    "cmp",
    "buffer",
    "apply",
    "intern",
    "coerce",
    "reload",
    "StandardError",
    # builtins of IPython / Jupyter, and ones announced for future Pythons
    "get_ipython",
    "display",
    "__IPYTHON__",
    "frozendict",
}
