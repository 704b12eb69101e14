"""``tidegate runs`` and ``tidegate read``: recorded runs, read-only.

The one body of each command, for the typer application and the fast path
(``tidegate.cli.fast``) alike: the store is read by ``store.reading`` and ``store.views``,
the lines are ``cli.runtext``'s and the report ``cli.report_text``'s. Everything is
gathered before anything is printed. Nothing here imports typer, rich, pydantic,
subprocess or the engine.
"""

from __future__ import annotations

from tidegate.cli.output import dump_json
from tidegate.cli.runtext import runs_text, view_text
from tidegate.errors import UsageError
from tidegate.store.locate import all_stores, repository, repository_store
from tidegate.store.views import listing, run_view

TYPE_CHECKING = False  # ``read`` does not import typing
if TYPE_CHECKING:
    from tidegate.store.reading import Store


def runs_output(repo: str | None, state_root: str | None, limit: int, as_json: bool) -> str:
    """What ``tidegate runs`` prints: recorded runs, newest first; this repository's, or
    outside a repository (and without ``repo``) every repository's in the state root."""
    stores: list[Store]
    try:
        root, common = repository(repo or ".")
    except UsageError:
        if repo is not None:
            raise
        stores = all_stores(state_root)
    else:
        one = repository_store(state_root, root, common)
        stores = [] if one is None else [one]
    rows = [row for store in stores for row in listing(store, limit)]
    rows.sort(key=lambda r: (r["started_ms"], r["run_id"]), reverse=True)
    rows = rows[:limit]
    return dump_json(rows) + "\n" if as_json else runs_text(rows)


def read_output(run_id: str, repo: str, state_root: str | None, as_json: bool, detail: bool) -> str:
    """What ``tidegate read RUN_ID`` prints (``latest``: the newest): the report as JSON,
    everything with ``detail``, or for a person the run, phases, attempts, effects,
    evidence and report."""
    root, common = repository(repo)
    store = repository_store(state_root, root, common)
    if store is None:
        raise UsageError(f"no recorded run {run_id!r} for this repository")
    view = run_view(store, run_id)
    if as_json:
        shown = view if detail or view["report"] is None else view["report"]
        return dump_json(shown) + "\n"
    text = view_text(view)
    if view["report"] is not None:
        from tidegate.cli.report_text import report_text, terminal_styles

        text += report_text(view["report"], terminal_styles())
    return text


def diff_output(run_id: str, repo: str, state_root: str | None, stat: bool) -> str:
    """What ``tidegate diff RUN_ID`` prints: the run's change as the report keeps it, a
    unified diff (coloured on a terminal), or with ``stat`` its files and line counts."""
    from tidegate.cli.report_text import diff_stat, diff_text, terminal_styles

    root, common = repository(repo)
    store = repository_store(state_root, root, common)
    if store is None:
        raise UsageError(f"no recorded run {run_id!r} for this repository")
    report = run_view(store, run_id)["report"]
    if report is None:
        raise UsageError(f"run {run_id} has no report yet (it has not finished)")
    if not report["diff"]:
        return f"run {report['run_id']}: no change\n"
    if stat:
        return diff_stat(report["diff"])
    return diff_text(report["diff"], terminal_styles())
