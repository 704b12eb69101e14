"""A recorded run as a tree of spans, in plain data (no OpenTelemetry import here).

The tree follows the OpenTelemetry GenAI semantic conventions where they have a name for
the thing, and carries tidegate's own record beside them (``tidegate.*``):

- the run: ``invoke_agent tidegate`` (``gen_ai.operation.name = invoke_agent``), with the
  run's id, kind, mode, status, planner, the model's total token usage, the diff's and the
  changed files' hashes, the effective policy's digest and the checkpoint chain's head;
- each attempt: ``attempt N``, its proposal's sha256 and candidate tree;
- each phase of an attempt: ``phase PLAN`` ..., its status, effect and detail;
- each model request: ``chat MODEL`` (``gen_ai.operation.name = chat``, the provider, the
  model, ``gen_ai.usage.input_tokens`` / ``output_tokens`` where the model reported them;
  tidegate's estimate, where it did not, as ``tidegate.usage.estimated.*``);
- each tool call: ``execute_tool TOOL`` (``gen_ai.tool.name``, ``gen_ai.tool.call.id``),
  its input and result sha256, its store status and the host-attested effects, the
  written paths with their before and after hashes;
- each command the run executed: ``execute_command`` under VERIFY (the verify command)
  and under a ``project.validate`` call (the validation command), with
  ``process.command_line`` and ``process.exit.code``;
- checkpoints and the other trace events as span events.

Every string passes through ``tidegate.text.sanitize`` (secrets redacted, controls made
visible): what the store holds was redacted when it was written, and is again here.
Times are the trace's (milliseconds); ``key`` names a span stably, so an export of the same
run always gives the same span ids.
"""

from __future__ import annotations

from collections.abc import Mapping

from tidegate.export.records import (
    AGENT_NAME,
    Attribute,
    RunRecords,
    SpanEvent,
    SpanRecord,
    effect_attributes,
    phase_attributes,
    provider_and_model,
    run_attributes,
    scalars,
    text,
    turn_attributes,
)
from tidegate.store.trace import TraceEvent


class _Builder:
    def __init__(self, records: RunRecords) -> None:
        self.records = records
        self.spans: dict[str, SpanRecord] = {}
        self.attempts: dict[int, str] = {}
        self.phase: str | None = None
        self.tools: dict[str, str] = {}
        self.model = ""
        self.usage = dict.fromkeys(
            ("input", "output", "estimated_input", "estimated_output", "turns"), 0
        )
        self.calls = {c.tool_call_id: c for c in records.tool_calls}
        self.checkpoints = {c.event_seq: c for c in records.checkpoints}
        self.last_verify = max(
            (e.seq for e in records.events if e.kind == "phase.finished" and e.phase == "VERIFY"),
            default=-1,
        )

    # -- the tree ---------------------------------------------------------------------------

    def add(self, span: SpanRecord) -> SpanRecord:
        self.spans[span.key] = span
        return span

    def innermost(self) -> str:
        if self.phase is not None:
            return self.phase
        if self.attempts:
            return self.attempts[max(self.attempts)]
        return "run"

    def container(self) -> str:
        """The parent of a model request or tool call: its phase, else the run."""
        return self.phase or "run"

    # -- the run ----------------------------------------------------------------------------

    def root(self) -> SpanRecord:
        run = self.records.run
        first = self.records.events[0].at_ms if self.records.events else run.started_ms
        span = self.add(
            SpanRecord("run", None, f"invoke_agent {AGENT_NAME}", min(run.started_ms, first))
        )
        span.attributes.update(run_attributes(self.records))
        if run.status in ("succeeded", "held"):  # held: verified, kept for `tidegate apply`
            span.status = "ok"
        elif run.status in ("failed", "interrupted", "corrupt"):
            span.status, span.status_message = "error", text(run.error_class or run.status)
        return span

    def finish_run(self, root: SpanRecord, event: TraceEvent) -> None:
        payload, meta = event.payload_value(), event.meta_value()
        root.end_ms = event.at_ms
        changed = payload.get("changed") or []
        rows = [row for row in changed if isinstance(row, list) and len(row) >= 2]
        if rows:
            root.attributes["tidegate.changed.paths"] = [text(r[0]) for r in rows]
            root.attributes["tidegate.changed.actions"] = [text(r[1]) for r in rows]
            root.attributes["tidegate.changed.before_sha256"] = [
                text(r[2] or "") if len(r) > 2 else "" for r in rows
            ]
            root.attributes["tidegate.changed.after_sha256"] = [
                text(r[3] or "") if len(r) > 3 else "" for r in rows
            ]
        if payload.get("diff_sha256"):
            root.attributes["tidegate.diff_sha256"] = text(payload["diff_sha256"])
        if meta.get("message"):
            root.attributes["tidegate.run.message"] = text(meta["message"])

    # -- attempts and phases ----------------------------------------------------------------

    def attempt(self, number: int, at_ms: int) -> str:
        key = f"attempt:{number}"
        if key not in self.spans:
            self.add(
                SpanRecord(
                    key, "run", f"attempt {number}", at_ms, attributes={"tidegate.attempt": number}
                )
            )
            self.attempts[number] = key
        return key

    def phase_started(self, event: TraceEvent) -> None:
        parent = self.attempt(event.attempt, event.at_ms) if event.attempt else "run"
        name = event.phase or "?"
        self.phase = self.add(
            SpanRecord(
                f"phase:{event.seq}",
                parent,
                f"phase {name}",
                event.at_ms,
                attributes={"tidegate.phase": text(name), "tidegate.attempt": event.attempt or 0},
            )
        ).key

    def phase_finished(self, event: TraceEvent) -> None:
        if self.phase is None:
            self.phase_started(event)
        assert self.phase is not None
        span = self.spans[self.phase]
        span.end_ms = event.at_ms
        payload = event.payload_value()
        span.attributes.update(phase_attributes(payload, event.meta_value()))
        status = payload.get("status")
        if status == "ok":
            span.status = "ok"
        elif status not in (None, "skipped"):
            span.status, span.status_message = "error", text(payload.get("error_class") or status)
        if event.phase == "VERIFY":
            exit_code = payload.get("exit_code")
            report = self.records.run.report
            if exit_code is None and event.seq == self.last_verify and report and report.verify:
                exit_code = report.verify.exit_code  # a failed VERIFY's is in the report
            self.command(
                span.key,
                span.start_ms,
                event.at_ms,
                (self.records.request or {}).get("verify"),
                exit_code,
                "verify",
                failed=status not in (None, "ok"),
            )
        self.phase = None

    def attempt_finished(self, event: TraceEvent) -> None:
        payload = event.payload_value()
        number = payload.get("attempt", event.attempt)
        if not isinstance(number, int):
            return
        span = self.spans[self.attempt(number, event.at_ms)]
        span.end_ms = event.at_ms
        span.attributes.update(
            {
                k: v
                for k, v in scalars("tidegate.attempt", payload).items()
                if k != "tidegate.attempt.attempt"
            }
        )
        if payload.get("status") == "succeeded":
            span.status = "ok"
        elif payload.get("status") == "failed":
            span.status = "error"
            span.status_message = text(payload.get("error_class") or "failed")
        self.attempts.pop(number, None)

    # -- commands, model requests, tool calls -----------------------------------------------

    def command(
        self,
        parent: str,
        start_ms: int,
        end_ms: int,
        command: object,
        exit_code: object,
        role: str,
        *,
        failed: bool = False,
    ) -> None:
        attrs: dict[str, Attribute] = {"tidegate.command.role": role}
        if isinstance(command, str):
            attrs["process.command_line"] = text(command)
        if isinstance(exit_code, int) and not isinstance(exit_code, bool):
            attrs["process.exit.code"] = exit_code
        span = self.add(
            SpanRecord(f"{parent}:command", parent, "execute_command", start_ms, end_ms)
        )
        span.attributes.update(attrs)
        if isinstance(exit_code, int) and exit_code != 0:
            span.status, span.status_message = "error", f"exit code {exit_code}"
        elif failed:
            span.status, span.status_message = "error", "failed"
        elif exit_code == 0:
            span.status = "ok"

    def turn(self, event: TraceEvent) -> None:
        payload, meta = event.payload_value(), event.meta_value()
        provider, model = provider_and_model(self.model)
        duration = meta.get("duration_ms")
        start = event.at_ms - (int(duration) if isinstance(duration, int | float) else 0)
        span = self.add(
            SpanRecord(
                f"chat:{event.seq}",
                self.container(),
                f"chat {model}".strip(),
                start,
                event.at_ms,
                kind="client",
            )
        )
        span.attributes.update(turn_attributes(payload, provider, model))
        if event.attempt is not None:
            span.attributes["tidegate.attempt"] = event.attempt
        if event.phase:
            span.attributes["tidegate.phase"] = text(event.phase)
        exact = payload.get("usage_exact") is not False
        which = "" if exact else "estimated_"
        self.usage[f"{which}input"] += int(payload.get("input_tokens") or 0)
        self.usage[f"{which}output"] += int(payload.get("output_tokens") or 0)
        self.usage["turns"] += 1

    def tool_span(
        self, call_id: str, at_ms: int, canonical: str, attempt: int | None
    ) -> SpanRecord:
        key = f"tool:{call_id}"
        span = self.spans.get(key)
        if span is None:
            span = self.add(SpanRecord(key, self.container(), f"execute_tool {canonical}", at_ms))
            span.attributes.update(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": text(canonical),
                    "gen_ai.tool.call.id": text(call_id),
                    "gen_ai.tool.type": "function",
                }
            )
            if attempt is not None:
                span.attributes["tidegate.attempt"] = attempt
            if self.phase is not None:
                span.attributes["tidegate.phase"] = self.spans[self.phase].attributes[
                    "tidegate.phase"
                ]
            self.tools[call_id] = key
        return span

    def tool_requested(self, event: TraceEvent) -> None:
        payload = event.payload_value()
        call_id = event.tool_call_id or f"seq{event.seq}"
        span = self.tool_span(
            call_id, event.at_ms, str(payload.get("canonical_tool", "?")), event.attempt
        )
        if payload.get("input_sha256"):
            span.attributes["tidegate.tool.input_sha256"] = text(payload["input_sha256"])

    def tool_finished(self, event: TraceEvent) -> None:
        payload = event.payload_value()
        call_id = event.tool_call_id or f"seq{event.seq}"
        stored = self.calls.get(call_id)
        canonical = payload.get("canonical_tool") or (stored.canonical_tool if stored else "?")
        span = self.tool_span(call_id, event.at_ms, str(canonical), event.attempt)
        span.end_ms = event.at_ms
        self.tools.pop(call_id, None)
        attrs = span.attributes
        if stored is not None and "tidegate.tool.input_sha256" not in attrs:
            attrs["tidegate.tool.input_sha256"] = text(stored.input_sha256)
        status = payload.get("status") or (stored.status if stored else "")
        attrs["tidegate.tool.status"] = text(status)
        if payload.get("result_sha256"):
            attrs["tidegate.tool.result_sha256"] = text(payload["result_sha256"])
        effects = payload.get("effects")
        if isinstance(effects, Mapping):
            attrs.update(effect_attributes(effects))
            validate = effects.get("validate")
            if isinstance(validate, Mapping):
                self.command(
                    span.key,
                    span.start_ms,
                    event.at_ms,
                    validate.get("command"),
                    validate.get("exit_code"),
                    "validate",
                    failed=validate.get("status") not in (None, "passed"),
                )
        if status == "succeeded":
            span.status = "ok"
        elif status:
            span.status, span.status_message = "error", text(status)

    # -- everything else --------------------------------------------------------------------

    def point(self, event: TraceEvent) -> None:
        attrs = scalars(f"tidegate.{event.kind}", event.payload_value())
        if event.kind == "checkpoint":
            checkpoint = self.checkpoints.get(event.seq)
            if checkpoint is not None:
                attrs["tidegate.checkpoint.seq"] = checkpoint.seq
                attrs["tidegate.checkpoint.sha256"] = text(checkpoint.hash)
                if checkpoint.prev_hash:
                    attrs["tidegate.checkpoint.prev_sha256"] = text(checkpoint.prev_hash)
        self.spans[self.innermost()].events.append(
            SpanEvent(f"tidegate.{event.kind}", event.at_ms, attrs)
        )

    def build(self) -> list[SpanRecord]:
        root = self.root()
        for event in self.records.events:
            kind = event.kind
            if kind == "run.started":
                root.attributes.update(scalars("tidegate.settings", event.payload_value()))
            elif kind == "policy.effective":
                digest = event.payload_value().get("sha256")
                if isinstance(digest, str):
                    root.attributes["tidegate.policy.sha256"] = text(digest)
            elif kind == "phase.started":
                self.phase_started(event)
            elif kind == "phase.finished":
                self.phase_finished(event)
            elif kind == "attempt.finished":
                self.attempt_finished(event)
            elif kind == "agent.started":
                model = event.payload_value().get("model")
                self.model = model if isinstance(model, str) else self.model
            elif kind == "agent.turn":
                self.turn(event)
            elif kind == "tool.requested":
                self.tool_requested(event)
            elif kind == "tool.finished":
                self.tool_finished(event)
            elif kind == "run.finished":
                self.finish_run(root, event)
            else:
                self.point(event)
        if self.usage["turns"]:
            root.attributes["gen_ai.usage.input_tokens"] = self.usage["input"]
            root.attributes["gen_ai.usage.output_tokens"] = self.usage["output"]
            root.attributes["tidegate.usage.turns"] = self.usage["turns"]
            if self.usage["estimated_input"] or self.usage["estimated_output"]:
                root.attributes["tidegate.usage.estimated.input_tokens"] = self.usage[
                    "estimated_input"
                ]
                root.attributes["tidegate.usage.estimated.output_tokens"] = self.usage[
                    "estimated_output"
                ]
            provider, model = provider_and_model(self.model)
            if model:
                root.attributes["gen_ai.request.model"] = text(model)
            if provider:
                root.attributes["gen_ai.provider.name"] = text(provider)
        last = self.records.events[-1].at_ms if self.records.events else root.start_ms
        end = root.end_ms or max(last, self.records.run.updated_ms)
        for span in self.spans.values():
            if span.end_ms is None:  # never finished: the run was interrupted or is running
                span.end_ms = end
                span.attributes["tidegate.unfinished"] = True
        return list(self.spans.values())


def run_spans(records: RunRecords) -> list[SpanRecord]:
    """The run's spans, parents before their children."""
    return _Builder(records).build()
