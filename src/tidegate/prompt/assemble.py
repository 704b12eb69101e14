"""Assembling the system prompt: versioned modules -> one immutable, hashed snapshot.

The runtime, never the host, owns the words of the system prompt. :func:`assemble_prompt`
renders the modules in :data:`tidegate.prompt.modules.MODULES` from the structured
configuration and the active tools, and returns a :class:`PromptSnapshot` that carries the
text, the prompt version, each module's version, the SHA-256 hashes that checkpoints and
resume compare, and a token count that says whether it is exact or an estimate.

Before anything is rendered, an active command tool without a concrete, published
interpreter raises :class:`~tidegate.errors.CapabilityMismatch`: a model must never be told
to write commands for a shell nobody named.

Lazy tool activation and policy changes are handled by assembling again; the new snapshot
has a new hash, and the caller replaces the old one as a whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from tidegate.errors import CapabilityMismatch
from tidegate.prompt.contract import UNKNOWN, CommandEnvironment, PromptConfiguration
from tidegate.prompt.hashing import canonical_json, semantic_projection, sha256_json, sha256_text
from tidegate.prompt.modules import COMMAND_TOOLS, MODULES, ModuleContext, ToolLine
from tidegate.prompt.resume import PromptHashes
from tidegate.prompt.task import TaskContract

PROMPT_VERSION = "tidegate-agent/1.0.0"
"""Bumped whenever a module version changes or a module is added, removed or reordered."""


class ToolDescriptor(Protocol):
    """What assembly needs from an active tool: the name the model calls it by and its
    description. A descriptor that also has ``canonical_id`` (``command.run`` for the model
    name ``command_run``) is checked and described by that id; otherwise ``name`` is the
    canonical id."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


def canonical_id(tool: ToolDescriptor) -> str:
    value = getattr(tool, "canonical_id", None)
    return value if isinstance(value, str) and value else tool.name


class TokenEstimate(msgspec.Struct, frozen=True):
    """A token count for the system prompt, labelled with how it was obtained."""

    tokens: int
    method: str
    exact: bool


def estimate_tokens(text: str) -> TokenEstimate:
    """About four characters per token: a labelled estimate, never presented as exact."""
    return TokenEstimate(tokens=math.ceil(len(text) / 4), method="estimate:chars/4", exact=False)


TokenCounter = Callable[[str], TokenEstimate]


class PromptSection(msgspec.Struct, frozen=True):
    name: str
    version: str
    text: str
    cache_safe: bool


class PromptSnapshot(msgspec.Struct, frozen=True):
    """One assembled system prompt and everything needed to prove which one it was.

    Immutable: model metadata is kept as canonical JSON and decoded afresh on every read,
    so no caller can alter what was hashed.
    """

    version: str
    sections: tuple[PromptSection, ...]
    system_prompt: str
    system_prompt_hash: str
    configuration: PromptConfiguration
    configuration_hash: str
    tools: tuple[ToolLine, ...]
    registry_hash: str
    effect_policy_hash: str
    model_identity_json: str
    model_identity_hash: str
    model_capabilities_json: str
    model_capability_hash: str
    token_estimate: TokenEstimate
    prompt_hash: str

    @property
    def module_versions(self) -> dict[str, str]:
        return {s.name: s.version for s in self.sections}

    @property
    def model_identity(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.model_identity_json)
        return result

    @property
    def model_capabilities(self) -> dict[str, Any]:
        """The semantic capability evidence (source, verification state), no timestamps."""
        result: dict[str, Any] = json.loads(self.model_capabilities_json)
        return result

    @property
    def cache_safe_sections(self) -> tuple[PromptSection, ...]:
        return tuple(s for s in self.sections if s.cache_safe)

    @property
    def late_sections(self) -> tuple[PromptSection, ...]:
        """Per-run sections that must not influence provider cache keys."""
        return tuple(s for s in self.sections if not s.cache_safe)

    @property
    def cache_fingerprint(self) -> str:
        """A digest over the cache-safe surface only; late content never changes it."""
        return sha256_json(
            {
                "version": self.version,
                "sections": [[s.name, s.version, s.text] for s in self.cache_safe_sections],
            }
        )

    def hashes(self, task: TaskContract) -> PromptHashes:
        """The hashes a checkpoint records and a resume must match exactly."""
        return PromptHashes(
            prompt=self.prompt_hash,
            system_prompt=self.system_prompt_hash,
            task_contract=task.contract_hash(),
            registry=self.registry_hash,
            effect_policy=self.effect_policy_hash,
            model_identity=self.model_identity_hash,
            model_capability=self.model_capability_hash,
        )

    def record(self) -> dict[str, Any]:
        """What a ``prompt_snapshot`` trace event carries (no prompt text)."""
        return {
            "version": self.version,
            "modules": self.module_versions,
            "promptHash": self.prompt_hash,
            "systemPromptHash": self.system_prompt_hash,
            "configurationHash": self.configuration_hash,
            "registryHash": self.registry_hash,
            "effectPolicyHash": self.effect_policy_hash,
            "modelIdentityHash": self.model_identity_hash,
            "modelCapabilityHash": self.model_capability_hash,
            "cacheFingerprint": self.cache_fingerprint,
            "tokens": {
                "count": self.token_estimate.tokens,
                "method": self.token_estimate.method,
                "exact": self.token_estimate.exact,
            },
        }


def require_command_environment(config: PromptConfiguration, tool_names: frozenset[str]) -> None:
    """Raise ``CapabilityMismatch`` when a command tool is active without a concrete,
    published interpreter (OS, executable, dialect and path style all named)."""
    active = sorted(COMMAND_TOOLS & tool_names)
    if not active:
        return
    env = config.host_environment
    if env is None:
        raise CapabilityMismatch(
            f"{active[0]} is active but the host published no hostEnvironment: the prompt "
            "cannot say which interpreter runs commands"
        )
    missing = []
    if env.operating_system.strip() in ("", UNKNOWN):
        missing.append("hostEnvironment.operatingSystem")
    if isinstance(env.command, CommandEnvironment):
        missing.extend(f"hostEnvironment.command.{part}" for part in env.command.unknown_parts())
    else:
        missing.append("hostEnvironment.command")
    if missing:
        raise CapabilityMismatch(
            f"{active[0]} is active but the host left {', '.join(missing)} absent or unknown"
        )


def assemble_prompt(
    config: PromptConfiguration,
    *,
    tools: Sequence[ToolDescriptor],
    registry_hash: str,
    effect_policy_hash: str,
    model_identity: Mapping[str, Any],
    model_capabilities: Mapping[str, Any],
    count_tokens: TokenCounter | None = None,
) -> PromptSnapshot:
    """Render the system prompt for ``config`` and the active ``tools``.

    ``registry_hash`` and ``effect_policy_hash`` come from the tool catalog;
    ``model_identity`` and ``model_capabilities`` from the model port's snapshot. Volatile
    diagnostic keys in the model mappings (probe timestamps, latencies) are dropped before
    hashing, so a fresh probe does not change any hash. Raises ``CapabilityMismatch`` (see
    :func:`require_command_environment`) before anything else, and ``ValueError`` for
    duplicate tool names or empty hashes.
    """
    _check_inputs(config, tools, registry_hash, effect_policy_hash)
    lines = _tool_lines(tools)
    sections = _sections(ModuleContext(config=config, tools=lines))
    system_prompt = "\n\n".join(s.text for s in sections) + "\n"

    identity_json, identity_hash = _model_facts(model_identity)
    capabilities_json, capability_hash = _model_facts(model_capabilities)
    system_prompt_hash = sha256_text(system_prompt)
    configuration_hash = config.configuration_hash()
    prompt_hash = _prompt_hash(
        sections,
        system_prompt=system_prompt_hash,
        configuration=configuration_hash,
        registry=registry_hash,
        effect_policy=effect_policy_hash,
        identity=identity_hash,
        capability=capability_hash,
    )
    return PromptSnapshot(
        version=PROMPT_VERSION,
        sections=tuple(sections),
        system_prompt=system_prompt,
        system_prompt_hash=system_prompt_hash,
        configuration=config,
        configuration_hash=configuration_hash,
        tools=lines,
        registry_hash=registry_hash,
        effect_policy_hash=effect_policy_hash,
        model_identity_json=identity_json,
        model_identity_hash=identity_hash,
        model_capabilities_json=capabilities_json,
        model_capability_hash=capability_hash,
        token_estimate=(count_tokens or estimate_tokens)(system_prompt),
        prompt_hash=prompt_hash,
    )


def _tool_lines(tools: Sequence[ToolDescriptor]) -> tuple[ToolLine, ...]:
    """The prompt's lines for ``tools``, in canonical-id order."""
    lines = (ToolLine(t.name, canonical_id(t), t.description) for t in tools)
    return tuple(sorted(lines, key=lambda t: t.canonical_id))


def _model_facts(facts: Mapping[str, Any]) -> tuple[str, str]:
    """A model mapping without its volatile keys, as canonical JSON, and that JSON's hash."""
    text = canonical_json(semantic_projection(facts))
    return text, sha256_text(text)


def _check_inputs(
    config: PromptConfiguration,
    tools: Sequence[ToolDescriptor],
    registry_hash: str,
    effect_policy_hash: str,
) -> None:
    """The command environment the tools need, no repeated tool name, both hashes given."""
    ids = [canonical_id(t) for t in tools]
    require_command_environment(config, frozenset(ids))
    names = ids + [t.name for t in tools if t.name != canonical_id(t)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"active tools repeat: {', '.join(duplicates)}")
    if not registry_hash or not effect_policy_hash:
        raise ValueError("registry_hash and effect_policy_hash are required")


def _prompt_hash(
    sections: Sequence[PromptSection],
    *,
    system_prompt: str,
    configuration: str,
    registry: str,
    effect_policy: str,
    identity: str,
    capability: str,
) -> str:
    """The prompt's one hash: the version, the modules, and every part's hash."""
    return sha256_json(
        {
            "version": PROMPT_VERSION,
            "modules": [[s.name, s.version] for s in sections],
            "systemPrompt": system_prompt,
            "configuration": configuration,
            "registry": registry,
            "effectPolicy": effect_policy,
            "modelIdentity": identity,
            "modelCapability": capability,
        }
    )


def _sections(context: ModuleContext) -> list[PromptSection]:
    """Each module's text for ``context``, in module order; a module with nothing to say
    is left out."""
    sections = []
    for module in MODULES:
        text = module.render(context)
        if text is not None:
            sections.append(PromptSection(module.name, module.version, text, module.cache_safe))
    return sections


def reassemble(
    previous: PromptSnapshot,
    *,
    tools: Sequence[ToolDescriptor] | None = None,
    registry_hash: str | None = None,
    config: PromptConfiguration | None = None,
    count_tokens: TokenCounter | None = None,
) -> PromptSnapshot:
    """A new snapshot after lazy activation (new tools and registry hash) or a policy change
    (new configuration); everything not given is kept from ``previous``. The command
    environment requirement is checked again before the replacement exists."""
    if (tools is None) != (registry_hash is None):
        raise ValueError("tools and registry_hash change together")
    return assemble_prompt(
        config or previous.configuration,
        tools=previous.tools if tools is None else tools,
        registry_hash=registry_hash or previous.registry_hash,
        effect_policy_hash=previous.effect_policy_hash,
        model_identity=previous.model_identity,
        model_capabilities=previous.model_capabilities,
        count_tokens=count_tokens,
    )
