"""A stored run report, checked without importing the report model (``store.views``).

``checked_report`` accepts a report (parsed from the store) only when it is exactly what
the report model (``tidegate.records.report``) writes: every field present in declaration
order, every value of its declared type, every string valid UTF-8. Such a report reads
back unchanged through the model, so ``read`` uses it as it is; anything else raises
``Irregular`` and the model reads it (converting it, or naming what is wrong).
tests/unit/test_read_path.py keeps ``MODELS`` equal to the model.
"""

from __future__ import annotations

from tidegate.store.reading import Irregular

TYPE_CHECKING = False  # ``read`` does not import typing
if TYPE_CHECKING:
    from typing import Any


# A type: "str", "int", "float", "bool", "json" (any JSON value), a model's name,
# ("?", T) for T or null, ("L", values) for a Literal, ("[]", T) for a list of T.
_OPT_STR = ("?", "str")
MODELS: dict[str, tuple[tuple[str, Any], ...]] = {
    "FlowReport": (
        ("status", ("L", ("succeeded", "failed", "conflict", "paused", "held"))),
        ("mode", "str"),
        ("run_id", "str"),
        ("repo", "str"),
        ("attempts", "int"),
        ("max_attempts", "int"),
        ("failure_phase", _OPT_STR),
        ("error_class", _OPT_STR),
        ("message", "str"),
        ("strategy", ("L", ("worktree",))),
        ("fs_mode", ("L", ("read-only", "read-write"))),
        ("planner", "str"),
        ("t0_ref", _OPT_STR),
        ("t0_commit", _OPT_STR),
        ("head", _OPT_STR),
        ("diff", "str"),
        ("diff_sha256", _OPT_STR),
        ("changed_files", ("[]", "ChangedFile")),
        ("applied_files", ("[]", "AppliedFile")),
        ("rejects", ("[]", "str")),
        ("rejects_dir", _OPT_STR),
        ("findings", ("[]", "FindingOut")),
        ("feedback", ("[]", "str")),
        ("verify", ("?", "VerifyOut")),
        ("containment", ("?", "ContainmentOut")),
        ("effective_policy", ("?", "EffectivePolicyOut")),
        ("attempt_events", ("[]", "AttemptEvent")),
        ("phases", ("[]", "PhaseEvent")),
        ("notes", ("[]", "str")),
        ("landing", ("?", "LandingOut")),
        ("rebased_from", _OPT_STR),
        ("duration_s", "float"),
        ("replay_hash", _OPT_STR),
    ),
    "LandingOut": (
        ("seq", ("?", "int")),
        ("landed_between", ("?", ("[]", "str"))),
        ("waited_s", "float"),
        ("held_s", "float"),
    ),
    "ChangedFile": (
        ("path", "str"),
        ("action", ("L", ("create", "modify", "delete"))),
        ("before_sha256", _OPT_STR),
        ("after_sha256", _OPT_STR),
        ("before_mode", _OPT_STR),
        ("after_mode", _OPT_STR),
        ("path_bytes", _OPT_STR),
    ),
    "AppliedFile": (
        ("path", "str"),
        ("action", ("L", ("write", "delete", "unchanged"))),
        ("merged", "bool"),
        ("before_sha256", _OPT_STR),
        ("after_sha256", _OPT_STR),
        ("path_bytes", _OPT_STR),
    ),
    "FindingOut": (
        ("message", "str"),
        ("path", _OPT_STR),
        ("line", ("?", "int")),
        ("severity", "str"),
        ("source", "str"),
    ),
    "VerifyOut": (
        ("command", "str"),
        ("exit_code", ("?", "int")),
        ("timed_out", "bool"),
        ("duration_s", "float"),
        ("output_file", _OPT_STR),
    ),
    "ContainmentOut": (
        ("backend", ("L", ("bubblewrap", "none"))),
        ("verified", "bool"),
        ("network", "bool"),
        ("writable", ("[]", "str")),
        ("readonly", ("[]", "str")),
        ("private_dirs", ("[]", "str")),
        ("shared", ("[]", "SharedDir")),
        ("reason", "str"),
    ),
    "SharedDir": (
        ("path", "str"),
        ("source", "str"),
        ("how", ("L", ("ro-bind", "symlink"))),
    ),
    "EffectivePolicyOut": (
        ("sources", ("[]", "PolicySource")),
        ("validate_policy", "json"),
        ("always_refused", ("[]", "str")),
        ("containment", "json"),
        ("sha256", "str"),
    ),
    "PolicySource": (("path", "str"), ("sha256", "str")),
    "AttemptEvent": (
        ("attempt", "int"),
        ("status", ("L", ("succeeded", "failed"))),
        ("failure_phase", _OPT_STR),
        ("error_class", _OPT_STR),
        ("retryable", ("?", "bool")),
        ("proposal_sha256", _OPT_STR),
        ("candidate_tree", _OPT_STR),
        ("diagnostics", "int"),
        ("feedback_chars", "int"),
        ("duration_ms", "float"),
    ),
    "PhaseEvent": (
        ("attempt", "int"),
        ("phase", "str"),
        ("effect", "str"),
        ("status", ("L", ("ok", "failed"))),
        ("duration_ms", "float"),
        ("detail", "str"),
        ("error_class", _OPT_STR),
    ),
}
"""The report model's fields, in declaration order, as this module checks them."""


def checked_report(report: object) -> dict[str, Any]:
    """``report`` when it is exactly a dumped ``FlowReport``; else ``Irregular``."""
    _check(report, "FlowReport")
    assert isinstance(report, dict)
    return report


def _check(value: object, kind: Any) -> None:
    if isinstance(kind, tuple):
        tag, arg = kind
        if tag == "?":
            if value is not None:
                _check(value, arg)
        elif tag == "L":
            if not isinstance(value, str) or value not in arg:
                raise Irregular(f"not one of {arg}")
        else:
            if not isinstance(value, list):
                raise Irregular("not a list")
            for item in value:
                _check(item, arg)
    elif kind in _SCALARS:
        if type(value) is not _SCALARS[kind]:
            raise Irregular(f"not a {kind}")
        if kind == "str":
            _utf8(value)  # type: ignore[arg-type]
        elif kind == "float" and not (-1e308 < value < 1e308):  # type: ignore[operator]
            raise Irregular("not a finite float")
    elif kind == "json":
        _plain_json(value)
    else:
        fields = MODELS[kind]
        if not isinstance(value, dict) or list(value) != [name for name, _ in fields]:
            raise Irregular(f"not a {kind}")
        for name, field in fields:
            _check(value[name], field)


_SCALARS = {"str": str, "int": int, "float": float, "bool": bool}


def _utf8(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Irregular("not UTF-8") from None


def _plain_json(value: object) -> None:
    if isinstance(value, str):
        _utf8(value)
    elif isinstance(value, float):
        if not -1e308 < value < 1e308:
            raise Irregular("not a finite float")
    elif isinstance(value, dict):
        for key, item in value.items():
            _utf8(key)
            _plain_json(item)
    elif isinstance(value, list):
        for item in value:
            _plain_json(item)
    elif value is not None and not isinstance(value, int):
        raise Irregular("not JSON")
