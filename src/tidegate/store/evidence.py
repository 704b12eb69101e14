"""The checks on a run's evidence, on the standard library's core alone: the checkpoint
chain (hash, canonical form, order, HMAC under the state root's key, the signed head) and
the replay hash recomputed from the trace.

One implementation for every reader: ``resume`` (through ``checkpoints.verify_committed``)
and ``tidegate read`` (``store.reading``). It imports neither hashlib nor hmac (OpenSSL
takes longer to load than ``read`` takes to run): SHA-256 is the interpreter's own and the
HMAC is RFC 2104 over it (tests/unit/test_quickreport.py holds both to the libraries').

A checkpoint here is a tuple ``(run_id, seq, event_seq, reason, prev_hash, hash, mac,
document)``, a head ``(run_id, count, last_hash, mac)``, in the store's column order.
"""

from __future__ import annotations

import json

from tidegate.store.delta import BadDelta, patch
from tidegate.store.reading import sha256

TYPE_CHECKING = False  # ``tidegate read`` does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

CHECKPOINT_FORMAT = "tidegate.checkpoint/1"
HEAD_FORMAT = "tidegate.checkpoint-head/1"
REPLAY_FORMAT = "tidegate.replay/1"
FULL = "full"
DELTA = "delta"
"""How a checkpoint row stores its document: whole, or as a delta on the one before
(``store.chain_rows``)."""


def canonical(value: object) -> bytes:
    """Canonical JSON of a value that holds no float (``store.canonical.canonical_json``
    refuses floats before it gets here)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def integral_json(text: str | bytes) -> Any:
    """Parsed JSON that holds no float (nor NaN or Infinity): canonical JSON refuses them,
    so a document with one is not canonical (TypeError, as ``canonical_json`` raises)."""
    return json.loads(text, parse_float=_no_float, parse_constant=_no_float)


def _no_float(text: str) -> None:
    raise TypeError(f"{text}: floats are not canonical")


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    digest: str = sha256(data).hexdigest()
    return "sha256:" + digest


def hmac_sha256(secret: bytes, data: bytes) -> str:
    """``CheckpointKey.sign``: HMAC-SHA256 (RFC 2104) of ``data`` under a 32-byte key."""
    block = secret.ljust(64, b"\0")
    inner: bytes = sha256(bytes(b ^ 0x36 for b in block) + data).digest()
    outer: str = sha256(bytes(b ^ 0x5C for b in block) + inner).hexdigest()
    return "hmac-sha256:" + outer


def same_digest(a: str, b: Any) -> bool:
    """``hmac.compare_digest`` (the same C function, without importing hashlib)."""
    from _operator import _compare_digest as same

    return bool(same(a, b))  # raises TypeError for a non-str mac, as hmac's does


def chain_problem(run_id: str, checkpoints: Sequence[Sequence[Any]], secret: bytes) -> str | None:
    """The refusal for the first checkpoint that fails verification, or None."""
    previous: str | None = None
    for expected_seq, checkpoint in enumerate(checkpoints, start=1):
        problem = _problem(run_id, checkpoint, expected_seq, previous, secret)
        if problem:
            return f"checkpoint {checkpoint[1]} of run {run_id} {problem}; refusing to resume"
        previous = checkpoint[5]
    return None


def _problem(
    run_id: str, checkpoint: Sequence[Any], expected_seq: int, previous: str | None, secret: bytes
) -> str | None:
    _run_id, seq, event_seq, reason, prev_hash, digest, mac, document = checkpoint
    if seq != expected_seq:
        return f"is out of sequence (expected checkpoint {expected_seq}): the chain is broken"
    data = document.encode("ascii", "replace")
    if sha256_digest(data) != digest:
        return "does not match its hash: it was edited"
    try:
        doc = integral_json(data)
        is_canonical = canonical(doc) == data
    except (ValueError, TypeError):
        return "is not valid canonical JSON: it was edited"
    if not is_canonical:
        return "is not in canonical form: it was edited"
    header = (doc.get("format"), doc.get("run_id"), doc.get("seq"), doc.get("event_seq"))
    if header != (CHECKPOINT_FORMAT, run_id, seq, event_seq) or doc.get("reason") != reason:
        return "does not belong to this run or position"
    if doc.get("prev_hash") != previous or prev_hash != previous:
        return "does not follow the previous checkpoint: the chain is broken"
    if not same_digest(hmac_sha256(secret, data), mac):
        return "has a signature that does not match this state root's key"
    return None


def head_document(run_id: str, count: int, last_hash: str) -> bytes:
    return canonical(
        {"format": HEAD_FORMAT, "run_id": run_id, "count": count, "last_hash": last_hash}
    )


def head_problem(
    run_id: str,
    checkpoints: Sequence[Sequence[Any]],
    head: Sequence[Any] | None,
    secret: bytes,
) -> str | None:
    """The refusal when the chain does not end where its signed head says (truncated, no
    head, a forged head), or None."""
    problem = None
    if head is None:
        if checkpoints:
            problem = (
                f"its {len(checkpoints)} checkpoint(s) have no committed head (removed, or "
                "recorded before tidegate kept one), so a truncated chain cannot be ruled out"
            )
    else:
        head_run, count, last_hash, mac = head
        signed = hmac_sha256(secret, head_document(head_run, count, last_hash))
        if head_run != run_id or not same_digest(signed, mac):
            problem = (
                "the committed head of its checkpoint chain has a signature that does not match"
            )
        elif len(checkpoints) < count:
            problem = (
                f"the checkpoint chain is truncated: {len(checkpoints)} of the {count} "
                f"committed checkpoint(s) remain (the last {count - len(checkpoints)} were "
                "removed)"
            )
        elif len(checkpoints) > count or checkpoints[-1][5] != last_hash:
            problem = (
                "the checkpoint chain does not end where its committed head says "
                f"(checkpoint {count})"
            )
    return None if problem is None else f"run {run_id}: {problem}; refusing to resume"


def replay_digest(projection: list[dict[str, Any]]) -> str:
    """``sha256:<hex>`` over the canonical replay projection (each event's kind, attempt,
    phase and payload, in sequence order: ``store.replay``)."""
    return sha256_digest(canonical({"format": REPLAY_FORMAT, "events": projection}))


def document_of(run_id: str, row: Sequence[Any], state: Any) -> str:
    """The canonical document of a checkpoints row (``seq, event_seq, reason, prev_hash``
    first) holding ``state``."""
    seq, event_seq, reason, prev_hash = row[:4]
    header = {"format": CHECKPOINT_FORMAT, "run_id": run_id, "seq": seq}
    header.update(event_seq=event_seq, reason=reason, prev_hash=prev_hash, state=state)
    return json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def rebuilt(run_id: str, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Checkpoints from rows ``(run_id, seq, event_seq, reason, prev_hash, hash, mac,
    stored text, encoding)``, each document rebuilt from whole documents and deltas: a row
    that cannot be rebuilt keeps its stored text, which then fails its hash check."""
    out = []
    state: Any = None
    known = False  # whether ``state`` is the previous checkpoint's
    for row in rows:
        stored, encoding = row[7], row[8]
        document = stored
        try:
            if encoding == FULL:
                state, known = json.loads(stored)["state"], True
            elif encoding == DELTA and known:
                state = patch(state, json.loads(stored))
                document = document_of(run_id, row[1:5], state)
            else:
                known = False
        except (ValueError, TypeError, KeyError, BadDelta, RecursionError):
            known = False
        out.append((*row[:7], document))
    return out
