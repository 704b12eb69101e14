"""Durable state outside every workspace: the validated state root and the run store."""

from tidegate.store.db import RunStore, StoredRun
from tidegate.store.state_root import STATE_ROOT_ENV, repository_store, resolve_state_root

__all__ = ["STATE_ROOT_ENV", "RunStore", "StoredRun", "repository_store", "resolve_state_root"]
