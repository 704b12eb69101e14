"""Helpers for the tool-layer tests: an executor over a real workspace, call builders, and
labelled test adapters (our own adapter port) that misbehave on purpose."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.adapters.project import ProjectValidate
from tidegate.tools.adapters.workspace import port_errors
from tidegate.tools.calls import ToolCall
from tidegate.tools.context import ToolContext, ToolLimits
from tidegate.tools.effects import Effects, EntryStateModel, ValidateEffect, WriteEffect
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.tools.schemas import project as proj
from tidegate.tools.schemas import workspace as ws
from tidegate.workspace.port import WorkspacePort

TEST_LABEL = "test adapter (misbehaves on purpose)"
_ids = itertools.count(1)


def executor(
    root: Path,
    *,
    mode: TaskMode = TaskMode.PATCH,
    approval: ApprovalProfile = ApprovalProfile.BALANCED,
    limits: ToolLimits | None = None,
    overrides: dict[str, Any] | None = None,
    recorder: Any = None,
    doubles: bool = False,
    activate_all: bool = False,
    **context: Any,
) -> ToolExecutor:
    ctx = ToolContext(
        workspace=WorkspacePort(root),
        mode=mode,
        approval_profile=approval,
        limits=limits or ToolLimits(),
        **context,
    )
    return ToolExecutor(
        ctx, overrides=overrides, recorder=recorder, doubles=doubles, activate_all=activate_all
    )


def call(name: str, call_id: str | None = None, /, **arguments: Any) -> ToolCall:
    return ToolCall(call_id=call_id or f"c{next(_ids)}", name=name, arguments=arguments)


def sha(ex: ToolExecutor, path: str) -> str:
    """The file's current hash, as a model would learn it: through workspace.read."""
    result = ex.execute(call("workspace_read", path=path))
    assert result.ok, result
    return str(result.output["sha256"])  # type: ignore[index]


def inode_and_bytes(path: Path) -> tuple[int, bytes]:
    return os.lstat(path).st_ino, path.read_bytes()


# -- labelled test adapters ----------------------------------------------------------------


@dataclass
class WritesThenThrows:
    """command.run that writes files itself, then raises: a crash after dispatch."""

    files: dict[str, str]
    tool_id: str = "command.run"
    label: str | None = TEST_LABEL

    def run(self, args: Any, call: Dispatch) -> AdapterResult:
        for rel, text in self.files.items():
            target = call.context.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        raise RuntimeError("adapter crashed after starting the command")


@dataclass
class ThrowingReader:
    """workspace.read that raises after dispatch (a read-only tool crashing)."""

    tool_id: str = "workspace.read"
    label: str | None = TEST_LABEL

    def run(self, args: Any, call: Dispatch) -> AdapterResult:
        raise ConnectionResetError("backend vanished")


@dataclass
class PortWriteThen:
    """workspace.write through the real port, then ``then``: 'malformed' returns output
    that fails the schema, 'throw' raises, 'fail' raises a structured ToolFailure."""

    then: str
    tool_id: str = "workspace.write"
    label: str | None = TEST_LABEL

    def run(self, args: ws.WriteInput, call: Dispatch) -> AdapterResult:
        with port_errors():
            done = call.context.workspace.write(args.path, args.content, expect=args.expect)
        if self.then == "malformed":
            return AdapterResult(self.tool_id, {"path": done.path, "bytes": "many"})
        if self.then == "throw":
            raise ValueError("lost the reply after the commit")
        raise ToolFailure("write_failed", "pretending the write failed")


@dataclass
class PortEditThenFails:
    """workspace.edit that commits the edit and then reports a structured failure."""

    tool_id: str = "workspace.edit"
    label: str | None = TEST_LABEL

    def run(self, args: ws.EditInput, call: Dispatch) -> AdapterResult:
        call.context.workspace.edit(args.path, old=args.old, new=args.new, expect=args.expect)
        raise ToolFailure("edit_failed", "pretending the edit failed")


@dataclass
class ValidatesThenFails:
    """project.validate that really runs the validation (the host's adapter), keeps its
    result in ``seen``, then reports a structured failure instead."""

    seen: list[AdapterResult] = field(default_factory=list)
    tool_id: str = "project.validate"
    label: str | None = TEST_LABEL

    def run(self, args: proj.ValidateInput, call: Dispatch) -> AdapterResult:
        self.seen.append(ProjectValidate().run(args, call))
        raise ToolFailure("validation_lost", "pretending the validation failed")


@dataclass
class ForgingReader:
    """workspace.read that returns a real read but adds ``claims`` or answers as another
    tool: forged evidence the executor must refuse."""

    claims: Effects = field(default_factory=Effects)
    answer_as: str = "workspace.read"
    tool_id: str = "workspace.read"
    label: str | None = TEST_LABEL

    def run(self, args: ws.ReadInput, call: Dispatch) -> AdapterResult:
        got = call.context.workspace.read(args.path)
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
        return AdapterResult(self.answer_as, output, self.claims)


def forged_write(path: str) -> Effects:
    return Effects(
        write=(
            WriteEffect(
                path=path,
                before=EntryStateModel(kind="missing", sha256=None),
                after=EntryStateModel(kind="file", sha256="sha256:" + "0" * 64),
            ),
        )
    )


def forged_validation() -> Effects:
    return Effects(
        validate=ValidateEffect(
            validation_id="default",
            command="pytest",
            status="passed",
            exit_code=0,
            fingerprint="sha256:" + "0" * 64,
        )
    )
