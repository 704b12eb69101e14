"""Matrix 16: the prompt hash changes on lazy registry activation and on policy changes.

Activating a tool through catalog.search changes the active registry hash; the runtime
reassembles and gets a new snapshot whose hash, system prompt and tool listing all differ.
Changing the approval profile (or the network/write policy) does the same. Activating
``command.run`` without a published interpreter is refused before a replacement exists.
"""

from __future__ import annotations

import pytest

from tests.unit.prompt.helpers import config, registry_of, snapshot, tools
from tidegate.errors import CapabilityMismatch
from tidegate.prompt import reassemble


def test_lazy_activation_produces_a_new_snapshot_and_hash() -> None:
    before_tools = tools("workspace.read", "catalog.search")
    before = snapshot(active=before_tools)
    after_tools = tools("workspace.read", "catalog.search", "project.validate")
    after = reassemble(before, tools=after_tools, registry_hash=registry_of(after_tools))

    assert after.registry_hash != before.registry_hash
    assert after.prompt_hash != before.prompt_hash
    assert after.system_prompt_hash != before.system_prompt_hash
    assert "- project.validate:" in after.system_prompt
    assert "- project.validate:" not in before.system_prompt
    # the effect policy is stable across activation; the old snapshot is untouched
    assert after.effect_policy_hash == before.effect_policy_hash
    assert before.registry_hash == registry_of(before_tools)


def test_activation_is_deterministic() -> None:
    base = snapshot(active=tools("workspace.read", "catalog.search"))
    grown = tools("workspace.read", "catalog.search", "git.exec")
    one = reassemble(base, tools=grown, registry_hash=registry_of(grown))
    two = reassemble(base, tools=list(reversed(grown)), registry_hash=registry_of(grown))
    assert one.prompt_hash == two.prompt_hash


@pytest.mark.parametrize(
    "change",
    [
        {"approvalProfile": "strict"},
        {"approvalProfile": "trusted-workspace"},
        {"networkAccess": "denied"},
        {"writeAccess": "policy_gated"},
    ],
)
def test_policy_changes_produce_a_new_hash(change: dict[str, str]) -> None:
    base = snapshot()
    changed = reassemble(base, config=config(**change))
    assert changed.prompt_hash != base.prompt_hash
    assert changed.configuration_hash != base.configuration_hash
    assert changed.registry_hash == base.registry_hash


def test_activating_command_run_without_an_interpreter_is_refused() -> None:
    base = snapshot(config(hostEnvironment=None), active=tools("workspace.read", "catalog.search"))
    grown = tools("workspace.read", "catalog.search", "command.run")
    with pytest.raises(CapabilityMismatch, match=r"command\.run"):
        reassemble(base, tools=grown, registry_hash=registry_of(grown))
