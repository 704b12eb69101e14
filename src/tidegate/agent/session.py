"""An agent session: one model, one tool executor, one task, and everything they share.

The session owns the state the loop (``tidegate.agent.loop``) advances: the conversation,
the guards, the evidence ledger, the transcript, the causal sequence and the counters.
Every tool call of the session runs under one :class:`SessionRuntime` -- run, task, phase,
attempt, task mode, prompt and registry hashes -- which is recorded with the call, so the
streaming and non-streaming paths (they are one path) cannot diverge in what a call sees.

Phases: EXPLORE, PLAN, PATCH, REVIEW and ANALYZE_ISSUES expose only the read-only tool set
(:data:`READ_ONLY_TOOLS`: workspace inspection, read-only git, project detection, and plan
notes through task.checkpoint); PATCH returns its change set as the final answer. The
AGENT phase exposes whatever the executor's registry holds (a standalone session that may
write, validate and diff). SUB_AGENT is the phase of a dispatched sub-agent's own session:
it exposes what its (already filtered) executor holds, and ``dry_run`` makes it read-only.

Session tools are tools the session itself offers beside the executor's canonical ones
(today one: ``agent.dispatch``, :mod:`tidegate.agent.dispatch`). They are not in the host's
catalog, have no workspace effect of their own, and are offered in every phase.

The tools the phase shows are :class:`tidegate.agent.session_tools.PhaseTools`.

Checkpoints (format ``tidegate.agent/1``) hold every counter -- guards, ledger, transcript,
sequence, state version, compactions -- plus the seven prompt hashes and the workspace
fingerprint; :func:`tidegate.agent.session_resume.resume_session` continues from one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Protocol

from msgspec.structs import replace

from tidegate.agent.compaction import TokenMeter, context_summary
from tidegate.agent.evidence import EvidenceLedger
from tidegate.agent.guards import LoopGuards
from tidegate.agent.session_options import (
    LoopRecorder,
    SessionOptions,
    SessionRuntime,
    budget_facts,
    session_run_id,
)
from tidegate.agent.session_prompt import model_facts
from tidegate.agent.session_tools import PhaseTools, SessionToolRun
from tidegate.agent.transcript import Transcript
from tidegate.errors import UsageError
from tidegate.models.envelope import ModelRequest
from tidegate.models.events import Usage as ModelUsage
from tidegate.models.messages import Attachment, Message, UserMessage
from tidegate.models.messages import ToolSpec as ModelToolSpec
from tidegate.models.ports import ModelPort
from tidegate.models.pricing import ModelPricing
from tidegate.prompt import (
    PromptConfiguration,
    PromptHashes,
    PromptSnapshot,
    RunTask,
    TaskContract,
    TokenEstimate,
    assemble_prompt,
    format_user_task,
    reassemble,
)
from tidegate.prompt.hashing import sha256_json
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.catalog import ToolDefinition
from tidegate.tools.effects import PROFILE_SHA256
from tidegate.tools.executor import ToolExecutor

FORMAT = "tidegate.agent/1"


class SessionTool(Protocol):
    """A tool the session offers itself, beside the executor's (``agent.dispatch``)."""

    @property
    def definition(self) -> ToolDefinition: ...

    def run(self, session: AgentSession, call: HostCall) -> SessionToolRun: ...


class AgentSession:
    """The state of one session; :func:`tidegate.agent.loop.run_loop` drives it."""

    def __init__(
        self,
        *,
        model: ModelPort,
        executor: ToolExecutor,
        config: PromptConfiguration,
        task: RunTask,
        options: SessionOptions,
        recorder: LoopRecorder | None = None,
        pricing: ModelPricing | None = None,
        guards: LoopGuards | None = None,
        ledger: EvidenceLedger | None = None,
        transcript: Transcript | None = None,
        session_tools: tuple[SessionTool, ...] = (),
    ) -> None:
        self.model = model
        self.session_tools = {t.definition.name: t for t in session_tools}
        """By model-facing name; the canonical ID is accepted as well (``session_tool``)."""
        self.executor = executor
        self.config = config
        self.task = task
        run_id = session_run_id(options, recorder)
        self.options = replace(options, run_id=run_id)
        self.recorder = recorder
        self.pricing = pricing or ModelPricing(None, "unknown: no pricing given")
        self.guards = guards or LoopGuards(options.guard_limits)
        self.ledger = ledger or EvidenceLedger()
        self.transcript = transcript or Transcript()
        self.contract = TaskContract.from_task(task, config)
        own = [t.definition for t in session_tools]
        self.tools = PhaseTools(executor, self.options.phase, own)
        self.prompt = self._assemble()
        self.meter = TokenMeter(model)
        self.messages: list[Message] = [UserMessage(format_user_task(self.contract))]
        if options.brief:
            self.messages.append(UserMessage(options.brief))
        self.head = len(self.messages)
        self.seq = 0
        self.state_base = 0
        self.workspace_version = 0
        """Host-observed workspace mutations so far: the state the guards compare calls on."""
        self.compactions = 0
        self.inspections = 0
        self.output_chars = 0
        self.finalizing: str | None = None
        self.completed: set[str] = set()
        self.last_checkpoint: dict[str, Any] | None = None
        self.last_checkpoint_hash: str | None = None
        self._mark = time.monotonic()
        self._check_cost_cap()

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def start(cls, **kwargs: Any) -> AgentSession:
        """A new session: assembles the prompt, records it, writes the first checkpoint."""
        session = cls(**kwargs)
        session.event(
            "agent.started", session.started_facts(), {"runtime": session.runtime().to_json()}
        )
        if session.options.checkpoints:
            session.checkpoint("start")
        return session

    def _assemble(self) -> PromptSnapshot:
        identity, capabilities = model_facts(self.model)
        return assemble_prompt(
            self.config,
            tools=self.visible_definitions(),
            registry_hash=self.executor.registry.active_hash,
            effect_policy_hash=PROFILE_SHA256,
            model_identity=identity,
            model_capabilities=capabilities,
            count_tokens=self._count_prompt,
        )

    def _count_prompt(self, text: str) -> TokenEstimate:
        count = self.model.count_tokens(text)
        return TokenEstimate(count.value, count.method, count.exact)

    def _check_cost_cap(self) -> None:
        budget = self.guards.limits.budget
        if (budget.hard_dollar_cap is not None or budget.max_dollars is not None) and (
            self.pricing.price is None
        ):
            raise UsageError(
                f"a cost limit needs a price for {self.model.identity.label}, and "
                f"{self.pricing.source}"
            )

    # -- what the session is ---------------------------------------------------------------

    @property
    def phase(self) -> str:
        return self.options.phase

    @property
    def run_id(self) -> str:
        return self.options.run_id

    @property
    def expect_changes(self) -> bool:
        if self.options.expect_changes is not None:
            return self.options.expect_changes
        return not self.options.read_only

    @property
    def hashes(self) -> PromptHashes:
        return self.prompt.hashes(self.contract)

    @property
    def max_output_tokens(self) -> int:
        limit = self.model.identity.max_output_tokens
        wanted = self.options.settings.max_output_tokens
        return max(1, min(limit, wanted if wanted is not None else 16_384))

    @property
    def input_budget(self) -> int:
        return max(1, self.model.identity.context_window - self.max_output_tokens)

    def runtime(self) -> SessionRuntime:
        return SessionRuntime(
            run_id=self.run_id,
            task_id=self.task.task_id,
            phase=self.phase,
            attempt=self.options.attempt,
            mode=self.executor.context.mode.value,
            read_only=self.options.read_only,
            workspace=str(self.executor.context.root),
            prompt_hash=self.prompt.prompt_hash,
            registry_hash=self.executor.registry.active_hash,
        )

    def started_facts(self) -> dict[str, object]:
        return {
            "phase": self.phase,
            "prompt": self.prompt.record(),
            "model": self.model.identity.label,
            "tools": [d.canonical_id for d in self.visible_definitions()],
            "budget": budget_facts(self.guards.limits.budget),
        }

    # -- tools -----------------------------------------------------------------------------

    def visible_definitions(self) -> list[ToolDefinition]:
        """The active tools the phase exposes, then the session tools."""
        return self.tools.definitions()

    def session_tool(self, name: str) -> SessionTool | None:
        """The session tool a call names (model-facing name or canonical ID), if any."""
        found = self.session_tools.get(name)
        if found is not None:
            return found
        return next(
            (t for t in self.session_tools.values() if t.definition.canonical_id == name), None
        )

    def exclude_time(self, seconds: float) -> None:
        """Wall time a sub-agent already charged to the shared budget: not counted again
        with this session's next turn."""
        self._mark += max(0.0, seconds)

    def tool_specs(self) -> tuple[ModelToolSpec, ...]:
        return self.tools.specs()

    def refresh_prompt(self) -> None:
        """After lazy activation: a new snapshot for the new registry, recorded."""
        if self.tools.current():
            return
        if self.executor.registry.active_hash == self.prompt.registry_hash:
            return
        self.prompt = reassemble(
            self.prompt,
            tools=self.visible_definitions(),
            registry_hash=self.executor.registry.active_hash,
            count_tokens=self._count_prompt,
        )
        self.event("agent.prompt", {"prompt": self.prompt.record()})

    def record_id(self, call_id: str) -> str:
        return f"{self.options.record_scope}{call_id}"

    def workspace_state(self) -> str:
        """The workspace state the next call observes, as the guards compare it: it moves
        with every host-observed write or derived mutation (and only then: a plan note or
        a validation that wrote nothing leaves it), and survives pause and resume."""
        return f"w{self.workspace_version}"

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    # -- evidence --------------------------------------------------------------------------

    def evidence_complete(self) -> bool:
        """Enough is known to answer: a mutating session needs a write certified by a
        later passing validation and complete diff; a read-only one needs at least one
        inspection and no failing validation."""
        if self.expect_changes:
            return self.ledger.is_complete(expect_changes=True)
        return self.inspections > 0 and self.ledger.is_complete(expect_changes=False)

    def evidence_ready(self) -> bool:
        """A change has been made and certified: time for a tool-free final answer."""
        return bool(self.ledger.state.writes) and self.ledger.is_complete(expect_changes=True)

    # -- requests --------------------------------------------------------------------------

    def build_request(self) -> ModelRequest:
        late = tuple(
            Attachment(s.name, s.text, cache_safe=False) for s in self.prompt.late_sections
        )
        return ModelRequest(
            system=tuple(s.text for s in self.prompt.cache_safe_sections),
            messages=tuple(self.messages),
            tools=() if self.finalizing else self.tool_specs(),
            attachments=(*self.options.attachments, *late),
            max_output_tokens=self.max_output_tokens,
            context_hash=self.contract.contract_hash(),
            temperature=self.options.settings.temperature,
        )

    def projected_dollars(self, input_tokens: int) -> float:
        cost = self.pricing.cost(
            ModelUsage(input_tokens=input_tokens, output_tokens=self.max_output_tokens)
        )
        return float(cost) if cost is not None else 0.0

    def account(
        self, usage: ModelUsage, cost: Decimal | None, *, seconds: float | None = None
    ) -> None:
        now = time.monotonic()
        elapsed = now - self._mark if seconds is None else seconds
        self._mark = now
        self.guards.record_usage(
            steps=1,
            tokens=usage.input_tokens + usage.output_tokens,
            seconds=elapsed,
            dollars=float(cost) if cost is not None else 0.0,
        )

    # -- the record ------------------------------------------------------------------------

    def event(
        self,
        kind: str,
        payload: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> None:
        if self.recorder is not None:
            self.recorder.event(
                kind,
                attempt=self.options.attempt,
                phase=self.phase,
                payload=payload,
                meta=meta,
            )

    def fingerprint(self) -> str:
        """The workspace fingerprint as the tree stands now. Never cached: the user may edit
        the work tree between two host actions, and a checkpoint that recorded the tree as
        it was before such an edit would make resume refuse a workspace that has not changed
        since. It is cheap (git's stat cache hashes only files changed since the last
        ``git add``), and checkpoints are taken per changed round, not per call."""
        from tidegate.workspace.fingerprint import workspace_fingerprint

        ctx = self.executor.context
        return workspace_fingerprint(ctx.root, ctx.git_view)

    def checkpoint_state(self, reason: str) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "reason": reason,
            "run_id": self.run_id,
            "task_id": self.task.task_id,
            "phase": self.phase,
            "attempt": self.options.attempt,
            "runtime": self.runtime().to_json(),
            "prompt": self.prompt.record(),
            "hashes": self.hashes.model_dump(),
            "task": self.task.model_dump(mode="json", by_alias=True),
            "active_tools": self.executor.registry.active,
            "guards": self.guards.to_json(),
            "ledger": self.ledger.to_json(),
            "transcript": self.transcript.to_json(),
            "counters": {
                "seq": self.seq,
                "state_version": self.state_base + self.executor.state_version,
                "workspace_version": self.workspace_version,
                "compactions": self.compactions,
                "inspections": self.inspections,
                "finalizing": self.finalizing,
            },
            "workspace_fingerprint": self.fingerprint() if self.options.checkpoints else None,
        }

    def checkpoint(self, reason: str) -> str | None:
        """Write a checkpoint (when this session owns them); returns its hash."""
        if not self.options.checkpoints:
            return None
        state = self.checkpoint_state(reason)
        self.last_checkpoint = state
        digest = sha256_json(state)
        if self.recorder is not None:
            self.recorder.checkpoint(reason, state)
            sealed = getattr(self.recorder, "last_checkpoint", None)
            digest = str(getattr(sealed, "hash", digest))
        self.last_checkpoint_hash = digest
        return digest

    def context_note(self) -> str:
        return context_summary(self.transcript, self.ledger, expect_changes=self.expect_changes)
