"""``tidegate runs`` and ``tidegate read``: recorded runs, read-only.

Shared by the typer commands and the fast path (``tidegate.cli.fast``), so both print the
same thing. Loads only the store's reading side: no typer, no engine, and no pydantic or
rich unless a recorded report is shown to a person.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.cli.output import dump_json, safe_line
from tidegate.errors import UsageError
from tidegate.store.state_root import read_all_run_stores, read_run_store
from tidegate.store.views import run_row, run_view
from tidegate.workspace.repo import Repository, discover

if TYPE_CHECKING:
    from tidegate.flow.report import FlowReport

_RICH_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))
"""The control characters rich's console drops from printed text; ``_line`` drops the
same, so these lines read the same as before they stopped going through rich."""


def _line(text: str) -> None:
    safe_line(text.translate(_RICH_STRIPPED))


def list_runs(repo: Path | None, state_root: str | None, limit: int, as_json: bool) -> None:
    """Print recorded runs, newest first: this repository's, or outside a repository (and
    without ``repo``) every repository's in the state root."""
    found = _repository(Path(".")) if repo is None else discover(repo)
    if found is None:
        stores = read_all_run_stores(state_root)
    else:
        one = read_run_store(found, state_root)
        stores = [one] if one is not None else []
    rows = sorted(
        (run_row(r) for s in stores for r in s.runs(limit, reports=False)),
        key=lambda r: (r["started_ms"], r["run_id"]),
        reverse=True,
    )[:limit]
    if as_json:
        sys.stdout.write(dump_json(rows) + "\n")
        return
    if not rows:
        _line("no recorded runs")
    several = len({r["repo"] for r in rows}) > 1
    for r in rows:
        failure = f" {r['error_class']}" if r["error_class"] else ""
        failure += f" ({r['problem']})" if r.get("problem") else ""
        where = f"  {r['repo']}" if several else ""
        _line(
            f"{r['run_id']}  {r.get('kind', 'engine'):<7}{r['mode']:<6} {r['status']:<11}"
            f"{failure}  {r['attempts']} "
            f"attempt(s)  {r['duration_s']:.1f}s{where}"
        )


def _repository(path: Path) -> Repository | None:
    """The repository ``path`` is in, or None outside one (discovered once: each discovery
    runs git)."""
    try:
        return discover(path)
    except UsageError:
        return None


def show_run(run_id: str, repo: Path, state_root: str | None, as_json: bool, detail: bool) -> None:
    """Print one recorded run (``latest``: the newest): its report as JSON, everything with
    ``detail``, or for a person the run, phases, attempts, effects, evidence and report."""
    store = read_run_store(discover(repo), state_root)
    if store is None:
        raise UsageError(f"no recorded run {run_id!r} for this repository")
    view = run_view(store, run_id)
    if as_json:
        shown = view if detail or view["report"] is None else view["report"]
        sys.stdout.write(dump_json(shown) + "\n")
        return
    _print_view(view)


def _print_view(view: dict[str, Any]) -> None:
    report = _report(view["report"])  # parsed first: a bad report fails before any output
    run = view["run"]
    failure = f" {run['error_class']} in {run['failure_phase']}" if run["error_class"] else ""
    _line(f"run {run['run_id']}  {run['mode']}  {run['status']}{failure}  task {run['task_id']}")
    _line("phases:")
    for p in view["phases"]:
        _line(
            f"  attempt {p['attempt']} {p['phase']:<15} {p['status']:<6} "
            f"{p['duration_ms']:>9.1f} ms  {p['detail']}"
        )
    _line("attempts:")
    for a in view["attempts"]:
        why = f" {a['error_class']} in {a['failure_phase']}" if a.get("error_class") else ""
        tree = f"  candidate {a['candidate_tree'][:12]}" if a.get("candidate_tree") else ""
        _line(f"  {a['attempt']}: {a['status']}{why}{tree}")
    effects = view["effects"]
    _line("effects:")
    for f in effects["applied_files"]:
        _line(
            f"  {f['action']:<9} {f['path']}  {(f['before_sha256'] or '-')[:12]} -> "
            f"{(f['after_sha256'] or '-')[:12]}"
        )
    for c in effects["tool_calls"]:
        _line(f"  tool {c['canonical_tool']} {c['tool_call_id']}: {c['status']}")
    evidence = view["evidence"]
    _line("evidence:")
    _line(
        f"  trace: {evidence['trace_events']} event(s); checkpoints: "
        f"{evidence['checkpoints']} ({evidence['checkpoint_chain']})"
    )
    if evidence["replay_hash"]:
        _line(f"  replay hash {evidence['replay_hash']}")
    if view["resume"]:
        r = view["resume"]
        after = f"after {r['after']}" if r["after"] else "at the start"
        _line(f"  resumable {after} of attempt {r['attempt']}: {r['command']}")
    if report is not None:
        from tidegate.cli.render import (
            console,  # a person reads the report: rich renders it
            print_report,
        )

        sys.stdout.flush()
        print_report(console(), report)


def _report(data: dict[str, Any] | None) -> FlowReport | None:
    if data is None:
        return None
    from tidegate.flow.report import FlowReport

    return FlowReport.model_validate(data)
