"""Adapters of the workspace tools over the confined WorkspacePort.

Reads, listings and searches claim ``inspect`` evidence from the port's typed results.
Writes and edits claim nothing: the executor observes the path's typed state before and
after. The port's expected refusals (stale precondition, path escape, not UTF-8, missing
file, ambiguous edit) become ToolFailure so the model can correct itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from tidegate.errors import UsageError
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.effects import Effects, InspectEffect
from tidegate.tools.schemas import workspace as ws

MAX_INSPECTED_PATHS = 200


@contextmanager
def port_errors() -> Iterator[None]:
    """Translate the workspace port's refusals (nothing was changed) into ToolFailure."""
    from tidegate.workspace.confine.refusal import PathRefused
    from tidegate.workspace.port import PathNotFound, StalePrecondition, WorkspaceError

    try:
        yield
    except StalePrecondition as exc:
        raise ToolFailure(
            "stale_precondition",
            str(exc),
            details={"path": exc.path, "expected": exc.expected, "actual": exc.actual.to_json()},
        ) from exc
    except PathRefused as exc:
        raise ToolFailure("path_refused", str(exc), details={"reason": exc.reason}) from exc
    except PathNotFound as exc:
        raise ToolFailure("not_found", str(exc)) from exc
    except (WorkspaceError, UsageError) as exc:
        details = {
            k: v for k in ("reason", "kind", "where") if isinstance(v := getattr(exc, k, None), str)
        }
        raise ToolFailure(_code(exc), str(exc), details=details) from exc


def _code(exc: Exception) -> str:
    """A snake_case failure code from the exception's class name (EditNotFound -> ...)."""
    name = type(exc).__name__
    out = [name[0].lower()]
    for ch in name[1:]:
        out.append(f"_{ch.lower()}" if ch.isupper() else ch)
    return "".join(out)


class WorkspaceRead(msgspec.Struct):
    tool_id: str = "workspace.read"
    label: str | None = None

    def run(self, args: ws.ReadInput, call: Dispatch) -> AdapterResult:
        with port_errors():
            got = call.context.workspace.read(
                args.path, start_line=args.start_line, max_lines=args.max_lines
            )
        inspected = InspectEffect(
            kind="file",
            scope=got.path,
            sha256=got.sha256,
            start_line=got.start_line,
            end_line=got.end_line,
            truncated=got.truncated,
        )
        output = ws.ReadOutput(
            path=got.path,
            content=got.content,
            sha256=got.sha256,
            size=got.size,
            start_line=got.start_line,
            end_line=got.end_line,
            total_lines=got.total_lines,
            truncated=got.truncated,
            next_start_line=got.next_start_line,
        )
        return AdapterResult(self.tool_id, output, Effects(inspect=(inspected,)))


class WorkspaceWrite(msgspec.Struct):
    tool_id: str = "workspace.write"
    label: str | None = None

    def run(self, args: ws.WriteInput, call: Dispatch) -> AdapterResult:
        with port_errors():
            done = call.context.workspace.write(args.path, args.content, expect=args.expect)
        after = done.after
        if after.kind != "file" or after.sha256 is None:
            raise RuntimeError(f"workspace.write left a {after.kind} at {done.path}")
        output = ws.WriteOutput(
            path=done.path,
            created=done.before.kind == "missing",
            sha256=after.sha256,
            size=len(args.content.encode("utf-8")),
        )
        return AdapterResult(self.tool_id, output)


class WorkspaceEdit(msgspec.Struct):
    tool_id: str = "workspace.edit"
    label: str | None = None

    def run(self, args: ws.EditInput, call: Dispatch) -> AdapterResult:
        with port_errors():
            done = call.context.workspace.edit(
                args.path,
                old=args.old,
                new=args.new,
                expect=args.expect,
                replace_all=args.replace_all,
            )
        if done.before.sha256 is None or done.after.sha256 is None:
            raise RuntimeError(f"workspace.edit of {done.path} did not leave a file")
        output = ws.EditOutput(
            path=done.path, before_sha256=done.before.sha256, sha256=done.after.sha256
        )
        return AdapterResult(self.tool_id, output)


def _listing(got: Any) -> ws.ListingOutput:
    return ws.ListingOutput(
        entries=[ws.EntryOut(path=e.path, kind=e.kind, size=e.size) for e in got.entries],
        truncated=got.truncated,
        next_cursor=got.next_cursor,
        excluded=list(got.excluded),
    )


class WorkspaceList(msgspec.Struct):
    tool_id: str = "workspace.list"
    label: str | None = None

    def run(self, args: ws.ListInput, call: Dispatch) -> AdapterResult:
        with port_errors():
            got = call.context.workspace.list(
                args.path,
                depth=args.depth,
                cursor=args.cursor,
                limit=args.limit,
                include_ignored=args.include_ignored,
            )
        output = _listing(got)
        inspected = InspectEffect(
            kind="directory",
            scope=args.path,
            paths=tuple(e.path for e in output.entries[:MAX_INSPECTED_PATHS]),
            truncated=got.truncated or len(output.entries) > MAX_INSPECTED_PATHS,
        )
        return AdapterResult(self.tool_id, output, Effects(inspect=(inspected,)))


class WorkspaceGlob(msgspec.Struct):
    tool_id: str = "workspace.glob"
    label: str | None = None

    def run(self, args: ws.GlobInput, call: Dispatch) -> AdapterResult:
        with port_errors():
            got = call.context.workspace.glob(
                args.pattern,
                cursor=args.cursor,
                limit=args.limit,
                include_ignored=args.include_ignored,
            )
        output = _listing(got)
        inspected = InspectEffect(
            kind="glob",
            scope=args.pattern,
            paths=tuple(e.path for e in output.entries[:MAX_INSPECTED_PATHS]),
            truncated=got.truncated or len(output.entries) > MAX_INSPECTED_PATHS,
        )
        return AdapterResult(self.tool_id, output, Effects(inspect=(inspected,)))


class WorkspaceGrep(msgspec.Struct):
    tool_id: str = "workspace.grep"
    label: str | None = None

    def run(self, args: ws.GrepInput, call: Dispatch) -> AdapterResult:
        with port_errors():
            got = call.context.workspace.grep(
                args.pattern,
                path=args.path,
                glob=args.glob,
                regex=args.regex,
                case_sensitive=args.case_sensitive,
                cursor=args.cursor,
                limit=args.limit,
                include_ignored=args.include_ignored,
            )
        output = ws.GrepOutput(
            matches=[ws.GrepMatchOut(path=m.path, line=m.line, text=m.text) for m in got.matches],
            files_scanned=got.files_scanned,
            truncated=got.truncated,
            next_cursor=got.next_cursor,
            excluded=list(got.excluded),
        )
        paths = tuple(dict.fromkeys(m.path for m in output.matches))
        inspected = InspectEffect(
            kind="grep",
            scope=f"{args.path}:{args.pattern}",
            paths=paths[:MAX_INSPECTED_PATHS],
            truncated=got.truncated or len(paths) > MAX_INSPECTED_PATHS,
        )
        return AdapterResult(self.tool_id, output, Effects(inspect=(inspected,)))


WORKSPACE_ADAPTERS: tuple[Callable[[], Any], ...] = (
    WorkspaceRead,
    WorkspaceWrite,
    WorkspaceEdit,
    WorkspaceList,
    WorkspaceGlob,
    WorkspaceGrep,
)
