"""Matrix 39: seeded permutations of a checkpoint's state and of a tool registry give the
same stored checkpoint: deterministic, sorted, redacted, tamper-evident.

For several seeds, the same content is built with keys and registry entries inserted in a
shuffled order and written through two separate stores sharing one key. The stored
documents are byte-identical, their keys sorted at every level, secret-shaped values
redacted, and flipping any single byte of a document is detected on verification."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tidegate.store.checkpoints import CheckpointKey, CheckpointRefused, verify_chain
from tidegate.store.db import RunStart, RunStore
from tidegate.store.faults import StoreFaults

TOOLS = ["workspace.read", "workspace.write", "workspace.edit", "command.run", "git.exec",
         "project.validate", "task.checkpoint", "catalog.search"]  # fmt: skip


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys inserted in a random order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def _state(rng: random.Random) -> dict[str, Any]:
    registry = {name: {"effects": sorted(rng.sample(["approval", "inspect", "write"], 2))}
                for name in TOOLS}  # fmt: skip
    base = {
        "inputs": {"hashes": {"registry": "sha256:" + "ab" * 32, "prompt": None}},
        "registry": registry,
        "counters": {"attempt": 2, "failed_proposals": {"f" * 64: 1}},
        "run": {
            "feedback": ["pytest failed; DATABASE_URL=postgres://app:s3cr3tpw@db/x"],
            "notes": ["used api_key=sk-live0123456789abcdef"],
        },
        "tool_calls": [
            {"tool_call_id": f"call-{i}", "canonical_tool": t} for i, t in enumerate(TOOLS)
        ],
    }
    return base


def _write(root: Path, key: CheckpointKey, state: dict[str, Any]) -> str:
    store = RunStore(root / "runs.sqlite3", key=key, faults=StoreFaults())
    store.begin_run(RunStart("run-x", "/repo", "task", "patch", "exec"))
    store.flush("run-x", [], checkpoint=("phase", state))
    store.flush("run-x", [], checkpoint=("phase", state))
    [_, second] = store.checkpoints("run-x")
    verify_chain("run-x", store.checkpoints("run-x"), key)
    return second.document


@pytest.mark.parametrize("seed", [1, 7, 42, 1234])
def test_permutations_store_identical_sorted_redacted_documents(tmp_path: Path, seed: int) -> None:
    key = CheckpointKey(bytes(range(32)))
    content = _state(random.Random(seed))
    documents = []
    for n in range(2):
        root = tmp_path / f"store-{n}"
        root.mkdir()
        documents.append(_write(root, key, _shuffled(content, random.Random(seed * 10 + n))))
    assert documents[0] == documents[1]
    document = documents[0]
    assert document == json.dumps(json.loads(document), sort_keys=True, separators=(",", ":"))
    assert "s3cr3tpw" not in document and "sk-live0123456789abcdef" not in document
    assert "[REDACTED]" in document
    state = json.loads(document)["state"]
    assert list(state["registry"]) == sorted(TOOLS)


def test_every_byte_of_a_checkpoint_is_covered(tmp_path: Path) -> None:
    key = CheckpointKey(bytes(range(32)))
    store = RunStore(tmp_path / "runs.sqlite3", key=key, faults=StoreFaults())
    store.begin_run(RunStart("run-x", "/repo", "task", "patch", "exec"))
    store.flush("run-x", [], checkpoint=("phase", _state(random.Random(3))))
    [checkpoint] = store.checkpoints("run-x")
    rng = random.Random(99)
    positions = rng.sample(range(len(checkpoint.document)), 60)
    for position in positions:
        flipped = chr(ord(checkpoint.document[position]) ^ 0x01)
        edited = checkpoint.document[:position] + flipped + checkpoint.document[position + 1 :]
        forged = type(checkpoint)(**{**checkpoint.__dict__, "document": edited})
        with pytest.raises(CheckpointRefused):
            verify_chain("run-x", [forged], key)
