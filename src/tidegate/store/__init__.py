"""Durable state outside every workspace: the validated state root, the run store (runs,
trace, checkpoints, tool calls, records, artifacts), and the recorder the engine uses."""

from tidegate.store.checkpoints import Checkpoint, CheckpointKey, CheckpointRefused
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

__all__ = [
    "STATE_ROOT_ENV",
    "Checkpoint",
    "CheckpointKey",
    "CheckpointRefused",
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
