"""The effect profile as data: pinned digest, registry integrity checks, effect models."""

from __future__ import annotations

import msgspec
import pytest
from pydantic import ValidationError

from tidegate.tools.catalog import CATALOG, ToolRegistry
from tidegate.tools.effects import (
    CANONICAL_TOOL_IDS,
    PROFILE,
    PROFILE_SHA256,
    Effects,
    EntryStateModel,
    ProfileIntegrityError,
    WriteEffect,
    profile_digest,
    undeclared,
    validate_registry,
    verify_profile,
)


def _declared() -> list[tuple[str, str, frozenset[str]]]:
    return [(s.tool_id, s.model_name, s.capabilities) for s in CATALOG]


def test_the_profile_covers_exactly_the_21_canonical_tools() -> None:
    assert len(CANONICAL_TOOL_IDS) == 21
    assert set(CANONICAL_TOOL_IDS) == {s.tool_id for s in CATALOG}
    assert all("approval" in caps for caps in PROFILE.values())
    assert PROFILE["git.exec"] == {"approval", "diff_review", "inspect"}
    assert PROFILE["project.validate"] == {"approval", "state_version", "validate", "write"}


def test_the_pinned_digest_matches_the_table() -> None:
    assert profile_digest() == PROFILE_SHA256
    verify_profile()


def test_a_valid_registry_passes() -> None:
    validate_registry(_declared(), ["workspace.read", "command.run"])


def test_an_active_tool_without_policy_is_refused() -> None:
    declared = [*_declared(), ("workspace.delete", "workspace_delete", frozenset({"approval"}))]
    with pytest.raises(ProfileIntegrityError, match="no effect policy"):
        validate_registry(declared, ["workspace.delete"])


def test_duplicate_canonical_ids_and_names_are_refused() -> None:
    declared = _declared()
    with pytest.raises(ProfileIntegrityError, match="duplicate canonical"):
        validate_registry([*declared, declared[0]], [])
    twin = ("workspace.reader", "workspace_read", frozenset({"approval"}))
    with pytest.raises(ProfileIntegrityError, match="duplicate model-facing"):
        validate_registry([*declared, twin], [])


def test_unknown_capability_names_are_refused() -> None:
    declared = _declared()
    declared[0] = (declared[0][0], declared[0][1], declared[0][2] | {"teleport"})
    with pytest.raises(ProfileIntegrityError, match="unknown capabilities"):
        validate_registry(declared, [])


def test_a_builtin_capability_set_that_differs_from_the_profile_is_refused() -> None:
    specs = list(CATALOG)
    index = next(i for i, s in enumerate(specs) if s.tool_id == "workspace.read")
    specs[index] = msgspec.structs.replace(
        specs[index], declared=frozenset({"approval", "inspect", "write"})
    )
    with pytest.raises(ProfileIntegrityError, match=r"workspace\.read declares"):
        ToolRegistry({}, specs=specs)


def test_write_effects_need_different_typed_states() -> None:
    file_a = EntryStateModel(kind="file", sha256="sha256:" + "a" * 64)
    with pytest.raises(ValidationError, match="different before/after"):
        WriteEffect(path="x", before=file_a, after=file_a)
    with pytest.raises(ValidationError, match="needs hash"):
        EntryStateModel(kind="file", sha256=None)
    with pytest.raises(ValidationError, match="has no hash"):
        EntryStateModel(kind="dir", sha256="sha256:" + "a" * 64)
    # a directory appearing: two null hashes, but different kinds
    WriteEffect(
        path="d",
        before=EntryStateModel(kind="missing", sha256=None),
        after=EntryStateModel(kind="dir", sha256=None),
    )


def test_undeclared_names_effects_outside_the_tools_profile() -> None:
    effects = Effects(state_version=3, plan=None)
    assert undeclared("workspace.read", effects) == ["state_version"]
    assert undeclared("workspace.write", effects) == []
    assert Effects().present() == []


def test_effects_round_trip_through_json() -> None:
    effects = Effects.model_validate(
        {
            "approval": {"status": "granted", "request_id": "apr_1", "decided_by": "user"},
            "write": [
                {
                    "path": "a",
                    "before": {"kind": "missing", "sha256": None},
                    "after": {"kind": "symlink", "sha256": "sha256:" + "b" * 64},
                }
            ],
            "validate": {
                "validation_id": "default",
                "command": "pytest",
                "status": "passed",
                "exit_code": 0,
                "fingerprint": "sha256:" + "c" * 64,
            },
            "state_version": 2,
        }
    )
    assert Effects.model_validate(effects.to_json()) == effects
    assert effects.present() == ["approval", "write", "state_version", "validate"]
