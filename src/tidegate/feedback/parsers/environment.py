"""Signals about the environment rather than the code: missing commands, modules and
packages (DEPENDENCY_ERROR), lockfile contention (RESOURCE_LOCK_ERROR), and crashes of the
tools themselves (UNKNOWN). Runs after the tool parsers and skips what they already
reported."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext, Severity
from tidegate.feedback.parsers._common import (
    NO_MODULE,
    js_module_class,
    missing_python_module_class,
)

TOOL = "environment"

# sh/dash: "sh: 1: foo: not found"; bash: "bash: line 1: foo: command not found";
# zsh: "zsh:1: command not found: foo"; env: "env: 'foo': No such file or directory".
_NOT_FOUND = (
    re.compile(
        r"^(?:\S*/)?(?:sh|bash|dash|ash|ksh)(?:: line \d+|: \d+)?: (?P<cmd>.+?): "
        r"(?:command )?not found$"
    ),
    re.compile(r"^(?P<cmd>\S+): command not found$"),
    re.compile(r"^zsh:\d+: command not found: (?P<cmd>\S+)$"),
    re.compile(r"^env: ['\u2018]?(?P<cmd>[^'\u2019:]+)['\u2019]?: No such file or directory$"),
)
# exit 126: found but not runnable
_NOT_EXECUTABLE = re.compile(
    r"^(?:\S*/)?(?:sh|bash|dash)(?:: line \d+|: \d+)?: (?P<cmd>.+?): "
    r"(?:Permission denied|cannot execute.*)$"
)
_MAKE_127 = re.compile(r"^make(?:\[\d+\])?: \*\*\* .*Error 12[67]$", re.MULTILINE)
_NODE_MODULE = re.compile(r"^Error: Cannot find module '(?P<spec>[^']+)'")
_DEPENDENCY = (
    re.compile(r"^npm (?:ERR!|error) (?:missing|invalid|peer dep missing):? .+$"),
    re.compile(r"^npm (?:ERR!|error) (?:code E404|404 Not Found).*$"),
    re.compile(r"^.*\bUNMET (?:PEER )?DEPENDENCY\b.*$"),
    re.compile(
        r"^ERROR: (?:Could not find a version that satisfies|No matching distribution)"
        r".*$"
    ),
)
# Contention that settles the matter: the tool gave up because something else holds a lock.
_LOCK_STRONG = (
    re.compile(r"Could not get lock (?P<what>\S+?)\.?(?: |$)"),
    re.compile(
        r"Unable to acquire the dpkg frontend lock|Unable to lock (?:the administration )?"
        r"directory"
    ),
    re.compile(r"\bdatabase is locked\b"),
    re.compile(r"Unable to create '(?P<what>[^']+\.lock)': File exists"),
    re.compile(r"\bnpm (?:ERR!|error) code (?:ELOCKED|EEXIST)\b.*\block\b|\bELOCKED\b"),
    re.compile(r"Lock wait timeout exceeded|could not obtain lock on"),
    re.compile(r"waiting for the other yarn instance to finish"),
)
# Waiting on a lock: the cause only if the command then timed out or nothing else failed.
_LOCK_WEAK = (
    re.compile(r"Blocking waiting for file lock on (?P<what>.+)$"),
    re.compile(r"Waiting for cache lock"),
    re.compile(r"Another git process seems to be running"),
)
_CRASH = (
    re.compile(r"^INTERNALERROR>"),
    re.compile(r"\bINTERNAL ERROR\b"),
    re.compile(r"internal compiler error|the compiler unexpectedly panicked"),
    re.compile(r"^Fatal Python error:"),
    re.compile(r"JavaScript heap out of memory"),
    re.compile(r"^Segmentation fault|\(core dumped\)"),
)


def parse(text: str, ctx: ParseContext, found: list[Diagnostic]) -> list[Diagnostic]:
    covered = " ".join(d.message for d in found)
    diags: list[Diagnostic] = []

    def add(message: str, code: str, cls: ErrorClass, severity: Severity = "error") -> None:
        message = ctx.strip_root(message.strip())
        if all(d.message != message for d in diags):
            diags.append(Diagnostic(TOOL, message, code=code, severity=severity, error_class=cls))

    command_failed = ctx.exit_code in (126, 127) or _MAKE_127.search(text) is not None
    for line in text.splitlines():
        stripped = line.strip()
        if command_failed:
            for pattern in _NOT_FOUND:
                if (m := pattern.match(stripped)) is not None:
                    add(
                        f"command not found: {m['cmd']}",
                        "command-not-found",
                        ErrorClass.DEPENDENCY_ERROR,
                    )
            if (m := _NOT_EXECUTABLE.match(stripped)) is not None:
                add(
                    f"command not executable: {m['cmd']}",
                    "command-not-executable",
                    ErrorClass.DEPENDENCY_ERROR,
                )
        if (m := NO_MODULE.search(line)) is not None and m.group(0) not in covered:
            cls = missing_python_module_class(ctx, m["module"])
            add(f"No module named '{m['module']}'", "ModuleNotFoundError", cls)
        if (m := _NODE_MODULE.match(stripped)) is not None and m.group(0) not in covered:
            add(stripped, "MODULE_NOT_FOUND", js_module_class(m["spec"]))
        for pattern in _DEPENDENCY:
            if pattern.match(stripped):
                add(stripped, "missing-package", ErrorClass.DEPENDENCY_ERROR)
        for pattern in _LOCK_STRONG:
            if pattern.search(stripped):
                add(stripped, "lock", ErrorClass.RESOURCE_LOCK_ERROR)
        for pattern in _LOCK_WEAK:
            if pattern.search(stripped):
                add(stripped, "lock-wait", ErrorClass.RESOURCE_LOCK_ERROR, "warning")
        if not any(d.code == "tool-crash" for d in diags):
            for pattern in _CRASH:
                if pattern.search(stripped):
                    add(stripped[:200], "tool-crash", ErrorClass.UNKNOWN)
                    break
    return diags
