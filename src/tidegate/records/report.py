"""The final report of a run: what ``--json`` prints, one object with snake_case keys."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import field
from msgspec.structs import force_setattr

from tidegate.records.checked import Checked
from tidegate.text.paths import b64_bytes, utf8_text

Status = Literal["succeeded", "failed", "conflict", "paused", "held"]
"""``paused``: stopped at a checkpoint (Ctrl-C); ``tidegate resume RUN_ID`` continues it.
``held``: verified and kept, not applied (``run --hold``); ``tidegate apply RUN_ID`` lands it."""


class _Model(Checked):
    def __post_init__(self) -> None:
        """Every string of a report is valid UTF-8, so it always serialises (JSON, the run
        store, a terminal): bytes of a path that are not UTF-8 become ``\\xNN``. A record
        with a ``path_bytes`` field keeps such a path's exact bytes there first."""
        super().__post_init__()  # nested mappings become records, which do their own
        path = getattr(self, "path", None)
        if isinstance(path, str) and getattr(self, "path_bytes", "") is None:
            force_setattr(self, "path_bytes", b64_bytes(path))
        for name in self.__struct_fields__:
            value = getattr(self, name)
            clean = _utf8_values(value)
            if clean is not value:
                force_setattr(self, name, clean)


def _utf8_values(value: Any) -> Any:
    """``value`` with every string made valid UTF-8: the same object when all were."""
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, list | tuple):
        items = [_utf8_values(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, dict):
        out = {k: _utf8_values(v) for k, v in value.items()}
        return value if all(out[k] is v for k, v in value.items()) else out
    return value


class ChangedFile(_Model):
    """One path of the verified change: SHA-256 of its content at T0 and after the change
    (work-tree bytes; null for a path that did not exist on that side)."""

    path: str
    """The path as text; when it is not UTF-8, each such byte is shown ``\\xNN`` and
    ``path_bytes`` holds the exact bytes (changed paths never contain a backslash, so the
    text form cannot be mistaken for a real name)."""
    action: Literal["create", "modify", "delete"]
    before_sha256: str | None
    after_sha256: str | None
    before_mode: str | None = None
    after_mode: str | None = None
    path_bytes: str | None = None
    """Base64 of the path's bytes, set only when they are not UTF-8."""


class AppliedFile(_Model):
    """What APPLY_BACK did to one path of the main work tree, attested by the host."""

    path: str
    """As ``ChangedFile.path``."""
    action: Literal["write", "delete", "unchanged"]
    merged: bool
    before_sha256: str | None
    after_sha256: str | None
    path_bytes: str | None = None
    """Base64 of the path's bytes, set only when they are not UTF-8."""


class PhaseEvent(_Model):
    """The audit record of one phase in one attempt."""

    attempt: int
    phase: str
    effect: str
    status: Literal["ok", "failed"]
    duration_ms: float
    detail: str = ""
    error_class: str | None = None


class AttemptEvent(_Model):
    """The audit record of one attempt."""

    attempt: int
    status: Literal["succeeded", "failed"]
    failure_phase: str | None = None
    error_class: str | None = None
    retryable: bool | None = None
    proposal_sha256: str | None = None
    candidate_tree: str | None = None
    diagnostics: int = 0
    """Structured diagnostics parsed from the failed verification."""
    feedback_chars: int = 0
    """Size of the feedback this attempt's failure passed on."""
    duration_ms: float


class FindingOut(_Model):
    message: str
    path: str | None = None
    line: int | None = None
    severity: str = "error"
    source: str = "planner"


class VerifyOut(_Model):
    command: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    output_file: str | None = None


class SharedDir(_Model):
    """An ignored directory of the main work tree made visible in the shadow, read-only."""

    path: str
    """Relative to the work tree."""
    source: str
    how: Literal["ro-bind", "symlink"]
    """ro-bind: enforced read-only by bubblewrap; symlink: uncontained, so nothing stops a
    command writing through it (read-only by convention only)."""


class ContainmentOut(_Model):
    """The containment VERIFY's command actually ran under (the last run of it)."""

    backend: Literal["bubblewrap", "none"]
    verified: bool
    network: bool
    writable: list[str]
    """``["/"]``: anywhere tidegate's user can write (backend none)."""
    readonly: list[str] = field(default_factory=list)
    private_dirs: list[str] = field(default_factory=list)
    shared: list[SharedDir] = field(default_factory=list)
    reason: str


class PolicySource(_Model):
    path: str
    """``pyproject.toml`` (its ``[tool.tidegate]`` table) or ``.tidegate/config.toml``."""
    sha256: str
    """Of the file's bytes as read at bootstrap."""


class EffectivePolicyOut(_Model):
    """The policy the run was judged by. Read once, at bootstrap, from your work tree as it
    was when the run started; never from the shadow or a candidate, so nothing the run
    produces can weaken it (see docs/validation.md)."""

    sources: list[PolicySource]
    """The files it came from (none: the defaults)."""
    validate_policy: dict[str, object]
    """VALIDATE's limits and ``protected`` globs."""
    always_refused: list[str]
    """What no change may touch, whatever the configuration says."""
    containment: dict[str, object]
    """VERIFY's containment ``mode`` (the option, else the configuration), ``network`` and
    ``share``."""
    sha256: str
    """Of ``validate_policy``, ``always_refused`` and ``containment`` (canonical JSON): equal
    digests, equal policies."""


class LandingOut(_Model):
    """Where a run's change met the work tree: after whom, and how long the landing waited
    for the landing lock and held it (``workspace.lock.ApplyLock``)."""

    seq: int | None
    """Its place in the work tree's landing order (``workspace.landed``); None: nothing
    landed (a conflict, a failed write)."""
    landed_between: list[str] | None
    """The runs (and ``apply``/``undo``) that landed between this run's T0 and its
    APPLY_BACK, in order; None: not known (a resumed run)."""
    waited_s: float
    held_s: float


class FlowReport(_Model):
    status: Status
    mode: str
    run_id: str
    repo: str
    attempts: int
    max_attempts: int
    failure_phase: str | None = None
    error_class: str | None = None
    message: str = ""
    strategy: Literal["worktree"] = "worktree"
    fs_mode: Literal["read-only", "read-write"]
    planner: str
    t0_ref: str | None = None
    t0_commit: str | None = None
    head: str | None = None
    diff: str = ""
    diff_sha256: str | None = None
    changed_files: list[ChangedFile] = field(default_factory=list)
    applied_files: list[AppliedFile] = field(default_factory=list)
    rejects: list[str] = field(default_factory=list)
    rejects_dir: str | None = None
    findings: list[FindingOut] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)
    verify: VerifyOut | None = None
    containment: ContainmentOut | None = None
    effective_policy: EffectivePolicyOut | None = None
    attempt_events: list[AttemptEvent] = field(default_factory=list)
    phases: list[PhaseEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    landing: LandingOut | None = None
    """Set when APPLY_BACK took the landing lock."""
    rebased_from: str | None = None
    """The run whose verified change this run re-applied on a fresh T0 (``--rebase``)."""
    duration_s: float = 0.0
    replay_hash: str | None = None
    """Digest of the run's trace without times, IDs and temp paths (``tidegate.store.replay``):
    two runs of the same scenario have the same one."""

    @property
    def exit_code(self) -> int:
        if self.status in ("succeeded", "held"):
            return 0
        if self.status == "conflict":
            return 3
        if self.status == "paused":
            return 130
        if self.error_class == "RESOURCE_LOCK_ERROR":
            return 4
        return 1
