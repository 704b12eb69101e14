"""Resume compatibility: every recorded hash must match exactly."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tidegate.errors import UsageError
from tidegate.prompt import (
    PromptHashes,
    ResumeIncompatible,
    check_resume,
    require_resume_compatible,
)

FIELDS = [
    "prompt",
    "system_prompt",
    "task_contract",
    "registry",
    "effect_policy",
    "model_identity",
    "model_capability",
]
RECORDED = PromptHashes(**{name: f"sha256:{name}" for name in FIELDS})


def test_identical_hashes_are_compatible() -> None:
    assert check_resume(RECORDED, RECORDED.model_copy()) == []
    require_resume_compatible(RECORDED, RECORDED.model_copy())


@pytest.mark.parametrize("field", FIELDS)
def test_each_hash_is_compared(field: str) -> None:
    current = RECORDED.model_copy(update={field: "sha256:changed"})
    assert check_resume(RECORDED, current) == [field]
    with pytest.raises(ResumeIncompatible) as caught:
        require_resume_compatible(RECORDED, current)
    assert caught.value.changed == [field]
    assert field.replace("_", "-") in str(caught.value)


def test_changes_are_listed_in_field_order() -> None:
    current = RECORDED.model_copy(update={"model_capability": "x", "prompt": "y"})
    assert check_resume(RECORDED, current) == ["prompt", "model_capability"]


def test_hashes_round_trip_through_json_and_refuse_unknown_fields() -> None:
    assert PromptHashes.model_validate_json(RECORDED.model_dump_json()) == RECORDED
    with pytest.raises(ValidationError):
        PromptHashes.model_validate({**RECORDED.model_dump(), "promptVersion": "x"})
    assert issubclass(ResumeIncompatible, UsageError)
