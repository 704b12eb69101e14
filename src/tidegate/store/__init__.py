"""Durable state outside every workspace: the validated state root, the run store (runs,
trace, checkpoints, tool calls, records, artifacts), and the recorder the engine uses.

The names below are loaded on first use (module ``__getattr__``): ``tidegate runs`` reads
the store without loading the recorder, and through it the whole engine."""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # the CLI's fast path reads store.delta without importing typing
if TYPE_CHECKING:
    from typing import Any

    from tidegate.store.checkpoints import Checkpoint, CheckpointKey, CheckpointRefused
    from tidegate.store.corrupt import CorruptRecord
    from tidegate.store.db import RunStore, StoredRun
    from tidegate.store.faults import StoreFaults
    from tidegate.store.recorder import StoreRecorder, resume_ticket
    from tidegate.store.replay import replay_hash
    from tidegate.store.state_root import (
        STATE_ROOT_ENV,
        open_run_store,
        read_all_run_stores,
        read_run_store,
        repository_store,
        resolve_state_root,
    )
    from tidegate.store.trace import Trace, TraceEvent

_HOME = {
    "Checkpoint": "checkpoints",
    "CheckpointKey": "checkpoints",
    "CheckpointRefused": "checkpoints",
    "CorruptRecord": "corrupt",
    "RunStore": "db",
    "StoredRun": "db",
    "StoreFaults": "faults",
    "StoreRecorder": "recorder",
    "resume_ticket": "recorder",
    "replay_hash": "replay",
    "STATE_ROOT_ENV": "state_root",
    "open_run_store": "state_root",
    "read_all_run_stores": "state_root",
    "read_run_store": "state_root",
    "repository_store": "state_root",
    "resolve_state_root": "state_root",
    "Trace": "trace",
    "TraceEvent": "trace",
}

__all__ = [
    "STATE_ROOT_ENV",
    "Checkpoint",
    "CheckpointKey",
    "CheckpointRefused",
    "CorruptRecord",
    "RunStore",
    "StoreFaults",
    "StoreRecorder",
    "StoredRun",
    "Trace",
    "TraceEvent",
    "open_run_store",
    "read_all_run_stores",
    "read_run_store",
    "replay_hash",
    "repository_store",
    "resolve_state_root",
    "resume_ticket",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
