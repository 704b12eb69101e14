"""Matrix 39: seeded permutations of a checkpoint's state and of a tool registry give the
same stored checkpoint: deterministic, sorted, redacted, tamper-evident.

For several seeds, a real ``ToolRegistry`` is built from the catalog's specs in a shuffled
order and its lazy tools are activated in a shuffled order, one by one: its
``active_hash``, definitions and effect metadata equal those of the registry built in
catalog order. A checkpoint state holding them (keys inserted in a shuffled order at every
level) is written through two separate stores sharing one key; the stored documents are
byte-identical, their keys sorted at every level and secret-shaped values redacted.
Flipping any single byte of such a document (every position is tried) is detected on
verification."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.conftest import Repo
from tidegate.store.checkpoints import CheckpointKey, CheckpointRefused, verify_chain
from tidegate.store.db import RunStart, RunStore
from tidegate.store.faults import StoreFaults
from tidegate.tools.adapters.base import ToolAdapter
from tidegate.tools.catalog import CATALOG, ToolRegistry
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.workspace.port import WorkspacePort

SEEDS = [1, 7, 42, 1234]


@pytest.fixture(name="adapters")
def adapters_fixture(committed_repo: Repo) -> Any:
    """The real adapters a patch-mode executor has for this repository."""
    context = ToolContext(
        workspace=WorkspacePort(committed_repo.root),
        mode=TaskMode.PATCH,
        approval_profile=ApprovalProfile.BALANCED,
    )
    with ToolExecutor(context) as ex:
        yield dict(ex.adapters)


def _registry(adapters: Mapping[str, ToolAdapter], rng: random.Random | None) -> ToolRegistry:
    """A patch-mode registry with every available tool active; with ``rng``, the specs
    arrive and the lazy tools are activated in a shuffled order."""
    specs = list(CATALOG)
    if rng is not None:
        rng.shuffle(specs)
    registry = ToolRegistry(dict(adapters), mode=TaskMode.PATCH, specs=specs)
    lazy = [t for t in registry.available if not registry.is_active(t)]
    assert lazy, "the catalog has lazy tools to activate"
    if rng is not None:
        rng.shuffle(lazy)
    for tool in lazy:
        registry.activate([tool])
    return registry


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys inserted in a random order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def _state(registry: ToolRegistry) -> dict[str, Any]:
    # what a model is shown per tool, less the JSON schemas (they hold float defaults,
    # which a checkpoint does not store; the registry hash covers them)
    definitions = {
        d.canonical_id: {"name": d.name, "description": d.description, "label": d.label}
        for d in registry.definitions()
    }
    return {
        "inputs": {"hashes": {"registry": registry.active_hash, "prompt": None}},
        "active_tools": registry.active,
        "registry": definitions,
        "effects": registry.effect_metadata(),
        "counters": {"attempt": 2, "failed_proposals": {"f" * 64: 1}},
        "run": {
            "feedback": ["pytest failed; DATABASE_URL=postgres://app:s3cr3tpw@db/x"],
            "notes": ["used api_key=sk-live0123456789abcdef"],
        },
        "tool_calls": [
            {"tool_call_id": f"call-{i}", "canonical_tool": t}
            for i, t in enumerate(registry.active)
        ],
    }


def _write(root: Path, key: CheckpointKey, state: dict[str, Any]) -> str:
    store = RunStore(root / "runs.sqlite3", key=key, faults=StoreFaults())
    store.begin_run(RunStart("run-x", "/repo", "task", "patch", "exec"))
    store.flush("run-x", [], checkpoint=("phase", state))
    store.flush("run-x", [], checkpoint=("phase", state))
    [_, second] = store.checkpoints("run-x")
    verify_chain("run-x", store.checkpoints("run-x"), key)
    return second.document


@pytest.mark.parametrize("seed", SEEDS)
def test_shuffled_registries_have_one_hash(adapters: Mapping[str, ToolAdapter], seed: int) -> None:
    plain = _registry(adapters, None)
    shuffled = _registry(adapters, random.Random(seed))
    assert shuffled.active_hash == plain.active_hash
    assert shuffled.definitions() == plain.definitions()
    assert shuffled.effect_metadata() == plain.effect_metadata()
    # the hash is of what is active: one tool fewer gives another hash
    partial = ToolRegistry(dict(adapters), mode=TaskMode.PATCH)
    assert partial.active_hash != plain.active_hash


@pytest.mark.parametrize("seed", SEEDS)
def test_permutations_store_identical_sorted_redacted_documents(
    tmp_path: Path, adapters: Mapping[str, ToolAdapter], seed: int
) -> None:
    key = CheckpointKey(bytes(range(32)))
    documents = []
    for n in range(2):
        rng = random.Random(seed * 10 + n)
        state = _shuffled(_state(_registry(adapters, rng)), rng)
        root = tmp_path / f"store-{n}"
        root.mkdir()
        documents.append(_write(root, key, state))
    assert documents[0] == documents[1]
    document = documents[0]
    assert document == json.dumps(json.loads(document), sort_keys=True, separators=(",", ":"))
    assert "s3cr3tpw" not in document and "sk-live0123456789abcdef" not in document
    assert "[REDACTED]" in document
    state = json.loads(document)["state"]
    assert list(state["registry"]) == sorted(state["registry"]) == state["active_tools"]
    assert state["inputs"]["hashes"]["registry"] == _registry(adapters, None).active_hash


def _flips_are_detected(tmp_path: Path, state: dict[str, Any]) -> int:
    key = CheckpointKey(bytes(range(32)))
    store = RunStore(tmp_path / "runs.sqlite3", key=key, faults=StoreFaults())
    store.begin_run(RunStart("run-x", "/repo", "task", "patch", "exec"))
    store.flush("run-x", [], checkpoint=("phase", state))
    [checkpoint] = store.checkpoints("run-x")
    for position in range(len(checkpoint.document)):
        flipped = chr(ord(checkpoint.document[position]) ^ 0x01)
        edited = checkpoint.document[:position] + flipped + checkpoint.document[position + 1 :]
        forged = msgspec.structs.replace(checkpoint, document=edited)
        with pytest.raises(CheckpointRefused):
            verify_chain("run-x", [forged], key)
    return len(checkpoint.document)


def test_every_byte_of_a_checkpoint_is_covered(
    tmp_path: Path, adapters: Mapping[str, ToolAdapter]
) -> None:
    assert _flips_are_detected(tmp_path, _state(_registry(adapters, None))) > 1000
