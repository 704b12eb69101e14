"""``tidegate run --otlp ENDPOINT``: the run's spans sent while it runs.

A thread reads the run back from its store every ``interval_s`` (read-only, on a
connection of its own: the run's thread keeps its own) and sends, over OTLP/HTTP, the
spans that have ended since the last time -- a phase when it finishes, with its model
requests, tool calls and command; the attempt when it ends; the run last. The recorder
flushes the trace at every phase boundary and after every tool call, so that is when
they become visible. Span ids are derived from the run (``otel.span_id``), so a span sent
before its parent still names it, and ``tidegate export otel RUN`` later gives the same
trace. A collector that refuses stops the live export; ``close`` says why, and the run
goes on and is recorded as ever.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from tidegate.errors import TidegateError
from tidegate.export import read_run
from tidegate.export.otel import ExportFailed, require_sdk, sdk_spans, send, traces_url
from tidegate.export.spans import run_spans
from tidegate.store.checkpoints import CheckpointKey
from tidegate.store.db import RunStore

UNFINISHED = "tidegate.unfinished"


class LiveExport:
    def __init__(
        self,
        store_path: Path,
        key: CheckpointKey | None,
        endpoint: str,
        run_id: Callable[[], str | None],
        interval_s: float = 1.0,
    ) -> None:
        """UsageError before anything starts: no ``otel`` extra, or not an http(s) URL."""
        require_sdk()
        self.url = traces_url(endpoint)
        self.store_path, self.key, self.run_id = store_path, key, run_id
        self.interval_s = interval_s
        self.sent: set[str] = set()
        """The keys of the spans the collector accepted."""
        self.failure: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="tidegate-otlp", daemon=True)

    def start(self) -> LiveExport:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._guarded(final=False)

    def _guarded(self, *, final: bool) -> None:
        """``poll``; anything it did not expect stops the live export, never the run."""
        try:
            self.poll(final=final)
        except Exception as exc:
            self.failure = self.failure or f"{type(exc).__name__}: {exc}"

    def poll(self, *, final: bool) -> None:
        """Send the spans that ended since the last poll (every one left when ``final``)."""
        run_id = self.run_id()
        if run_id is None or self.failure is not None:
            return
        with self._lock:
            try:
                store = RunStore.open_read_only(self.store_path, key=self.key)
                try:
                    records = read_run(store, run_id)
                finally:
                    store.close()
            except (TidegateError, sqlite3.Error):
                return  # not visible yet (or not readable): the next poll, or the last, sends
            due = [
                span
                for span in run_spans(records)
                if span.key not in self.sent and (final or UNFINISHED not in span.attributes)
            ]
            if not due:
                return
            try:
                send(sdk_spans(run_id, due), self.url)
            except ExportFailed as exc:
                self.failure = str(exc)
                return
            self.sent.update(span.key for span in due)

    def close(self) -> str | None:
        """Stop polling, send what is left; why the collector refused, if it did."""
        self._stop.set()
        self._thread.join()
        self._guarded(final=True)
        return self.failure
