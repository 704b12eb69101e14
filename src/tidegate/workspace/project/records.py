"""What project detection reports: manifests, suggested commands, the report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

ManifestStatus = Literal["ok", "malformed", "unreadable"]
Purpose = Literal["test", "lint", "typecheck", "build"]


class Manifest(msgspec.Struct, frozen=True):
    path: str
    kind: str
    """The manifest's file name (``pyproject.toml``, ``package.json`` ...)."""
    ecosystem: str
    status: ManifestStatus
    error: str | None = None
    details: Mapping[str, Any] = msgspec.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "ecosystem": self.ecosystem,
            "status": self.status,
            "error": self.error,
            "details": dict(self.details),
        }


class SuggestedCommand(msgspec.Struct, frozen=True):
    command: str
    purpose: Purpose
    cwd: str
    """Directory (root-relative) the command is meant to run in."""
    source: str
    """The manifest (or file) whose configuration suggests it."""
    reason: str
    runs_repository_script: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "purpose": self.purpose,
            "cwd": self.cwd,
            "source": self.source,
            "reason": self.reason,
            "runs_repository_script": self.runs_repository_script,
        }


class ProjectReport(msgspec.Struct, frozen=True):
    root: str
    complete: bool
    incomplete_reasons: list[str]
    entries_examined: int
    manifests: list[Manifest]
    languages: dict[str, int]
    """Source files per language, counted by extension among regular files examined."""
    suggested_commands: list[SuggestedCommand]
    excluded: list[str]
    """What the traversal skipped (.git, ignored paths, dependency directories)."""
    excluded_total: int
    not_examined: list[str]
    """Directories at the depth limit, whose contents were not looked at."""
    scope: Mapping[str, Any]

    @property
    def validation_command(self) -> str | None:
        """The suggested test command for the root: one a tool's own configuration names
        (``pytest``, ``cargo test``) before one the repository scripts (``npm test``,
        ``make test``)."""
        tests = [s for s in self.suggested_commands if s.purpose == "test" and s.cwd == "."]
        tests.sort(key=lambda s: s.runs_repository_script)
        return tests[0].command if tests else None

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "complete": self.complete,
            "incomplete_reasons": list(self.incomplete_reasons),
            "entries_examined": self.entries_examined,
            "manifests": [m.to_json() for m in self.manifests],
            "manifests_paths": [m.path for m in self.manifests],
            "ecosystems": sorted({m.ecosystem for m in self.manifests}),
            "languages": dict(self.languages),
            "suggested_commands": [s.to_json() for s in self.suggested_commands],
            "validation_command": self.validation_command,
            "excluded": list(self.excluded),
            "excluded_total": self.excluded_total,
            "not_examined": list(self.not_examined),
            "scope": dict(self.scope),
        }
