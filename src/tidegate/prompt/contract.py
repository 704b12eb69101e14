"""The structured prompt configuration a host supplies, and nothing more.

The system prompt is runtime-owned policy: a host states facts (the operating system, the
interpreter that runs commands) and policy choices (approval profile, network and write
access), and tidegate assembles the text, its version and its hash from them. Free-form
prompt text, a claimed version or a claimed hash are therefore refused outright, as is any
key tidegate does not know, so a typo can never silently weaken policy.

Input is accepted in snake_case and in the camelCase spelling of the wire format
(``approvalProfile``, ``hostEnvironment.command.argumentsPrefix``, ...); a key given in
both spellings is refused. Bad input raises ``pydantic.ValidationError`` from the models,
or :class:`PromptConfigurationError` (a one-line ``UsageError``) from
:func:`load_prompt_configuration`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from tidegate.errors import UsageError
from tidegate.prompt.hashing import SHA256_PREFIX, sha256_json

ApprovalProfile = Literal["strict", "balanced", "trusted-workspace"]
Complexity = Literal["simple", "standard", "complex"]
AccessLevel = Literal["allowed", "denied", "policy_gated"]
CommandMode = Literal["shell_string", "argv"]
PathStyle = Literal["posix", "windows", "unknown"]

UNKNOWN = "unknown"
"""What a host says when it cannot name a value; never good enough for ``command.run``."""

MAX_DIRTY_SUMMARY_CHARS = 20_000
MAX_INSTRUCTION_CHARS = 32_000

# Fields of the old free-form prompt interface, in both spellings, with why each is gone.
_LEGACY_FIELDS: dict[str, str] = {
    "systemPrompt": "tidegate assembles the system prompt from its own versioned modules",
    "promptHash": "tidegate computes the prompt hash from the prompt it assembled",
    "promptVersion": "the prompt version belongs to tidegate's assembled prompt",
    "workspaceInstructions": (
        "give verified records under trustedWorkspaceInstructions (source, content, "
        "contentHash) instead"
    ),
}
LEGACY_FIELDS = frozenset(
    {*_LEGACY_FIELDS, *(re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower() for k in _LEGACY_FIELDS)}
)


class PromptConfigurationError(UsageError):
    """The prompt configuration (or run request) the host supplied is not acceptable."""


def reject_legacy_fields(data: object, where: str) -> None:
    """Raise ``ValueError`` naming the first legacy prompt field found in ``data``."""
    if not isinstance(data, Mapping):
        return
    for key in data:
        if key in LEGACY_FIELDS:
            camel = to_camel(key) if "_" in key else key
            raise ValueError(
                f"{where}.{key} is a legacy free-form prompt field and is not accepted: "
                f"{_LEGACY_FIELDS[camel]}"
            )


class HostInput(BaseModel):
    """A host's structured input: camelCase keys (the Python names accepted too), no
    unknown key, frozen."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
    )


class CommandEnvironment(HostInput):
    """The one interpreter that runs ``command.run``: exactly what the adapter spawns."""

    executable: str = Field(min_length=1)
    arguments_prefix: tuple[str, ...] = Field(
        validation_alias=AliasChoices(
            "argumentsPrefix", "arguments_prefix", "argvPrefix", "argv_prefix"
        ),
    )
    command_mode: CommandMode = "shell_string"
    shell: str = Field(min_length=1)
    """The shell that parses the command text (``sh``, ``bash``, ``cmd``, ``powershell``)."""
    dialect: str | None = Field(default=None, min_length=1)
    """A more precise name for the command language (``posix-sh``), when the host has one;
    the prompt states it exactly as given, falling back to ``shell``."""
    path_style: PathStyle
    interactive: Literal[False] = False
    stdin: Literal["closed"] = "closed"
    tty: Literal[False] = False

    @property
    def effective_dialect(self) -> str:
        return self.dialect or self.shell

    def unknown_parts(self) -> list[str]:
        """The required facts the host could not name."""
        parts = []
        if self.executable.strip() in ("", UNKNOWN):
            parts.append("executable")
        if self.shell.strip() in ("", UNKNOWN):
            parts.append("shell")
        if self.dialect is not None and self.dialect.strip() in ("", UNKNOWN):
            parts.append("dialect")
        if self.path_style == UNKNOWN:
            parts.append("pathStyle")
        return parts


class HostEnvironment(HostInput):
    operating_system: str = Field(min_length=1)
    architecture: str = Field(default=UNKNOWN, min_length=1)
    command: CommandEnvironment | None = None
    """None when the host publishes no interpreter (``"unknown"`` is read as None)."""

    @field_validator("command", mode="before")
    @classmethod
    def _unknown_is_absent(cls, value: Any) -> Any:
        return None if value == UNKNOWN else value


class TrustedInstruction(HostInput):
    """A workspace instruction the host verified before the run: promoted text, with where
    it came from. Repository text is untrusted unless it arrives this way."""

    source: str = Field(min_length=1, max_length=500)
    content: str = Field(min_length=1, max_length=MAX_INSTRUCTION_CHARS)
    content_hash: str
    provenance: str = Field(default="host-verified", min_length=1, max_length=200)
    """Who vouched for this record and how (for example ``operator: --trust AGENTS.md``)."""

    @field_validator("content_hash")
    @classmethod
    def _hash_form(cls, value: str) -> str:
        digest = value.removeprefix(SHA256_PREFIX).lower()
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValueError("contentHash must be 'sha256:' followed by 64 hex digits")
        return SHA256_PREFIX + digest

    @model_validator(mode="after")
    def _hash_matches(self) -> TrustedInstruction:
        actual = SHA256_PREFIX + hashlib.sha256(self.content.encode("utf-8")).hexdigest()
        if actual != self.content_hash:
            raise ValueError(
                f"contentHash of trusted instruction {self.source!r} does not match its "
                f"content (content hashes to {actual})"
            )
        return self


class PromptConfiguration(HostInput):
    """Everything a host may say about the prompt. Hashing it is deterministic."""

    approval_profile: ApprovalProfile
    complexity: Complexity
    network_access: AccessLevel
    write_access: AccessLevel
    host_environment: HostEnvironment | None = None
    dirty_state_summary: str | None = Field(default=None, max_length=MAX_DIRTY_SUMMARY_CHARS)
    """Untrusted: a description of the working tree, shown to the model as data."""
    trusted_workspace_instructions: tuple[TrustedInstruction, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _no_legacy_fields(cls, data: Any) -> Any:
        reject_legacy_fields(data, "prompt")
        return data

    @field_validator("trusted_workspace_instructions")
    @classmethod
    def _distinct_sources(
        cls, value: tuple[TrustedInstruction, ...]
    ) -> tuple[TrustedInstruction, ...]:
        seen: set[tuple[str, str]] = set()
        for record in value:
            key = (record.source, record.content_hash)
            if key in seen:
                raise ValueError(f"trusted instruction {record.source!r} is given twice")
            seen.add(key)
        return value

    def wire(self) -> dict[str, Any]:
        """The configuration in its camelCase wire form (what checkpoints record)."""
        return self.model_dump(mode="json", by_alias=True)

    def configuration_hash(self) -> str:
        return sha256_json(self.wire())


def load_prompt_configuration(data: Mapping[str, Any]) -> PromptConfiguration:
    """Validate host input, turning every problem into one ``PromptConfigurationError``."""
    try:
        return PromptConfiguration.model_validate(data)
    except ValidationError as exc:
        raise PromptConfigurationError(describe_validation_error(exc, "prompt")) from exc


def describe_validation_error(exc: ValidationError, where: str) -> str:
    """One line naming each offending field, e.g. ``prompt.approvalProfile: ...``."""
    parts = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field (not part of the prompt contract)"
        if message.startswith(f"{where}."):
            parts.append(message)  # already names its field
        else:
            parts.append(f"{where}.{loc}: {message}" if loc else f"{where}: {message}")
    return f"invalid {where}: " + "; ".join(parts)
