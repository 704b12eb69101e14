"""Plain Python tracebacks and syntax errors (a script, ``python -m py_compile``, a custom
check): the exception line at column 0 and the ``File "...", line N`` frames above it.

Only used when neither pytest nor unittest output was recognised: those parsers read the
tracebacks inside their own reports.
"""

from __future__ import annotations

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers._common import (
    PY_EXCEPTION,
    PY_FRAME,
    python_exception_class,
    stable,
)

TOOL = "python"


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    lines = text.splitlines()
    diags: list[Diagnostic] = []
    for i, line in enumerate(lines):
        m = PY_EXCEPTION.match(line)
        if m is None:
            continue
        frames: list[tuple[str, int]] = []
        j = i - 1
        # walk up over the indented traceback (frames, source lines, carets)
        while j >= 0 and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
            f = PY_FRAME.match(lines[j])
            if f is not None and not f.group("path").startswith("<"):
                frames.append((ctx.rel(f.group("path")), int(f.group("line"))))
            j -= 1
        header = lines[j] if j >= 0 else ""
        if not frames and not header.startswith("Traceback"):
            continue  # a line that merely looks like an exception
        frames.reverse()
        project = [f for f in frames if ParseContext.is_project(f[0])]
        chosen = project or frames
        path, line_no = chosen[-1] if chosen else (None, None)
        trace = tuple(dict.fromkeys(f for f in project[:-1] if f != (path, line_no)))
        message = stable(ctx.strip_root(line))
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=message,
                path=path,
                line=line_no,
                code=m.group("exc"),
                error_class=python_exception_class(ctx, m.group("exc"), message, ErrorClass.LOGIC),
                trace=trace,
            )
        )
    return diags
