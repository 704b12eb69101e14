"""project.detect and project.validate.

project.detect reports what the host's project detection (tidegate.workspace.project)
found, and the validation command project.validate would run.

project.validate runs that command -- the operator's (``ToolContext.validation_command``)
when given, else the detected one; never one the model wrote -- through the command port
with the context's containment, after recording the workspace fingerprint it covers. A
failure is classified by ``tidegate.feedback.diagnose`` into structured diagnostics. The
claimed ``validate`` evidence names the command, status, exit code, fingerprint and
whether the run was contained; the executor adds whatever the command wrote from its own
inventory. A failing validation is a successful tool call with ``status: failed``.

Scoping ``paths`` are appended to the command as shell-quoted words, each spelled
``./<path>`` (the root itself stays ``.``). Quoting keeps a name one argument; the ``./``
keeps it from ever reading as an option (``-rf`` arrives as ``./-rf``). ``--`` would not
do: the command is arbitrary (``cargo test``, ``npm test``, ``make`` ...), and for many
tools ``--`` changes what follows instead of just ending the options, while every tool
that takes paths accepts a ``./`` prefix.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import msgspec

from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.adapters.command import command_status, run_contained
from tidegate.tools.context import ToolContext
from tidegate.tools.effects import Effects, InspectEffect, ValidateEffect
from tidegate.tools.schemas import project as proj

if TYPE_CHECKING:
    from tidegate.feedback.diagnostics import Diagnostic

MAX_DIAGNOSTICS = 50
OUTPUT_TAIL_CHARS = 4000


def detect(ctx: ToolContext) -> dict[str, Any]:
    """The project detection report for the workspace root, as JSON data."""
    from tidegate.workspace.project import detect_project

    report: dict[str, Any] = detect_project(ctx.workspace).to_json()
    return report


def validation_command(ctx: ToolContext, report: dict[str, Any] | None) -> tuple[str, str] | None:
    """(command, where it came from): the operator's, else the one detection suggests for
    the root (``detection:<manifest>``)."""
    if ctx.validation_command:
        return ctx.validation_command, "operator"
    if report is None:
        report = detect(ctx)
    found = report.get("validation_command")
    if not isinstance(found, str) or not found:
        return None
    sources = [
        s.get("source")
        for s in report.get("suggested_commands", [])
        if s.get("command") == found and s.get("cwd") == "."
    ]
    return found, f"detection:{sources[0]}" if sources else "detection"


def _path_word(path: PurePosixPath) -> str:
    """A checked root-relative path as it goes on the command line: never option-like."""
    return "." if path == PurePosixPath(".") else f"./{path}"


class ProjectDetect(msgspec.Struct):
    tool_id: str = "project.detect"
    label: str | None = None

    def run(self, args: proj.DetectInput, call: Dispatch) -> AdapterResult:
        ctx = call.context
        if args.path not in (".", "./"):
            raise ToolFailure(
                "unsupported", "project detection covers the workspace root only; use '.'"
            )
        report = detect(ctx)
        chosen = validation_command(ctx, report)
        output = proj.DetectOutput(
            root=".",
            project=report,
            validation_command=chosen[0] if chosen else None,
            validation_source=chosen[1] if chosen else None,
        )
        inspected = InspectEffect(
            kind="project",
            scope=".",
            paths=tuple(str(p) for p in report.get("manifests_paths", ())),
            truncated=not bool(report.get("complete", True)),
        )
        return AdapterResult(self.tool_id, output, Effects(inspect=(inspected,)))


class ProjectValidate(msgspec.Struct):
    tool_id: str = "project.validate"
    label: str | None = None

    def run(self, args: proj.ValidateInput, call: Dispatch) -> AdapterResult:
        from tidegate.feedback.classify import diagnose
        from tidegate.workspace.fingerprint import workspace_fingerprint

        ctx = call.context
        command = _scoped_command(ctx, args.paths)
        fingerprint = workspace_fingerprint(ctx.root, ctx.git_view)
        result = run_contained(ctx, command, ctx.root, args.timeout_s, call)
        status = command_status(result)
        status = "passed" if status == "succeeded" else status
        error_class = None
        summary = "validation passed"
        diagnostics: list[proj.DiagnosticOut] = []
        failing: list[str] = []
        tail = result.combined_tail[-OUTPUT_TAIL_CHARS:]
        if status != "passed":
            diagnosis = diagnose(command, result, ctx.root)
            error_class = diagnosis.error_class.value
            summary = diagnosis.summary
            failing = diagnosis.failing_tests[:MAX_DIAGNOSTICS]
            tail = diagnosis.output[-OUTPUT_TAIL_CHARS:]
            diagnostics = _diagnostics_out(diagnosis.diagnostics)
        contained = result.containment.backend == "bubblewrap" and result.containment.verified
        output = proj.ValidateOutput(
            validation_id=args.validation_id,
            command=command,
            status=status,  # type: ignore[arg-type]
            exit_code=result.exit_code,
            error_class=error_class,
            summary=summary,
            diagnostics=diagnostics,
            failing_tests=failing,
            output_tail=tail,
            fingerprint=fingerprint,
            duration_s=round(result.duration_s, 3),
            containment=result.containment.to_json(),
        )
        evidence = ValidateEffect(
            validation_id=args.validation_id,
            command=command,
            status=status,  # type: ignore[arg-type]
            exit_code=result.exit_code,
            fingerprint=fingerprint,
            error_class=error_class,
            contained=contained,
        )
        return AdapterResult(self.tool_id, output, Effects(validate=evidence), state_changed=True)


def _scoped_command(ctx: ToolContext, paths: Sequence[str]) -> str:
    """The project's validation command, limited to ``paths`` when there are any."""
    from tidegate.workspace.confine.refusal import PathRefused, check_relative

    chosen = validation_command(ctx, None)
    if chosen is None:
        raise ToolFailure(
            "no_validation_command",
            "no validation command is configured or detected for this project",
            retryable=False,
        )
    command = chosen[0]
    try:
        scoped = [_path_word(check_relative(p)) for p in paths]
    except PathRefused as exc:
        raise ToolFailure("path_refused", str(exc)) from exc
    if scoped:
        command = command + " " + " ".join(shlex.quote(p) for p in scoped)
    return command


def _diagnostics_out(diagnostics: Sequence[Diagnostic]) -> list[proj.DiagnosticOut]:
    """The first ``MAX_DIAGNOSTICS`` diagnostics as the tool reports them."""
    return [
        proj.DiagnosticOut(
            tool=d.tool,
            message=d.message[:1000],
            path=d.path,
            line=d.line,
            code=d.code,
            severity=d.severity,
            test_id=d.test_id,
        )
        for d in diagnostics[:MAX_DIAGNOSTICS]
    ]
