"""The evidence ledger of an agent run: host-attested writes, validations and diffs.

Every observation carries the causal sequence number the loop gave the event that produced
it. Three rules make the ledger hard to fool:

* **Newest wins per identity.** Validations are keyed by their stable validation id and
  diffs by scope; a newer sequence replaces an older one (pass -> fail -> pass ends as a
  pass), and an observation older than the one held is ignored.
* **Repetition is not progress.** Each entry has a semantic projection: the status (or diff
  digest) and how many writes it covers (writes with a smaller sequence). Observing the
  same thing again keeps the newer sequence but changes no projection, so
  :attr:`EvidenceLedger.progress_version` only moves when something new is known.
* **Evidence must follow the last write.** Completion needs a passing validation and a
  complete diff whose sequences are strictly greater than the last write's. A write made
  during the validating call itself (same sequence) is therefore not certified by that
  call; a later identical pass certifies it, and any later write voids both again.

The ledger holds no prose written by the model: only what the host observed.
"""

from __future__ import annotations

import bisect
from enum import StrEnum

import msgspec
from pydantic import BaseModel, ConfigDict, Field


class ValidationStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"


class WriteEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sequence: int = Field(ge=0)
    path: str
    before_hash: str | None
    after_hash: str | None


class ValidationEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    validation_id: str
    status: ValidationStatus
    sequence: int = Field(ge=0)
    """The newest causal sequence at which this result was observed."""
    covered_writes: int = Field(ge=0)
    """How many recorded writes precede it: the mutations this result speaks for."""

    def projection(self) -> tuple[str, int]:
        return (self.status.value, self.covered_writes)


class DiffEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: str
    diff_hash: str
    complete: bool
    """False for a truncated or partial diff, which never counts as the final diff."""
    sequence: int = Field(ge=0)
    covered_writes: int = Field(ge=0)

    def projection(self) -> tuple[str, bool, int]:
        return (self.diff_hash, self.complete, self.covered_writes)


class Observed(msgspec.Struct, frozen=True):
    """What recording an observation did."""

    advanced: bool
    """The semantic projection changed (and ``progress_version`` moved)."""
    stale: bool = False
    """The observation was older than the one held and was ignored."""


class LedgerState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    writes: list[WriteEvidence] = Field(default_factory=list)
    validations: dict[str, ValidationEvidence] = Field(default_factory=dict)
    diffs: dict[str, DiffEvidence] = Field(default_factory=dict)
    progress_version: int = 0


class EvidenceLedger:
    """The loop's record of what the host observed; checkpointed as JSON."""

    def __init__(self, state: LedgerState | None = None) -> None:
        self.state = state or LedgerState()
        self._write_sequences = [w.sequence for w in self.state.writes]

    # serialisation

    def to_json(self) -> str:
        return self.state.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> EvidenceLedger:
        return cls(LedgerState.model_validate_json(text))

    # observations

    def record_write(
        self, sequence: int, path: str, before_hash: str | None, after_hash: str | None
    ) -> Observed:
        """A host-attested mutation. Writes arrive in causal order."""
        last = self.last_write_sequence
        if last is not None and sequence < last:
            raise ValueError(f"write at sequence {sequence} arrives after one at {last}")
        if before_hash == after_hash:
            raise ValueError(f"a write of {path} must change it (before == after)")
        self.state.writes.append(
            WriteEvidence(
                sequence=sequence, path=path, before_hash=before_hash, after_hash=after_hash
            )
        )
        self._write_sequences.append(sequence)
        self.state.progress_version += 1
        return Observed(advanced=True)

    def record_validation(self, validation_id: str, passed: bool, sequence: int) -> Observed:
        """A structured validation result for a stable ``validation_id``."""
        held = self.state.validations.get(validation_id)
        status = ValidationStatus.PASSED if passed else ValidationStatus.FAILED
        if held is not None:
            if sequence < held.sequence:
                return Observed(advanced=False, stale=True)
            if sequence == held.sequence:
                if held.status != status:
                    raise ValueError(
                        f"validation {validation_id} has two results at sequence {sequence}"
                    )
                return Observed(advanced=False)
        entry = ValidationEvidence(
            validation_id=validation_id,
            status=status,
            sequence=sequence,
            covered_writes=self._writes_before(sequence),
        )
        self.state.validations[validation_id] = entry
        return self._advance(held is None or held.projection() != entry.projection())

    def record_diff(
        self, diff_hash: str, sequence: int, *, complete: bool = True, scope: str = "workspace"
    ) -> Observed:
        """A host-observed diff of ``scope`` (``complete`` only when untruncated)."""
        held = self.state.diffs.get(scope)
        if held is not None and sequence <= held.sequence:
            return Observed(advanced=False, stale=sequence < held.sequence)
        entry = DiffEvidence(
            scope=scope,
            diff_hash=diff_hash,
            complete=complete,
            sequence=sequence,
            covered_writes=self._writes_before(sequence),
        )
        self.state.diffs[scope] = entry
        return self._advance(held is None or held.projection() != entry.projection())

    # queries

    @property
    def progress_version(self) -> int:
        return self.state.progress_version

    @property
    def last_write_sequence(self) -> int | None:
        return self._write_sequences[-1] if self._write_sequences else None

    def validation(self, validation_id: str) -> ValidationEvidence | None:
        return self.state.validations.get(validation_id)

    def semantic_projection(self) -> dict[str, object]:
        """What is known, without the sequences at which it was last seen."""
        return {
            "writes": len(self.state.writes),
            "validations": {k: v.projection() for k, v in sorted(self.state.validations.items())},
            "diffs": {k: d.projection() for k, d in sorted(self.state.diffs.items())},
        }

    def completion_gaps(self, *, expect_changes: bool = True) -> list[str]:
        """What is missing before the run may report completion (empty = sufficient)."""
        gaps = []
        failing = sorted(
            v.validation_id
            for v in self.state.validations.values()
            if v.status is ValidationStatus.FAILED
        )
        if failing:
            gaps.append("newest result is a failure for validation " + ", ".join(failing))
        last = self.last_write_sequence
        if last is None:
            if expect_changes:
                gaps.append("no workspace change has been recorded")
            return gaps
        if not any(
            v.status is ValidationStatus.PASSED and v.sequence > last
            for v in self.state.validations.values()
        ):
            gaps.append(f"no passing validation after the last write (sequence {last})")
        if not any(d.complete and d.sequence > last for d in self.state.diffs.values()):
            gaps.append(f"no complete diff observed after the last write (sequence {last})")
        return gaps

    def is_complete(self, *, expect_changes: bool = True) -> bool:
        return not self.completion_gaps(expect_changes=expect_changes)

    def _writes_before(self, sequence: int) -> int:
        return bisect.bisect_left(self._write_sequences, sequence)

    def _advance(self, changed: bool) -> Observed:
        if changed:
            self.state.progress_version += 1
        return Observed(advanced=changed)
