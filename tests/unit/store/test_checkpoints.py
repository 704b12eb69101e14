"""Checkpoints: canonical, chained, signed, copied on read; the key file's rules."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tidegate.errors import UsageError
from tidegate.store.canonical import sha256_digest
from tidegate.store.checkpoints import (
    KEY_FILE,
    Checkpoint,
    CheckpointKey,
    CheckpointRefused,
    seal,
    seal_head,
    verify_chain,
    verify_committed,
)


def _chain(key: CheckpointKey, n: int = 3, run_id: str = "run-1") -> list[Checkpoint]:
    out: list[Checkpoint] = []
    for seq in range(1, n + 1):
        out.append(
            seal(
                key,
                run_id=run_id,
                seq=seq,
                event_seq=seq * 10,
                reason="phase",
                prev_hash=out[-1].hash if out else None,
                state={"attempt": {"number": 1, "completed": ["PLAN"] * seq}, "note": "x"},
            )
        )
    return out


@pytest.fixture
def key(tmp_path: Path) -> CheckpointKey:
    return CheckpointKey.load_or_create(tmp_path)


def test_a_chain_verifies(key: CheckpointKey) -> None:
    chain = _chain(key)
    verify_chain("run-1", chain, key)
    assert [c.prev_hash for c in chain] == [None, chain[0].hash, chain[1].hash]
    assert all(c.hash.startswith("sha256:") and c.mac.startswith("hmac-sha256:") for c in chain)


def test_reads_are_copies_and_writes_copy_their_input(key: CheckpointKey) -> None:
    state = {"feedback": ["first"]}
    checkpoint = seal(
        key, run_id="r", seq=1, event_seq=1, reason="phase", prev_hash=None, state=state
    )
    state["feedback"].append("added after sealing")
    got = checkpoint.state
    got["feedback"].append("changed by a reader")
    assert checkpoint.state == {"feedback": ["first"]}
    verify_chain("r", [checkpoint], key)


def _edit(checkpoint: Checkpoint, **changes: object) -> Checkpoint:
    return msgspec.structs.replace(checkpoint, **changes)  # type: ignore[arg-type]


def test_an_edited_byte_is_refused(key: CheckpointKey) -> None:
    chain = _chain(key)
    edited = chain[1].document.replace('"note":"x"', '"note":"y"')
    assert edited != chain[1].document
    chain[1] = _edit(chain[1], document=edited)
    with pytest.raises(
        CheckpointRefused, match="checkpoint 2 of run run-1 does not match its hash"
    ):
        verify_chain("run-1", chain, key)


def test_an_edit_with_a_recomputed_hash_still_fails_the_signature(key: CheckpointKey) -> None:
    import hashlib

    chain = _chain(key)
    edited = chain[2].document.replace('"note":"x"', '"note":"y"')
    forged = "sha256:" + hashlib.sha256(edited.encode()).hexdigest()
    chain[2] = _edit(chain[2], document=edited, hash=forged)
    with pytest.raises(CheckpointRefused, match="signature that does not match"):
        verify_chain("run-1", chain, key)


def test_a_removed_or_reordered_checkpoint_breaks_the_chain(key: CheckpointKey) -> None:
    chain = _chain(key)
    with pytest.raises(CheckpointRefused, match="out of sequence"):
        verify_chain("run-1", [chain[0], chain[2]], key)
    with pytest.raises(CheckpointRefused, match="out of sequence"):
        verify_chain("run-1", [chain[1], chain[0], chain[2]], key)
    # Renumbering the rows does not help: the documents say where they belong.
    renumbered = [chain[0], _edit(chain[2], seq=2)]
    with pytest.raises(CheckpointRefused, match="does not belong"):
        verify_chain("run-1", renumbered, key)


@pytest.mark.parametrize(
    "field",
    [
        {"event_seq": 999},  # where resume would replay the trace from
        {"reason": "pause"},
        {"prev_hash": "sha256:" + "0" * 64},
    ],
    ids=lambda f: next(iter(f)),
)
def test_a_row_that_disagrees_with_its_signed_document_is_refused(
    key: CheckpointKey, field: dict[str, object]
) -> None:
    """The row's columns are what readers use; the signed document is what was sealed.
    An edit of a column alone (the document, hash and signature untouched) is refused."""
    chain = _chain(key)
    chain[1] = msgspec.structs.replace(chain[1], **field)  # type: ignore[arg-type]
    with pytest.raises(CheckpointRefused, match="checkpoint 2 "):
        verify_chain("run-1", chain, key)


def test_a_signed_document_that_is_not_canonical_is_refused(key: CheckpointKey) -> None:
    """The same content spelled another way (spaces, key order) is not a checkpoint, even
    with a valid hash and signature: one document, one spelling."""
    (first,) = _chain(key, 1)
    spelled = json.dumps(json.loads(first.document), indent=1).encode("ascii")
    other = msgspec.structs.replace(
        first,
        document=spelled.decode("ascii"),
        hash=sha256_digest(spelled),
        mac=key.sign(spelled),
    )
    with pytest.raises(CheckpointRefused, match="not in canonical form"):
        verify_chain("run-1", [other], key)


def test_a_last_checkpoint_replaced_by_another_signed_one_is_refused(key: CheckpointKey) -> None:
    """Two signed chains of the same run that part at the last checkpoint (a resumed
    attempt's, say): the committed head names which last checkpoint is the run's."""
    chain = _chain(key)
    head = seal_head(key, chain[-1])
    other = seal(
        key, run_id="run-1", seq=3, event_seq=30, reason="phase", prev_hash=chain[1].hash,
        state={"attempt": {"number": 2}},
    )  # fmt: skip
    verify_committed("run-1", chain, head, key)
    with pytest.raises(CheckpointRefused, match="does not end where its committed head says"):
        verify_committed("run-1", [*chain[:2], other], head, key)


def test_a_checkpoint_of_another_run_is_refused(key: CheckpointKey) -> None:
    with pytest.raises(CheckpointRefused, match="does not belong"):
        verify_chain("run-2", _chain(key, 1, run_id="run-1"), key)


def test_a_chain_signed_with_another_key_is_refused(key: CheckpointKey, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    other = CheckpointKey.load_or_create(tmp_path / "elsewhere")
    with pytest.raises(CheckpointRefused, match=r"checkpoint 1 .* signature that does not match"):
        verify_chain("run-1", _chain(other), key)


def test_the_key_file_is_private_and_stable(tmp_path: Path) -> None:
    first = CheckpointKey.load_or_create(tmp_path)
    path = tmp_path / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(path.read_text().strip()) == 64
    again = CheckpointKey.load_or_create(tmp_path)
    assert again.sign(b"x") == first.sign(b"x")
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILE]  # no temp files left


def test_concurrent_creators_agree_on_one_key(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; "
        "from tidegate.store.checkpoints import CheckpointKey; "
        "print(CheckpointKey.load_or_create(Path(sys.argv[1])).sign(b'probe'))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    macs = {p.communicate()[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(macs) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE]


@pytest.mark.parametrize("problem", ["group-readable", "symlink", "malformed", "directory"])
def test_an_unsafe_or_broken_key_file_is_refused(tmp_path: Path, problem: str) -> None:
    path = tmp_path / KEY_FILE
    if problem == "group-readable":
        CheckpointKey.load_or_create(tmp_path)
        path.chmod(0o640)
        match = "readable by other users"
    elif problem == "symlink":
        real = tmp_path / "real"
        real.mkdir()
        CheckpointKey.load_or_create(real)
        path.symlink_to(real / KEY_FILE)
        match = "checkpoint key"
    elif problem == "malformed":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"not hex\n")
        os.close(fd)
        match = "malformed"
    else:
        path.mkdir()
        match = "checkpoint key"
    with pytest.raises(UsageError, match=match):
        CheckpointKey.load_or_create(tmp_path)
