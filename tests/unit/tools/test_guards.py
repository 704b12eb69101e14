"""The stale-edit guard counts failures per (path, observed state)."""

from __future__ import annotations

from tidegate.tools.guards import StaleEditGuard, state_key


def test_counts_per_path_and_state_and_serialises() -> None:
    guard = StaleEditGuard(limit=2)
    key = ("a.py", state_key("file", "sha256:" + "1" * 64))
    other = ("a.py", state_key("file", "sha256:" + "2" * 64))
    assert not guard.blocked(*key)
    guard.failed(*key)
    guard.failed(*key)
    assert guard.blocked(*key)
    assert not guard.blocked(*other)
    again = StaleEditGuard.from_json(guard.to_json())
    assert again.blocked(*key) and again.count(*key) == 2
    assert state_key("missing", None) == "missing:-"
