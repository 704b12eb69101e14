"""The structured planner: no model. It turns the edit blocks of the objective into a
proposal, reading the T0 state to resolve ``replace:`` texts exactly once each."""

from __future__ import annotations

from pathlib import Path

from tidegate.errors import ErrorClass, PhaseError, UsageError
from tidegate.planners.objective import Objective, parse_objective
from tidegate.records.proposal import (
    ContentCheck,
    FileEdit,
    Finding,
    Plan,
    PlanRequest,
    Proposal,
    TreeView,
)


class StructuredPlanner:
    name = "structured"

    def __init__(self, objective: Objective, base_dir: Path) -> None:
        self.objective = objective
        self._diffs: list[str] = []
        for block in objective.blocks:
            if block.kind == "patch-file":
                file = (base_dir / block.path).expanduser()
                try:
                    # Bytes, not text mode: a diff of CRLF files must keep its \r exactly.
                    self._diffs.append(file.read_bytes().decode("utf-8", "surrogateescape"))
                except OSError as exc:
                    raise UsageError(f"patch-file {block.path}: {exc.strerror}") from exc

    @classmethod
    def from_text(cls, text: str, base_dir: Path, source: str = "objective") -> StructuredPlanner:
        objective = parse_objective(text, source)
        return cls(objective, base_dir)

    def plan(self, request: PlanRequest, tree: TreeView) -> Plan:
        steps = [
            f"{b.kind} {b.path}" + (f" -> {b.to}" if b.to else "") for b in self.objective.blocks
        ]
        summary = self.objective.prose or "; ".join(steps) or "no edits"
        targets = tuple(b.path for b in self.objective.blocks if b.kind != "patch-file")
        return Plan(summary=summary, targets=targets)

    def patch(self, request: PlanRequest, plan: Plan, tree: TreeView) -> Proposal:
        contents: dict[str, bytes | None] = {}
        modes: dict[str, bool] = {}
        checks: list[ContentCheck] = []

        def current(path: str) -> bytes | None:
            if path not in contents:
                contents[path] = tree.read_bytes(path)
                modes[path] = tree.is_executable(path)
            return contents[path]

        for block in self.objective.blocks:
            path = block.path
            if block.kind == "edit-file":
                data = current(path)
                if data is None:
                    raise _patch_error(f"edit-file {path}: {tree.explain_missing(path)}")
                text = data.decode("utf-8", "surrogateescape")
                for old, new in block.replacements:
                    count = text.count(old)
                    if count != 1:
                        what = "not found" if count == 0 else f"found {count} times; make it unique"
                        raise _patch_error(f"edit-file {path}: replace text {what}: {old[:80]!r}")
                    text = text.replace(old, new, 1)
                contents[path] = text.encode("utf-8", "surrogateescape")
            elif block.kind == "create-file":
                if current(path) is not None:
                    raise _patch_error(f"create-file {path}: the file already exists at T0")
                assert block.content is not None
                contents[path] = block.content.encode("utf-8")
                modes[path] = bool(block.executable)
            elif block.kind == "delete-file":
                if current(path) is None:
                    raise _patch_error(f"delete-file {path}: {tree.explain_missing(path)}")
                contents[path] = None
            elif block.kind == "rename-file":
                assert block.to is not None
                data = current(path)
                if data is None:
                    raise _patch_error(f"rename-file {path}: {tree.explain_missing(path)}")
                if current(block.to) is not None:
                    raise _patch_error(f"rename-file {path}: {block.to} already exists")
                contents[block.to] = data
                modes[block.to] = modes[path]
                contents[path] = None
            elif block.kind == "chmod-file":
                if current(path) is None:
                    raise _patch_error(f"chmod-file {path}: {tree.explain_missing(path)}")
                modes[path] = bool(block.executable)
            checks.extend(ContentCheck(path, c) for c in block.checks)

        edits = tuple(
            FileEdit(path, data, modes.get(path, False))
            for path, data in contents.items()
            if data != tree.read_bytes(path) or modes.get(path, False) != tree.is_executable(path)
        )
        diff = "".join(self._diffs) or None
        return Proposal(diff=diff, edits=edits, checks=tuple(checks))

    def review(self, request: PlanRequest, tree: TreeView) -> list[Finding]:
        findings = []
        for block in self.objective.blocks:
            needs_file = block.kind in ("edit-file", "delete-file", "rename-file", "chmod-file")
            if needs_file and tree.read_bytes(block.path) is None:
                findings.append(Finding(f"{block.kind}: no such file", path=block.path))
        return findings


def _patch_error(message: str) -> PhaseError:
    return PhaseError(ErrorClass.AST_VALIDATION_ERROR, message)
