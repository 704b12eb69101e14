"""The spans of a run as plain data, and the helpers that make their attributes: every
string through ``tidegate.text.sanitize`` (``text``), cut to ``MAX_TEXT``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from tidegate.store.checkpoints import ChainHead, Checkpoint
from tidegate.store.rows import StoredRun, StoredToolCall
from tidegate.store.trace import TraceEvent
from tidegate.text.sanitize import sanitize, sanitize_value

Scalar = str | bool | int | float
Attribute = Scalar | list[str] | list[int] | list[bool] | list[float]
Status = Literal["unset", "ok", "error"]
Kind = Literal["internal", "client"]

AGENT_NAME = "tidegate"
MAX_TEXT = 4096
"""Longest string attribute kept (the effects' JSON, a phase's detail); longer is cut."""


class SpanEvent(msgspec.Struct):
    name: str
    at_ms: int
    attributes: dict[str, Attribute] = msgspec.field(default_factory=dict)


class SpanRecord(msgspec.Struct):
    key: str
    """Stable within the run (``run``, ``attempt:1``, ``tool:a1.plan.g1`` ...)."""
    parent: str | None
    name: str
    start_ms: int
    end_ms: int | None = None
    kind: Kind = "internal"
    attributes: dict[str, Attribute] = msgspec.field(default_factory=dict)
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    status: Status = "unset"
    status_message: str = ""


class RunRecords(msgspec.Struct, frozen=True):
    """What the store holds of one run, as its record readers return it."""

    run: StoredRun
    request: Mapping[str, Any] | None
    events: Sequence[TraceEvent]
    tool_calls: Sequence[StoredToolCall]
    checkpoints: Sequence[Checkpoint] = ()
    chain_head: ChainHead | None = None


def text(value: object) -> str:
    """A sanitised string attribute, cut to ``MAX_TEXT`` characters."""
    shown = sanitize(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    return shown if len(shown) <= MAX_TEXT else shown[: MAX_TEXT - 1] + "…"


def json_text(value: object) -> str:
    return text(json.dumps(sanitize_value(value), sort_keys=True, separators=(",", ":")))


def scalars(prefix: str, payload: Mapping[str, Any]) -> dict[str, Attribute]:
    """The payload's scalar and string-list fields as attributes; anything nested as JSON."""
    out: dict[str, Attribute] = {}
    for key, value in payload.items():
        name = f"{prefix}.{key}"
        if value is None:
            continue
        if isinstance(value, bool | int | float):
            out[name] = value
        elif isinstance(value, str):
            out[name] = text(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[name] = [text(v) for v in value]
        else:
            out[name] = json_text(value)
    return out


def provider_and_model(model: str) -> tuple[str, str]:
    """``anthropic:claude-x`` -> (``anthropic``, ``claude-x``); a bare name has no provider."""
    provider, sep, name = model.partition(":")
    return (provider, name) if sep else ("", model)


def effect_attributes(effects: Mapping[str, Any]) -> dict[str, Attribute]:
    """The host-attested effects of a call: the whole record as JSON, and the parts a
    trace viewer filters on (approval, written paths and their before/after hashes)."""
    attrs: dict[str, Attribute] = {"tidegate.effects": json_text(effects)}
    approval = effects.get("approval")
    if isinstance(approval, Mapping) and isinstance(approval.get("status"), str):
        attrs["tidegate.effects.approval"] = text(approval["status"])
    if isinstance(effects.get("state_version"), int):
        attrs["tidegate.effects.state_version"] = effects["state_version"]
    writes = [w for w in effects.get("write") or [] if isinstance(w, Mapping)]
    if writes:

        def digest(state: object) -> str:
            value = state.get("sha256") if isinstance(state, Mapping) else None
            return text(value) if isinstance(value, str) else ""

        attrs["tidegate.effects.write.paths"] = [text(w.get("path", "")) for w in writes]
        attrs["tidegate.effects.write.before_sha256"] = [digest(w.get("before")) for w in writes]
        attrs["tidegate.effects.write.after_sha256"] = [digest(w.get("after")) for w in writes]
    review = effects.get("diff_review")
    if isinstance(review, Mapping) and isinstance(review.get("diff_sha256"), str):
        attrs["tidegate.effects.diff_review.sha256"] = text(review["diff_sha256"])
    return attrs


def run_attributes(records: RunRecords) -> dict[str, Attribute]:
    """The run span's attributes from the run's row, its request and its chain head."""
    run = records.run
    attrs: dict[str, Attribute] = {}
    attrs.update(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.agent.id": text(run.run_id),
            "gen_ai.conversation.id": text(run.run_id),
            "tidegate.run_id": text(run.run_id),
            "tidegate.run.kind": text(run.kind),
            "tidegate.run.mode": text(run.mode),
            "tidegate.run.status": text(run.status),
            "tidegate.run.attempts": run.attempts,
            "tidegate.task_id": text(run.task_id),
            "tidegate.repo": text(run.repo),
        }
    )
    for name, value in (
        ("tidegate.run.error_class", run.error_class),
        ("tidegate.run.failure_phase", run.failure_phase),
        ("tidegate.run.replay_hash", run.replay_hash),
        ("tidegate.run.execution_id", run.execution_id),
    ):
        if value:
            attrs[name] = text(value)
    request = records.request or {}
    for key in ("planner", "objective", "verify", "max_attempts"):
        value = request.get(key)
        if isinstance(value, str):
            attrs[f"tidegate.request.{key}"] = text(value)
        elif isinstance(value, int):
            attrs[f"tidegate.request.{key}"] = value
    head = records.chain_head
    if head is not None:
        attrs["tidegate.checkpoints.count"] = head.count
        attrs["tidegate.checkpoints.head_sha256"] = text(head.last_hash)
    return attrs


def turn_attributes(payload: Mapping[str, Any], provider: str, model: str) -> dict[str, Attribute]:
    """A model request's attributes from its ``agent.turn`` payload."""
    attrs: dict[str, Attribute] = {}
    attrs["gen_ai.operation.name"] = "chat"
    if provider:
        attrs["gen_ai.provider.name"] = text(provider)
    if model:
        attrs["gen_ai.request.model"] = text(model)
    # the model's own count is the convention's; an estimate (a model that reported
    # no usage) stays tidegate's, named as one
    exact = payload.get("usage_exact") is not False
    for source, name in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cached_input_tokens", "cache_read.input_tokens"),
    ):
        if isinstance(payload.get(source), int):
            key = f"gen_ai.usage.{name}" if exact else f"tidegate.usage.estimated.{name}"
            attrs[key] = payload[source]
    if payload.get("stop_reason"):
        attrs["gen_ai.response.finish_reasons"] = [text(payload["stop_reason"])]
    for key in ("step", "usage_exact", "cost_usd", "tools_offered", "text_sha256"):
        value = payload.get(key)
        if isinstance(value, bool | int):
            attrs[f"tidegate.turn.{key}"] = value
        elif isinstance(value, str):
            attrs[f"tidegate.turn.{key}"] = text(value)
    names = payload.get("tool_calls")
    if isinstance(names, list) and names:
        attrs["tidegate.turn.tool_calls"] = [text(n) for n in names]
    return attrs


def phase_attributes(payload: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Attribute]:
    """A finished phase's attributes: its status and effect, and what it made (the
    proposal, the candidate tree and its paths, the paths APPLY_BACK wrote with hashes)."""
    attrs: dict[str, Attribute] = {}
    for key in ("status", "effect", "error_class", "proposal", "candidate_tree"):
        if payload.get(key):
            attrs[f"tidegate.phase.{key}"] = text(payload[key])
    if isinstance(payload.get("exit_code"), int):
        attrs["tidegate.phase.exit_code"] = payload["exit_code"]
    if meta.get("detail"):
        attrs["tidegate.phase.detail"] = text(meta["detail"])
    applied = [r for r in payload.get("applied") or [] if isinstance(r, list) and len(r) >= 5]
    if applied:
        attrs["tidegate.applied.paths"] = [text(r[0]) for r in applied]
        attrs["tidegate.applied.before_sha256"] = [text(r[3] or "") for r in applied]
        attrs["tidegate.applied.after_sha256"] = [text(r[4] or "") for r in applied]
    changed = [r for r in payload.get("changed") or [] if isinstance(r, list) and r]
    if changed:
        attrs["tidegate.candidate.paths"] = [text(r[0]) for r in changed]
    return attrs
