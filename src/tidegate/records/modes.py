"""Modes and their phases: the one place that says which phases a mode runs.

Every mode starts with the shared base (PREFLIGHT, CONTEXT, EXPLORE). Within one attempt,
phases run in order; ``ON_FAILURE`` phases run only after an earlier phase failed (and then
they are the only ones that run), ``ON_SUCCESS`` phases only when every earlier one passed.
"""

from __future__ import annotations

from enum import StrEnum

DEFAULT_VERIFY_TIMEOUT_S = 600.0
"""Seconds before a mode's VERIFY command is killed, unless the request says otherwise."""


class Mode(StrEnum):
    PATCH = "patch"
    REVIEW = "review"
    DEBUG = "debug"


class Phase(StrEnum):
    PREFLIGHT = "PREFLIGHT"
    CONTEXT = "CONTEXT"
    EXPLORE = "EXPLORE"
    REVIEW = "REVIEW"
    REPORT = "REPORT"
    ANALYZE_ISSUES = "ANALYZE_ISSUES"
    PLAN = "PLAN"
    PATCH = "PATCH"
    VALIDATE = "VALIDATE"
    AST_VALIDATE = "AST_VALIDATE"
    APPLY = "APPLY"
    VERIFY = "VERIFY"
    ROLLBACK = "ROLLBACK"
    SHRINK = "SHRINK"
    APPLY_BACK = "APPLY_BACK"


class Effect(StrEnum):
    """What a phase may mutate. Read-only: neither the main work tree nor the git index."""

    READ_ONLY = "read-only"
    SHADOW = "mutates-shadow"
    WORKSPACE = "mutates-workspace"


class When(StrEnum):
    ALWAYS = "always"
    ON_FAILURE = "on-failure"
    ON_SUCCESS = "on-success"


EFFECTS: dict[Phase, Effect] = {
    Phase.PREFLIGHT: Effect.READ_ONLY,
    Phase.CONTEXT: Effect.READ_ONLY,
    Phase.EXPLORE: Effect.READ_ONLY,
    Phase.REVIEW: Effect.READ_ONLY,
    Phase.REPORT: Effect.READ_ONLY,
    Phase.ANALYZE_ISSUES: Effect.READ_ONLY,
    Phase.PLAN: Effect.READ_ONLY,
    Phase.PATCH: Effect.READ_ONLY,
    Phase.VALIDATE: Effect.READ_ONLY,
    Phase.AST_VALIDATE: Effect.READ_ONLY,
    Phase.APPLY: Effect.SHADOW,
    Phase.VERIFY: Effect.READ_ONLY,
    Phase.ROLLBACK: Effect.SHADOW,
    Phase.SHRINK: Effect.READ_ONLY,
    Phase.APPLY_BACK: Effect.WORKSPACE,
}

_BASE = ((Phase.PREFLIGHT, When.ALWAYS), (Phase.CONTEXT, When.ALWAYS), (Phase.EXPLORE, When.ALWAYS))
_PATCH_CYCLE = (
    (Phase.PLAN, When.ALWAYS),
    (Phase.PATCH, When.ALWAYS),
    (Phase.VALIDATE, When.ALWAYS),
    (Phase.AST_VALIDATE, When.ALWAYS),
    (Phase.APPLY, When.ALWAYS),
    (Phase.VERIFY, When.ALWAYS),
    (Phase.ROLLBACK, When.ON_FAILURE),
    (Phase.SHRINK, When.ON_FAILURE),
    (Phase.APPLY_BACK, When.ON_SUCCESS),
)

MODE_PHASES: dict[Mode, tuple[tuple[Phase, When], ...]] = {
    Mode.PATCH: _BASE + _PATCH_CYCLE,
    Mode.REVIEW: (
        *_BASE,
        (Phase.REVIEW, When.ALWAYS),
        (Phase.REPORT, When.ALWAYS),
        (Phase.SHRINK, When.ALWAYS),
    ),
    Mode.DEBUG: (
        *_BASE,
        (Phase.REVIEW, When.ALWAYS),
        (Phase.ANALYZE_ISSUES, When.ALWAYS),
        *_PATCH_CYCLE,
    ),
}


def phases_of(mode: Mode) -> list[Phase]:
    return [phase for phase, _ in MODE_PHASES[mode]]


def fs_mode(mode: Mode) -> str:
    return "read-only" if mode is Mode.REVIEW else "read-write"
