"""Guards that keep an agent loop from spinning: pure decisions over serialisable counters.

The loop asks before every tool dispatch (:meth:`LoopGuards.check_call`) and before every
model request (:meth:`LoopGuards.check_model_request`), and reports what happened
afterwards (``record_*``). Every answer is data:

``Allow``     go ahead
``Block``     do not dispatch this call; tell the model why and let it choose again
``Finalize``  stop calling tools; the completion evidence is already sufficient, so ask
              for the final answer with no tools exposed
``Pause``     checkpoint and pause durably; the run can resume later
``Stop``      end the run now (the hard dollar cap)

A no-progress guard (exact repeat past its allowance, an alternating tool cycle, a write
cycle, no semantic progress for too many turns) finalizes when the caller says completion
evidence is sufficient and pauses otherwise. Failure guards (a repeatedly failing
validation on one workspace fingerprint, a mutation family that keeps failing) always
pause.

There is no I/O and no clock here: the caller passes the workspace state it observed and
the usage it measured. :meth:`LoopGuards.to_json` / :meth:`LoopGuards.from_json` carry
every counter through a checkpoint, so pausing and resuming cannot reset a guard.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec
from pydantic import BaseModel, ConfigDict, Field

from tidegate.prompt.hashing import sha256_json

# -- decisions ---------------------------------------------------------------------------


class Allow(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "allow"


class Block(msgspec.Struct, frozen=True):
    """Refuse this one call without dispatching it; the run continues."""

    guard: str
    reason: str
    kind: ClassVar[str] = "block"


class Finalize(msgspec.Struct, frozen=True):
    """No more tool calls: completion evidence is sufficient, ask for the final answer."""

    guard: str
    reason: str
    kind: ClassVar[str] = "finalize"


class Pause(msgspec.Struct, frozen=True):
    """Checkpoint and pause durably."""

    guard: str
    reason: str
    kind: ClassVar[str] = "pause"


class Stop(msgspec.Struct, frozen=True):
    """End the run now."""

    guard: str
    reason: str
    kind: ClassVar[str] = "stop"


Decision = Allow | Block | Finalize | Pause | Stop
ALLOW = Allow()

# Guard names, as they appear in decisions, traces and reports.
EXACT_REPEAT = "exact-repeat"
TOOL_CYCLE = "tool-cycle"
WRITE_CYCLE = "write-cycle"
VALIDATION_FAILURE = "repeated-validation-failure"
MUTATION_FAMILY = "failed-mutation-family"
NO_PROGRESS = "no-progress"
BUDGET = "budget"
HARD_CAP = "hard-dollar-cap"


# -- inputs ------------------------------------------------------------------------------


def mutation_family(path: str, content_hash: str | None) -> str:
    """The family key of a mutation: one path in one content state (None = absent)."""
    return f"{path}@{content_hash or 'absent'}"


class ToolCall(msgspec.Struct, frozen=True):
    """A proposed call as the guards see it.

    ``workspace_state`` is the host's state version (or fingerprint) the call would observe;
    it must change whenever the workspace changes, or a legitimate re-read after an edit
    would look like a repeat. ``family`` is set for mutating calls
    (:func:`mutation_family` of the target path and its current content hash).
    """

    tool: str
    arguments: Mapping[str, Any] = msgspec.field(default_factory=dict)
    workspace_state: str = ""
    family: str | None = None

    @property
    def signature(self) -> str:
        """Tool plus canonical arguments: key order and spacing do not matter."""
        return sha256_json([self.tool, dict(self.arguments)])


# -- budgets -----------------------------------------------------------------------------


class Usage(BaseModel):
    """What the run has spent so far (accumulated across pause and resume)."""

    model_config = ConfigDict(extra="forbid")

    steps: int = 0
    """Model requests made."""
    tool_calls: int = 0
    tokens: int = 0
    wall_seconds: float = 0.0
    dollars: float = 0.0


class Budget(BaseModel):
    """Soft limits pause the run (resumable with a larger budget); the hard dollar cap
    stops it, and is checked before spending, so it is never crossed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_steps: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_wall_seconds: float | None = Field(default=None, gt=0)
    max_dollars: float | None = Field(default=None, ge=0)
    hard_dollar_cap: float | None = Field(default=None, ge=0)

    def exceeded(self, usage: Usage) -> list[str]:
        """The soft limits ``usage`` has reached, by name."""
        checks = (
            ("steps", self.max_steps, usage.steps),
            ("tokens", self.max_tokens, usage.tokens),
            ("wall_seconds", self.max_wall_seconds, usage.wall_seconds),
            ("dollars", self.max_dollars, usage.dollars),
        )
        return [name for name, limit, used in checks if limit is not None and used >= limit]

    def breaches_hard_cap(self, usage: Usage, projected_dollars: float = 0.0) -> bool:
        cap = self.hard_dollar_cap
        return cap is not None and usage.dollars + projected_dollars > cap


# -- limits and state --------------------------------------------------------------------


class GuardLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    recent_window: int = Field(default=8, ge=1)
    """How many dispatched calls an exact repeat is compared against."""
    repeat_blocks_allowed: int = Field(default=2, ge=0)
    """Exact repeats refused with ``Block`` before the next one pauses the run."""
    max_cycle_period: int = Field(default=3, ge=2)
    """Longest alternation (A,B / A,B,C ...) the cycle guards look for."""
    validation_failures_per_state: int = Field(default=3, ge=1)
    """Failed validations on one workspace fingerprint before the run pauses."""
    failures_per_mutation_family: int = Field(default=3, ge=1)
    """Failed mutations of one path in one state before further attempts pause the run."""
    turns_without_progress: int = Field(default=12, ge=1)
    validation_tools: tuple[str, ...] = ("project.validate",)
    budget: Budget = Field(default_factory=Budget)


class _RecentCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    signature: str
    workspace_state: str


class GuardState(BaseModel):
    """Every counter the guards keep; all of it goes into a checkpoint."""

    model_config = ConfigDict(extra="forbid")

    recent: list[_RecentCall] = Field(default_factory=list)
    successful_suffix: list[str] = Field(default_factory=list)
    repeat_blocks: int = 0
    """Exact repeats refused since the last semantic progress."""
    failed_families: dict[str, int] = Field(default_factory=dict)
    write_states: dict[str, list[str]] = Field(default_factory=dict)
    validation_failures: dict[str, int] = Field(default_factory=dict)
    progress_version: int = 0
    turns_without_progress: int = 0
    usage: Usage = Field(default_factory=Usage)


class _Snapshot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limits: GuardLimits
    state: GuardState


_MAX_TRACKED_KEYS = 512  # bound on per-path / per-family / per-state maps


def _bounded(mapping: dict[str, Any]) -> None:
    while len(mapping) > _MAX_TRACKED_KEYS:
        del mapping[next(iter(mapping))]


def _cycle_period(sequence: list[str], max_period: int) -> int | None:
    """The period p >= 2 when the tail of ``sequence`` is one p-long run repeated twice
    (A,B,A,B or A,B,C,A,B,C); constant tails are not cycles."""
    for period in range(2, max_period + 1):
        tail = sequence[-2 * period :]
        if len(tail) == 2 * period and tail[:period] == tail[period:] and len(set(tail)) > 1:
            return period
    return None


# -- the guards --------------------------------------------------------------------------


class LoopGuards:
    """The loop's guards over one run. Not thread-safe; one loop owns it."""

    def __init__(self, limits: GuardLimits | None = None, state: GuardState | None = None):
        self.limits = limits or GuardLimits()
        self.state = state or GuardState()

    # serialisation

    def to_json(self) -> str:
        return _Snapshot(limits=self.limits, state=self.state).model_dump_json()

    @classmethod
    def from_json(cls, text: str, limits: GuardLimits | None = None) -> LoopGuards:
        """Restore guards from a checkpoint; ``limits`` replaces the recorded limits (for
        example a larger budget on resume) while every counter is kept."""
        snapshot = _Snapshot.model_validate_json(text)
        return cls(limits or snapshot.limits, snapshot.state)

    # before acting

    def check_model_request(self, projected_dollars: float = 0.0) -> Decision:
        """Before a model request: the hard cap (including what this request may cost),
        then the soft budgets."""
        budget, usage = self.limits.budget, self.state.usage
        if budget.breaches_hard_cap(usage, projected_dollars):
            return Stop(
                HARD_CAP,
                f"spending ${usage.dollars:.4f} + ${projected_dollars:.4f} would cross the "
                f"hard cap of ${budget.hard_dollar_cap:.4f}",
            )
        exceeded = budget.exceeded(usage)
        if exceeded:
            return Pause(BUDGET, "budget reached: " + ", ".join(exceeded))
        return ALLOW

    def check_call(self, call: ToolCall, *, evidence_complete: bool = False) -> Decision:
        """Before dispatching ``call``: budgets, failure bounds, exact repeat, then cycles.

        A ``Block`` is counted as it is issued (the count survives a checkpoint); nothing
        else changes here."""
        decision = self.check_model_request()
        if not isinstance(decision, Allow):
            return decision
        s, lim = self.state, self.limits
        if call.family is not None:
            failures = s.failed_families.get(call.family, 0)
            if failures >= lim.failures_per_mutation_family:
                return Pause(
                    MUTATION_FAMILY,
                    f"{failures} mutations of {call.family} already failed; another "
                    "variation will not help",
                )
        if call.tool in lim.validation_tools:
            failures = s.validation_failures.get(call.workspace_state, 0)
            if failures >= lim.validation_failures_per_state:
                return Pause(
                    VALIDATION_FAILURE,
                    f"validation already failed {failures} times on this unchanged workspace",
                )
        signature = call.signature
        if any(
            r.signature == signature and r.workspace_state == call.workspace_state for r in s.recent
        ):
            if evidence_complete:
                return Finalize(EXACT_REPEAT, f"{call.tool} repeats a call; evidence suffices")
            if s.repeat_blocks < lim.repeat_blocks_allowed:
                s.repeat_blocks += 1
                return Block(
                    EXACT_REPEAT,
                    f"{call.tool} with these arguments already ran on this workspace state; "
                    "its result has not changed",
                )
            return Pause(EXACT_REPEAT, f"{call.tool} keeps repeating an identical call")
        period = _cycle_period([*s.successful_suffix, signature], lim.max_cycle_period)
        if period is not None:
            reason = f"{call.tool} would complete a {period}-call cycle of successful calls"
            return self._no_progress(TOOL_CYCLE, reason, evidence_complete)
        return ALLOW

    # after acting

    def record_call(self, call: ToolCall, *, ok: bool) -> None:
        """A dispatched call finished (``ok`` = a successful structured result)."""
        s, lim = self.state, self.limits
        s.usage.tool_calls += 1
        s.recent.append(_RecentCall(signature=call.signature, workspace_state=call.workspace_state))
        del s.recent[: -lim.recent_window]
        if ok:
            s.successful_suffix.append(call.signature)
            del s.successful_suffix[: -2 * lim.max_cycle_period]
        elif call.family is not None:
            s.failed_families[call.family] = s.failed_families.get(call.family, 0) + 1
            _bounded(s.failed_families)

    def record_write(
        self,
        path: str,
        before_hash: str | None,
        after_hash: str | None,
        *,
        evidence_complete: bool = False,
    ) -> Decision:
        """A host-attested write of ``path``; pauses when its content oscillates
        (A -> B -> A -> B)."""
        s, lim = self.state, self.limits
        states = s.write_states.setdefault(path, [])
        before, after = before_hash or "absent", after_hash or "absent"
        if not states or states[-1] != before:
            states.append(before)
        states.append(after)
        del states[: -2 * lim.max_cycle_period]
        _bounded(s.write_states)
        period = _cycle_period(states, lim.max_cycle_period)
        if period is not None:
            reason = f"{path} keeps returning to the same contents ({period}-state cycle)"
            return self._no_progress(WRITE_CYCLE, reason, evidence_complete)
        return ALLOW

    def record_validation(self, workspace_state: str, *, passed: bool) -> Decision:
        """A validation result on ``workspace_state``; failures on one state are bounded."""
        if passed:
            return ALLOW
        s, lim = self.state, self.limits
        failures = s.validation_failures.get(workspace_state, 0) + 1
        s.validation_failures[workspace_state] = failures
        _bounded(s.validation_failures)
        if failures >= lim.validation_failures_per_state:
            return Pause(
                VALIDATION_FAILURE,
                f"validation failed {failures} times on one workspace fingerprint",
            )
        return ALLOW

    def record_turn(self, progress_version: int, *, evidence_complete: bool = False) -> Decision:
        """After a model turn: ``progress_version`` is the evidence ledger's semantic
        progress counter, which repeated identical observations cannot advance."""
        s = self.state
        if progress_version > s.progress_version:
            s.progress_version = progress_version
            s.turns_without_progress = 0
            s.repeat_blocks = 0
            return ALLOW
        s.turns_without_progress += 1
        if s.turns_without_progress >= self.limits.turns_without_progress:
            reason = f"{s.turns_without_progress} turns without new evidence"
            return self._no_progress(NO_PROGRESS, reason, evidence_complete)
        return ALLOW

    def record_usage(
        self, *, steps: int = 0, tokens: int = 0, seconds: float = 0.0, dollars: float = 0.0
    ) -> None:
        u = self.state.usage
        u.steps += steps
        u.tokens += tokens
        u.wall_seconds += seconds
        u.dollars += dollars

    def _no_progress(self, guard: str, reason: str, evidence_complete: bool) -> Decision:
        if evidence_complete:
            return Finalize(guard, reason + "; completion evidence is sufficient")
        return Pause(guard, reason + "; completion evidence is not yet sufficient")
