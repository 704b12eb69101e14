"""A recorded run for the tools people already use: OpenTelemetry spans (``spans``: the
tree, in plain data; ``otel``: through the SDK, as OTLP JSON or OTLP/HTTP).

The run is read with the store's record readers (``tidegate.store.record_reads``), the
same read path ``resume`` and ``recover`` use; nothing here writes to the store.
"""

from __future__ import annotations

from tidegate.export.records import RunRecords
from tidegate.store.record_reads import RecordReads


def read_run(store: RecordReads, run_id: str) -> RunRecords:
    """Everything the spans are made of, for ``run_id`` (``latest``: the newest run).
    UsageError when the store has no such run."""
    run = store.get(run_id)
    return RunRecords(
        run=run,
        request=store.request(run.run_id),
        events=store.events(run.run_id),
        tool_calls=store.tool_calls(run.run_id),
        checkpoints=store.checkpoints(run.run_id),
        chain_head=store.checkpoint_head(run.run_id),
    )
