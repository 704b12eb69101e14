"""The canonical tool effect profile, as data, and the host-authored effects a result carries.

A tool's *output* is data the model reads. What the runtime may trust about a call is its
``effects``: written by the host (``effects_authority = "host"``), checked against the
profile below, never parsed out of the output. The profile is the most a built-in tool may
ever claim; a call reports only what it actually did.

The profile covers all 21 canonical tools whether or not they are active, so its digest
(``PROFILE_SHA256``, pinned here and recomputed when a registry is built) does not move
when ``catalog.search`` activates another tool. A registry is refused when an active tool
has no profile entry, two tools share a canonical ID or model name, a tool declares a
capability name the profile does not know, or a built-in tool declares a capability set
different from its profile entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.errors import CapabilityMismatch

PROFILE_VERSION = "1.1.0"

Capability = Literal[
    "approval",
    "state_version",
    "write",
    "diff_review",
    "inspect",
    "validate",
    "research",
    "plan",
    "criterion_satisfy",
    "criterion_waive",
]
CAPABILITIES: frozenset[str] = frozenset(Capability.__args__)  # type: ignore[attr-defined]
RESERVED_CAPABILITIES = frozenset({"criterion_satisfy", "criterion_waive"})
"""Known names no built-in tool may hold until a contract ties them to evidence."""

# tool id -> (capabilities, the boundary of what that evidence means)
_PROFILE: dict[str, tuple[tuple[str, ...], str]] = {
    "artifact.create": (("approval", "state_version"), "artifact store state, never the workspace"),
    "artifact.list": (("approval",), "observation for the model only"),
    "artifact.read": (("approval",), "observation for the model only"),
    "catalog.search": (("approval", "state_version"), "the active registry's version"),
    "command.run": (
        ("approval", "state_version", "write"),
        "write only from an independent inventory of changed paths with hashes",
    ),
    "command.session": (
        ("approval", "state_version", "write"),
        "as command.run; state may also be supervised session progress",
    ),
    "git.exec": (
        ("approval", "diff_review", "inspect"),
        "diff_review only for a complete, untruncated diff",
    ),
    "perception.analyze": (("approval",), "artifact observations are not workspace inspection"),
    "preview.manage": (("approval", "state_version"), "preview session state only"),
    "project.detect": (("approval", "inspect"), "the deterministically inspected project root"),
    "project.validate": (
        ("approval", "state_version", "validate", "write"),
        "repository scripts need approval or verified containment; generated writes need an "
        "independent typed inventory",
    ),
    "research.fetch": (("approval", "research"), "bounded, untrusted source evidence"),
    "research.search": (("approval", "research"), "bounded, untrusted source discovery"),
    "task.checkpoint": (("approval", "plan", "state_version"), "bounded durable task state"),
    "user.ask": (("approval",), "a correlated answer; never waives a criterion"),
    "workspace.edit": (("approval", "state_version", "write"), "exact edit, before/after hashes"),
    "workspace.glob": (("approval", "inspect"), "the inspected scope and paths"),
    "workspace.grep": (("approval", "inspect"), "the inspected matched paths"),
    "workspace.list": (("approval", "inspect"), "the inspected directory scope"),
    "workspace.read": (("approval", "inspect"), "the inspected bounded file range"),
    "workspace.write": (("approval", "state_version", "write"), "atomic create/replace, hashes"),
}

PROFILE: Mapping[str, frozenset[str]] = {
    tool: frozenset(caps) for tool, (caps, _boundary) in sorted(_PROFILE.items())
}
EVIDENCE_BOUNDARY: Mapping[str, str] = {tool: b for tool, (_c, b) in sorted(_PROFILE.items())}
CANONICAL_TOOL_IDS: tuple[str, ...] = tuple(PROFILE)

PROFILE_SHA256 = "sha256:bd812a4c15e228acde40d0cb52a83832ba01452d20f9db084f74046e5322a2fc"
"""The pinned digest of the profile (``profile_digest()``): a changed table is refused."""


class ProfileIntegrityError(CapabilityMismatch):
    """The effect profile or a registry built on it is inconsistent; nothing may run."""


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace: one spelling for every digest here."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_json(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def profile_json() -> dict[str, Any]:
    """The profile as the host exports it: version and every tool's sorted capabilities."""
    return {
        "version": PROFILE_VERSION,
        "tools": {tool: sorted(caps) for tool, caps in PROFILE.items()},
    }


def profile_digest() -> str:
    return sha256_json(profile_json())


def verify_profile() -> None:
    """Refuse a profile table that differs from the pinned one or names unknown capabilities."""
    for tool, caps in PROFILE.items():
        unknown = caps - CAPABILITIES
        if unknown:
            raise ProfileIntegrityError(f"effect profile: {tool} names unknown {sorted(unknown)}")
        if caps & RESERVED_CAPABILITIES:
            raise ProfileIntegrityError(f"effect profile: {tool} holds a reserved capability")
        if "approval" not in caps:
            raise ProfileIntegrityError(f"effect profile: {tool} lacks approval")
    actual = profile_digest()
    if actual != PROFILE_SHA256:
        raise ProfileIntegrityError(
            f"effect profile digest {actual} differs from the pinned {PROFILE_SHA256}"
        )


def validate_registry(
    declared: Iterable[tuple[str, str, frozenset[str]]], active: Iterable[str]
) -> None:
    """Check a registry against the profile before it is used.

    ``declared`` holds ``(canonical id, model name, declared capabilities)`` for every
    built-in tool the registry knows; ``active`` the canonical IDs it exposes now.
    """
    verify_profile()
    seen_ids: set[str] = set()
    seen_names: set[str] = set()
    for tool, name, caps in declared:
        if tool in seen_ids:
            raise ProfileIntegrityError(f"duplicate canonical tool id {tool}")
        if name in seen_names:
            raise ProfileIntegrityError(f"duplicate model-facing tool name {name}")
        seen_ids.add(tool)
        seen_names.add(name)
        unknown = caps - CAPABILITIES
        if unknown:
            raise ProfileIntegrityError(f"{tool} declares unknown capabilities {sorted(unknown)}")
        if tool in PROFILE and caps != PROFILE[tool]:
            raise ProfileIntegrityError(
                f"{tool} declares {sorted(caps)}, the profile allows {sorted(PROFILE[tool])}"
            )
    for tool in active:
        if tool not in PROFILE:
            raise ProfileIntegrityError(f"active tool {tool} has no effect policy")
        if tool not in seen_ids:
            raise ProfileIntegrityError(f"active tool {tool} is not a declared tool")


def effect_metadata(active: Iterable[str]) -> dict[str, Any]:
    """What a prompt or checkpoint records: the active IDs plus the whole, stable profile."""
    return {
        "canonical_tool_ids": sorted(active),
        "effect_capabilities": profile_json()["tools"],
        "effect_profile_version": PROFILE_VERSION,
        "effect_profile_sha256": PROFILE_SHA256,
    }


# --- the effects a result carries -------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EntryStateModel(_Frozen):
    """A typed entry state (see tidegate.workspace.states): kind plus hash or null."""

    kind: Literal["missing", "file", "dir", "symlink", "special"]
    sha256: str | None
    mode: str | None = Field(default=None, pattern=r"^0[0-7]{3,4}$")
    """Permission bits in octal (``"0644"``) of a file or directory, when the observation
    records them (command effects do); absent otherwise."""

    @model_validator(mode="after")
    def _hash_matches_kind(self) -> EntryStateModel:
        hashed = self.kind in ("file", "symlink", "special")
        if hashed != (self.sha256 is not None):
            raise ValueError(f"a {self.kind} state {'needs' if hashed else 'has no'} hash")
        if self.mode is not None and self.kind not in ("file", "dir"):
            raise ValueError(f"a {self.kind} state has no permission bits")
        return self


def display_name(name: str) -> str:
    """A file name as JSON-safe text: unchanged when it is UTF-8; else its undecodable bytes
    shown as ``\\xff`` escapes (the name as read from the file system carries them as
    surrogates, which no UTF-8 encoder accepts)."""
    raw = os.fsencode(name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace")


def json_safe(value: Any) -> Any:
    """``value`` with every string (and key) that is not Unicode text -- a file name read
    from the file system as surrogates -- replaced by its ``display_name``; everything
    else unchanged. What a tool answers must survive any UTF-8 encoder (the store's, the
    MCP transport's), or the session and the record die with it."""
    if isinstance(value, str):
        return display_name(value) if _has_surrogate(value) else value
    if isinstance(value, Mapping):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _lossless_path(data: Any) -> Any:
    """Before validation: a path that is not UTF-8 keeps its exact bytes (hex) beside an
    escaped display form, so the record is JSON-safe and loses nothing."""
    if isinstance(data, Mapping) and isinstance(data.get("path"), str):
        shown = display_name(data["path"])
        if shown != data["path"]:
            return {**data, "path": shown, "path_bytes_hex": os.fsencode(data["path"]).hex()}
    return data


class WriteEffect(_Frozen):
    """One durable path whose typed state changed, observed by the host before and after.
    A name that is not UTF-8 is recorded as its escaped display form plus
    ``path_bytes_hex``, the exact bytes."""

    path: str
    before: EntryStateModel
    after: EntryStateModel
    path_bytes_hex: str | None = None

    _lossless = model_validator(mode="before")(_lossless_path)

    @model_validator(mode="after")
    def _changed(self) -> WriteEffect:
        if self.before == self.after:
            raise ValueError(f"{self.path}: a write effect needs different before/after states")
        return self


class DerivedMutation(_Frozen):
    """A generated tree (node_modules, .venv ...) whose metadata fingerprint changed.

    Never a content hash: these are reported apart from ``write``.
    """

    path: str
    before: str | None
    after: str | None
    path_bytes_hex: str | None = None

    _lossless = model_validator(mode="before")(_lossless_path)


class InspectEffect(_Frozen):
    kind: Literal["file", "directory", "glob", "grep", "project", "git"]
    scope: str
    """The path, pattern or git action inspected."""
    paths: tuple[str, ...] = ()
    sha256: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    truncated: bool = False


class ValidateEffect(_Frozen):
    validation_id: str
    command: str
    status: Literal["passed", "failed", "timed_out", "cancelled"]
    exit_code: int | None
    fingerprint: str
    """The workspace fingerprint the validation ran against."""
    error_class: str | None = None
    contained: bool = False


class DiffReviewEffect(_Frozen):
    argv: tuple[str, ...]
    diff_sha256: str
    paths: tuple[str, ...]
    complete: Literal[True] = True


class ResearchSource(_Frozen):
    url: str
    sha256: str | None = None
    title: str | None = None
    truncated: bool = False
    untrusted: Literal[True] = True


class ResearchEffect(_Frozen):
    provider: str
    sources: tuple[ResearchSource, ...]


class PlanEffect(_Frozen):
    checkpoint_sha256: str
    items: int


class ApprovalEffect(_Frozen):
    status: Literal["not_required", "granted", "denied"]
    request_id: str | None = None
    decided_by: str = "policy"
    reasons: tuple[str, ...] = ()


# Which profile capability each effect field exercises.
FIELD_CAPABILITY: Mapping[str, str] = {
    "approval": "approval",
    "inspect": "inspect",
    "write": "write",
    "derived": "state_version",
    "state_version": "state_version",
    "validate": "validate",
    "diff_review": "diff_review",
    "research": "research",
    "plan": "plan",
}
HOST_CAPTURED_FIELDS = frozenset({"approval", "write", "derived", "state_version"})
"""Fields only the executor fills; an adapter claiming one of them is forging evidence."""


class Effects(_Frozen):
    """Host-authored evidence of one call. Empty fields mean "did not happen"."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True)

    approval: ApprovalEffect | None = None
    inspect: tuple[InspectEffect, ...] = ()
    write: tuple[WriteEffect, ...] = ()
    derived: tuple[DerivedMutation, ...] = ()
    state_version: int | None = None
    """The host state version after this call, present only when the call advanced it."""
    validate_: ValidateEffect | None = Field(default=None, alias="validate")
    diff_review: DiffReviewEffect | None = None
    research: ResearchEffect | None = None
    plan: PlanEffect | None = None

    def present(self) -> list[str]:
        """The effect fields this object actually carries, by their wire names."""
        out = []
        for name in FIELD_CAPABILITY:
            attr = "validate_" if name == "validate" else name
            value = getattr(self, attr)
            if value not in (None, ()):
                out.append(name)
        return out

    def capabilities(self) -> set[str]:
        return {FIELD_CAPABILITY[name] for name in self.present()}

    def to_json(self) -> dict[str, Any]:
        """JSON-safe: a non-UTF-8 name anywhere (an inspected listing, say) shows escaped;
        ``write`` and ``derived`` entries also keep such a name's bytes losslessly."""
        data: dict[str, Any] = json_safe(
            self.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        )
        return data


def undeclared(tool: str, effects: Effects) -> list[str]:
    """The capabilities ``effects`` exercises that the profile does not grant ``tool``."""
    allowed = PROFILE.get(tool, frozenset())
    return sorted(effects.capabilities() - allowed)
