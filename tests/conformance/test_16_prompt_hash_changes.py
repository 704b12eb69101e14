"""Matrix 16: the prompt hash changes on lazy registry activation and on policy changes.

A real ``catalog.search`` call on a real executor activates a lazy tool and changes the
registry's own ``active_hash``; reassembling the session's prompt with that hash (what the
loop does after every activation) gives a snapshot whose prompt hash, system prompt and tool
listing all differ, and the loop's own snapshot is that one. The result does not depend on
the order the definitions arrive in. Changing the approval profile (or the network/write
policy) also gives a new hash. Activating ``command.run`` without a published interpreter is
refused before a replacement exists.
"""

from __future__ import annotations

import pytest

from tests.conformance._agent import answer, call, executor, scripted, session, turn
from tests.conftest import Repo
from tests.unit.prompt.helpers import config, registry_of, snapshot, tools
from tidegate.agent import run_loop
from tidegate.errors import CapabilityMismatch
from tidegate.prompt import reassemble
from tidegate.tools.calls import ToolCall


def test_lazy_activation_changes_the_registry_and_prompt_hash(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        s = session(scripted(answer("unused")), ex)
        before = s.prompt
        before_registry = ex.registry.active_hash
        assert before.registry_hash == before_registry
        assert "command.session" not in ex.registry.active

        found = ex.execute(
            ToolCall(call_id="s1", name="catalog_search", arguments={"query": "session"})
        )
        assert found.ok, found
        assert "command.session" in ex.registry.active
        assert ex.registry.active_hash != before_registry

        definitions = ex.registry.definitions()
        after = reassemble(before, tools=definitions, registry_hash=ex.registry.active_hash)
        shuffled = reassemble(
            before, tools=list(reversed(definitions)), registry_hash=ex.registry.active_hash
        )
    assert after.registry_hash == ex.registry.active_hash
    assert after.prompt_hash != before.prompt_hash
    assert after.system_prompt_hash != before.system_prompt_hash
    assert "(command.session):" in after.system_prompt
    assert "(command.session):" not in before.system_prompt
    assert shuffled.prompt_hash == after.prompt_hash
    # the effect policy is stable across activation; the old snapshot is untouched
    assert after.effect_policy_hash == before.effect_policy_hash
    assert before.registry_hash == before_registry


def test_the_loop_reassembles_with_the_registry_hash(committed_repo: Repo) -> None:
    model = scripted(turn(call("catalog_search", "s1", query="session")), answer("ok"))
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        before = s.prompt
        outcome = run_loop(s)
        expected = reassemble(
            before, tools=ex.registry.definitions(), registry_hash=ex.registry.active_hash
        )
    assert outcome.status == "completed"
    assert s.prompt.registry_hash == ex.registry.active_hash != before.registry_hash
    assert s.prompt.prompt_hash == expected.prompt_hash != before.prompt_hash
    assert "command.session" in {line.canonical_id for line in s.prompt.tools}


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
