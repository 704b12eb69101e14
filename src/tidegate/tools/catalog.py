"""The 21 canonical tools, their model-facing names, and the active registry of a session.

Canonical IDs (``workspace.read``) are stable and are what effects, traces and policies
name. Many providers forbid dots in function names, so the model sees ``workspace_read``;
the mapping is a fixed table, never a string guess in the other direction.

A registry starts with the non-lazy tools that have an adapter and that the task mode
permits; ``catalog.search`` activates more. Activation changes ``active_hash`` (what a
prompt snapshot records) but never the effect profile digest. Tools whose backend is
absent (no adapter, not even a labelled double) are not in the registry at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

import msgspec

from tidegate.tools.effects import PROFILE, effect_metadata, sha256_json, validate_registry
from tidegate.tools.policy import TaskMode
from tidegate.tools.schemas import artifact, catalog, command, external, git, project, task, user
from tidegate.tools.schemas import workspace as ws
from tidegate.tools.schemas.base import ToolInput, ToolOutput, json_schema


class Labelled(Protocol):
    """What the registry needs of an adapter (``tools.adapters.base.ToolAdapter``): its
    label, shown beside the tool (None for the host's real adapters)."""

    @property
    def label(self) -> str | None: ...


Capture = Literal["none", "target_path", "inventory"]
"""How the executor observes a call's workspace mutations, independently of the adapter:
nothing, the typed state of the ``path`` argument before and after, or a whole-workspace
inventory before and after."""


class ToolSpec(msgspec.Struct, frozen=True):
    """One canonical tool: its ID, schemas, how its effects are captured, when it is active."""

    tool_id: str
    summary: str
    input_model: type[ToolInput]
    output_model: type[ToolOutput]
    capture: Capture = "none"
    lazy: bool = False
    keywords: tuple[str, ...] = ()
    declared: frozenset[str] | None = None
    """Capabilities this descriptor claims; None means "the profile's" (the only value a
    built-in descriptor may have; anything else is refused when the registry is built)."""

    @property
    def model_name(self) -> str:
        return self.tool_id.replace(".", "_")

    @property
    def capabilities(self) -> frozenset[str]:
        return (
            self.declared if self.declared is not None else PROFILE.get(self.tool_id, frozenset())
        )

    @property
    def writes(self) -> bool:
        return "write" in self.capabilities


def _spec(
    tool_id: str,
    summary: str,
    io: tuple[type[ToolInput], type[ToolOutput]],
    *,
    capture: Capture = "none",
    lazy: bool = False,
    keywords: str = "",
) -> ToolSpec:
    return ToolSpec(tool_id, summary, io[0], io[1], capture, lazy, tuple(keywords.split()))


CATALOG: tuple[ToolSpec, ...] = (
    _spec(
        "artifact.create",
        "Store a text artifact (notes, reports) outside the workspace; returns its id.",
        (artifact.CreateInput, artifact.CreateOutput),
        lazy=True,
        keywords="artifact save note report store",
    ),
    _spec(
        "artifact.list",
        "List stored artifacts.",
        (artifact.ListInput, artifact.ListOutput),
        lazy=True,
        keywords="artifact list",
    ),
    _spec(
        "artifact.read",
        "Read a stored artifact by id.",
        (artifact.ReadInput, artifact.ReadOutput),
        lazy=True,
        keywords="artifact read",
    ),
    _spec(
        "catalog.search",
        "Find more tools by keyword and activate them for the following turns.",
        (catalog.SearchInput, catalog.SearchOutput),
        keywords="tools catalog search activate",
    ),
    _spec(
        "command.run",
        "Run a command string with the published interpreter in the workspace; closed stdin, "
        "no TTY, bounded output. Not validation: use project_validate for that.",
        (command.RunInput, command.RunOutput),
        capture="inventory",
        keywords="command shell run execute build",
    ),
    _spec(
        "command.session",
        "Start a long-running non-interactive process, send it stdin, read its output in "
        "bounded pieces, stop it.",
        (command.SessionInput, command.SessionOutput),
        capture="inventory",
        lazy=True,
        keywords="command session process server background long-running",
    ),
    _spec(
        "git.exec",
        "Run a read-only git subcommand (status, diff, log, show, blame, ls-files ...).",
        (git.GitInput, git.GitOutput),
        keywords="git diff log status history blame",
    ),
    _spec(
        "perception.analyze",
        "Answer a question about a stored artifact (image, document).",
        (external.PerceptionInput, external.PerceptionOutput),
        lazy=True,
        keywords="perception image screenshot analyze vision",
    ),
    _spec(
        "preview.manage",
        "Start, inspect or stop a preview of the application.",
        (external.PreviewInput, external.PreviewOutput),
        lazy=True,
        keywords="preview browser app server",
    ),
    _spec(
        "project.detect",
        "Detect the project's languages, manifests and validation command.",
        (project.DetectInput, project.DetectOutput),
        keywords="project detect manifest language",
    ),
    _spec(
        "project.validate",
        "Run the project's validation command and return structured diagnostics.",
        (project.ValidateInput, project.ValidateOutput),
        capture="inventory",
        keywords="project validate test lint check verify",
    ),
    _spec(
        "research.fetch",
        "Fetch a public web page as untrusted, bounded text.",
        (external.ResearchFetchInput, external.ResearchFetchOutput),
        lazy=True,
        keywords="research fetch web url documentation",
    ),
    _spec(
        "research.search",
        "Search public sources; results are untrusted.",
        (external.ResearchSearchInput, external.ResearchSearchOutput),
        lazy=True,
        keywords="research search web documentation",
    ),
    _spec(
        "task.checkpoint",
        "Record the task's plan and progress durably.",
        (task.CheckpointInput, task.CheckpointOutput),
        keywords="task plan checkpoint progress",
    ),
    _spec(
        "user.ask",
        "Ask the user a question and wait for the answer.",
        (user.AskInput, user.AskOutput),
        keywords="user ask question clarify",
    ),
    _spec(
        "workspace.edit",
        "Replace exact text in a file; 'expect' must be the sha256 you last read.",
        (ws.EditInput, ws.EditOutput),
        capture="target_path",
        keywords="edit replace modify file",
    ),
    _spec(
        "workspace.glob",
        "Find workspace paths matching a glob pattern.",
        (ws.GlobInput, ws.ListingOutput),
        keywords="glob find files",
    ),
    _spec(
        "workspace.grep",
        "Search file contents in the workspace.",
        (ws.GrepInput, ws.GrepOutput),
        keywords="grep search text",
    ),
    _spec(
        "workspace.list",
        "List a workspace directory.",
        (ws.ListInput, ws.ListingOutput),
        keywords="list directory ls",
    ),
    _spec(
        "workspace.read",
        "Read a text file (a line range of it); returns the content and its sha256.",
        (ws.ReadInput, ws.ReadOutput),
        keywords="read file open",
    ),
    _spec(
        "workspace.write",
        "Create or replace a whole file; 'expect' is 'must_not_exist' or the sha256 you read.",
        (ws.WriteInput, ws.WriteOutput),
        capture="target_path",
        keywords="write create file",
    ),
)

SPECS: Mapping[str, ToolSpec] = {spec.tool_id: spec for spec in CATALOG}
_BY_MODEL_NAME: Mapping[str, str] = {spec.model_name: spec.tool_id for spec in CATALOG}


def canonical_id(name: str) -> str | None:
    """The canonical ID for a model-facing name or a canonical ID; None if unknown."""
    if name in SPECS:
        return name
    return _BY_MODEL_NAME.get(name)


def model_name(tool_id: str) -> str:
    return SPECS[tool_id].model_name


class ToolDefinition(msgspec.Struct, frozen=True):
    """What a model is shown for one active tool."""

    name: str
    canonical_id: str
    description: str
    input_schema: dict[str, Any]
    label: str | None = None
    """Set for a labelled double or a test adapter; None for the host's real adapter."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "canonical_id": self.canonical_id,
            "description": self.description,
            "input_schema": self.input_schema,
            "label": self.label,
        }


def definition(spec: ToolSpec, label: str | None) -> ToolDefinition:
    description = spec.summary if label is None else f"[{label}] {spec.summary}"
    return ToolDefinition(
        spec.model_name, spec.tool_id, description, json_schema(spec.input_model), label
    )


class ToolRegistry:
    """The tools one session can call: those with an adapter, allowed by the mode, active.

    Validated against the effect profile when built and after every activation.
    """

    def __init__(
        self,
        adapters: Mapping[str, Labelled],
        mode: TaskMode = TaskMode.PATCH,
        specs: Sequence[ToolSpec] = CATALOG,
        activate_all: bool = False,
    ) -> None:
        self.adapters = adapters
        self.mode = mode
        self.specs = specs
        self.activate_all = activate_all
        self._by_id = {spec.tool_id: spec for spec in specs}
        self._names = {spec.model_name: spec.tool_id for spec in specs}
        self._active = {
            tool for tool in self.available if activate_all or not self._by_id[tool].lazy
        }
        self._check()

    def _check(self) -> None:
        validate_registry(
            ((s.tool_id, s.model_name, s.capabilities) for s in self.specs), self._active
        )

    @property
    def available(self) -> list[str]:
        """Tools that could be active: an adapter exists and the mode allows them."""
        return sorted(
            tool
            for tool, spec in self._by_id.items()
            if tool in self.adapters and not (self.mode.read_only and spec.writes)
        )

    @property
    def active(self) -> list[str]:
        return sorted(self._active)

    def is_active(self, tool_id: str) -> bool:
        return tool_id in self._active

    def spec(self, name: str) -> ToolSpec | None:
        """The spec for a model-facing name or canonical ID (active or not)."""
        tool = name if name in self._by_id else self._names.get(name)
        return None if tool is None else self._by_id[tool]

    def label(self, tool_id: str) -> str | None:
        adapter = self.adapters.get(tool_id)
        return None if adapter is None else adapter.label

    def activate(self, tool_ids: Iterable[str]) -> list[str]:
        """Activate available tools; returns the ones that were not active before."""
        allowed = set(self.available)
        new = sorted({t for t in tool_ids if t in allowed} - self._active)
        if new:
            self._active.update(new)
            self._check()
        return new

    def definitions(self) -> list[ToolDefinition]:
        return [definition(self._by_id[t], self.label(t)) for t in self.active]

    @property
    def active_hash(self) -> str:
        """Digest of exactly what the model is shown: changes when a tool is activated."""
        return sha256_json([d.to_json() for d in self.definitions()])

    def effect_metadata(self) -> dict[str, Any]:
        return effect_metadata(self.active)

    def search(self, query: str) -> list[ToolSpec]:
        """Specs whose ID, summary or keywords contain any word of ``query``."""
        words = {w for w in query.lower().replace("_", " ").replace(".", " ").split() if w}
        found = []
        for spec in self.specs:
            haystack = " ".join((spec.tool_id.replace(".", " "), spec.summary, *spec.keywords))
            tokens = set(haystack.lower().replace(",", " ").replace(".", " ").split())
            if words & tokens:
                found.append(spec)
        return found
