"""task.checkpoint: the task's plan and progress, kept durably outside the workspace.

Each checkpoint replaces the previous one at ``ToolContext.task_state_path`` (atomic
rename after fsync) and carries a sequence number one above the last. The plan effect
names the digest of exactly what was stored, which is redacted (``tidegate.text.sanitize``):
a secret a model put into its plan never reaches the disk.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from tidegate.text.jsonparse import parse_json
from tidegate.text.sanitize import redact_value
from tidegate.tools.adapters.artifact import _atomic_write
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.effects import Effects, PlanEffect, sha256_json
from tidegate.tools.schemas.task import CheckpointInput, CheckpointOutput


class TaskCheckpoint(msgspec.Struct):
    tool_id: str = "task.checkpoint"
    label: str | None = None

    def run(self, args: CheckpointInput, call: Dispatch) -> AdapterResult:
        path = call.context.task_state_path
        if path is None:
            raise ToolFailure("unavailable", "no task state store is configured", retryable=False)
        previous = 0
        if path.is_file():
            try:
                previous = int(parse_json(path.read_text(encoding="utf-8"))["sequence"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ToolFailure(
                    "task_state_corrupt", f"{path}: unreadable task state", retryable=False
                ) from exc
        plan = redact_value(
            {
                "summary": args.summary,
                "items": [item.model_dump(mode="json") for item in args.items],
                "next_step": args.next_step,
            }
        )
        assert isinstance(plan, dict)
        record: dict[str, Any] = {"sequence": previous + 1, **plan}
        digest = sha256_json(record)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _atomic_write(path, json.dumps({**record, "sha256": digest}, indent=1).encode())
        output = CheckpointOutput(
            checkpoint_sha256=digest, items=len(args.items), sequence=previous + 1
        )
        claims = Effects(plan=PlanEffect(checkpoint_sha256=digest, items=len(args.items)))
        return AdapterResult(self.tool_id, output, claims, state_changed=True)
