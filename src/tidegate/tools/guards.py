"""The stale-edit guard: repeated failing edits of one path in one state pause the run.

A model that keeps sending edits built on a stale view varies its arguments (another old
text, another expected hash), so counting identical calls misses the loop. The guard
counts failed write/edit calls per ``(path, observed state)`` instead: once a path in the
state the host observed has collected ``limit`` failures, further edits of it in that same
state are stopped before dispatch (status ``paused``). A successful write changes the state,
and with it the key, so the count starts again. The counts serialise with ``to_json`` so a
paused run resumes with them.
"""

from __future__ import annotations

from typing import Any

import msgspec


def state_key(kind: str, sha256: str | None) -> str:
    return f"{kind}:{sha256 or '-'}"


class StaleEditGuard(msgspec.Struct):
    limit: int = 3
    _failures: dict[tuple[str, str], int] = msgspec.field(default_factory=dict)

    def blocked(self, path: str, state: str) -> bool:
        return self._failures.get((path, state), 0) >= self.limit

    def failed(self, path: str, state: str) -> int:
        count = self._failures.get((path, state), 0) + 1
        self._failures[(path, state)] = count
        return count

    def count(self, path: str, state: str) -> int:
        return self._failures.get((path, state), 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "failures": [
                {"path": p, "state": s, "count": n} for (p, s), n in sorted(self._failures.items())
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StaleEditGuard:
        guard = cls(limit=int(data["limit"]))
        for row in data.get("failures", []):
            guard._failures[(str(row["path"]), str(row["state"]))] = int(row["count"])
        return guard
