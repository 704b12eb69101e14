"""How checkpoints are kept in their rows: a whole document now and then (``full``), and
in between only what changed since the previous checkpoint (``delta``, see ``delta``).

What is signed and hashed does not change: the canonical document of each checkpoint.
A reader rebuilds each document from the row's own fields and its state (the previous
state with the delta applied) and ``verify_chain`` checks it exactly as before, so an edit
of any row -- a delta, a snapshot, the encoding -- shows as a checkpoint that does not
match its hash. A row that cannot be rebuilt at all keeps its stored text as its document,
which fails the same check, so a damaged delta is refused, never raised.

A whole document is written when the deltas since the last one add up to more than the
document itself (the rule of Mercurial's revlog): the bytes stored stay within about twice
the bytes that changed, even as the state grows, and a rebuild reads at most that much.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import msgspec

from tidegate.store.canonical import sha256_digest
from tidegate.store.checkpoints import Checkpoint
from tidegate.store.delta import BadDelta, diff, patch
from tidegate.store.evidence import DELTA, FULL, document_of, rebuilt


class ChainTip(msgspec.Struct, frozen=True):
    """The last checkpoint of a run as the writer needs it for the next delta."""

    seq: int
    hash: str
    state: Any
    delta_bytes: int
    """Bytes of the deltas stored since the last whole document."""


def _dumps(value: object) -> str:
    # canonical_json's encoding, without its type walk: the values here come from JSON
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def encode(tip: ChainTip | None, sealed: Checkpoint) -> tuple[str, str, ChainTip]:
    """``(encoding, stored text, new tip)`` for ``sealed``, the checkpoint after ``tip``."""
    state = json.loads(sealed.document)["state"]
    if tip is not None and tip.seq == sealed.seq - 1 and tip.hash == sealed.prev_hash:
        text = _dumps(diff(tip.state, state))
        total = tip.delta_bytes + len(text)
        if total <= len(sealed.document) and _rebuilds(tip.state, text, sealed):
            return DELTA, text, ChainTip(sealed.seq, sealed.hash, state, total)
    return FULL, sealed.document, ChainTip(sealed.seq, sealed.hash, state, 0)


def _rebuilds(base: Any, text: str, sealed: Checkpoint) -> bool:
    """Whether the delta ``text`` on ``base`` rebuilds ``sealed``'s very bytes: applied
    here as a reader will apply it, before it is stored."""
    header = (sealed.seq, sealed.event_seq, sealed.reason, sealed.prev_hash)
    try:
        rebuilt = document_of(sealed.run_id, header, patch(base, json.loads(text)))
    except BadDelta:
        return False
    return rebuilt == sealed.document


def rebuild(run_id: str, rows: Iterable[tuple[Any, ...]]) -> list[Checkpoint]:
    """Checkpoints from rows ``(run_id, seq, event_seq, reason, prev_hash, hash, mac,
    stored text, encoding)`` in order, each document rebuilt (``store.evidence.rebuilt``)."""
    return [Checkpoint(*row) for row in rebuilt(run_id, list(rows))]


def tip_of(run_id: str, rows: list[tuple[Any, ...]]) -> ChainTip | None:
    """The tip after ``rows`` (the run's rows from its last whole document on), or None
    when they do not rebuild to the hash the last row records."""
    if not rows:
        return None
    checkpoints = rebuild(run_id, rows)
    last = checkpoints[-1]
    if sha256_digest(last.document.encode("ascii", "replace")) != last.hash:
        return None
    delta_bytes = sum(len(r[7]) for r in rows if r[8] == DELTA)
    return ChainTip(last.seq, last.hash, last.state, delta_bytes)
