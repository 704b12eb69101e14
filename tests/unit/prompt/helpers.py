"""Builders shared by the prompt and agent tests: a spec-shaped configuration, plain tool
descriptors, and a model identity/capability snapshot with a volatile probe timestamp."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tidegate.prompt import PromptConfiguration, PromptSnapshot, assemble_prompt


@dataclass(frozen=True)
class Tool:
    """A descriptor whose name is its canonical id."""

    name: str
    description: str


@dataclass(frozen=True)
class NamedTool:
    """A descriptor shaped like a catalog definition: model-facing name + canonical id."""

    name: str
    canonical_id: str
    description: str


DESCRIPTIONS = {
    "catalog.search": "Find and activate further built-in tools.",
    "command.run": "Run one command through the published interpreter.",
    "git.exec": "Run a read-only git action such as diff or log.",
    "project.validate": "Run the project's validation and report structured results.",
    "research.fetch": "Fetch a public URL.",
    "research.search": "Search the public web.",
    "workspace.edit": "Edit a file with an exact SEARCH/REPLACE pair.",
    "workspace.read": "Read a file or a line range.",
}


def tools(*names: str) -> list[Tool]:
    return [Tool(n, DESCRIPTIONS.get(n, f"The {n} tool.")) for n in names]


POSIX_COMMAND: dict[str, Any] = {
    "executable": "/bin/sh",
    "argumentsPrefix": ["-c"],
    "commandMode": "shell_string",
    "shell": "sh",
    "dialect": "posix-sh",
    "pathStyle": "posix",
    "interactive": False,
    "stdin": "closed",
    "tty": False,
}

WINDOWS_COMMAND: dict[str, Any] = {
    "executable": "C:\\Windows\\System32\\cmd.exe",
    "argumentsPrefix": ["/d", "/s", "/c"],
    "commandMode": "shell_string",
    "shell": "cmd",
    "pathStyle": "windows",
    "interactive": False,
    "stdin": "closed",
    "tty": False,
}

INSTRUCTION = "Run the focused parser tests before the full suite."


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def config_data(**overrides: Any) -> dict[str, Any]:
    """A complete camelCase prompt configuration; keyword overrides replace keys (None
    removes one)."""
    data: dict[str, Any] = {
        "approvalProfile": "balanced",
        "complexity": "standard",
        "networkAccess": "policy_gated",
        "writeAccess": "allowed",
        "hostEnvironment": {
            "operatingSystem": "linux",
            "architecture": "x64",
            "command": dict(POSIX_COMMAND),
        },
        "dirtyStateSummary": "modified: src/parser.py",
        "trustedWorkspaceInstructions": [
            {"source": "AGENTS.md", "content": INSTRUCTION, "contentHash": sha(INSTRUCTION)}
        ],
    }
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def config(**overrides: Any) -> PromptConfiguration:
    return PromptConfiguration.model_validate(config_data(**overrides))


MODEL_IDENTITY: dict[str, Any] = {
    "provider": "scripted",
    "model": "scripted-coder",
    "deployment": "loopback",
}


def capabilities(probed_at: str = "2025-01-01T00:00:00Z", verified: bool = True) -> dict[str, Any]:
    return {
        "toolCalling": {
            "supported": True,
            "source": "probe",
            "verified": verified,
            "probedAt": probed_at,
        },
        "contextWindow": {"tokens": 128_000, "source": "declared", "checkedAt": probed_at},
        "streaming": True,
    }


DEFAULT_TOOLS = ("workspace.read", "workspace.edit", "command.run", "project.validate")


def snapshot(
    cfg: PromptConfiguration | None = None,
    *,
    active: Sequence[Any] | None = None,
    registry_hash: str | None = None,
    effect_policy_hash: str = "sha256:effects-1.1.0",
    identity: dict[str, Any] | None = None,
    caps: dict[str, Any] | None = None,
) -> PromptSnapshot:
    descriptors = list(active) if active is not None else tools(*DEFAULT_TOOLS)
    return assemble_prompt(
        cfg or config(),
        tools=descriptors,
        registry_hash=registry_hash or registry_of(descriptors),
        effect_policy_hash=effect_policy_hash,
        model_identity=identity or MODEL_IDENTITY,
        model_capabilities=caps or capabilities(),
    )


def registry_of(descriptors: Iterable[Any]) -> str:
    """Stands in for the catalog's active hash: a digest of the active names."""
    return sha(",".join(sorted(d.name for d in descriptors)))
