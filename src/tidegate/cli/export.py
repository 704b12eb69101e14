"""``tidegate export otel RUN``: a recorded run as OpenTelemetry spans.

Read-only: the run comes from the repository's run store through the store's record
readers, and nothing is written. Without ``--otlp`` the OTLP/JSON of the spans is printed
(what a collector's ``/v1/traces`` takes); with it they are sent over OTLP/HTTP. Needs the
``otel`` extra: without it, one error line naming it (exit 2). Exit codes: 0 sent or
printed; 1 the collector did not accept them; 2 usage (no such run, no repository, no
extra, a bad URL).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

export_app = typer.Typer(
    name="export",
    help="Export a recorded run to other tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@export_app.command()
def otel(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
    repo: Annotated[
        Path, typer.Option("--repo", help="The repository (default: current directory).")
    ] = Path("."),
    state_root: Annotated[
        str | None,
        typer.Option(
            "--state-root",
            help="Where run records are kept (default: $TIDEGATE_STATE_ROOT or the user state dir).",
        ),
    ] = None,
    otlp: Annotated[
        str | None,
        typer.Option(
            "--otlp",
            help="Send over OTLP/HTTP to this collector (http://HOST:4318, or a full "
            ".../v1/traces URL) instead of printing OTLP JSON.",
        ),
    ] = None,
) -> None:
    """Emit a recorded run as OpenTelemetry spans (GenAI semantic conventions)."""
    from tidegate.errors import UsageError
    from tidegate.export import read_run
    from tidegate.export.otel import (
        ExportFailed,
        otlp_json,
        require_sdk,
        sdk_spans,
        send,
        traces_url,
    )
    from tidegate.export.spans import run_spans
    from tidegate.store.state_root import read_run_store
    from tidegate.text.sanitize import sanitize
    from tidegate.workspace.repo import discover

    require_sdk()
    if otlp is not None:
        traces_url(otlp)  # a bad URL is refused before the store is read
    store = read_run_store(discover(repo), state_root)
    if store is None:
        raise UsageError(f"no recorded run {run_id!r} for this repository")
    try:
        records = read_run(store, run_id)
    finally:
        store.close()
    spans = sdk_spans(records.run.run_id, run_spans(records))
    if otlp is None:
        sys.stdout.write(json.dumps(otlp_json(spans), indent=2, ensure_ascii=True) + "\n")
        return
    try:
        url = send(spans, otlp)
    except ExportFailed as exc:
        sys.stderr.write(sanitize(f"tidegate: error: {exc}") + "\n")
        raise typer.Exit(1) from None
    sys.stderr.write(sanitize(f"tidegate: sent {len(spans)} spans to {url}") + "\n")
